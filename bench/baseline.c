/* The benchmark baseline: a line-by-line C port of the reference
 * (seed/prompt_cache.rs). See baseline.h for what is kept and why. Each
 * function names the Rust it mirrors. */
#define _POSIX_C_SOURCE 200809L
#include "baseline.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- Vec helpers ------------------------------------------------------ */

/* RawVec's amortized growth: max(2 * cap, needed, 4). */
static size_t grow_cap(size_t cap, size_t needed) {
    size_t c = cap * 2;
    if (c < needed) c = needed;
    if (c < 4) c = 4;
    return c;
}

static int vecf_with_capacity(bl_vecf *v, size_t n) {
    v->len = 0;
    v->cap = n;
    v->ptr = n ? malloc(n * sizeof(float)) : NULL;
    return n && !v->ptr ? -1 : 0;
}

/* Vec<f32>::clone: an exact-capacity allocation and a copy. */
static int vecf_clone(bl_vecf *dst, const bl_vecf *src) {
    if (vecf_with_capacity(dst, src->len)) return -1;
    if (src->len) memcpy(dst->ptr, src->ptr, src->len * sizeof(float));
    dst->len = src->len;
    return 0;
}

/* ---- entries ---------------------------------------------------------- */

static int kv_alloc(bl_kv *kv, size_t past_len, size_t n_layers) {
    kv->past_len = past_len;
    kv->n_layers = n_layers;
    kv->layers_kv_base = calloc(n_layers ? n_layers : 1, sizeof(size_t)); /* vec![0; layers] */
    kv->layers_k = calloc(n_layers ? n_layers : 1, sizeof(bl_vecf));
    kv->layers_v = calloc(n_layers ? n_layers : 1, sizeof(bl_vecf));
    return kv->layers_kv_base && kv->layers_k && kv->layers_v ? 0 : -1;
}

static void kv_drop(bl_kv *kv) {
    for (size_t l = 0; l < kv->n_layers; l++) {
        if (kv->layers_k) free(kv->layers_k[l].ptr);
        if (kv->layers_v) free(kv->layers_v[l].ptr);
    }
    free(kv->layers_kv_base);
    free(kv->layers_k);
    free(kv->layers_v);
    memset(kv, 0, sizeof *kv);
}

void bl_entry_drop(bl_entry *e) {
    free(e->tokens);
    kv_drop(&e->kv);
    memset(e, 0, sizeof *e);
}

int bl_entry_make(bl_entry *e, const uint32_t *tokens, size_t n_tokens, size_t n_layers,
                  const float *const *k, const size_t *k_lens, const float *const *v,
                  const size_t *v_lens) {
    memset(e, 0, sizeof *e);
    e->n_tokens = n_tokens;
    e->tokens = malloc(n_tokens ? n_tokens * sizeof *tokens : 1);
    if (!e->tokens || kv_alloc(&e->kv, n_tokens, n_layers)) goto fail;
    if (n_tokens) memcpy(e->tokens, tokens, n_tokens * sizeof *tokens);
    for (size_t l = 0; l < n_layers; l++) {
        bl_vecf src_k = {(float *)k[l], k_lens[l], k_lens[l]};
        bl_vecf src_v = {(float *)v[l], v_lens[l], v_lens[l]};
        if (vecf_clone(&e->kv.layers_k[l], &src_k) || vecf_clone(&e->kv.layers_v[l], &src_v))
            goto fail;
    }
    return 0;
fail:
    bl_entry_drop(e);
    return -1;
}

/* #[derive(Clone)] CacheEntry: tokens.clone(), kv.clone() (each inner Vec). */
int bl_entry_clone(bl_entry *dst, const bl_entry *src) {
    memset(dst, 0, sizeof *dst);
    dst->n_tokens = src->n_tokens;
    dst->tokens = malloc(src->n_tokens ? src->n_tokens * sizeof(uint32_t) : 1);
    if (!dst->tokens || kv_alloc(&dst->kv, src->kv.past_len, src->kv.n_layers)) goto fail;
    if (src->n_tokens) memcpy(dst->tokens, src->tokens, src->n_tokens * sizeof(uint32_t));
    memcpy(dst->kv.layers_kv_base, src->kv.layers_kv_base, src->kv.n_layers * sizeof(size_t));
    for (size_t l = 0; l < src->kv.n_layers; l++)
        if (vecf_clone(&dst->kv.layers_k[l], &src->kv.layers_k[l])) goto fail;
    for (size_t l = 0; l < src->kv.n_layers; l++)
        if (vecf_clone(&dst->kv.layers_v[l], &src->kv.layers_v[l])) goto fail;
    return 0;
fail:
    bl_entry_drop(dst);
    return -1;
}

