/* Entries: allocation and accessors. One malloc per entry (see entry.h). */
#define _DEFAULT_SOURCE /* MADV_HUGEPAGE */
#include <stdlib.h>
#include <string.h>
#if defined(__linux__) && !defined(__EMSCRIPTEN__)
#include <sys/mman.h>
#endif

#include "entry.h"

/* A large entry is a fresh mmap'd block whose pages are touched for the
 * first time by the copy that fills it: 4 KiB page faults then cost more
 * than the copy (decode of a 48 MiB entry ran at 0.2x memcpy). Asking for
 * huge pages on its 2 MiB-aligned interior cuts the faults 512-fold. */
static void advise_huge(void *p, size_t size) {
#if defined(__linux__) && !defined(__EMSCRIPTEN__) && defined(MADV_HUGEPAGE)
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t from = ((uintptr_t)p + huge - 1) & ~(huge - 1);
    uintptr_t to = ((uintptr_t)p + size) & ~(huge - 1);
    if (size >= 4 * huge && to > from) (void)madvise((void *)from, to - from, MADV_HUGEPAGE);
#else
    (void)p;
    (void)size;
#endif
}

/* a * b + c without wrapping; returns 0 on overflow. */
static int mul_add(size_t a, size_t b, size_t c, size_t *out) {
    if (b && a > (SIZE_MAX - c) / b) return 0;
    *out = a * b + c;
    return 1;
}

size_t rlxkv_dtype_size(int dtype) {
    switch (dtype) {
    case RLXKV_F32: return 4;
    case RLXKV_F16: return 2;
    default: return 0;
    }
}

rlxkv_entry *rlxkv_entry_alloc(size_t n_tokens, size_t n_layers, size_t n_values,
                               int dtype, int *status) {
    int st = RLXKV_ERR_INVALID;
    size_t n_blocks, size, values_at, tokens_at, vsize = rlxkv_dtype_size(dtype);
    rlxkv_entry *e = NULL;

    if (!vsize || n_layers > SIZE_MAX / 2 - 1) goto out;
    n_blocks = 2 * n_layers;
    /* header | offs | values | tokens, each part aligned for its type. */
    if (!mul_add(n_blocks + 1, sizeof(size_t), sizeof(rlxkv_entry), &values_at)) goto out;
    values_at = (values_at + 15) & ~(size_t)15;
    if (!mul_add(n_values, vsize, values_at, &tokens_at)) goto out;
    tokens_at = (tokens_at + 3) & ~(size_t)3;
    if (tokens_at < values_at) goto out;
    if (!mul_add(n_tokens, sizeof(uint32_t), tokens_at, &size)) goto out;

    st = RLXKV_ERR_NOMEM;
    e = malloc(size);
    if (!e) goto out;
    advise_huge(e, size);
    memset(e, 0, sizeof *e);
    e->dtype = (uint8_t)dtype;
    e->n_tokens = n_tokens;
    e->n_layers = n_layers;
    e->n_values = n_values;
    e->offs = (size_t *)(e + 1);
    e->kv = (unsigned char *)e + values_at;
    e->tokens = (uint32_t *)((char *)e + tokens_at);
    e->offs[0] = 0;
    st = RLXKV_OK;
out:
    if (status) *status = st;
    return e;
}

rlxkv_entry *rlxkv_entry_new(size_t n_tokens, size_t n_layers, const size_t *block_lens,
                             int dtype, int *status) {
    return rlxkv_entry_new_at(n_tokens, 0, n_layers, block_lens, dtype, status);
}

rlxkv_entry *rlxkv_entry_new_at(size_t n_tokens, size_t start, size_t n_layers, const size_t *block_lens,
                                int dtype, int *status) {
    size_t n_values = 0;
    rlxkv_entry *e;

    if (start > n_tokens || n_layers > SIZE_MAX / 2 - 1 || (n_layers && !block_lens)) {
        if (status) *status = RLXKV_ERR_INVALID;
        return NULL;
    }
    for (size_t i = 0; i < 2 * n_layers; i++) {
        if (block_lens[i] > SIZE_MAX - n_values) {
            if (status) *status = RLXKV_ERR_INVALID;
            return NULL;
        }
        n_values += block_lens[i];
    }
    e = rlxkv_entry_alloc(n_tokens, n_layers, n_values, dtype, status);
    if (e) e->start = start;
    if (e)
        for (size_t i = 0; i < 2 * n_layers; i++) e->offs[i + 1] = e->offs[i] + block_lens[i];
    return e;
}

