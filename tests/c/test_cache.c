/* Tests of the cache: lookup, LRU, pins, partial reuse, scale, and a
 * randomized comparison against the model in cache_model.h. */
#include <stdlib.h>
#include <string.h>

#include "cache_check.h"
#include "cache_model.h"
#include "check.h"
#include "rlxkv.h"

#ifndef RLXKV_FOLDS
#define RLXKV_FOLDS 1 /* as src/cache.c is built (test_cache_nofold: 0) */
#endif

/* TOKS(1, 2, 3) passes a token array and its length. */
#define TOKS(...) \
    (const uint32_t[]){__VA_ARGS__}, sizeof((const uint32_t[]){__VA_ARGS__}) / sizeof(uint32_t)

/* An entry of n tokens with blocks of the given lengths; block b holds
 * fill + b * 1000 + i at float i, so copies can be checked exactly. */
static rlxkv_entry *make(const uint32_t *t, size_t n, size_t n_layers, const size_t *lens,
                         float fill) {
    rlxkv_entry *e = rlxkv_entry_new(n, n_layers, lens, RLXKV_F32, NULL);
    if (!e) abort();
    if (n) memcpy(rlxkv_entry_tokens_mut(e), t, n * sizeof *t);
    for (size_t b = 0; b < 2 * n_layers; b++) {
        float *f = rlxkv_entry_block_mut(e, b);
        for (size_t i = 0; i < lens[b]; i++) f[i] = fill + (float)(b * 1000 + i);
    }
    return e;
}

/* The reference's kv(past, fill): one layer, K and V of 2 floats per
 * token, so 16 bytes per token (64 for four tokens). */
static int put_kv(rlxkv_cache *c, const uint32_t *t, size_t n, float fill) {
    size_t lens[2] = {2 * n, 2 * n};
    return rlxkv_cache_put(c, make(t, n, 1, lens, fill));
}

/* An entry of `bytes` bytes whatever its tokens (one K float per 4 bytes);
 * not row-major unless the numbers happen to divide. */
static int put_bytes(rlxkv_cache *c, const uint32_t *t, size_t n, size_t bytes) {
    size_t lens[2] = {bytes / 4, 0};
    return rlxkv_cache_put(c, make(t, n, 1, lens, 0));
}

/* matched on a hit, -1 on a miss. */
static long matched(rlxkv_cache *c, const uint32_t *q, size_t n) {
    rlxkv_hit h;
    return rlxkv_cache_lookup(c, q, n, &h) == RLXKV_HIT ? (long)h.matched : -1;
}

static long partial(rlxkv_cache *c, const uint32_t *q, size_t n, size_t max_match,
                    rlxkv_hit *h) {
    return rlxkv_cache_lookup_partial(c, q, n, max_match, h) == RLXKV_HIT ? (long)h->matched : -1;
}

/* n_tokens, or 0 for no entry (so a failed check does not crash the rest). */
static size_t n_of(const rlxkv_entry *e) { return e ? rlxkv_entry_n_tokens(e) : 0; }

/* KV bytes of the entry with exactly these tokens, 0 if none. */
static size_t bytes_of(const rlxkv_cache *c, const uint32_t *t, size_t n) {
    const rlxkv_entry *e = rlxkv_cache_get(c, t, n);
    return e ? rlxkv_entry_kv_bytes(e) : 0;
}

static int has(const rlxkv_cache *c, const uint32_t *t, size_t n) {
    return rlxkv_cache_get(c, t, n) != NULL;
}

static rlxkv_stats stats(const rlxkv_cache *c) {
    rlxkv_stats s;
    rlxkv_cache_stats(c, &s);
    return s;
}

static int consistent(const rlxkv_cache *c) { return rlxkv_cache_check(c, NULL, NULL); }

/* ---- the reference's tests -------------------------------------------- */

static void longest_prefix_picks_deepest_match(void) {
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, 0);
    rlxkv_hit h;
    put_kv(c, TOKS(1, 2), 0.1f);
    put_kv(c, TOKS(1, 2, 3, 4), 0.2f);
    CHECK_EQ(rlxkv_cache_lookup(c, TOKS(1, 2, 3, 4, 5, 6), &h), RLXKV_HIT);
    CHECK_EQ(h.matched, 4);
    CHECK_EQ(n_of(h.entry), 4);
    CHECK_EQ(rlxkv_entry_tokens(h.entry)[3], 4);
    /* A query that only shares the shorter prefix falls back to it. */
    CHECK_EQ(matched(c, TOKS(1, 2, 9)), 2);
    CHECK_EQ(matched(c, TOKS(1, 2, 3)), 2);
    CHECK(consistent(c));
    rlxkv_cache_free(c);
}

static void no_match_returns_none(void) {
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, 0);
    rlxkv_hit h;
    put_kv(c, TOKS(5, 6), 0.0f);
    CHECK_EQ(rlxkv_cache_lookup(c, TOKS(1, 2, 3), &h), RLXKV_MISS);
    CHECK(h.entry == NULL);
    /* An entry longer than the query can't be a prefix of it. */
    CHECK_EQ(matched(c, TOKS(5)), -1);
    CHECK_EQ(matched(c, NULL, 0), -1);
    rlxkv_cache_free(c);
}

static void lru_evicts_when_over_cap(void) {
    rlxkv_cache *c = rlxkv_cache_new(100, 0); /* room for one 64-byte entry, not two */
    put_kv(c, TOKS(1, 2, 3, 4), 0.1f);
    put_kv(c, TOKS(5, 6, 7, 8), 0.2f);  /* evicts the first */
    CHECK_EQ(stats(c).entries, 1);
    CHECK_EQ(stats(c).bytes, 64);
    CHECK_EQ(matched(c, TOKS(1, 2, 3, 4)), -1);
    CHECK_EQ(matched(c, TOKS(5, 6, 7, 8)), 4);
    CHECK_EQ(stats(c).evictions, 1);
    rlxkv_cache_free(c);
}

static void lru_keeps_recently_used(void) {
    rlxkv_cache *c = rlxkv_cache_new(140, 0); /* two entries fit (128), a third evicts */
    put_kv(c, TOKS(1, 1, 1, 1), 0.1f);
    put_kv(c, TOKS(2, 2, 2, 2), 0.2f);
    matched(c, TOKS(1, 1, 1, 1));       /* touch entry 1: entry 2 is LRU */
    put_kv(c, TOKS(3, 3, 3, 3), 0.3f);  /* evicts entry 2 */
    CHECK_EQ(matched(c, TOKS(1, 1, 1, 1)), 4);
    CHECK_EQ(matched(c, TOKS(2, 2, 2, 2)), -1);
    CHECK_EQ(matched(c, TOKS(3, 3, 3, 3)), 4);
    rlxkv_cache_free(c);
}

/* ---- lookup details --------------------------------------------------- */

static void empty_entry_is_stored_but_never_matches(void) {
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, 0);
    CHECK_EQ(put_kv(c, NULL, 0, 0), RLXKV_OK);
    CHECK(has(c, NULL, 0));
    CHECK_EQ(matched(c, TOKS(1, 2)), -1);
    CHECK_EQ(matched(c, NULL, 0), -1);
    put_kv(c, TOKS(1), 0);
    CHECK_EQ(matched(c, TOKS(1, 2)), 1);
    CHECK_EQ(rlxkv_cache_remove(c, NULL, 0), RLXKV_OK);
    CHECK(!has(c, NULL, 0));
    CHECK(consistent(c));
    rlxkv_cache_free(c);
}

static void get_is_exact_and_does_not_touch(void) {
    rlxkv_cache *c = rlxkv_cache_new(140, 0);
    put_kv(c, TOKS(1, 2, 3, 4), 0);
    put_kv(c, TOKS(1, 2, 5, 6), 0);
    CHECK(rlxkv_cache_get(c, TOKS(1, 2)) == NULL);      /* a branch point, no entry */
    CHECK(rlxkv_cache_get(c, TOKS(1, 2, 3)) == NULL);
    CHECK(rlxkv_cache_get(c, TOKS(1, 2, 3, 4, 5)) == NULL);
    CHECK(has(c, TOKS(1, 2, 3, 4)));
    CHECK_EQ(stats(c).hits + stats(c).misses, 0);
    put_kv(c, TOKS(7, 7, 7, 7), 0); /* the first is still LRU: get did not touch it */
    CHECK(!has(c, TOKS(1, 2, 3, 4)));
    CHECK(has(c, TOKS(1, 2, 5, 6)));
    rlxkv_cache_free(c);
}

static void remove_prunes_the_tree(void) {
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, 0);
    size_t nodes, labels;
    put_kv(c, TOKS(1, 2, 3, 4), 0);
    put_kv(c, TOKS(1, 2, 5, 6), 0);
    put_kv(c, TOKS(1, 2), 0);
    CHECK(rlxkv_cache_check(c, &nodes, &labels));
    CHECK_EQ(nodes, 4);
    CHECK_EQ(labels, 6);
    CHECK_EQ(rlxkv_cache_remove(c, TOKS(1, 2)), RLXKV_OK);
    CHECK_EQ(rlxkv_cache_remove(c, TOKS(1, 2)), RLXKV_ERR_NOTFOUND);
    CHECK_EQ(rlxkv_cache_remove(c, TOKS(1, 2, 3, 4)), RLXKV_OK);
    /* [1 2] lost its entry and a child: it merges into [5 6]. */
    CHECK(rlxkv_cache_check(c, &nodes, &labels));
    CHECK_EQ(nodes, 2);
    CHECK_EQ(labels, 4);
    CHECK_EQ(matched(c, TOKS(1, 2, 5, 6, 7)), 4);
    CHECK_EQ(rlxkv_cache_remove(c, TOKS(1, 2, 5, 6)), RLXKV_OK);
    CHECK(rlxkv_cache_check(c, &nodes, &labels));
    CHECK_EQ(nodes, 1);
    CHECK_EQ(stats(c).entries, 0);
    CHECK_EQ(stats(c).bytes, 0);
    rlxkv_cache_free(c);
}

/* ---- replacement, cap 0, kept alone ----------------------------------- */

static void replacing_updates_bytes_recency_and_keeps_pin(void) {
    rlxkv_cache *c = rlxkv_cache_new(200, 0);
    put_kv(c, TOKS(1, 1, 1, 1), 1);   /* 64 bytes */
    put_kv(c, TOKS(2, 2, 2, 2), 2);
    CHECK_EQ(stats(c).bytes, 128);
    put_bytes(c, TOKS(1, 1, 1, 1), 32); /* replaces, smaller */
    CHECK_EQ(stats(c).entries, 2);
    CHECK_EQ(stats(c).bytes, 96);
    CHECK_EQ(bytes_of(c, TOKS(1, 1, 1, 1)), 32);
    /* The replacement is the most recent: the next eviction takes [2 2 2 2]. */
    CHECK(rlxkv_cache_next(c, NULL) == rlxkv_cache_get(c, TOKS(1, 1, 1, 1)));
    put_kv(c, TOKS(3, 3, 3, 3), 3);   /* 160 */
    put_kv(c, TOKS(4, 4, 4, 4), 4);   /* 224 > 200: evicts the LRU */
    CHECK(has(c, TOKS(1, 1, 1, 1)));
    CHECK(!has(c, TOKS(2, 2, 2, 2)));
    CHECK_EQ(stats(c).evictions, 1);

    /* A pinned entry stays pinned through replacement. */
    CHECK_EQ(rlxkv_cache_pin(c, TOKS(3, 3, 3, 3)), RLXKV_OK);
    put_kv(c, TOKS(3, 3, 3, 3), 30);
    const rlxkv_entry *e = rlxkv_cache_get(c, TOKS(3, 3, 3, 3));
    CHECK(rlxkv_cache_is_pinned(c, e));
    CHECK_EQ(((const float *)rlxkv_entry_block(e, 0))[0], 30.0f);
    CHECK_EQ(stats(c).pinned_entries, 1);
    CHECK_EQ(stats(c).pinned_bytes, 64);
    CHECK_EQ(stats(c).bytes, 160);
    CHECK(consistent(c));
    rlxkv_cache_free(c);
}

