/* Internal: the layout of an entry, shared by cache.c and codec.c.
 * Not part of the public API. */
#ifndef RLXKV_ENTRY_H
#define RLXKV_ENTRY_H

#include "rlxkv.h"

#define RLXKV_ENTRY_DIRTY 1u       /* not yet in the store */
#define RLXKV_ENTRY_TRIMMABLE 2u   /* a partial hit may cut it (see cache.c) */
#define RLXKV_ENTRY_STORED 4u      /* its blob is in the store (marked clean) */
#define RLXKV_ENTRY_STUB 8u        /* stored-only: tokens, no values (n_values is the stored size) */
#define RLXKV_ENTRY_PIN_ON_LOAD 16u /* a stub pinned: pinned once it is resident */
#define RLXKV_ENTRY_HIDDEN 32u     /* removed, but its values still serve its users (cache.c, Pages) */
#define RLXKV_ENTRY_FOLDED 64u     /* a stub standing for a run of pages too, not yet in the tree (cache.c, Folds) */

/* One allocation: this header, then offs[2L+1] (block start offsets, in
 * values, into kv), then the values, then the tokens. Keeping everything in
 * one block makes an insert one malloc and an eviction one free. */
struct rlxkv_entry {
    void *node;                      /* radix node holding it (cache.c) */
    uint16_t flags;
    uint8_t dtype;                   /* rlxkv_dtype */
    uint8_t order;                   /* rlxkv_order, stamped by the cache's layout */
    uint32_t heads;                  /* the layout's heads (HEAD_MAJOR), else 0 */
    uint32_t serial;                 /* the cache's count of puts when this one was put */
    size_t n_tokens;
    size_t start;                    /* tokens before its own values: it holds rows [start, n_tokens) */
    size_t n_layers;
    size_t n_values;
    size_t *offs;                    /* 2*n_layers + 1 offsets; offs[2L] == n_values */
    unsigned char *kv;               /* n_values values of dtype */
    uint32_t *tokens;
    /* Pages (cache.c): the resident entry whose values the first `start`
     * tokens use, and the entries that use this one's, linked through
     * next_user / prev_user. All NULL for an entry no cache holds. */
    rlxkv_entry *parent, *first_user, *next_user, *prev_user;
    size_t users;
    /* A stored-only entry placed by rlxkv_cache_put_stored_many: its tokens
     * lie in a block it shares with the others of that call, whose first
     * word counts them (the last one frees it). NULL: tokens of its own. */
    size_t *shared;
    /* A stub made in one allocation with others (cache.c, arena): that
     * allocation's count of holders, the last one freeing it; NULL: its
     * own allocation. */
    size_t *slab;
};

/* Own rows: the tokens whose values the entry holds itself. */
static inline size_t rlxkv_entry_rows(const rlxkv_entry *e) { return e->n_tokens - e->start; }

/* Bytes of one value of the entry's dtype. */
static inline size_t rlxkv_entry_value_size(const rlxkv_entry *e) { return e->dtype == RLXKV_F16 ? 2 : 4; }

/* An entry of n_values values whose block offsets are left for the caller
 * to fill (offs[0] is 0): the decoder learns the block lengths one by one
 * as it reads them into place. Owned by the caller (rlxkv_entry_free). */
rlxkv_entry *rlxkv_entry_alloc(size_t n_tokens, size_t n_layers, size_t n_values,
                               int dtype, int *status);

/* Little-endian helpers for the codec: wasm and x86 are little-endian, so
 * these compile to plain loads and stores there. */
static inline uint64_t rlxkv_load_u64le(const uint8_t *p) {
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
           (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 |
           (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}
static inline void rlxkv_store_u64le(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define RLXKV_BIG_ENDIAN 1
#else
#define RLXKV_BIG_ENDIAN 0
#endif

#endif