void rlxkv_entry_free(rlxkv_entry *e) {
    if (!e) return;
    if (e->shared && !--*e->shared) free(e->shared);
    if (!e->slab) free(e);
    else if (!--*e->slab) free(e->slab);
}

size_t rlxkv_entry_n_tokens(const rlxkv_entry *e) { return e->n_tokens; }
size_t rlxkv_entry_start(const rlxkv_entry *e) { return e->start; }
const rlxkv_entry *rlxkv_entry_parent(const rlxkv_entry *e) { return e->parent; }
size_t rlxkv_entry_n_layers(const rlxkv_entry *e) { return e->n_layers; }
size_t rlxkv_entry_n_values(const rlxkv_entry *e) { return e->n_values; }
int rlxkv_entry_dtype(const rlxkv_entry *e) { return e->dtype; }
uint32_t rlxkv_entry_serial(const rlxkv_entry *e) { return e->serial; }
size_t rlxkv_entry_kv_bytes(const rlxkv_entry *e) { return e->n_values * rlxkv_entry_value_size(e); }
const uint32_t *rlxkv_entry_tokens(const rlxkv_entry *e) { return e->tokens; }
const void *rlxkv_entry_data(const rlxkv_entry *e) { return e->kv; }
uint32_t *rlxkv_entry_tokens_mut(rlxkv_entry *e) { return e->tokens; }

const void *rlxkv_entry_block(const rlxkv_entry *e, size_t i) {
    return i < 2 * e->n_layers ? e->kv + e->offs[i] * rlxkv_entry_value_size(e) : NULL;
}
void *rlxkv_entry_block_mut(rlxkv_entry *e, size_t i) {
    return i < 2 * e->n_layers ? e->kv + e->offs[i] * rlxkv_entry_value_size(e) : NULL;
}
size_t rlxkv_entry_block_len(const rlxkv_entry *e, size_t i) {
    return i < 2 * e->n_layers ? e->offs[i + 1] - e->offs[i] : 0;
}

int rlxkv_entry_row_major(const rlxkv_entry *e) {
    size_t rows = rlxkv_entry_rows(e);
    if (e->n_tokens == 0) return 0;
    for (size_t i = 0; i < 2 * e->n_layers; i++)
        if (rows ? rlxkv_entry_block_len(e, i) % rows : rlxkv_entry_block_len(e, i)) return 0;
    return 1;
}

int rlxkv_layout_check(const rlxkv_layout *l, const rlxkv_entry *e, size_t *bad_block) {
    size_t want;
    if (!l || !e) return RLXKV_ERR_INVALID;
    if (l->order == RLXKV_ORDER_ANY) return RLXKV_OK;
    if (l->layers && e->n_layers != l->layers) {
        if (bad_block) *bad_block = 2 * (e->n_layers < l->layers ? e->n_layers : l->layers);
        return RLXKV_ERR_SHAPE;
    }
    want = rlxkv_layout_block_len(l, rlxkv_entry_rows(e));
    for (size_t i = 0; i < 2 * e->n_layers; i++)
        if (rlxkv_entry_block_len(e, i) != want) {
            if (bad_block) *bad_block = i;
            return RLXKV_ERR_SHAPE;
        }
    return RLXKV_OK;
}

size_t rlxkv_layout_block_len(const rlxkv_layout *l, size_t n_tokens) {
    if (!l || l->order == RLXKV_ORDER_ANY) return 0;
    if (l->heads && l->head_dim > SIZE_MAX / l->heads) return 0;
    size_t row = l->heads * l->head_dim;
    if (row && n_tokens > SIZE_MAX / row) return 0;
    return row * n_tokens;
}