static void cap_zero_disables(void) {
    rlxkv_cache *c = rlxkv_cache_new(0, 0);
    const float k[2] = {1, 2};
    const void *kp = k;
    size_t len = 2;
    CHECK_EQ(put_kv(c, TOKS(1, 2), 0), RLXKV_OK); /* freed: ASan would see a leak */
    CHECK_EQ(rlxkv_cache_insert(c, TOKS(1), 1, RLXKV_F32, &kp, &len, &kp, &len), RLXKV_OK);
    CHECK_EQ(stats(c).entries, 0);
    CHECK_EQ(matched(c, TOKS(1, 2)), -1);

    /* set_cap(0) drops every unpinned entry, keeps pinned ones. */
    rlxkv_cache_set_cap(c, 1000);
    put_kv(c, TOKS(1, 2), 0);
    put_kv(c, TOKS(3, 4), 0);
    put_kv(c, TOKS(5, 6), 0);
    rlxkv_cache_pin(c, TOKS(3, 4));
    rlxkv_cache_set_cap(c, 0);
    CHECK_EQ(stats(c).entries, 1);
    CHECK(has(c, TOKS(3, 4)));
    CHECK_EQ(stats(c).evictions, 2);
    /* And a later insert, even of the pinned tokens, stores nothing. */
    CHECK_EQ(put_bytes(c, TOKS(3, 4), 4), RLXKV_OK);
    CHECK_EQ(bytes_of(c, TOKS(3, 4)), 32);
    CHECK(consistent(c));
    rlxkv_cache_free(c);
}

static void oversized_entry_is_kept_alone(void) {
    rlxkv_cache *c = rlxkv_cache_new(100, 0);
    put_kv(c, TOKS(1), 0);
    put_kv(c, TOKS(2), 0);
    CHECK_EQ(put_bytes(c, TOKS(3, 3), 400), RLXKV_OK);
    CHECK_EQ(stats(c).entries, 1);
    CHECK_EQ(stats(c).bytes, 400);
    CHECK_EQ(matched(c, TOKS(3, 3, 3)), 2);
    /* set_cap keeps it too, while it is alone... */
    rlxkv_cache_set_cap(c, 50);
    CHECK_EQ(stats(c).entries, 1);
    /* ...and it goes as soon as anything else comes in. */
    put_kv(c, TOKS(4), 0);
    CHECK(!has(c, TOKS(3, 3)));
    CHECK(has(c, TOKS(4)));
    CHECK_EQ(stats(c).bytes, 16);
    rlxkv_cache_free(c);
}

static void oversized_entry_is_kept_beside_empty_pins(void) {
    /* Pinned entries of no bytes leave the whole cap free: "alone" is about
     * bytes, so the oversized entry is kept (not evicted by its own put). */
    rlxkv_cache *c = rlxkv_cache_new(100, 0);
    put_bytes(c, TOKS(1), 0);
    rlxkv_cache_pin(c, TOKS(1));
    put_kv(c, TOKS(2), 0);
    CHECK_EQ(put_bytes(c, TOKS(3), 400), RLXKV_OK);
    CHECK(has(c, TOKS(3)));
    CHECK(!has(c, TOKS(2)));
    CHECK_EQ(stats(c).entries, 2);
    rlxkv_cache_set_cap(c, 10);
    CHECK(has(c, TOKS(3)));
    rlxkv_cache_free(c);
}

/* ---- pins ------------------------------------------------------------- */

static void pinned_entries_are_never_evicted(void) {
    rlxkv_cache *c = rlxkv_cache_new(140, 0);
    put_kv(c, TOKS(9, 9, 9, 9), 0);
    CHECK_EQ(rlxkv_cache_pin(c, TOKS(9, 9, 9, 9)), RLXKV_OK);
    CHECK_EQ(rlxkv_cache_pin(c, TOKS(9, 9, 9, 9)), RLXKV_OK); /* twice is fine */
    for (uint32_t i = 0; i < 50; i++) put_kv(c, (uint32_t[]){i, i, i, 100 + i}, 4, 0);
    CHECK(has(c, TOKS(9, 9, 9, 9)));
    CHECK_EQ(stats(c).entries, 2);
    CHECK_EQ(stats(c).pinned_entries, 1);
    rlxkv_cache_set_cap(c, 1);
    CHECK(has(c, TOKS(9, 9, 9, 9)));
    CHECK_EQ(stats(c).entries, 1);
    CHECK_EQ(rlxkv_cache_pin(c, TOKS(9, 9, 9)), RLXKV_ERR_NOTFOUND);
    CHECK_EQ(rlxkv_cache_unpin(c, TOKS(8)), RLXKV_ERR_NOTFOUND);
    CHECK(consistent(c));
    rlxkv_cache_free(c);
}

static void nospace_changes_nothing(void) {
    rlxkv_cache *c = rlxkv_cache_new(140, 0);
    put_kv(c, TOKS(1, 1, 1, 1), 0);  /* 64, pinned */
    rlxkv_cache_pin(c, TOKS(1, 1, 1, 1));
    put_kv(c, TOKS(2, 2, 2, 2), 2);  /* 64 */
    rlxkv_stats before = stats(c);
    const rlxkv_entry *old = rlxkv_cache_get(c, TOKS(2, 2, 2, 2));
    /* 64 pinned + 80 > 140: refused, and the entry with these tokens stays. */
    CHECK_EQ(put_bytes(c, TOKS(2, 2, 2, 2), 80), RLXKV_ERR_NOSPACE);
    CHECK(rlxkv_cache_get(c, TOKS(2, 2, 2, 2)) == old);
    CHECK_EQ(bytes_of(c, TOKS(2, 2, 2, 2)), 64);
    CHECK_EQ(put_bytes(c, TOKS(3), 100), RLXKV_ERR_NOSPACE);
    CHECK(!has(c, TOKS(3)));
    rlxkv_stats after = stats(c);
    CHECK(before.entries == after.entries && before.bytes == after.bytes);
    CHECK(before.pinned_bytes == after.pinned_bytes && before.evictions == after.evictions);
    /* 76 fits beside the pin: the unpinned one makes way. */
    CHECK_EQ(put_bytes(c, TOKS(3), 76), RLXKV_OK);
    CHECK(!has(c, TOKS(2, 2, 2, 2)));
    /* Replacing the pinned entry itself counts only the other pins. */
    CHECK_EQ(put_bytes(c, TOKS(1, 1, 1, 1), 500), RLXKV_OK);
    CHECK_EQ(stats(c).entries, 1); /* kept alone, pinned */
    CHECK_EQ(stats(c).pinned_bytes, 500);
    CHECK(consistent(c));
    rlxkv_cache_free(c);
}

static void unpin_makes_evictable(void) {
    rlxkv_cache *c = rlxkv_cache_new(140, 0);
    put_kv(c, TOKS(1, 1, 1, 1), 0);
    rlxkv_cache_pin(c, TOKS(1, 1, 1, 1));
    put_kv(c, TOKS(2, 2, 2, 2), 0);
    put_kv(c, TOKS(3, 3, 3, 3), 0); /* evicts 2: 1 is pinned */
    CHECK(has(c, TOKS(1, 1, 1, 1)));
    CHECK(!has(c, TOKS(2, 2, 2, 2)));
    CHECK_EQ(rlxkv_cache_unpin(c, TOKS(1, 1, 1, 1)), RLXKV_OK);
    CHECK(!rlxkv_cache_is_pinned(c, rlxkv_cache_get(c, TOKS(1, 1, 1, 1))));
    CHECK_EQ(stats(c).pinned_entries, 0);
    /* Unpinned, it counts as just used: 3 goes first, then 1. */
    put_kv(c, TOKS(4, 4, 4, 4), 0);
    CHECK(!has(c, TOKS(3, 3, 3, 3)));
    CHECK(has(c, TOKS(1, 1, 1, 1)));
    put_kv(c, TOKS(5, 5, 5, 5), 0);
    CHECK(!has(c, TOKS(1, 1, 1, 1)));
    CHECK(consistent(c));
    rlxkv_cache_free(c);
}

/* ---- partial reuse ---------------------------------------------------- */

/* One layer: K of 3 floats per token, V of 2. */
static int put_rows(rlxkv_cache *c, const uint32_t *t, size_t n, float fill) {
    size_t lens[2] = {3 * n, 2 * n};
    return rlxkv_cache_put(c, make(t, n, 1, lens, fill));
}

static void partial_reuse_trims_to_the_common_prefix(void) {
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, 0);
    rlxkv_hit h;
    put_rows(c, TOKS(1, 2, 3, 4, 5, 6), 0);
    /* Shares 4 tokens: a plain lookup misses, a partial one reuses 4 rows. */
    CHECK_EQ(matched(c, TOKS(1, 2, 3, 4, 9)), -1);
    CHECK_EQ(partial(c, TOKS(1, 2, 3, 4, 9), 100, &h), 4);
    CHECK_EQ(n_of(h.entry), 6);
    CHECK_EQ(rlxkv_hit_n_values(&h), 4 * 3 + 4 * 2);
    /* A query that ends inside the entry. */
    CHECK_EQ(partial(c, TOKS(1, 2), 100, &h), 2);
    CHECK_EQ(partial(c, TOKS(2, 1), 100, &h), -1);
    /* Branching off higher up, past a shorter full entry. */
    put_rows(c, TOKS(1, 2, 3), 0);
    put_rows(c, TOKS(1, 2, 3, 4, 5, 7), 0);
    CHECK_EQ(partial(c, TOKS(1, 2, 3, 4, 8), 100, &h), 4);
    CHECK_EQ(n_of(h.entry), 6);
    CHECK_EQ(partial(c, TOKS(1, 2, 3, 8), 100, &h), 3);
    CHECK(h.entry == rlxkv_cache_get(c, TOKS(1, 2, 3))); /* full wins the tie */
    CHECK_EQ(stats(c).tokens_reused, 4 + 2 + 4 + 3);
    rlxkv_cache_free(c);
}

static void partial_reuse_respects_max_match(void) {
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, 0);
    rlxkv_hit h;
    put_rows(c, TOKS(1, 2, 3, 4, 5, 6), 0);
    put_rows(c, TOKS(1, 2), 0);
    CHECK_EQ(partial(c, TOKS(1, 2, 3, 4, 5, 6, 7), 3, &h), 3); /* full prefix, trimmed */
    CHECK_EQ(n_of(h.entry), 6);
    CHECK_EQ(partial(c, TOKS(1, 2, 3, 4, 5, 6, 7), 2, &h), 2); /* the full [1 2] wins the tie */
    CHECK_EQ(n_of(h.entry), 2);
    CHECK_EQ(partial(c, TOKS(1, 2, 3, 4, 5, 6, 7), 1, &h), 1);
    CHECK_EQ(partial(c, TOKS(1, 2, 3, 4, 5, 6, 7), 0, &h), -1); /* matched must be >= 1 */
    CHECK_EQ(partial(c, TOKS(1, 2, 3, 4, 5, 6, 7), 99, &h), 6);
    rlxkv_cache_free(c);
}