/* CacheEntry::kv_bytes */
size_t bl_entry_kv_bytes(const bl_entry *e) {
    size_t k = 0, v = 0;
    for (size_t l = 0; l < e->kv.n_layers; l++) k += e->kv.layers_k[l].len;
    for (size_t l = 0; l < e->kv.n_layers; l++) v += e->kv.layers_v[l].len;
    return k * 4 + v * 4;
}

/* ---- the cache -------------------------------------------------------- */

void bl_cache_init(bl_cache *c, size_t cap_bytes) {
    memset(c, 0, sizeof *c);
    c->cap_bytes = cap_bytes;
}

void bl_cache_drop(bl_cache *c) {
    for (size_t i = 0; i < c->len; i++) bl_entry_drop(&c->entries[i]);
    free(c->entries);
    free(c->ticks);
    memset(c, 0, sizeof *c);
}

/* fn common_prefix_len: a.iter().zip(b).take_while(|(x, y)| x == y).count() */
static size_t common_prefix_len(const uint32_t *a, size_t na, const uint32_t *b, size_t nb) {
    size_t n = na < nb ? na : nb, i = 0;
    while (i < n && a[i] == b[i]) i++;
    return i;
}

int bl_longest_prefix(bl_cache *c, const uint32_t *query, size_t n, size_t *matched,
                      bl_entry *out) {
    size_t best = (size_t)-1, best_len = 0;
    for (size_t i = 0; i < c->len; i++) {
        const bl_entry *e = &c->entries[i];
        if (e->n_tokens > n) continue;
        size_t cpl = common_prefix_len(e->tokens, e->n_tokens, query, n);
        /* Only a *full* entry-prefix match is reusable. */
        if (cpl == e->n_tokens && cpl > best_len) {
            best_len = cpl;
            best = i;
        }
    }
    if (best == (size_t)-1) return 0;
    c->clock += 1;
    c->ticks[best] = c->clock;
    *matched = best_len;
    return bl_entry_clone(out, &c->entries[best]) ? -1 : 1;
}

static int reserve_one(bl_cache *c) {
    if (c->len < c->cap) return 0;
    size_t nc = grow_cap(c->cap, c->len + 1);
    bl_entry *ne = realloc(c->entries, nc * sizeof *ne);
    if (!ne) return -1;
    c->entries = ne;
    uint64_t *nt = realloc(c->ticks, nc * sizeof *nt);
    if (!nt) return -1;
    c->ticks = nt;
    c->cap = nc;
    return 0;
}

/* fn evict_to_cap: drop LRU entries (min tick, by a scan) until within the
 * cap, keeping at least one; entries.remove / ticks.remove shift the tail. */
static void evict_to_cap(bl_cache *c) {
    while (c->bytes > c->cap_bytes && c->len > 1) {
        size_t lru = 0;
        for (size_t i = 1; i < c->len; i++)
            if (c->ticks[i] < c->ticks[lru]) lru = i;
        c->bytes -= bl_entry_kv_bytes(&c->entries[lru]);
        bl_entry_drop(&c->entries[lru]);
        memmove(c->entries + lru, c->entries + lru + 1, (c->len - lru - 1) * sizeof *c->entries);
        memmove(c->ticks + lru, c->ticks + lru + 1, (c->len - lru - 1) * sizeof *c->ticks);
        c->len--;
    }
}

int bl_insert(bl_cache *c, bl_entry *e) {
    size_t add = bl_entry_kv_bytes(e);
    /* self.entries.iter().position(|x| x.tokens == entry.tokens): slice
     * equality, i.e. equal lengths and a memcmp. */
    for (size_t i = 0; i < c->len; i++) {
        bl_entry *x = &c->entries[i];
        if (x->n_tokens == e->n_tokens &&
            (e->n_tokens == 0 || memcmp(x->tokens, e->tokens, e->n_tokens * sizeof *e->tokens) == 0)) {
            c->bytes -= bl_entry_kv_bytes(x);
            c->bytes += add;
            bl_entry_drop(x);
            *x = *e;
            memset(e, 0, sizeof *e);
            c->clock += 1;
            c->ticks[i] = c->clock;
            evict_to_cap(c);
            return 0;
        }
    }
    c->clock += 1;
    if (reserve_one(c)) return -1;
    c->entries[c->len] = *e;
    c->ticks[c->len] = c->clock;
    c->len++;
    memset(e, 0, sizeof *e);
    c->bytes += add;
    evict_to_cap(c);
    return 0;
}

int bl_push_unchecked(bl_cache *c, bl_entry *e) {
    if (reserve_one(c)) return -1;
    c->clock += 1;
    c->bytes += bl_entry_kv_bytes(e);
    c->entries[c->len] = *e;
    c->ticks[c->len] = c->clock;
    c->len++;
    memset(e, 0, sizeof *e);
    return 0;
}

