/* Pages under test (tests/c/test_pages.c, tests/fuzz/fuzz_pages.c): a
 * paging cache of a small layout, entries whose values are a function of
 * each token's whole prefix (as a model's KV is), and the check that a hit
 * gathers exactly those. */
#ifndef RLXKV_PAGE_VALUES_H
#define RLXKV_PAGE_VALUES_H
#include <stdlib.h>
#include <string.h>

#include "cache_check.h"
#include "rlxkv.h"

enum { HEADS = 2, HEAD_DIM = 3, LAYERS = 2, BLOCKS = 2 * LAYERS, ROW = HEADS * HEAD_DIM };
static const size_t TOKEN_BYTES = BLOCKS * ROW * sizeof(float);

/* The value of (block b, head h, token i, d) for tokens t: from a hash of
 * t[0..i], exact in a float. */
static inline float value(const uint32_t *t, size_t i, size_t b, size_t h, size_t d) {
    uint32_t x = 2166136261u;
    for (size_t k = 0; k <= i; k++) x = (x ^ t[k]) * 16777619u;
    x ^= (uint32_t)(b * 131 + h * 17 + d);
    x *= 0x9e3779b1u;
    return (float)(x >> 16);
}

static inline rlxkv_cache *paged_cache(size_t cap, int order) {
    rlxkv_cache *c = rlxkv_cache_new(cap, 7);
    rlxkv_layout l = {order, HEADS, HEAD_DIM, LAYERS};
    if (!c || rlxkv_cache_set_layout(c, &l) || rlxkv_cache_set_paging(c, 1)) abort();
    return c;
}

/* An entry of t[0..n) with the values of tokens start..n-1, head-major
 * ([head][token][d]) or token-major ([token][head][d]). */
static inline rlxkv_entry *page_of(const uint32_t *t, size_t n, size_t start, int order) {
    size_t lens[BLOCKS], rows = n - start;
    for (size_t b = 0; b < BLOCKS; b++) lens[b] = rows * ROW;
    rlxkv_entry *e = rlxkv_entry_new_at(n, start, LAYERS, lens, RLXKV_F32, NULL);
    if (!e) abort();
    memcpy(rlxkv_entry_tokens_mut(e), t, n * sizeof *t);
    for (size_t b = 0; b < BLOCKS; b++) {
        float *f = rlxkv_entry_block_mut(e, b);
        for (size_t h = 0; h < HEADS; h++)
            for (size_t r = 0; r < rows; r++)
                for (size_t d = 0; d < HEAD_DIM; d++) {
                    size_t at = order == RLXKV_HEAD_MAJOR ? (h * rows + r) * HEAD_DIM + d : (r * HEADS + h) * HEAD_DIM + d;
                    f[at] = value(t, start + r, b, h, d);
                }
    }
    return e;
}

/* Whether a partial lookup of q[0..n) matches `want` tokens and its copy
 * holds exactly the values of those tokens. */
static inline int hit_is_exact(rlxkv_cache *c, const uint32_t *q, size_t n, size_t want, int order) {
    rlxkv_hit h;
    if (rlxkv_cache_lookup_partial(c, q, n, n, &h) != RLXKV_HIT || h.matched != want) return 0;
    size_t nv = rlxkv_hit_n_values(&h), lens[BLOCKS];
    if (nv != want * ROW * BLOCKS) return 0;
    float *got = malloc(nv * sizeof *got + 1);
    rlxkv_hit_copy(&h, got, lens);
    int ok = 1;
    for (size_t b = 0; b < BLOCKS; b++) {
        const float *f = got + b * want * ROW;
        ok &= lens[b] == want * ROW;
        for (size_t h2 = 0; h2 < HEADS; h2++)
            for (size_t r = 0; r < want; r++)
                for (size_t d = 0; d < HEAD_DIM; d++) {
                    size_t at = order == RLXKV_HEAD_MAJOR ? (h2 * want + r) * HEAD_DIM + d : (r * HEADS + h2) * HEAD_DIM + d;
                    ok &= f[at] == value(q, r, b, h2, d);
                }
    }
    free(got);
    return ok;
}

/* A program of `steps` random operations on a new paging cache, the
 * choices drawn from next(ctx): puts that extend one of six conversations
 * over a shared head (whole, or from what the cache holds), removals, pins,
 * caps, clears and lookups, with the stored index on or off. Returns NULL
 * when every step left the cache consistent and every hit exact, else what
 * went wrong. */
static inline const char *pages_program(uint32_t (*next)(void *), void *ctx, int steps) {
    int order = next(ctx) % 2 ? RLXKV_HEAD_MAJOR : RLXKV_TOKEN_MAJOR;
    rlxkv_cache *c = paged_cache((size_t)(next(ctx) % 400 + 20) * BLOCKS * ROW * sizeof(float), order);
    const char *why = NULL;
    uint32_t convs[6][160];
    size_t lens[6] = {0};
    rlxkv_cache_set_stored_index(c, (int)(next(ctx) % 3 == 0));
    for (int step = 0; step < steps && !why; step++) {
        int k = (int)(next(ctx) % 6), op = (int)(next(ctx) % 10);
        uint32_t *t = convs[k];
        if (op < 5) { /* a turn: extend, or start over from the shared head */
            if (!lens[k] || lens[k] > 140 || next(ctx) % 4 == 0) {
                lens[k] = next(ctx) % 20;
                for (size_t i = 0; i < lens[k]; i++) t[i] = 1000 + (uint32_t)i;
            }
            size_t add = next(ctx) % 12 + 1;
            for (size_t i = 0; i < add; i++) t[lens[k] + i] = next(ctx) % 3 ? next(ctx) % 5 : (uint32_t)k;
            lens[k] += add;
            size_t start = next(ctx) % 2 ? 0 : rlxkv_cache_held(c, t, lens[k], RLXKV_F32, LAYERS, NULL);
            if (start == SIZE_MAX) start = 0; /* held but cannot stay beside them: bring every value */
            int st = rlxkv_cache_put(c, page_of(t, lens[k], start, order));
            if (st != RLXKV_OK && st != RLXKV_ERR_NOSPACE) why = "a put failed";
        } else if (op == 5 && lens[k]) {
            rlxkv_cache_remove(c, t, lens[k]);
        } else if (op == 6 && lens[k]) {
            if (next(ctx) % 2) rlxkv_cache_pin(c, t, lens[k]);
            else rlxkv_cache_unpin(c, t, lens[k]);
        } else if (op == 7) {
            rlxkv_cache_set_cap(c, (size_t)(next(ctx) % 400) * BLOCKS * ROW * sizeof(float));
        } else if (op == 8 && next(ctx) % 8 == 0) {
            rlxkv_cache_clear(c);
        } else if (lens[k]) {
            rlxkv_hit h;
            size_t n = lens[k] - next(ctx) % (lens[k] > 3 ? 3 : lens[k]);
            if (rlxkv_cache_lookup_partial(c, t, n, n, &h) == RLXKV_HIT && !hit_is_exact(c, t, n, h.matched, order))
                why = "a hit's values are not the ones put";
        }
        if (!why && !rlxkv_cache_check(c, NULL, NULL)) why = "the cache is inconsistent";
    }
    rlxkv_cache_free(c);
    return why;
}

#endif