static void partial_reuse_refuses_non_row_major(void) {
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, 0);
    rlxkv_hit h;
    size_t lens[2] = {3 * 6 + 1, 2 * 6}; /* K is not one row per token */
    rlxkv_cache_put(c, make((const uint32_t[]){1, 2, 3, 4, 5, 6}, 6, 1, lens, 0));
    CHECK(!rlxkv_entry_row_major(rlxkv_cache_get(c, TOKS(1, 2, 3, 4, 5, 6))));
    CHECK_EQ(partial(c, TOKS(1, 2, 3, 4, 9), 100, &h), -1);
    CHECK_EQ(partial(c, TOKS(1, 2, 3, 4, 5, 6, 7), 3, &h), -1);  /* no trimming either */
    CHECK_EQ(partial(c, TOKS(1, 2, 3, 4, 5, 6, 7), 6, &h), 6);   /* whole is fine */
    CHECK_EQ(rlxkv_hit_n_values(&h), 3 * 6 + 1 + 2 * 6);
    /* A row-major sibling is found past it. */
    put_rows(c, TOKS(1, 2, 3, 7), 0);
    CHECK_EQ(partial(c, TOKS(1, 2, 3, 4, 9), 100, &h), 3);
    CHECK_EQ(rlxkv_entry_tokens(h.entry)[3], 7);
    rlxkv_cache_free(c);
}

static void hit_copy_takes_the_first_rows_exactly(void) {
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, 0);
    /* Two layers through rlxkv_cache_insert, K and V of different widths. */
    enum { N = 5 };
    float k0[N * 4], k1[N * 4], v0[N * 2], v1[N * 2];
    for (int i = 0; i < N * 4; i++) k0[i] = (float)i, k1[i] = 100.0f + (float)i;
    for (int i = 0; i < N * 2; i++) v0[i] = 200.0f + (float)i, v1[i] = 300.0f + (float)i;
    const void *k[2] = {k0, k1}, *v[2] = {v0, v1};
    size_t kl[2] = {N * 4, N * 4}, vl[2] = {N * 2, N * 2};
    CHECK_EQ(rlxkv_cache_insert(c, TOKS(10, 11, 12, 13, 14), 2, RLXKV_F32, k, kl, v, vl), RLXKV_OK);

    rlxkv_hit h;
    float out[N * 12];
    size_t lens[4];
    CHECK_EQ(partial(c, TOKS(10, 11, 12, 99), 100, &h), 3);
    CHECK_EQ(rlxkv_hit_n_values(&h), 3 * 4 * 2 + 3 * 2 * 2);
    rlxkv_hit_copy(&h, out, lens);
    CHECK(lens[0] == 12 && lens[1] == 12 && lens[2] == 6 && lens[3] == 6);
    CHECK(memcmp(out, k0, 12 * sizeof(float)) == 0);
    CHECK(memcmp(out + 12, k1, 12 * sizeof(float)) == 0);
    CHECK(memcmp(out + 24, v0, 6 * sizeof(float)) == 0);
    CHECK(memcmp(out + 30, v1, 6 * sizeof(float)) == 0);

    /* A full hit copies everything. */
    CHECK_EQ(matched(c, TOKS(10, 11, 12, 13, 14, 15)), 5);
    CHECK_EQ(rlxkv_cache_lookup(c, TOKS(10, 11, 12, 13, 14), &h), RLXKV_HIT);
    CHECK_EQ(rlxkv_hit_n_values(&h), N * 12);
    rlxkv_hit_copy(&h, out, NULL);
    CHECK(memcmp(out, k0, sizeof k0) == 0);
    CHECK(memcmp(out + N * 4, k1, sizeof k1) == 0);
    CHECK(memcmp(out + N * 8, v0, sizeof v0) == 0);
    CHECK(memcmp(out + N * 10, v1, sizeof v1) == 0);
    CHECK(memcmp(out, rlxkv_entry_data(h.entry), sizeof out) == 0);
    rlxkv_cache_free(c);
}

/* ---- iteration, dirty, stats, arguments ------------------------------- */

static void iteration_is_pinned_first_then_most_recent(void) {
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, 0);
    put_kv(c, TOKS(1), 0);
    put_kv(c, TOKS(2), 0);
    put_kv(c, TOKS(3), 0);
    put_kv(c, TOKS(4), 0);
    rlxkv_cache_pin(c, TOKS(2));
    matched(c, TOKS(1, 5));
    uint32_t want[4] = {2, 1, 4, 3}, i = 0;
    for (const rlxkv_entry *e = rlxkv_cache_next(c, NULL); e; e = rlxkv_cache_next(c, e), i++)
        CHECK(i < 4 && rlxkv_entry_tokens(e)[0] == want[i]);
    CHECK_EQ(i, 4);
    rlxkv_cache_clear(c);
    CHECK(rlxkv_cache_next(c, NULL) == NULL);
    rlxkv_cache_free(c);
}

static void entries_are_dirty_until_marked_clean(void) {
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, 42);
    CHECK_EQ(rlxkv_cache_fingerprint(c), 42);
    put_kv(c, TOKS(1, 2), 0);
    const rlxkv_entry *e = rlxkv_cache_get(c, TOKS(1, 2));
    CHECK(rlxkv_cache_is_dirty(c, e));
    rlxkv_cache_mark_clean(c, e);
    CHECK(!rlxkv_cache_is_dirty(c, e));
    rlxkv_cache_pin(c, TOKS(1, 2));
    CHECK(!rlxkv_cache_is_dirty(c, e)); /* pinning is not a change of content */
    put_kv(c, TOKS(1, 2), 1);
    CHECK(rlxkv_cache_is_dirty(c, rlxkv_cache_get(c, TOKS(1, 2))));
    rlxkv_cache_free(c);
}

static void stats_count_hits_misses_and_reuse(void) {
    rlxkv_cache *c = rlxkv_cache_new(1000, 0);
    put_kv(c, TOKS(1, 2, 3), 0);
    put_rows(c, TOKS(7, 8, 9), 0);
    matched(c, TOKS(1, 2, 3, 4));
    matched(c, TOKS(1, 2, 3));
    matched(c, TOKS(1, 2));
    matched(c, TOKS(5));
    rlxkv_hit h;
    partial(c, TOKS(7, 8, 1), 9, &h);
    partial(c, TOKS(1, 2, 1), 9, &h);   /* [1 2 3] is row-major too: 2 rows */
    partial(c, TOKS(6), 9, &h);
    rlxkv_stats s = stats(c);
    CHECK_EQ(s.hits, 4);
    CHECK_EQ(s.misses, 3);
    CHECK_EQ(s.tokens_reused, 3 + 3 + 2 + 2);
    CHECK_EQ(s.entries, 2);
    CHECK_EQ(s.bytes, 48 + 60);
    CHECK_EQ(s.cap_bytes, 1000);
    CHECK_EQ(s.evictions, 0);
    rlxkv_cache_set_cap(c, 60);
    s = stats(c);
    CHECK_EQ(s.evictions, 1);
    CHECK_EQ(s.cap_bytes, 60);
    CHECK_EQ(s.entries, 1);
    rlxkv_cache_clear(c);
    s = stats(c);
    CHECK(s.entries == 0 && s.bytes == 0 && s.pinned_entries == 0 && s.hits == 4);
    rlxkv_cache_free(c);
}

static void bad_arguments_are_refused(void) {
    rlxkv_cache *c = rlxkv_cache_new(1000, 0);
    rlxkv_hit h;
    rlxkv_stats s;
    size_t lens[2] = {2, 2};
    CHECK_EQ(rlxkv_cache_put(NULL, make(TOKS(1), 1, lens, 0)), RLXKV_ERR_INVALID); /* freed */
    CHECK_EQ(rlxkv_cache_put(c, NULL), RLXKV_ERR_INVALID);
    CHECK_EQ(rlxkv_cache_insert(NULL, TOKS(1), 0, RLXKV_F32, NULL, NULL, NULL, NULL), RLXKV_ERR_INVALID);
    CHECK_EQ(rlxkv_cache_insert(c, NULL, 3, 0, RLXKV_F32, NULL, NULL, NULL, NULL), RLXKV_ERR_INVALID);
    CHECK_EQ(rlxkv_cache_insert(c, TOKS(1), 1, RLXKV_F32, NULL, lens, NULL, lens), RLXKV_ERR_INVALID);
    CHECK_EQ(rlxkv_cache_lookup(NULL, TOKS(1), &h), RLXKV_ERR_INVALID);
    CHECK_EQ(rlxkv_cache_lookup(c, NULL, 2, &h), RLXKV_ERR_INVALID);
    CHECK_EQ(rlxkv_cache_lookup_partial(c, NULL, 2, 5, &h), RLXKV_ERR_INVALID);
    CHECK_EQ(rlxkv_cache_lookup_partial(NULL, TOKS(1), 5, &h), RLXKV_ERR_INVALID);
    CHECK(rlxkv_cache_get(NULL, TOKS(1)) == NULL);
    CHECK(rlxkv_cache_get(c, NULL, 1) == NULL);
    CHECK_EQ(rlxkv_cache_remove(NULL, TOKS(1)), RLXKV_ERR_INVALID);
    CHECK_EQ(rlxkv_cache_remove(c, NULL, 1), RLXKV_ERR_INVALID);
    CHECK_EQ(rlxkv_cache_pin(NULL, TOKS(1)), RLXKV_ERR_INVALID);
    CHECK_EQ(rlxkv_cache_unpin(c, NULL, 1), RLXKV_ERR_INVALID);
    CHECK_EQ(rlxkv_cache_is_pinned(NULL, NULL), 0);
    CHECK_EQ(rlxkv_cache_is_dirty(c, NULL), 0);
    CHECK(rlxkv_cache_next(NULL, NULL) == NULL);
    CHECK_EQ(rlxkv_hit_n_values(NULL), 0);
    rlxkv_cache_set_cap(NULL, 5);
    rlxkv_cache_clear(NULL);
    rlxkv_cache_mark_clean(NULL, NULL);
    rlxkv_cache_stats(NULL, &s);
    CHECK_EQ(s.entries, 0);
    rlxkv_cache_free(NULL);
    /* An entry already in a cache is refused, not freed twice. */
    put_kv(c, TOKS(1), 0);
    CHECK_EQ(rlxkv_cache_put(c, (rlxkv_entry *)rlxkv_cache_get(c, TOKS(1))), RLXKV_ERR_INVALID);
    CHECK_EQ(stats(c).entries, 1);
    CHECK(consistent(c));
    rlxkv_cache_free(c);
}

/* ---- scale ------------------------------------------------------------ */

static void ten_thousand_entries_share_a_long_prefix(void) {
    enum { P = 1500, E = 10000 };
    rlxkv_cache *c = rlxkv_cache_new(SIZE_MAX, 0);
    uint32_t *q = malloc((P + 3) * sizeof *q);
    size_t lens[2] = {1, 1}, nodes, labels;
    for (size_t i = 0; i < P; i++) q[i] = (uint32_t)(i * 7 + 3);
    rlxkv_cache_put(c, make(q, P, 1, lens, 0));
    for (uint32_t j = 0; j < E; j++) {
        q[P] = 1000000 + j % 100;  /* suffixes branch at two levels */
        q[P + 1] = j;
        rlxkv_cache_put(c, make(q, P + 2, 1, lens, (float)j));
    }
    CHECK_EQ(stats(c).entries, E + 1);
    int all = 1;
    for (uint32_t j = 0; j < E; j++) {
        rlxkv_hit h;
        q[P] = 1000000 + j % 100;
        q[P + 1] = j;
        q[P + 2] = 5;
        if (rlxkv_cache_lookup(c, q, P + 3, &h) != RLXKV_HIT || h.matched != P + 2 ||
            ((const float *)rlxkv_entry_block(h.entry, 0))[0] != (float)j)
            all = 0;
    }
    CHECK(all);
    q[P + 1] = E + 1; /* an unknown suffix falls back to the prefix */
    CHECK_EQ(matched(c, q, P + 2), P);
    /* The prefix is spelled once in the tree, not once per entry, and the
     * tree copies no tokens at all: its bytes are a bound per node. */
    CHECK(rlxkv_cache_check(c, &nodes, &labels));
    CHECK(nodes <= 2 * (E + 1) + 1);
    CHECK(labels <= P + 2 * E + 100);
    CHECK(rlxkv_cache_tree_bytes(c) <= 256 * nodes);
    free(q);
    rlxkv_cache_free(c);
}