void bl_pop(bl_cache *c) {
    if (!c->len) return;
    c->len--;
    c->bytes -= bl_entry_kv_bytes(&c->entries[c->len]);
    bl_entry_drop(&c->entries[c->len]);
}

/* ---- BufWriter / BufReader (8 KiB, std's DEFAULT_BUF_SIZE) ------------- */

#define BUF_SIZE 8192

typedef struct writer {
    uint8_t buf[BUF_SIZE];
    size_t n;
    int (*sink)(void *ctx, const uint8_t *p, size_t n); /* the inner Write: all or -1 */
    void *ctx;
} writer;

static int flush_buf(writer *w) {
    if (w->n && w->sink(w->ctx, w->buf, w->n)) return -1;
    w->n = 0;
    return 0;
}

static int write_all_cold(writer *w, const void *p, size_t n) {
    if (flush_buf(w)) return -1;
    if (n >= BUF_SIZE) return w->sink(w->ctx, p, n);
    memcpy(w->buf, p, n);
    w->n = n;
    return 0;
}

/* BufWriter::write_all: the inlined fast path copies into the buffer. */
static inline int write_all(writer *w, const void *p, size_t n) {
    if (n < BUF_SIZE - w->n) {
        memcpy(w->buf + w->n, p, n);
        w->n += n;
        return 0;
    }
    return write_all_cold(w, p, n);
}

typedef struct reader {
    uint8_t buf[BUF_SIZE];
    size_t pos, filled;
    long (*src)(void *ctx, uint8_t *p, size_t n); /* the inner Read: bytes, 0 at EOF, -1 */
    void *ctx;
} reader;

static int read_exact_cold(reader *r, void *p, size_t n) {
    uint8_t *d = p;
    while (n) {
        if (r->pos == r->filled) {
            if (n >= BUF_SIZE) { /* BufReader bypasses its buffer for big reads */
                long got = r->src(r->ctx, d, n);
                if (got <= 0) return -1;
                d += got;
                n -= (size_t)got;
                continue;
            }
            long got = r->src(r->ctx, r->buf, BUF_SIZE);
            if (got <= 0) return -1; /* UnexpectedEof */
            r->pos = 0;
            r->filled = (size_t)got;
        }
        size_t take = r->filled - r->pos < n ? r->filled - r->pos : n;
        memcpy(d, r->buf + r->pos, take);
        r->pos += take;
        d += take;
        n -= take;
    }
    return 0;
}

/* BufReader::read_exact: the inlined fast path copies out of the buffer. */
static inline int read_exact(reader *r, void *p, size_t n) {
    if (r->filled - r->pos >= n) {
        memcpy(p, r->buf + r->pos, n);
        r->pos += n;
        return 0;
    }
    return read_exact_cold(r, p, n);
}

/* ---- save_entry / load_entry ----------------------------------------- */

static const uint8_t MAGIC[8] = {'R', 'L', 'X', 'K', 'V', '0', '0', '1'};

static int write_u64(writer *w, uint64_t v) {
    uint8_t b[8];
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i)); /* to_le_bytes */
    return write_all(w, b, 8);
}

static int read_u64(reader *r, uint64_t *v) {
    uint8_t b[8];
    if (read_exact(r, b, 8)) return -1;
    *v = 0;
    for (int i = 0; i < 8; i++) *v |= (uint64_t)b[i] << (8 * i); /* from_le_bytes */
    return 0;
}

static int write_f32_block(writer *w, const bl_vecf *data) {
    if (write_u64(w, data->len)) return -1;
    for (size_t i = 0; i < data->len; i++) {
        uint8_t b[4];
        memcpy(b, &data->ptr[i], 4); /* x.to_le_bytes() on a little-endian host */
        if (write_all(w, b, 4)) return -1;
    }
    return 0;
}

static int read_f32_block(reader *r, bl_vecf *out) {
    uint64_t n;
    if (read_u64(r, &n)) return -1;
    if (vecf_with_capacity(out, (size_t)n)) return -1;
    for (uint64_t i = 0; i < n; i++) {
        uint8_t b[4];
        float f;
        if (read_exact(r, b, 4)) return -1;
        memcpy(&f, b, 4);
        if (out->len == out->cap) { /* Vec::push */
            size_t nc = grow_cap(out->cap, out->len + 1);
            float *np = realloc(out->ptr, nc * sizeof *np);
            if (!np) return -1;
            out->ptr = np;
            out->cap = nc;
        }
        out->ptr[out->len++] = f;
    }
    return 0;
}