/* Writes the suffix of entry j into q[p .. p + s - 1]: a marker token, then
 * tokens that depend on j (q[0 .. p - 1] is the shared prefix). */
static void fill_suffix(uint32_t *q, size_t p, size_t s, uint32_t j) {
    q[p] = 1000000 + j;
    for (size_t i = p + 1; i < p + s; i++) q[i] = (uint32_t)(i * 31 + j);
}

/* Labels borrow the entries' tokens: long edges cost the tree nothing, and
 * a label whose entry goes moves to another entry below it. */
static void labels_are_borrowed_and_outlive_their_entries(void) {
    enum { P = 1500, S = 500, E = 300 };
    rlxkv_cache *c = rlxkv_cache_new(SIZE_MAX, 0);
    uint32_t *q = malloc((P + S + 1) * sizeof *q);
    size_t lens[2] = {1, 1}, nodes, labels;
    int ok = 1;
    for (size_t i = 0; i < P; i++) q[i] = (uint32_t)(i * 7 + 3);
    for (uint32_t j = 0; j < E; j++) {
        fill_suffix(q, P, S, j);
        rlxkv_cache_put(c, make(q, P + S, 1, lens, (float)j));
    }
    /* The edges spell P + E * S tokens; a copy of them would take 4 bytes
     * each (the tree used to hold ~2,000 bytes per entry here). */
    CHECK(rlxkv_cache_check(c, &nodes, &labels));
    CHECK_EQ(labels, P + E * S);
    CHECK(rlxkv_cache_tree_bytes(c) <= 256 * nodes);
    CHECK(rlxkv_cache_tree_bytes(c) / E < 512);
    /* Remove them in the order they came, then the reverse of a refill:
     * whichever entry the shared edge borrowed from goes at some point. */
    for (int round = 0; round < 2 && ok; round++) {
        for (uint32_t k = 0; k < E; k++) {
            uint32_t j = round ? E - 1 - k : k;
            fill_suffix(q, P, S, j);
            if (rlxkv_cache_remove(c, q, P + S) != RLXKV_OK) ok = 0;
            if (k % 37 == 0 && !rlxkv_cache_check(c, NULL, NULL)) ok = 0;
            /* The shared prefix still reads right, from whatever is left. */
            if (k + 1 == E) continue;
            uint32_t next = round ? j - 1 : j + 1;
            fill_suffix(q, P, S, next);
            q[P + S] = 7;
            if (matched(c, q, P + S + 1) != P + S) ok = 0;
        }
        if (stats(c).entries != 0) ok = 0;
        for (uint32_t j = 0; j < E && !round; j++) {
            fill_suffix(q, P, S, j);
            rlxkv_cache_put(c, make(q, P + S, 1, lens, (float)j));
        }
    }
    CHECK(ok);
    CHECK(consistent(c));

    /* Small cases: an edge borrowed from an entry that is replaced, then
     * removed, then from one that lands on an entry-less node above it. */
    put_kv(c, TOKS(1, 2, 3, 4), 0);
    put_kv(c, TOKS(1, 2, 3, 5), 0);  /* [1 2 3] borrows from one of them */
    put_kv(c, TOKS(1, 2, 3, 4), 1);  /* replaced: its tokens are freed */
    CHECK(consistent(c));
    CHECK_EQ(matched(c, TOKS(1, 2, 3, 4, 9)), 4);
    put_kv(c, TOKS(1, 2, 3, 5), 1);
    CHECK(consistent(c));
    CHECK_EQ(rlxkv_cache_remove(c, TOKS(1, 2, 3, 4)), RLXKV_OK);
    CHECK(consistent(c));
    CHECK_EQ(matched(c, TOKS(1, 2, 3, 5, 9)), 4);
    put_kv(c, TOKS(1, 2, 3, 6), 0);
    put_kv(c, TOKS(1, 2, 3), 0);     /* takes the entry-less [1 2 3] */
    put_kv(c, TOKS(1, 2), 0);        /* splits its edge */
    CHECK(consistent(c));
    CHECK_EQ(rlxkv_cache_remove(c, TOKS(1, 2, 3, 5)), RLXKV_OK);
    CHECK_EQ(rlxkv_cache_remove(c, TOKS(1, 2, 3)), RLXKV_OK);  /* [1 2 3] merges */
    CHECK(rlxkv_cache_check(c, &nodes, &labels));
    CHECK_EQ(nodes, 3);
    CHECK_EQ(labels, 4);
    CHECK_EQ(matched(c, TOKS(1, 2, 3, 6, 9)), 4);
    CHECK_EQ(rlxkv_cache_remove(c, TOKS(1, 2)), RLXKV_OK);
    CHECK(rlxkv_cache_check(c, &nodes, &labels));
    CHECK_EQ(nodes, 2);
    CHECK_EQ(matched(c, TOKS(1, 2, 3, 6)), 4);
    free(q);
    rlxkv_cache_free(c);
}

static void eviction_follows_recency_over_many_entries(void) {
    enum { N = 200 };
    rlxkv_cache *c = rlxkv_cache_new(64 * N, 0);
    uint32_t order[N];
    for (uint32_t i = 0; i < N; i++) put_kv(c, (uint32_t[]){i / 16, i % 16, i, 0}, 4, 0);
    /* Touch them in a scrambled order: that is the eviction order. */
    for (uint32_t i = 0; i < N; i++) {
        order[i] = (i * 7919) % N;
        uint32_t t = order[i];
        CHECK_EQ(matched(c, (uint32_t[]){t / 16, t % 16, t, 0, 1}, 5), 4);
    }
    int ok = 1;
    for (uint32_t i = 0; i < N; i++) {
        uint32_t gone = order[i], next = i + 1 < N ? order[i + 1] : N;
        put_kv(c, (uint32_t[]){9999, i, 0, 0}, 4, 0);
        if (has(c, (uint32_t[]){gone / 16, gone % 16, gone, 0}, 4)) ok = 0;
        if (next < N && !has(c, (uint32_t[]){next / 16, next % 16, next, 0}, 4)) ok = 0;
    }
    CHECK(ok);
    CHECK_EQ(stats(c).evictions, N);
    CHECK(consistent(c));
    rlxkv_cache_free(c);
}

static void many_insert_evict_cycles_stay_bounded(void) {
    rlxkv_cache *c = rlxkv_cache_new(64 * 8, 0);
    size_t nodes, labels, max_nodes = 0;
    int ok = 1;
    for (uint32_t i = 0; i < 100000; i++) {
        /* Shared short prefixes, so nodes split and merge all the time. */
        uint32_t t[4] = {i % 3, (i / 3) % 5, i % 7, i};
        if (put_kv(c, t, 1 + i % 4, 0) != RLXKV_OK) ok = 0;
        if (i % 5 == 0) matched(c, (uint32_t[]){i % 3, 1, 2, 3}, 4);
        if (i % 1000 == 0) {
            if (!rlxkv_cache_check(c, &nodes, &labels)) ok = 0;
            if (nodes > max_nodes) max_nodes = nodes;
        }
    }
    CHECK(ok);
    CHECK(stats(c).bytes <= 64 * 8);
    CHECK(max_nodes <= 2 * 32 + 1); /* at most 32 entries of 16 bytes */
    CHECK(rlxkv_cache_check(c, &nodes, &labels));
    CHECK(labels <= 4 * nodes);
    CHECK(rlxkv_cache_tree_bytes(c) <= 256 * nodes);
    rlxkv_cache_free(c);
}

/* ---- randomized comparison with the model ----------------------------- */

/* The program comes from a PRNG (xorshift64): the same model and steps as
 * tests/fuzz/fuzz_cache.c, with other inputs. */
static unsigned prng_byte(void *ctx) {
    uint64_t *s = ctx;
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (unsigned)(*s >> 32) & 0xff;
}
static int prng_more(void *ctx) {
    (void)ctx;
    return 1;
}

/* `programs` programs of `steps` steps each, from seeds 1, 2, ... */
static void randomized_runs(const cm_config *cfg, int programs) {
    static cm_run run;
    int ok = 1;
    for (int i = 0; i < programs && ok; i++) {
        uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
        cm_input in = {prng_byte, prng_more, &seed};
        ok = cm_run_program(&run, &in, cfg);
        if (!ok) fprintf(stderr, "randomized: program %d diverged at %s\n", i, run.err);
    }
    CHECK(ok);
}

static const uint32_t small_alphabet[4] = {0, 1, 2, 0xffffffffu};

/* Many short programs like the fuzzer's, and a few long ones. */
static void randomized_against_the_model(void) {
    cm_config short_cfg = {small_alphabet, 4, 12, 300, 0}, long_cfg = {small_alphabet, 3, 8, 5000, 0};
    randomized_runs(&short_cfg, 60);
    randomized_runs(&long_cfg, 2);
}

/* Wide nodes: their children are found through a hash that inserts,
 * removals, merges, splits, eviction and clear must keep exact. */
static void randomized_wide_nodes_against_the_model(void) {
    static uint32_t wide[200];
    cm_config cfg = {wide, 200, 6, 6000, 1};
    for (uint32_t i = 0; i < 200; i++) wide[i] = i * 2654435761u;
    randomized_runs(&cfg, 1);
}

/* Prints how often each path of the programs ran (every rule met). */
static void randomized_paths_all_ran(void) {
    int all = 1;
    printf("model paths:\n");
    cm_print_paths(stdout);
    for (int i = 0; i < CM_N_PATHS; i++)
        if (!cm_paths[i]) {
            fprintf(stderr, "randomized: path %s never ran\n", cm_path_names[i]);
            all = 0;
        }
    CHECK(all);
}


/* ---- layouts, dtypes, outcomes ----------------------------------------- */

/* A head-major entry of `heads` heads, n tokens, head_dim d, one layer:
 * value 100 * head + 10 * token + dim, so a cut can be read off. */
static rlxkv_entry *head_major(const uint32_t *t, size_t n, size_t heads, size_t d) {
    size_t lens[2] = {heads * n * d, heads * n * d};
    rlxkv_entry *e = rlxkv_entry_new(n, 1, lens, RLXKV_F32, NULL);
    if (!e) abort();
    memcpy(rlxkv_entry_tokens_mut(e), t, n * sizeof *t);
    for (size_t b = 0; b < 2; b++) {
        float *f = rlxkv_entry_block_mut(e, b);
        for (size_t h = 0; h < heads; h++)
            for (size_t i = 0; i < n; i++)
                for (size_t j = 0; j < d; j++) f[(h * n + i) * d + j] = (float)(100 * h + 10 * i + j) + (float)b * 0.5f;
    }
    return e;
}

static void head_major_partial_hit_takes_rows_of_every_head(void) {
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, 0);
    rlxkv_layout l = {RLXKV_HEAD_MAJOR, 2, 2, 1};
    rlxkv_hit h;
    rlxkv_span sp;
    float out[16];
    size_t lens[2];
    CHECK_EQ(rlxkv_cache_set_layout(c, &l), RLXKV_OK);
    CHECK_EQ(rlxkv_cache_put(c, head_major(TOKS(1, 2, 3, 4), 2, 2)), RLXKV_OK);
    CHECK_EQ(partial(c, TOKS(1, 2, 9), 3, &h), 2);
    rlxkv_hit_block(&h, 0, &sp);
    CHECK(sp.offset == 0 && sp.run == 4 && sp.stride == 8 && sp.count == 2);
    CHECK_EQ(rlxkv_hit_n_values(&h), 16);
    rlxkv_hit_copy(&h, out, lens);
    CHECK(lens[0] == 8 && lens[1] == 8);
    const float want[8] = {0, 1, 10, 11, 100, 101, 110, 111};
    for (int i = 0; i < 8; i++) {
        CHECK_EQ(out[i], want[i]);
        CHECK_EQ(out[8 + i], want[i] + 0.5f);
    }
    /* A full hit is the whole block, one run. */
    CHECK_EQ(matched(c, TOKS(1, 2, 3, 4, 5)), 4);
    CHECK(consistent(c));
    rlxkv_cache_free(c);
}

static void token_major_layout_cuts_rows(void) {
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, 0);
    rlxkv_layout l = {RLXKV_TOKEN_MAJOR, 2, 3, 0};
    rlxkv_hit h;
    rlxkv_span sp;
    size_t lens[2] = {3 * 6, 3 * 6};
    CHECK_EQ(rlxkv_cache_set_layout(c, &l), RLXKV_OK);
    CHECK_EQ(rlxkv_cache_put(c, make(TOKS(5, 6, 7), 1, lens, 0)), RLXKV_OK);
    CHECK_EQ(partial(c, TOKS(5, 6), 2, &h), 2);
    rlxkv_hit_block(&h, 1, &sp);
    CHECK(sp.run == 12 && sp.count == 1);
    rlxkv_cache_free(c);
}

static void layout_refuses_misshaped_blocks_changing_nothing(void) {
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, 0);
    rlxkv_layout l = {RLXKV_HEAD_MAJOR, 2, 4, 2};
    size_t good[4] = {24, 24, 24, 24}, bad[4] = {24, 24, 24, 23}, bad_block = 99;
    CHECK_EQ(rlxkv_cache_set_layout(c, &l), RLXKV_OK);
    CHECK_EQ(rlxkv_cache_put(c, make(TOKS(1, 2, 3), 2, good, 0)), RLXKV_OK);
    rlxkv_entry *e = make(TOKS(1, 2, 3), 2, bad, 7);
    CHECK_EQ(rlxkv_layout_check(&l, e, &bad_block), RLXKV_ERR_SHAPE);
    CHECK_EQ(bad_block, 3);
    CHECK_EQ(rlxkv_cache_put(c, e), RLXKV_ERR_SHAPE); /* freed: ASan would see a leak */
    CHECK_EQ(rlxkv_cache_put(c, make(TOKS(1, 2, 3), 1, good, 7)), RLXKV_ERR_SHAPE); /* layers */
    CHECK_EQ(((const float *)rlxkv_entry_block(rlxkv_cache_get(c, TOKS(1, 2, 3)), 0))[0], 0.0f);
    CHECK_EQ(stats(c).entries, 1);
    /* A layout is set on an empty cache only, and must be whole. */
    CHECK_EQ(rlxkv_cache_set_layout(c, &l), RLXKV_ERR_INVALID);
    rlxkv_cache_clear(c);
    rlxkv_layout zero = {RLXKV_HEAD_MAJOR, 0, 4, 0}, odd = {7, 1, 1, 0};
    CHECK_EQ(rlxkv_cache_set_layout(c, &zero), RLXKV_ERR_INVALID);
    CHECK_EQ(rlxkv_cache_set_layout(c, &odd), RLXKV_ERR_INVALID);
    rlxkv_layout got;
    rlxkv_cache_layout(c, &got);
    CHECK(got.order == RLXKV_HEAD_MAJOR && got.heads == 2 && got.head_dim == 4 && got.layers == 2);
    rlxkv_cache_free(c);
}

static void f16_entries_count_two_bytes_and_keep_their_bits(void) {
    rlxkv_cache *c = rlxkv_cache_new(64, 0);
    const uint16_t bits[6] = {0x7e01, 0xfc00, 0x8000, 0x0001, 0x3c00, 0x7c00}; /* NaN payload, -Inf, -0, subnormal, 1, Inf */
    const void *k = bits, *v = bits + 3;
    size_t kl = 3, vl = 3;
    rlxkv_hit h;
    uint16_t out[6];
    CHECK_EQ(rlxkv_cache_insert(c, TOKS(1, 2, 3), 1, RLXKV_F16, &k, &kl, &v, &vl), RLXKV_OK);
    const rlxkv_entry *e = rlxkv_cache_get(c, TOKS(1, 2, 3));
    CHECK_EQ(rlxkv_entry_dtype(e), RLXKV_F16);
    CHECK_EQ(rlxkv_entry_kv_bytes(e), 12);
    CHECK_EQ(stats(c).bytes, 12);
    CHECK_EQ(rlxkv_cache_lookup_partial(c, TOKS(1, 2, 9), 3, &h), RLXKV_HIT);
    CHECK_EQ(h.matched, 2);
    rlxkv_hit_copy(&h, out, NULL);
    CHECK(out[0] == 0x7e01 && out[1] == 0xfc00 && out[2] == 0x0001 && out[3] == 0x3c00); /* K rows 0-1, V rows 0-1 */
    CHECK_EQ(rlxkv_cache_lookup(c, TOKS(1, 2, 3), &h), RLXKV_HIT);
    rlxkv_hit_copy(&h, out, NULL);
    CHECK(memcmp(out, bits, sizeof bits) == 0);
    /* Mixed dtypes in one cache, one budget: 12 + 48 = 60 bytes fit in 64. */
    CHECK_EQ(put_kv(c, TOKS(7, 8, 9), 0), RLXKV_OK);
    CHECK_EQ(stats(c).bytes, 60);
    CHECK_EQ(rlxkv_entry_new(1, 1, (size_t[]){1, 1}, 2, NULL), NULL); /* no such dtype */
    CHECK(consistent(c));
    rlxkv_cache_free(c);
}

static void lookup_outcomes_have_their_own_names(void) {
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, 0);
    rlxkv_hit h;
    CHECK_EQ(put_kv(c, TOKS(1, 2), 0), RLXKV_OK);
    CHECK_EQ(rlxkv_cache_lookup(c, TOKS(1, 2, 3), &h), RLXKV_HIT);
    CHECK_EQ(rlxkv_cache_lookup(c, TOKS(4), &h), RLXKV_MISS);
    CHECK_EQ(rlxkv_cache_lookup_partial(c, TOKS(4), 9, &h), RLXKV_MISS);
    CHECK(RLXKV_HIT != RLXKV_STALE && RLXKV_MISS != RLXKV_OK);
    CHECK(strcmp(rlxkv_strerror(RLXKV_HIT), "hit") == 0);
    CHECK(strcmp(rlxkv_strerror(RLXKV_MISS), "miss") == 0);
    CHECK(strcmp(rlxkv_strerror(RLXKV_ERR_SHAPE), "unknown status") != 0);
    rlxkv_cache_free(c);
}

static void generation_counts_calls_that_free_entries(void) {
    rlxkv_cache *c = rlxkv_cache_new(64, 0); /* four 16-byte tokens */
    uint64_t g = rlxkv_cache_generation(c);
    CHECK_EQ(put_kv(c, TOKS(1, 2), 0), RLXKV_OK);          /* 32 bytes */
    CHECK_EQ(rlxkv_cache_pin(c, TOKS(1, 2)), RLXKV_OK);
    CHECK_EQ(matched(c, TOKS(1, 2)), 2);
    CHECK_EQ(rlxkv_cache_generation(c), g);                /* nothing freed */
    CHECK_EQ(put_kv(c, TOKS(1, 2), 1), RLXKV_OK);          /* replaced */
    CHECK_EQ(rlxkv_cache_generation(c), g + 1);
    CHECK_EQ(put_kv(c, TOKS(3), 0), RLXKV_OK);
    CHECK_EQ(put_kv(c, TOKS(4), 0), RLXKV_OK);             /* fits: 64 */
    CHECK_EQ(rlxkv_cache_generation(c), g + 1);
    CHECK_EQ(put_kv(c, TOKS(5), 0), RLXKV_OK);             /* evicts (3) */
    CHECK_EQ(rlxkv_cache_generation(c), g + 2);
    CHECK_EQ(rlxkv_cache_remove(c, TOKS(4)), RLXKV_OK);
    CHECK_EQ(rlxkv_cache_generation(c), g + 3);
    rlxkv_cache_clear(c);
    CHECK_EQ(rlxkv_cache_generation(c), g + 4);
    rlxkv_cache_clear(c);                                  /* nothing to free */
    CHECK_EQ(rlxkv_cache_generation(c), g + 4);
    rlxkv_cache_free(c);
}

/* ---- tiers: stored-only entries ---------------------------------------- */

static int match(rlxkv_cache *c, const uint32_t *q, size_t n, unsigned flags, rlxkv_hit *h) {
    return rlxkv_cache_match(c, q, n, SIZE_MAX, flags, h);
}

static void stored_only_entries_are_found_by_match_not_lookup(void) {
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, 0);
    rlxkv_hit h;
    CHECK_EQ(rlxkv_cache_put_stored(c, TOKS(1, 2, 3), RLXKV_F16, 24, 1), RLXKV_OK);
    CHECK_EQ(put_kv(c, TOKS(1, 2), 0), RLXKV_OK);
    CHECK_EQ(matched(c, TOKS(1, 2, 3, 4)), 2);                  /* sync: resident only */
    CHECK_EQ(match(c, TOKS(1, 2, 3, 4), 0, &h), RLXKV_HIT);
    CHECK_EQ(h.matched, 3);
    CHECK(!rlxkv_entry_is_resident(h.entry));
    CHECK_EQ(rlxkv_hit_n_values(&h), 0);                         /* nothing to copy */
    CHECK_EQ(rlxkv_cache_match(c, TOKS(1, 2, 3, 4), 2, 0, &h), RLXKV_HIT); /* max_match */
    CHECK_EQ(h.matched, 2);
    CHECK(rlxkv_entry_is_resident(h.entry));
    rlxkv_stats st = stats(c);
    CHECK(st.entries == 1 && st.bytes == 32 && st.stored_entries == 1 && st.stored_bytes == 48);
    CHECK_EQ(rlxkv_cache_match(c, TOKS(1), 0, 9, &h), RLXKV_ERR_INVALID); /* unknown flag */
    CHECK(consistent(c));
    rlxkv_cache_free(c);
}