static int save_to(writer *w, const bl_entry *e, uint64_t fingerprint) {
    if (write_all(w, MAGIC, 8) || write_u64(w, fingerprint) || write_u64(w, e->kv.past_len) ||
        write_u64(w, e->n_tokens))
        return -1;
    for (size_t i = 0; i < e->n_tokens; i++)
        if (write_u64(w, e->tokens[i])) return -1;
    if (write_u64(w, e->kv.n_layers)) return -1;
    for (size_t l = 0; l < e->kv.n_layers; l++)
        if (write_f32_block(w, &e->kv.layers_k[l])) return -1;
    for (size_t l = 0; l < e->kv.n_layers; l++)
        if (write_f32_block(w, &e->kv.layers_v[l])) return -1;
    return flush_buf(w); /* f.flush() */
}

static int load_from(reader *r, uint64_t fingerprint, bl_entry *out) {
    uint8_t magic[8];
    uint64_t fp, past_len, n_tokens, layers;
    memset(out, 0, sizeof *out);
    if (read_exact(r, magic, 8)) return -1;
    if (memcmp(magic, MAGIC, 8) != 0) return 0;
    if (read_u64(r, &fp)) return -1;
    if (fp != fingerprint) return 0;
    if (read_u64(r, &past_len) || read_u64(r, &n_tokens)) return -1;
    out->tokens = malloc(n_tokens ? (size_t)n_tokens * sizeof(uint32_t) : 1);
    if (!out->tokens) return -1;
    for (uint64_t i = 0; i < n_tokens; i++) {
        uint64_t t;
        if (read_u64(r, &t)) goto fail;
        out->tokens[out->n_tokens++] = (uint32_t)t; /* `as u32` */
    }
    if (read_u64(r, &layers)) goto fail;
    if (kv_alloc(&out->kv, (size_t)past_len, (size_t)layers)) goto fail;
    for (uint64_t l = 0; l < layers; l++)
        if (read_f32_block(r, &out->kv.layers_k[l])) goto fail;
    for (uint64_t l = 0; l < layers; l++)
        if (read_f32_block(r, &out->kv.layers_v[l])) goto fail;
    return 1;
fail:
    bl_entry_drop(out);
    return -1;
}

/* Memory sink and source. */
static int bytes_sink(void *ctx, const uint8_t *p, size_t n) {
    bl_bytes *b = ctx;
    if (b->cap - b->len < n) {
        size_t nc = grow_cap(b->cap, b->len + n);
        uint8_t *np = realloc(b->ptr, nc);
        if (!np) return -1;
        b->ptr = np;
        b->cap = nc;
    }
    memcpy(b->ptr + b->len, p, n);
    b->len += n;
    return 0;
}

typedef struct slice_src {
    const uint8_t *p;
    size_t left;
} slice_src;

static long slice_read(void *ctx, uint8_t *p, size_t n) {
    slice_src *s = ctx;
    size_t k = n < s->left ? n : s->left;
    memcpy(p, s->p, k);
    s->p += k;
    s->left -= k;
    return (long)k;
}

int bl_encode(const bl_entry *e, uint64_t fingerprint, bl_bytes *out) {
    static writer w; /* 8 KiB: not on the stack */
    w.n = 0;
    w.sink = bytes_sink;
    w.ctx = out;
    return save_to(&w, e, fingerprint);
}

int bl_decode(const uint8_t *buf, size_t len, uint64_t fingerprint, bl_entry *out) {
    static reader r;
    slice_src s = {buf, len};
    r.pos = r.filled = 0;
    r.src = slice_read;
    r.ctx = &s;
    return load_from(&r, fingerprint, out);
}

/* File sink and source: write(2) / read(2), as std::fs::File. */
static int fd_sink(void *ctx, const uint8_t *p, size_t n) {
    int fd = *(int *)ctx;
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static long fd_read(void *ctx, uint8_t *p, size_t n) {
    int fd = *(int *)ctx;
    for (;;) {
        ssize_t k = read(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        return (long)k;
    }
}

int bl_save_entry(const char *path, const bl_entry *e, uint64_t fingerprint) {
    static writer w;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644); /* File::create */
    if (fd < 0) return -1;
    w.n = 0;
    w.sink = fd_sink;
    w.ctx = &fd;
    int rc = save_to(&w, e, fingerprint);
    if (close(fd) != 0) rc = -1;
    return rc;
}

int bl_load_entry(const char *path, uint64_t fingerprint, bl_entry *out) {
    static reader r;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    r.pos = r.filled = 0;
    r.src = fd_read;
    r.ctx = &fd;
    int rc = load_from(&r, fingerprint, out);
    close(fd);
    return rc;
}