static void a_put_replaces_a_stored_only_entry_and_keeps_its_pin(void) {
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, 0);
    rlxkv_hit h;
    CHECK_EQ(rlxkv_cache_put_stored(c, TOKS(5, 6), RLXKV_F32, 8, 1), RLXKV_OK);
    CHECK_EQ(rlxkv_cache_pin(c, TOKS(5, 6)), RLXKV_OK);
    CHECK(rlxkv_cache_is_pinned(c, rlxkv_cache_get(c, TOKS(5, 6))));
    CHECK_EQ(stats(c).pinned_entries, 0);                         /* not in memory yet */
    CHECK_EQ(put_kv(c, TOKS(5, 6), 3), RLXKV_OK);                 /* the blob, loaded */
    CHECK(rlxkv_entry_is_resident(rlxkv_cache_get(c, TOKS(5, 6))));
    CHECK_EQ(stats(c).pinned_entries, 1);
    CHECK_EQ(stats(c).stored_entries, 0);
    CHECK_EQ(rlxkv_cache_lookup(c, TOKS(5, 6, 7), &h), RLXKV_HIT);
    /* A stored-only record never overrides a resident entry. */
    CHECK_EQ(rlxkv_cache_put_stored(c, TOKS(5, 6), RLXKV_F32, 99, 1), RLXKV_OK);
    CHECK(rlxkv_entry_is_resident(rlxkv_cache_get(c, TOKS(5, 6))));
    CHECK(consistent(c));
    rlxkv_cache_free(c);
}

static void evicting_a_stored_entry_leaves_it_stored_only(void) {
    for (int on = 0; on <= 1; on++) {
        rlxkv_cache *c = rlxkv_cache_new(64, 0);
        rlxkv_hit h;
        rlxkv_cache_set_stored_index(c, on);
        CHECK_EQ(put_kv(c, TOKS(1, 1), 0), RLXKV_OK);
        rlxkv_cache_mark_clean(c, rlxkv_cache_get(c, TOKS(1, 1)));  /* its blob is stored */
        CHECK_EQ(put_kv(c, TOKS(2, 2), 0), RLXKV_OK);                /* dirty */
        CHECK_EQ(put_kv(c, TOKS(3, 3, 3), 0), RLXKV_OK);             /* evicts both */
        CHECK(!has(c, TOKS(2, 2)));                                  /* never stored: gone */
        CHECK_EQ(has(c, TOKS(1, 1)), on);
        CHECK_EQ(stats(c).stored_entries, (size_t)on);
        CHECK_EQ(match(c, TOKS(1, 1, 9), 0, &h), on ? RLXKV_HIT : RLXKV_MISS);
        /* Unstored (its blob pruned): evicted like a dirty one. */
        CHECK_EQ(put_kv(c, TOKS(4), 0), RLXKV_OK);
        rlxkv_cache_mark_clean(c, rlxkv_cache_get(c, TOKS(4)));
        rlxkv_cache_mark_unstored(c, rlxkv_cache_get(c, TOKS(4)));
        rlxkv_cache_set_cap(c, 0); /* drops every unpinned resident entry */
        CHECK(!has(c, TOKS(3, 3, 3)) && !has(c, TOKS(4)));
        CHECK_EQ(has(c, TOKS(1, 1)), on);
        CHECK(consistent(c));
        rlxkv_cache_free(c);
    }
}

static void match_prefers_a_resident_hit_of_equal_length(void) {
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, 0);
    rlxkv_hit h;
    /* Both branch off after (1, 2): one stored-only, one resident. */
    CHECK_EQ(rlxkv_cache_put_stored(c, TOKS(1, 2, 3, 4), RLXKV_F32, 32, 1), RLXKV_OK);
    CHECK_EQ(put_kv(c, TOKS(1, 2, 7, 7), 0), RLXKV_OK);
    CHECK_EQ(match(c, TOKS(1, 2, 9), RLXKV_MATCH_PARTIAL, &h), RLXKV_HIT);
    CHECK(h.matched == 2 && rlxkv_entry_is_resident(h.entry));
    /* The stored-only one shares more: it wins, and only match sees it. */
    CHECK_EQ(match(c, TOKS(1, 2, 3, 9), RLXKV_MATCH_PARTIAL, &h), RLXKV_HIT);
    CHECK(h.matched == 3 && !rlxkv_entry_is_resident(h.entry));
    CHECK_EQ(partial(c, TOKS(1, 2, 3, 9), 9, &h), 2);
    /* A stored-only entry that is a whole prefix still loses a tie to a resident cut. */
    CHECK_EQ(rlxkv_cache_put_stored(c, TOKS(1, 2), RLXKV_F32, 16, 1), RLXKV_OK);
    CHECK_EQ(match(c, TOKS(1, 2, 9), RLXKV_MATCH_PARTIAL, &h), RLXKV_HIT);
    CHECK(h.matched == 2 && rlxkv_entry_is_resident(h.entry));
    CHECK_EQ(match(c, TOKS(1, 2, 9), 0, &h), RLXKV_HIT);          /* whole prefixes only */
    CHECK(h.matched == 2 && !rlxkv_entry_is_resident(h.entry));
    CHECK(consistent(c));
    rlxkv_cache_free(c);
}

static void clear_with_the_stored_index_keeps_what_is_stored(void) {
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, 0);
    rlxkv_cache_set_stored_index(c, 1);
    CHECK_EQ(put_kv(c, TOKS(1), 0), RLXKV_OK);
    CHECK_EQ(put_kv(c, TOKS(2), 0), RLXKV_OK);
    CHECK_EQ(rlxkv_cache_pin(c, TOKS(1)), RLXKV_OK);
    rlxkv_cache_mark_clean(c, rlxkv_cache_get(c, TOKS(1)));
    uint64_t g = rlxkv_cache_generation(c);
    rlxkv_cache_clear(c);
    CHECK(rlxkv_cache_generation(c) > g);
    CHECK_EQ(stats(c).entries, 0);
    CHECK_EQ(stats(c).stored_entries, 1);
    CHECK(!has(c, TOKS(2)));
    const rlxkv_entry *s = rlxkv_cache_next_stored(c, NULL);
    CHECK(s && !rlxkv_entry_is_resident(s) && rlxkv_cache_is_pinned(c, s));
    CHECK_EQ(rlxkv_cache_next_stored(c, s), NULL);
    CHECK_EQ(rlxkv_cache_next(c, NULL), NULL);
    CHECK(consistent(c));
    rlxkv_cache_free(c);
}

static void an_entry_put_from_its_blob_is_clean_and_stays_stored(void) {
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, 0);
    rlxkv_cache_set_stored_index(c, 1);
    size_t lens[2] = {2, 2};
    CHECK_EQ(rlxkv_cache_put_loaded(c, make(TOKS(7, 8), 1, lens, 1.0f)), RLXKV_OK);
    const rlxkv_entry *e = rlxkv_cache_get(c, TOKS(7, 8));
    CHECK(e && rlxkv_entry_is_resident(e) && !rlxkv_cache_is_dirty(c, e));
    rlxkv_cache_clear(c); /* evicted: its blob is stored, so it stays known */
    const rlxkv_entry *s = rlxkv_cache_next_stored(c, NULL);
    CHECK(s && !rlxkv_entry_is_resident(s) && rlxkv_entry_n_tokens(s) == 2);
    /* cap 0 takes nothing: the entry is freed, the put still OK */
    rlxkv_cache *none = rlxkv_cache_new(0, 0);
    CHECK_EQ(rlxkv_cache_put_loaded(none, make(TOKS(7, 8), 1, lens, 1.0f)), RLXKV_OK);
    CHECK_EQ(stats(none).entries, 0);
    CHECK(consistent(c));
    rlxkv_cache_free(none);
    rlxkv_cache_free(c);
}

/* ---- deviations the model found (each fails until cache.c is fixed) ----- */

/* The generation tells when borrowed resident entries went: freeing a
 * stored-only entry (which has no values to borrow) moves it in no other
 * call, and should not in remove either. */
static void generation_moves_only_when_a_resident_entry_is_freed(void) {
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, 0);
    CHECK_EQ(rlxkv_cache_put_stored(c, TOKS(1, 2), RLXKV_F32, 8, 1), RLXKV_OK);
    uint64_t g = rlxkv_cache_generation(c);
    CHECK_EQ(rlxkv_cache_put_stored(c, TOKS(1, 2), RLXKV_F32, 16, 1), RLXKV_OK); /* replaced */
    CHECK_EQ(rlxkv_cache_generation(c), g);
    CHECK_EQ(put_kv(c, TOKS(1, 2), 0), RLXKV_OK);                                 /* loaded */
    CHECK_EQ(rlxkv_cache_generation(c), g);
    CHECK_EQ(rlxkv_cache_put_stored(c, TOKS(3), RLXKV_F32, 8, 1), RLXKV_OK);
    CHECK_EQ(rlxkv_cache_remove(c, TOKS(3)), RLXKV_OK);                           /* stored-only */
    CHECK_EQ(rlxkv_cache_generation(c), g);                                       /* fails: g + 1 */
    CHECK_EQ(rlxkv_cache_remove(c, TOKS(1, 2)), RLXKV_OK);                        /* resident */
    CHECK(rlxkv_cache_generation(c) > g);
    rlxkv_cache_free(c);
}

/* rlxkv_cache_insert is put with copying: with cap 0 too, a misshaped
 * entry is refused with SHAPE rather than silently dropped. */
static void insert_with_cap_0_refuses_a_misshaped_entry_as_put_does(void) {
    rlxkv_cache *c = rlxkv_cache_new(0, 0);
    rlxkv_layout l = {RLXKV_TOKEN_MAJOR, 1, 2, 0};
    const float k[3] = {1, 2, 3};
    const void *kp = k;
    size_t len = 3; /* one token takes 2 values */
    size_t lens[2] = {3, 3};
    CHECK_EQ(rlxkv_cache_set_layout(c, &l), RLXKV_OK);
    CHECK_EQ(rlxkv_cache_put(c, make(TOKS(1), 1, lens, 0)), RLXKV_ERR_SHAPE);
    CHECK_EQ(rlxkv_cache_insert(c, TOKS(1), 1, RLXKV_F32, &kp, &len, &kp, &len), RLXKV_ERR_SHAPE); /* fails: OK */
    rlxkv_cache_free(c);
}

/* A layout is for an empty cache: stored-only entries were recorded under
 * the old one (their trimmability, their order), so they count too. */
static void set_layout_refuses_a_cache_holding_stored_only_entries(void) {
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, 0);
    rlxkv_layout l = {RLXKV_TOKEN_MAJOR, 1, 2, 0};
    CHECK_EQ(rlxkv_cache_put_stored(c, TOKS(1, 2, 3), RLXKV_F32, 7, 0), RLXKV_OK); /* not trimmable */
    CHECK_EQ(rlxkv_cache_set_layout(c, &l), RLXKV_ERR_INVALID); /* fails: OK */
    CHECK(consistent(c));                                        /* fails: the entry's order is ANY */
    rlxkv_cache_free(c);
}

/* A chain of pages as an index describes it: one copy of its tokens, each
 * page placed from the one before (like), and every stub freeing its share
 * as it goes (ASan and valgrind see a double free or a leak). */
static void put_stored_many_places_a_chain_from_one_copy(void) {
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, 0);
    rlxkv_hit h;
    rlxkv_cache_set_stored_index(c, 1);
    uint32_t all[46];
    for (uint32_t i = 0; i < 40; i++) all[i] = 100 + i;
    const uint32_t other[6] = {100, 101, 102, 103, 7, 8}; /* leaves the chain after 4 tokens */
    memcpy(all + 40, other, sizeof other);
#define SPEC(at_, n_, like_, dt_) {.tokens_at = at_, .n_tokens = n_, .n_values = 16, .like = like_, .dtype = dt_, .row_major = 1}
    rlxkv_stored s[] = {
        SPEC(0, 4, 0, RLXKV_F32),  /* the first blob */
        SPEC(0, 8, 1, RLXKV_F32),  /* from the first's node */
        SPEC(0, 40, 0, RLXKV_F32), /* the deepest, from the root */
        SPEC(0, 20, 3, RLXKV_F32), /* from up the deepest's path */
        SPEC(40, 6, 1, RLXKV_F32), /* another place than its like's: from the root */
        SPEC(44, 9, 0, RLXKV_F32), /* past the array */
        SPEC(0, 12, 7, RLXKV_F32), /* a like not before it: from the root */
        SPEC(0, 16, 0, 9),         /* no such dtype */
    };
    CHECK_EQ(rlxkv_cache_put_stored_many(c, all, 46, s, 8), RLXKV_OK);
    const int want[8] = {RLXKV_OK, RLXKV_OK, RLXKV_OK, RLXKV_OK, RLXKV_OK, RLXKV_ERR_INVALID, RLXKV_OK, RLXKV_ERR_INVALID};
    for (int i = 0; i < 8; i++) CHECK_EQ(s[i].status, want[i]);
    CHECK_EQ(stats(c).stored_entries, 6);
    CHECK(consistent(c));
    for (int i = 0; i < 8; i++) {
        if (want[i] != RLXKV_OK) continue;
        const rlxkv_entry *e = rlxkv_cache_get(c, all + s[i].tokens_at, s[i].n_tokens);
        CHECK(e && !rlxkv_entry_is_resident(e));
        CHECK(!memcmp(rlxkv_entry_tokens(e), all + s[i].tokens_at, s[i].n_tokens * sizeof *all));
    }
    uint32_t q[41];
    memcpy(q, all, sizeof q);
    q[40] = 1;
    CHECK_EQ(match(c, q, 41, 0, &h), RLXKV_HIT);
    CHECK_EQ(h.matched, 40);
    CHECK_EQ(match(c, TOKS(100, 101, 102, 103, 7, 8, 9), 0, &h), RLXKV_HIT);
    CHECK_EQ(h.matched, 6);
    CHECK_EQ(match(c, TOKS(100, 101, 102, 103, 104, 105, 106, 107, 108, 9), 0, &h), RLXKV_HIT);
    CHECK_EQ(h.matched, 8);
    /* Loaded, removed, replaced: each stub lets go of its share. */
    CHECK_EQ(put_kv(c, all, 40, 1), RLXKV_OK);
    CHECK_EQ(rlxkv_cache_remove(c, all, 8), RLXKV_OK);
    CHECK_EQ(rlxkv_cache_put_stored(c, all, 20, RLXKV_F32, 8, 1), RLXKV_OK);
    CHECK(consistent(c));
    /* A cache of cap 0 takes nothing, and says so by OK. */
    rlxkv_cache *off = rlxkv_cache_new(0, 0);
    CHECK_EQ(rlxkv_cache_put_stored_many(off, all, 46, s, 2), RLXKV_OK);
    CHECK_EQ(stats(off).stored_entries, 0);
    rlxkv_cache_free(off);
    CHECK_EQ(rlxkv_cache_put_stored_many(c, NULL, 3, s, 1), RLXKV_ERR_INVALID);
    rlxkv_cache_free(c);
}

/* Pages as an index of own tokens describes them: a page's path is its
 * parent's first `start` tokens, then its own; a chain shares one block;
 * a page whose parent is missing, of another length, or loops gets
 * NOTFOUND; parents placed after their pages are found all the same. */
static void put_stored_many_builds_paths_from_parents(void) {
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, 0);
    rlxkv_hit h;
    /* own tokens: blob 1,2,3,4 | page 5,6 | page 7,8,9 | page 50 (leaves its parent after 2) | loop pair 60, 61 */
    const uint32_t own[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 50, 60, 61};
#define PAGE(at_, n_, parent_, start_, pn_) \
    {.tokens_at = at_, .n_tokens = n_, .n_values = 8, .parent = parent_, .start = start_, .parent_n = pn_, .dtype = RLXKV_F32, .row_major = 1}
    rlxkv_stored s[] = {
        PAGE(6, 3, 3, 6, 6),  /* 0: 1..9, its parent (2) placed after it */
        PAGE(0, 4, 0, 0, 0),  /* 1: the blob 1..4 */
        PAGE(4, 2, 2, 4, 4),  /* 2: 1..6 */
        PAGE(9, 1, 2, 2, 4),  /* 3: 1, 2, 50: leaves the blob after 2 tokens */
        PAGE(10, 1, 6, 1, 2), /* 4: a loop with 5 */
        PAGE(11, 1, 5, 1, 2), /* 5: a loop with 4 */
        PAGE(9, 1, 2, 4, 5),  /* 6: parent_n not its parent's count */
        PAGE(9, 1, 99, 4, 4), /* 7: no such parent */
    };
    CHECK_EQ(rlxkv_cache_put_stored_many(c, own, 12, s, 8), RLXKV_OK);
    const int want[8] = {RLXKV_OK, RLXKV_OK, RLXKV_OK, RLXKV_OK, RLXKV_ERR_NOTFOUND, RLXKV_ERR_NOTFOUND,
                         RLXKV_ERR_NOTFOUND, RLXKV_ERR_NOTFOUND};
    for (int i = 0; i < 8; i++) CHECK_EQ(s[i].status, want[i]);
    CHECK_EQ(stats(c).stored_entries, 4);
    CHECK(consistent(c));
    CHECK_EQ(match(c, TOKS(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0, &h), RLXKV_HIT);
    CHECK_EQ(h.matched, 9);
    CHECK_EQ(match(c, TOKS(1, 2, 3, 4, 5, 6, 0), 0, &h), RLXKV_HIT);
    CHECK_EQ(h.matched, 6);
    CHECK_EQ(match(c, TOKS(1, 2, 50), 0, &h), RLXKV_HIT);
    CHECK_EQ(h.matched, 3);
    CHECK(has(c, TOKS(1, 2, 3, 4)));
    /* Each stub lets go of its block: loaded, removed, then the rest freed with the cache. */
    CHECK_EQ(put_kv(c, TOKS(1, 2, 3, 4, 5, 6), 1), RLXKV_OK);
    CHECK_EQ(rlxkv_cache_remove(c, TOKS(1, 2, 3, 4, 5, 6, 7, 8, 9)), RLXKV_OK);
    CHECK(consistent(c));
    rlxkv_cache_free(c);
}

/* Tokens packed as a store index packs them place what the same tokens
 * in an array do: the same statuses, paths and hits; places out of order
 * or past the tokens are refused, nothing placed. */
static void put_stored_many_packed_places_what_the_array_places(void) {
    uint32_t own[12];
    uint16_t low[12], highs[12];
    uint32_t places[12];
    size_t high = 0;
    for (uint32_t i = 0; i < 12; i++) {
        own[i] = (i + 1) + (i % 3 ? 0x10000u * (i % 3) : 0);
        low[i] = (uint16_t)own[i];
        if (own[i] > 0xffff) {
            places[high] = i;
            highs[high++] = (uint16_t)(own[i] >> 16);
        }
    }
    rlxkv_stored a[] = {
        PAGE(6, 3, 3, 6, 6), PAGE(0, 4, 0, 0, 0), PAGE(4, 2, 2, 4, 4), PAGE(9, 1, 2, 2, 4),
        PAGE(10, 1, 6, 1, 2), PAGE(11, 1, 5, 1, 2), PAGE(9, 1, 2, 4, 5), PAGE(9, 1, 99, 4, 4),
    };
    rlxkv_stored b[8];
    memcpy(b, a, sizeof a);
    rlxkv_cache *ca = rlxkv_cache_new(1 << 20, 0), *cb = rlxkv_cache_new(1 << 20, 0);
    const rlxkv_packed_tokens packed = {low, 12, places, highs, high};
    CHECK_EQ(rlxkv_cache_put_stored_many(ca, own, 12, a, 8), RLXKV_OK);
    CHECK_EQ(rlxkv_cache_put_stored_many_packed(cb, &packed, b, 8), RLXKV_OK);
    CHECK(consistent(cb));
    CHECK_EQ(stats(cb).stored_entries, stats(ca).stored_entries);
    for (int i = 0; i < 8; i++) CHECK_EQ(b[i].status, a[i].status);
    const rlxkv_entry *e = rlxkv_cache_next_stored(cb, NULL);
    for (; e; e = rlxkv_cache_next_stored(cb, e)) {
        const rlxkv_entry *same = rlxkv_cache_get(ca, rlxkv_entry_tokens(e), rlxkv_entry_n_tokens(e));
        CHECK(same && !rlxkv_entry_is_resident(same));
    }
    rlxkv_hit ha, hb;
    const uint32_t q[] = {own[0], own[1], own[2], own[3], own[4], own[5], own[6], own[7], own[8], 77};
    CHECK_EQ(match(ca, q, 10, 0, &ha), RLXKV_HIT);
    CHECK_EQ(match(cb, q, 10, 0, &hb), RLXKV_HIT);
    CHECK_EQ(hb.matched, 9);
    CHECK_EQ(hb.matched, ha.matched);
    /* Places out of order, or past the tokens: refused. */
    rlxkv_cache *cc = rlxkv_cache_new(1 << 20, 0);
    memcpy(b, a, sizeof a);
    uint32_t swapped[12];
    memcpy(swapped, places, sizeof places);
    swapped[0] = places[1];
    swapped[1] = places[0];
    const rlxkv_packed_tokens unordered = {low, 12, swapped, highs, high}, past = {low, 3, places, highs, high};
    CHECK_EQ(rlxkv_cache_put_stored_many_packed(cc, &unordered, b, 8), RLXKV_ERR_INVALID);
    CHECK_EQ(b[0].status, RLXKV_ERR_INVALID);
    CHECK_EQ(rlxkv_cache_put_stored_many_packed(cc, &past, b, 8), RLXKV_ERR_INVALID);
    CHECK_EQ(stats(cc).stored_entries, 0);
    rlxkv_cache_free(ca);
    rlxkv_cache_free(cb);
    rlxkv_cache_free(cc);
}

/* ---- folds: put_stored_many against placing each stub alone ------------- */

/* A random index of pages (runs of them, branches, pages that leave their
 * parent early, duplicates: tokens from a small alphabet) placed two ways,
 * by put_stored_many (which folds runs: see cache.c, Folds) and by
 * put_stored of each whole path in the same order; then the same random
 * calls on both must answer alike, and both stay consistent. */
enum { FOLD_SPECS = 40, FOLD_PATH = 64, FOLD_OWN = FOLD_SPECS * 8 };

struct fold_case {
    rlxkv_stored s[FOLD_SPECS];
    uint32_t own[FOLD_OWN], path[FOLD_SPECS][FOLD_PATH];
    size_t len[FOLD_SPECS], count;
};

static uint32_t fold_rand(uint64_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return (uint32_t)(*x >> 11);
}

/* Specs made run by run (a blob, or a page of an earlier spec, then pages
 * each from the last), then a few swapped out of order. */
static void fold_case_make(struct fold_case *fc, uint64_t *x) {
    size_t made = 0, own = 0, order[FOLD_SPECS];
    struct fold_case m;
    memset(&m, 0, sizeof m);
    int f16 = fold_rand(x) % 2;
    while (made < FOLD_SPECS) {
        size_t run = 1 + fold_rand(x) % 7, from = made && fold_rand(x) % 3 ? 1 + fold_rand(x) % made : 0;
        for (size_t r = 0; r < run && made < FOLD_SPECS; r++) {
            size_t parent = r ? made : from, start = 0, n = 1 + fold_rand(x) % 4;
            if (parent) start = fold_rand(x) % 5 ? m.len[parent - 1] : 1 + fold_rand(x) % m.len[parent - 1];
            if (start + n > FOLD_PATH) break;
            rlxkv_stored *s = &m.s[made];
            *s = (rlxkv_stored){.tokens_at = own, .n_tokens = n, .n_values = 1 + fold_rand(x) % 50, .parent = parent,
                                .start = start, .parent_n = parent ? m.len[parent - 1] : 0,
                                .dtype = fold_rand(x) % 16 ? (f16 ? RLXKV_F16 : RLXKV_F32) : RLXKV_F32,
                                .row_major = fold_rand(x) % 8 != 0};
            if (parent) memcpy(m.path[made], m.path[parent - 1], start * sizeof(uint32_t));
            for (size_t k = 0; k < n; k++) m.own[own + k] = m.path[made][start + k] = 1 + fold_rand(x) % 3;
            m.len[made] = start + n;
            own += n;
            made++;
        }
    }
    /* A spec's parent is named by its place: swapping places renames them. */
    for (size_t i = 0; i < FOLD_SPECS; i++) order[i] = i;
    for (size_t k = fold_rand(x) % 4; k; k--) {
        size_t a = fold_rand(x) % FOLD_SPECS, b = fold_rand(x) % FOLD_SPECS, t = order[a];
        order[a] = order[b];
        order[b] = t;
    }
    size_t place[FOLD_SPECS];
    for (size_t i = 0; i < FOLD_SPECS; i++) place[order[i]] = i;
    memcpy(fc->own, m.own, sizeof m.own);
    for (size_t i = 0; i < FOLD_SPECS; i++) {
        fc->s[i] = m.s[order[i]];
        if (fc->s[i].parent) fc->s[i].parent = place[fc->s[i].parent - 1] + 1;
        memcpy(fc->path[i], m.path[order[i]], sizeof fc->path[i]);
        fc->len[i] = m.len[order[i]];
    }
    fc->count = FOLD_SPECS;
}

/* Whether two entries (either may be NULL) are alike to a caller. */
static int fold_same_entry(const rlxkv_entry *a, const rlxkv_entry *b) {
    if (!a || !b) return !a && !b;
    size_t n = rlxkv_entry_n_tokens(a);
    return n == rlxkv_entry_n_tokens(b) && rlxkv_entry_is_resident(a) == rlxkv_entry_is_resident(b) &&
           rlxkv_entry_serial(a) == rlxkv_entry_serial(b) && rlxkv_entry_kv_bytes(a) == rlxkv_entry_kv_bytes(b) &&
           rlxkv_entry_dtype(a) == rlxkv_entry_dtype(b) && !memcmp(rlxkv_entry_tokens(a), rlxkv_entry_tokens(b), n * 4);
}

static int fold_same_stats(const rlxkv_cache *a, const rlxkv_cache *b) {
    rlxkv_stats x = stats(a), y = stats(b);
    return !memcmp(&x, &y, sizeof x);
}

/* Both caches' stored-only entries, in order, alike (a's runs all unfold). */
static int fold_same_listing(const rlxkv_cache *a, const rlxkv_cache *b) {
    const rlxkv_entry *x = rlxkv_cache_next_stored(a, NULL), *y = rlxkv_cache_next_stored(b, NULL);
    for (; x || y; x = rlxkv_cache_next_stored(a, x), y = rlxkv_cache_next_stored(b, y))
        if (!fold_same_entry(x, y)) return 0;
    x = rlxkv_cache_next(a, NULL);
    y = rlxkv_cache_next(b, NULL);
    for (; x || y; x = rlxkv_cache_next(a, x), y = rlxkv_cache_next(b, y))
        if (!fold_same_entry(x, y)) return 0;
    return 1;
}

static void put_stored_many_folds_runs_as_placing_each_would(void) {
    uint64_t x = 0x9e3779b97f4a7c15u;
    struct fold_case fc;
    int folded_rounds = 0;
    for (int round = 0; round < 300; round++) {
        fold_case_make(&fc, &x);
        int paging = round % 2, small = round % 5 == 0;
        size_t cap = small ? 600 : 1 << 20, nodes_a = 0, nodes_b = 0, labels_a = 0, labels_b = 0;
        rlxkv_cache *a = rlxkv_cache_new(cap, 0), *b = rlxkv_cache_new(cap, 0);
        rlxkv_cache_set_paging(a, paging);
        rlxkv_cache_set_paging(b, paging);
        rlxkv_cache_set_stored_index(a, 1);
        rlxkv_cache_set_stored_index(b, 1);
        CHECK_EQ(rlxkv_cache_put_stored_many(a, fc.own, FOLD_OWN, fc.s, fc.count), RLXKV_OK);
        int same = 1;
        for (size_t i = 0; i < fc.count; i++) {
            int st = rlxkv_cache_put_stored(b, fc.path[i], fc.len[i], fc.s[i].dtype, fc.s[i].n_values, fc.s[i].row_major);
            same &= st == fc.s[i].status;
        }
        CHECK(same);
        CHECK(rlxkv_cache_check(a, &nodes_a, &labels_a) && rlxkv_cache_check(b, &nodes_b, &labels_b));
        folded_rounds += nodes_a < nodes_b;
        CHECK(fold_same_stats(a, b));
        if (round % 7 == 0) { /* listed first: every run unfolded, the trees the same */
            CHECK(fold_same_listing(a, b));
            CHECK(rlxkv_cache_check(a, &nodes_a, &labels_a) && nodes_a == nodes_b && labels_a == labels_b);
        }
        for (int op = 0; op < 80 && same; op++) {
            size_t i = fold_rand(&x) % fc.count, n = fc.len[i], cut = 1 + fold_rand(&x) % n, extra = fold_rand(&x) % 3;
            uint32_t q[FOLD_PATH + 3];
            memcpy(q, fc.path[i], cut * sizeof *q);
            for (size_t k = 0; k < extra; k++) q[cut + k] = 1 + fold_rand(&x) % 3;
            size_t qn = cut + extra, max = fold_rand(&x) % 4 ? SIZE_MAX : fold_rand(&x) % (qn + 1);
            rlxkv_hit ha, hb;
            int sa, sb;
            switch (fold_rand(&x) % 11) {
            case 0: case 1: case 2: {
                unsigned flags = fold_rand(&x) % 2 ? RLXKV_MATCH_PARTIAL : 0;
                sa = rlxkv_cache_match(a, q, qn, max, flags, &ha);
                sb = rlxkv_cache_match(b, q, qn, max, flags, &hb);
                same = sa == sb && ha.matched == hb.matched && fold_same_entry(ha.entry, hb.entry);
                break;
            }
            case 3:
                sa = rlxkv_cache_lookup_partial(a, q, qn, max, &ha);
                sb = rlxkv_cache_lookup_partial(b, q, qn, max, &hb);
                same = sa == sb && ha.matched == hb.matched && fold_same_entry(ha.entry, hb.entry);
                break;
            case 4:
                same = fold_same_entry(rlxkv_cache_get(a, q, cut), rlxkv_cache_get(b, q, cut));
                break;
            case 5:
                same = rlxkv_cache_remove(a, q, cut) == rlxkv_cache_remove(b, q, cut);
                break;
            case 6:
                same = fold_rand(&x) % 2 ? rlxkv_cache_pin(a, q, cut) == rlxkv_cache_pin(b, q, cut)
                                         : rlxkv_cache_unpin(a, q, cut) == rlxkv_cache_unpin(b, q, cut);
                break;
            case 7: {
                size_t lens[2] = {2 * qn, 2 * qn};
                if (fold_rand(&x) % 2) {
                    same = rlxkv_cache_put(a, make(q, qn, 1, lens, 1)) == rlxkv_cache_put(b, make(q, qn, 1, lens, 1));
                } else {
                    same = rlxkv_cache_put_loaded(a, make(q, qn, 1, lens, 2)) == rlxkv_cache_put_loaded(b, make(q, qn, 1, lens, 2));
                }
                break;
            }
            case 8: {
                size_t nv = 1 + fold_rand(&x) % 50;
                same = rlxkv_cache_put_stored(a, q, qn, RLXKV_F32, nv, 1) == rlxkv_cache_put_stored(b, q, qn, RLXKV_F32, nv, 1);
                break;
            }
            case 9: {
                size_t rows[2] = {2, 2};
                same = rlxkv_cache_held(a, q, qn, RLXKV_F32, 1, rows) == rlxkv_cache_held(b, q, qn, RLXKV_F32, 1, rows);
                break;
            }
            default:
                same = fold_rand(&x) % 4 ? fold_same_stats(a, b) : fold_same_listing(a, b);
                break;
            }
            same &= fold_same_stats(a, b) && consistent(a) && consistent(b);
        }
        CHECK(same);
        CHECK(fold_same_listing(a, b));
        rlxkv_cache_free(a);
        rlxkv_cache_free(b);
    }
    CHECK(!RLXKV_FOLDS || folded_rounds > 200); /* most indexes had a run to fold */
}

int main(void) {
    RUN(longest_prefix_picks_deepest_match);
    RUN(no_match_returns_none);
    RUN(lru_evicts_when_over_cap);
    RUN(lru_keeps_recently_used);
    RUN(empty_entry_is_stored_but_never_matches);
    RUN(get_is_exact_and_does_not_touch);
    RUN(remove_prunes_the_tree);
    RUN(replacing_updates_bytes_recency_and_keeps_pin);
    RUN(cap_zero_disables);
    RUN(oversized_entry_is_kept_alone);
    RUN(oversized_entry_is_kept_beside_empty_pins);
    RUN(pinned_entries_are_never_evicted);
    RUN(nospace_changes_nothing);
    RUN(unpin_makes_evictable);
    RUN(partial_reuse_trims_to_the_common_prefix);
    RUN(partial_reuse_respects_max_match);
    RUN(partial_reuse_refuses_non_row_major);
    RUN(hit_copy_takes_the_first_rows_exactly);
    RUN(head_major_partial_hit_takes_rows_of_every_head);
    RUN(token_major_layout_cuts_rows);
    RUN(layout_refuses_misshaped_blocks_changing_nothing);
    RUN(f16_entries_count_two_bytes_and_keep_their_bits);
    RUN(lookup_outcomes_have_their_own_names);
    RUN(generation_counts_calls_that_free_entries);
    RUN(stored_only_entries_are_found_by_match_not_lookup);
    RUN(a_put_replaces_a_stored_only_entry_and_keeps_its_pin);
    RUN(put_stored_many_places_a_chain_from_one_copy);
    RUN(put_stored_many_builds_paths_from_parents);
    RUN(put_stored_many_packed_places_what_the_array_places);
    RUN(put_stored_many_folds_runs_as_placing_each_would);
    RUN(evicting_a_stored_entry_leaves_it_stored_only);
    RUN(match_prefers_a_resident_hit_of_equal_length);
    RUN(clear_with_the_stored_index_keeps_what_is_stored);
    RUN(an_entry_put_from_its_blob_is_clean_and_stays_stored);
    RUN(generation_moves_only_when_a_resident_entry_is_freed);
    RUN(insert_with_cap_0_refuses_a_misshaped_entry_as_put_does);
    RUN(set_layout_refuses_a_cache_holding_stored_only_entries);
    RUN(iteration_is_pinned_first_then_most_recent);
    RUN(entries_are_dirty_until_marked_clean);
    RUN(stats_count_hits_misses_and_reuse);
    RUN(bad_arguments_are_refused);
    RUN(ten_thousand_entries_share_a_long_prefix);
    RUN(labels_are_borrowed_and_outlive_their_entries);
    RUN(eviction_follows_recency_over_many_entries);
    RUN(many_insert_evict_cycles_stay_bounded);
    RUN(randomized_against_the_model);
    RUN(randomized_wide_nodes_against_the_model);
    RUN(randomized_paths_all_ran);
    return check_report();
}
