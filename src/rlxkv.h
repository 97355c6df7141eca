/*
 * rlxkv — a prompt KV-cache: longest-prefix lookup over token ids, a
 * byte-bounded LRU of per-layer K/V tensors, the blob codec (RLXKV001 and
 * its f16 variant RLXKVF16, and pages) and the names a store gives blobs.
 *
 * Copyright (C) 2026 the rlxkv authors. GPL-3.0-only.
 *
 * Conventions
 *   - Every handle is opaque; nothing here keeps global state.
 *   - Functions that can fail return an int status: RLXKV_OK (0), a positive
 *     outcome that is not an error (RLXKV_STALE, RLXKV_HIT, RLXKV_MISS), or
 *     a negative rlxkv_status error.
 *   - Ownership is stated at every function that returns memory. "Borrowed"
 *     means: do not free, valid until the next call that changes the cache.
 *   - Sizes are size_t; token ids are uint32_t; KV values are f32 or f16
 *     (IEEE binary16 bit patterns, as uint16_t), per entry (rlxkv_dtype).
 */
#ifndef RLXKV_H
#define RLXKV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RLXKV_VERSION "0.1.0"

typedef enum rlxkv_status {
    RLXKV_OK = 0,
    RLXKV_STALE = 1,            /* blob of another fingerprint: not an error */
    RLXKV_HIT = 2,              /* a lookup found an entry */
    RLXKV_MISS = 3,             /* a lookup found none */
    RLXKV_ERR_BAD_MAGIC = -1,   /* not a blob (neither RLXKV001 nor RLXKVF16) */
    RLXKV_ERR_TRUNCATED = -2,   /* blob ends before its fields do */
    RLXKV_ERR_CORRUPT = -3,     /* fields disagree (past_len, token range, trailing bytes) */
    RLXKV_ERR_NOMEM = -4,       /* allocation failed */
    RLXKV_ERR_NOSPACE = -5,     /* the entry cannot fit beside the pinned entries */
    RLXKV_ERR_IO = -6,          /* a file operation failed (a store's: JS) */
    RLXKV_ERR_QUOTA = -7,       /* disk full or storage quota exceeded (a store's: JS) */
    RLXKV_ERR_INVALID = -8,     /* a bad argument */
    RLXKV_ERR_NOTFOUND = -9,    /* no such entry or blob */
    RLXKV_ERR_SHAPE = -10,      /* blocks do not match the cache's layout */
    RLXKV_ERR_CHANGED = -11,    /* a file changed while it was read (a store's: JS) */
    RLXKV_ERR_LIMIT = -12       /* a valid blob past this reader's limits (RLXKV_MAX_LAYERS; in JS, a file too large to read) */
} rlxkv_status;

/* A static, human-readable text for any status. Never NULL. */
const char *rlxkv_strerror(int status);
const char *rlxkv_version(void);

/* A stable 64-bit hash (FNV-1a with a final avalanche). Apps can use it to
 * derive a fingerprint from a model id and config. */
uint64_t rlxkv_hash64(const void *data, size_t len, uint64_t seed);

/* ------------------------------------------------------------------------
 * Entries: one token prefix and its KV, in a single allocation.
 *
 * Blocks are numbered 0..2*n_layers-1: K of layer 0..L-1, then V of layer
 * 0..L-1 (the order of the blob format). All values of an entry are
 * contiguous in that order. Block lengths count values, whatever their type.
 * ---------------------------------------------------------------------- */
typedef struct rlxkv_entry rlxkv_entry;

/* The type of an entry's KV values. f16 values are IEEE binary16 bit
 * patterns (uint16_t), kept exactly as given: never rounded or widened. */
typedef enum rlxkv_dtype {
    RLXKV_F32 = 0,
    RLXKV_F16 = 1
} rlxkv_dtype;

/* Bytes per value of a dtype: 4, 2, or 0 for an unknown dtype. */
size_t rlxkv_dtype_size(int dtype);

/* A new entry with room for n_tokens tokens and 2*n_layers blocks whose
 * lengths (in values) are block_lens[0..2*n_layers-1], of type dtype.
 * Tokens and values are uninitialised: fill them through
 * rlxkv_entry_tokens_mut/_block_mut. Returns NULL on overflow, an unknown
 * dtype or out of memory (*status says which, if given). Owned by the
 * caller until passed to rlxkv_cache_put; free with rlxkv_entry_free
 * otherwise. */
rlxkv_entry *rlxkv_entry_new(size_t n_tokens, size_t n_layers,
                             const size_t *block_lens, int dtype, int *status);
void rlxkv_entry_free(rlxkv_entry *e);   /* NULL: a harmless no-op */
/* As rlxkv_entry_new, for an entry that brings the values of its tokens
 * from `start` on only (a page, see Pages): block_lens count the values
 * of those n_tokens - start tokens. start == 0 is rlxkv_entry_new. */
rlxkv_entry *rlxkv_entry_new_at(size_t n_tokens, size_t start, size_t n_layers,
                                const size_t *block_lens, int dtype, int *status);

size_t rlxkv_entry_n_tokens(const rlxkv_entry *e);
size_t rlxkv_entry_n_layers(const rlxkv_entry *e);
/* The first token whose values the entry holds itself (its blocks hold
 * those of tokens start..n_tokens-1): 0 for a whole entry; see Pages. */
size_t rlxkv_entry_start(const rlxkv_entry *e);
/* The resident entry whose values serve the first `start` tokens (borrowed,
 * NULL for a whole entry): see Pages. */
const rlxkv_entry *rlxkv_entry_parent(const rlxkv_entry *e);
int rlxkv_entry_dtype(const rlxkv_entry *e);               /* rlxkv_dtype */
/* Set by every put from a count of the cache's puts: tells an entry from
 * one of the same tokens that replaced it (e.g. while a save was under way). */
uint32_t rlxkv_entry_serial(const rlxkv_entry *e);
size_t rlxkv_entry_n_values(const rlxkv_entry *e);         /* sum of block lengths (its own values) */
size_t rlxkv_entry_kv_bytes(const rlxkv_entry *e);         /* n_values * dtype size: the budget unit */
const uint32_t *rlxkv_entry_tokens(const rlxkv_entry *e);  /* borrowed */
/* Block i's values (float * or uint16_t * by dtype), borrowed; NULL past the last. */
const void *rlxkv_entry_block(const rlxkv_entry *e, size_t i);
size_t rlxkv_entry_block_len(const rlxkv_entry *e, size_t i);
const void *rlxkv_entry_data(const rlxkv_entry *e);        /* all blocks, borrowed */
/* Every block's length is a multiple of its own tokens, n_tokens - start
 * (one row per token). */
int rlxkv_entry_row_major(const rlxkv_entry *e);
/* Writable views for filling a new entry; only before rlxkv_cache_put. */
uint32_t *rlxkv_entry_tokens_mut(rlxkv_entry *e);
void *rlxkv_entry_block_mut(rlxkv_entry *e, size_t i);

/* ------------------------------------------------------------------------
 * Layouts: how a model's K and V blocks are shaped, so that a partial hit
 * can cut them right.
 *
 *   TOKEN_MAJOR: a block is [tokens][heads * head_dim]: a token's values
 *                are one row, and the first m tokens are the first m rows.
 *   HEAD_MAJOR:  a block is [heads][tokens][head_dim] (ONNX, transformers.js,
 *                PyTorch: [batch, heads, seq, head_dim] with batch 1): the
 *                first m tokens are m rows of every head, heads apart.
 *   ANY:         no layout (the default): blocks of any length; a partial
 *                hit then takes token-major for granted, and only entries
 *                whose blocks are multiples of n_tokens are cut.
 * ---------------------------------------------------------------------- */
typedef enum rlxkv_order {
    RLXKV_ORDER_ANY = 0,
    RLXKV_TOKEN_MAJOR = 1,
    RLXKV_HEAD_MAJOR = 2
} rlxkv_order;

typedef struct rlxkv_layout {
    int order;          /* rlxkv_order */
    size_t heads;       /* KV heads (>= 1 unless ANY) */
    size_t head_dim;    /* values per head per token (>= 1 unless ANY) */
    size_t layers;      /* layers every entry has, or 0 for any number */
} rlxkv_layout;

/* Values in one block of n_tokens tokens under the layout (0 for ANY). */
size_t rlxkv_layout_block_len(const rlxkv_layout *l, size_t n_tokens);
/* OK when every block of e has that length (and e has l->layers layers if
 * given), else RLXKV_ERR_SHAPE with *bad_block (may be NULL) the first
 * block that differs (2 * the layers both have, for a layer count). */
int rlxkv_layout_check(const rlxkv_layout *l, const rlxkv_entry *e, size_t *bad_block);

/* ------------------------------------------------------------------------
 * Cache: byte-bounded LRU with longest-prefix lookup over a radix tree.
 * ---------------------------------------------------------------------- */
typedef struct rlxkv_cache rlxkv_cache;

typedef struct rlxkv_stats {
    size_t entries;         /* entries held */
    size_t bytes;           /* KV bytes held (values x dtype size: 4 for f32, 2 for f16) */
    size_t cap_bytes;       /* the budget */
    size_t pinned_entries;
    size_t pinned_bytes;
    uint64_t hits, misses, evictions;
    uint64_t tokens_reused; /* sum of `matched` over hits */
    size_t stored_entries;  /* stored-only entries (see Tiers) */
    uint64_t stored_bytes;  /* their KV bytes, in storage */
} rlxkv_stats;

/* A lookup result. `entry` is borrowed: valid until the next call that
 * frees an entry (an insert that replaces or evicts, remove, set_cap,
 * clear, free); rlxkv_cache_generation tells when that happened. */
typedef struct rlxkv_hit {
    const rlxkv_entry *entry;
    size_t matched;   /* query tokens covered: n_tokens of entry, or fewer for a partial hit */
} rlxkv_hit;

/* cap_bytes == 0 disables the cache: inserts store nothing. The fingerprint
 * names the model whose KV this cache holds (the names of its blobs). Returns
 * NULL when out of memory. Free with rlxkv_cache_free. */
rlxkv_cache *rlxkv_cache_new(size_t cap_bytes, uint64_t fingerprint);
void rlxkv_cache_free(rlxkv_cache *c);   /* NULL: a harmless no-op */
uint64_t rlxkv_cache_fingerprint(const rlxkv_cache *c);

/* Declares the shape of every block this cache will hold (see Layouts).
 * Only while the cache is empty (of resident and stored-only entries):
 * RLXKV_ERR_INVALID otherwise, or for a
 * layout with a zero head count or head size, or one whose row overflows. */
int rlxkv_cache_set_layout(rlxkv_cache *c, const rlxkv_layout *layout);
/* The cache's layout (order ANY when none was set). */
void rlxkv_cache_layout(const rlxkv_cache *c, rlxkv_layout *out);

/* Insert an entry, taking ownership of `e` (it is freed on failure and
 * when cap is 0; an entry already held by a cache is refused with
 * RLXKV_ERR_INVALID and left to it). An entry with identical tokens is
 * replaced and keeps its pin. LRU entries are then evicted until within the
 * cap; an entry that alone exceeds the cap is kept, alone. Fails, changing
 * nothing, with RLXKV_ERR_SHAPE when e does not fit the cache's layout, and
 * with RLXKV_ERR_NOSPACE when other pinned entries leave no room. With
 * paging on (see Pages), a page whose first `start` tokens the cache does
 * not hold is refused with RLXKV_ERR_NOTFOUND, and the values e brings of
 * tokens the cache already holds are dropped. The new entry is marked
 * dirty (not yet stored). */
int rlxkv_cache_put(rlxkv_cache *c, rlxkv_entry *e);
/* rlxkv_cache_put for an entry just read from its blob: filed clean and
 * stored (see Tiers), not dirty. */
int rlxkv_cache_put_loaded(rlxkv_cache *c, rlxkv_entry *e);

/* Copying convenience over rlxkv_cache_put: k[l], v[l] point at k_lens[l],
 * v_lens[l] values of type dtype. */
int rlxkv_cache_insert(rlxkv_cache *c, const uint32_t *tokens, size_t n_tokens,
                       size_t n_layers, int dtype, const void *const *k, const size_t *k_lens,
                       const void *const *v, const size_t *v_lens);

/* Longest cached entry that is wholly a prefix of `query` (empty entries and
 * entries longer than the query never match). Returns RLXKV_HIT and fills
 * *hit (the entry becomes most recent), RLXKV_MISS (*hit zeroed), or
 * RLXKV_ERR_INVALID for a NULL cache or query. O(n) in the query. */
int rlxkv_cache_lookup(rlxkv_cache *c, const uint32_t *query, size_t n, rlxkv_hit *hit);

/* As lookup, but may also reuse a longer entry that shares a common prefix
 * with the query, cut to it: hit->matched is then less than the entry's
 * n_tokens and the caller uses the first `matched` tokens of each block,
 * as rlxkv_hit_block describes (rlxkv_hit_copy copies them). `matched`
 * never exceeds max_match; a full-prefix entry longer than max_match is
 * cut too. Which entries can be cut: with a layout, all; without, those
 * whose blocks are multiples of n_tokens (taken as token-major). */
int rlxkv_cache_lookup_partial(rlxkv_cache *c, const uint32_t *query, size_t n,
                               size_t max_match, rlxkv_hit *hit);

/* Where a hit's values lie in block i of its entry: `count` runs of `run`
 * values, the first at `offset`, each `stride` after the one before (all
 * in values, from the block's start). A full hit, or a token-major cut, is
 * one run; a head-major cut is one run per head. For a page (see Pages),
 * the values of the hit's tokens that the entry holds itself. */
typedef struct rlxkv_span {
    size_t offset, run, stride, count;
} rlxkv_span;
void rlxkv_hit_block(const rlxkv_hit *hit, size_t i, rlxkv_span *out);
/* Values a copy of the hit needs: all its pieces' values. */
size_t rlxkv_hit_n_values(const rlxkv_hit *hit);
/* Copies the hit's values (of its entry's dtype) into dst, rlxkv_hit_n_values
 * of them, block after block, each block's runs back to back, gathered
 * from its pieces (as one whole entry's cut would lie);
 * block_lens_out (2*n_layers, may be NULL) gets each copied length. */
void rlxkv_hit_copy(const rlxkv_hit *hit, void *dst, size_t *block_lens_out);

/* Counts the calls that freed a resident entry: a borrowed resident entry
 * or a hit taken at generation g is still valid while the generation is g.
 * (Stored-only entries are freed without counting: one borrowed from
 * rlxkv_cache_next_stored is valid only until the cache next changes.) */
uint64_t rlxkv_cache_generation(const rlxkv_cache *c);

/* ------------------------------------------------------------------------
 * Pages: each token's values held once.
 *
 * With paging on, a put that extends what the cache holds keeps only the
 * values of the new tokens. Its entry becomes a page: rows start..n_tokens-1
 * of its own, and a parent, the resident entry whose values serve tokens
 * 0..start-1 (and whose own parent serves the tokens before its start, up
 * to an entry of start 0). Entries that share a prefix share its values,
 * and the budget counts each page once.
 *
 *   put "system prompt" (S, 1,000 tokens)    S      rows 0..999
 *   put S + turn 1 (1,100 tokens)            T1     rows 1,000..1,099, parent S
 *   put S + turn 1 + turn 2 (1,200 tokens)   T2     rows 1,100..1,199, parent T1
 *   put S + another turn 1 (1,080 tokens)    U1     rows 1,000..1,079, parent S
 *
 * A parent may serve fewer tokens than it has (a put that leaves its path
 * partway: an edited message). Only entries a partial hit may cut are paged
 * (with a layout, or, without one, row-major blocks of the same row lengths
 * and dtype); others stay whole. Eviction takes leaves first: an entry
 * whose values serve another resident one is not evicted before it, and a
 * pinned entry keeps its whole path. Removing an entry that serves others
 * hides it: it no longer hits, and goes when its last user does. A hit's
 * values then lie in several entries, its pieces (rlxkv_hit_pieces);
 * rlxkv_hit_copy gathers them. Off by default; only while the cache is
 * empty. RLXKV_ERR_INVALID otherwise. */
int rlxkv_cache_set_paging(rlxkv_cache *c, int on);

/* How many leading tokens of tokens[0..n) a put of them would take from
 * entries already held: the `start` from which the put must bring values
 * (rlxkv_entry_new_at), and never more than n. For tokens an entry already
 * has, the start of that entry's own values (its put replaces them). For a
 * new entry of dtype and n_layers whose blocks have row_lens[0..2L) values
 * per token (NULL with a layout: the layout's row). 0 with paging off.
 * SIZE_MAX when entries hold some leading tokens but cannot stay beside
 * the new ones within the cap (eviction takes leaves first, so it would take
 * the new entry): the put must bring every value, and is filed whole, or
 * refused with RLXKV_ERR_NOSPACE if it brings only its last tokens'. */
size_t rlxkv_cache_held(const rlxkv_cache *c, const uint32_t *tokens, size_t n, int dtype,
                        size_t n_layers, const size_t *row_lens);

/* A part of a hit: tokens from..to-1, whose values lie in `entry`'s own rows. */
typedef struct rlxkv_piece {
    const rlxkv_entry *entry;   /* borrowed, as the hit's */
    size_t from, to;
} rlxkv_piece;
/* The hit's pieces, first tokens first, into out[0..cap): returns how many
 * there are (call again with room if that is more than cap). One piece for
 * a hit on a whole entry; 0 for a miss or a stored-only entry. */
size_t rlxkv_hit_pieces(const rlxkv_hit *hit, rlxkv_piece *out, size_t cap);
/* Where a piece's values lie in block i of its entry (as rlxkv_hit_block). */
void rlxkv_piece_block(const rlxkv_piece *p, size_t i, rlxkv_span *out);

/* ------------------------------------------------------------------------
 * Tiers: memory and storage under one lookup.
 *
 * A cache can also know entries that are in storage but not in memory:
 * stored-only entries, which hold their tokens and size but no values.
 * They share the radix tree with resident entries, so one lookup finds the
 * longest cached prefix among both; the caller then loads the blob of a
 * stored-only hit and puts it (which replaces it, keeping its pin). They do
 * not count against cap_bytes; stats count them apart. The sync lookups
 * above see resident entries only. With the stored index on, evicting a
 * resident entry whose blob is stored (marked clean) leaves its stored-only
 * entry behind instead of forgetting it, and clear() drops only resident
 * entries that way.
 * ---------------------------------------------------------------------- */

/* Off by default. */
void rlxkv_cache_set_stored_index(rlxkv_cache *c, int on);

/* Records a stored-only entry of n_tokens tokens and n_values values of
 * dtype (row_major: its blocks are multiples of n_tokens, which makes it
 * trimmable without a layout). A resident entry of the same tokens is left
 * as it is; a stored-only one is updated. RLXKV_OK, or RLXKV_ERR_NOMEM /
 * RLXKV_ERR_INVALID with nothing changed. Does nothing with cap 0. */
int rlxkv_cache_put_stored(rlxkv_cache *c, const uint32_t *tokens, size_t n_tokens, int dtype,
                           size_t n_values, int row_major);

/* One stored-only entry of rlxkv_cache_put_stored_many. Its tokens: with
 * parent 0, tokens[tokens_at, tokens_at + n_tokens) of the call's array;
 * with parent (1 + the index of another spec of the call, its parent
 * page), that spec's tokens' first `start`, then its own n_tokens there
 * (parent_n: the parent's token count; a spec whose parent is not of that
 * count, or whose parents loop, gets RLXKV_ERR_NOTFOUND). like: 0, or
 * 1 + the index of an earlier spec without a parent whose tokens_at is
 * the same (so their first tokens are the same ones): this one is placed
 * from that one's place in the tree. status: set by the call, as
 * put_stored's. */
typedef struct rlxkv_stored {
    size_t tokens_at, n_tokens, n_values, like, parent, start, parent_n;
    int dtype, row_major, status;
} rlxkv_stored;

/* rlxkv_cache_put_stored of each of count specs, in order, their stubs
 * sharing copies of the tokens (freed with the last of them; n_tokens:
 * the array's length), a page placed from its parent (O(its own tokens)).
 * A spec whose tokens run past the array gets RLXKV_ERR_INVALID. Returns
 * RLXKV_OK with each status set, or RLXKV_ERR_NOMEM / RLXKV_ERR_INVALID
 * (every status INVALID) with nothing changed. A run of pages (each
 * extended at its end by the next spec) may be placed as its last page's
 * stub alone, the others made when a call first needs them (cache.c,
 * Folds): no call can tell, but the first lookup inside the run pays for
 * placing them. */
int rlxkv_cache_put_stored_many(rlxkv_cache *c, const uint32_t *tokens, size_t n_tokens, rlxkv_stored *specs,
                                size_t count);

/* Tokens packed as a store index packs them (FORMATS.md, RLXKVIX4): each
 * one's low 16 bits, then the places, ascending, and the high 16 bits of
 * the `high` ones of 0x10000 or more. */
typedef struct rlxkv_packed_tokens {
    const uint16_t *low;
    size_t n_tokens;
    const uint32_t *places;
    const uint16_t *highs;
    size_t high;
} rlxkv_packed_tokens;

/* rlxkv_cache_put_stored_many over packed tokens (tokens_at and n_tokens
 * count in them), unpacked straight into the copies the stubs share: no
 * array of the tokens widened is made. RLXKV_ERR_INVALID (every status
 * INVALID) also if a place is out of range or not after the one before. */
int rlxkv_cache_put_stored_many_packed(rlxkv_cache *c, const rlxkv_packed_tokens *tokens, rlxkv_stored *specs,
                                       size_t count);

#define RLXKV_MATCH_PARTIAL 1u /* as lookup_partial, else as lookup */
/* The longest cached prefix among resident and stored-only entries alike:
 * as rlxkv_cache_lookup, or with RLXKV_MATCH_PARTIAL as
 * rlxkv_cache_lookup_partial (matched <= max_match either way). Of two hits
 * that match as many tokens, a resident one wins. hit->entry may be
 * stored-only (rlxkv_entry_is_resident says): it has tokens but no values. */
int rlxkv_cache_match(rlxkv_cache *c, const uint32_t *query, size_t n, size_t max_match,
                      unsigned flags, rlxkv_hit *hit);
/* 1 for an entry with values in memory, 0 for a stored-only one (or NULL). */
int rlxkv_entry_is_resident(const rlxkv_entry *e);
/* Stored-only entries, from most to least recently used (pass NULL to
 * start; NULL at the end). Borrowed; do not change the cache meanwhile. */
const rlxkv_entry *rlxkv_cache_next_stored(const rlxkv_cache *c, const rlxkv_entry *prev);

/* The entry with exactly these tokens (resident or stored-only), or NULL.
 * Borrowed; does not touch LRU. Like rlxkv_cache_held and
 * rlxkv_cache_next_stored, it may place the pages of a run an index put
 * folded (rlxkv_cache_put_stored_many): not a pure read, so not to be
 * called beside another call on the same cache. */
const rlxkv_entry *rlxkv_cache_get(const rlxkv_cache *c, const uint32_t *tokens, size_t n);
int rlxkv_cache_remove(rlxkv_cache *c, const uint32_t *tokens, size_t n); /* OK / NOTFOUND */
/* A pinned entry is never evicted. OK / NOTFOUND. */
int rlxkv_cache_pin(rlxkv_cache *c, const uint32_t *tokens, size_t n);
int rlxkv_cache_unpin(rlxkv_cache *c, const uint32_t *tokens, size_t n);
int rlxkv_cache_is_pinned(const rlxkv_cache *c, const rlxkv_entry *e);
/* New budget; evicts LRU entries to fit (cap 0 drops every unpinned entry). */
void rlxkv_cache_set_cap(rlxkv_cache *c, size_t cap_bytes);
/* Drops every entry, pinned too (with the stored index on, see Tiers). */
void rlxkv_cache_clear(rlxkv_cache *c);
void rlxkv_cache_stats(const rlxkv_cache *c, rlxkv_stats *out);

/* Iteration over resident entries: pinned first, then from most to least
 * recently used (stored-only ones: rlxkv_cache_next_stored).
 * Pass NULL to start; returns NULL at the end. Borrowed entries; do not
 * change the cache while iterating. */
const rlxkv_entry *rlxkv_cache_next(const rlxkv_cache *c, const rlxkv_entry *prev);

/* Dirty: inserted since last marked clean (i.e. not yet in the store).
 * mark_clean also records that its blob is stored (see Tiers); mark_unstored
 * that it is neither dirty nor stored (its blob was removed). */
int rlxkv_cache_is_dirty(const rlxkv_cache *c, const rlxkv_entry *e);
void rlxkv_cache_mark_clean(rlxkv_cache *c, const rlxkv_entry *e);
void rlxkv_cache_mark_unstored(rlxkv_cache *c, const rlxkv_entry *e);

/* ------------------------------------------------------------------------
 * Codec: RLXKV001 (f32 values, FORMATS.md) and its f16 variant
 * RLXKVF16 (FORMATS.md): little-endian u64 fields, then the values. An
 * entry is written in the format of its dtype; rlxkv_encode_f32 writes an
 * f16 entry as RLXKV001, widened exactly.
 * ---------------------------------------------------------------------- */

/* The most layers a blob may have here: a valid blob of more is refused
 * with RLXKV_ERR_LIMIT (by the C and the JS codec alike), so that no
 * reader builds millions of empty blocks from a few hundred MB. */
#define RLXKV_MAX_LAYERS 4096

/* What a blob holds, learnt without allocating. */
typedef struct rlxkv_blob_meta {
    uint64_t fingerprint;
    uint64_t n_tokens;      /* == past_len */
    size_t n_layers;        /* <= RLXKV_MAX_LAYERS */
    int dtype;              /* rlxkv_dtype: RLXKV_F32 for RLXKV001, RLXKV_F16 for RLXKVF16 */
    uint64_t n_values;      /* sum of all block lengths */
    uint64_t blob_bytes;
    /* A page (RLXKVPG1, RLXKVPH1; FORMATS.md): the first token of its own
     * values, its parent's token count and key (rlxkv_page_key, or 0 and
     * the hash of a blob's 64-bit name); all 0 for a blob. */
    uint64_t start, parent_n, parent[2];
} rlxkv_blob_meta;

/* Exact size of the entry's blob in its own format (RLXKV001 for f32,
 * RLXKVF16 for f16); 0 on size overflow or past RLXKV_MAX_LAYERS. */
size_t rlxkv_encoded_size(const rlxkv_entry *e);
/* Writes that blob into buf (cap bytes). RLXKV_ERR_INVALID if cap is
 * short, RLXKV_ERR_LIMIT past RLXKV_MAX_LAYERS. *written (may be NULL)
 * gets the size (0 on failure). */
int rlxkv_encode(const rlxkv_entry *e, uint64_t fingerprint, uint8_t *buf,
                 size_t cap, size_t *written);
/* The same as RLXKV001 whatever the dtype: f16 values are widened exactly
 * (rlxkv_f16_widen); an f32 entry gives the bytes rlxkv_encode gives. */
size_t rlxkv_encoded_size_f32(const rlxkv_entry *e);
int rlxkv_encode_f32(const rlxkv_entry *e, uint64_t fingerprint, uint8_t *buf,
                     size_t cap, size_t *written);
/* n binary16 bit patterns to the f32 of the same value, exactly: signed
 * zeros, subnormals and infinities keep their value, NaNs their sign and
 * payload (shifted into the top of the f32 mantissa). */
void rlxkv_f16_widen(float *dst, const uint16_t *src, size_t n);
/* 8-bit pages (FORMATS.md, "8-bit pages"): n_blocks blocks of a page,
 * one after another in src's src_len bytes (each a u64 little-endian length, which must
 * be n_rows x group, then n_rows rows: a binary16 scale, u16
 * little-endian, finite and non-negative, and `group` int8s), dequantized into dst as dtype values, block after block:
 * each q x scale, exact in f32 (RLXKV_F32); for RLXKV_F16 that rounded to
 * the nearest binary16, ties to even, at most +-65504 (bits). dst holds
 * n_blocks x n_rows x group values, aligned for dtype (caller-owned, as
 * src is). Returns the bytes of src read; 0 for another dtype, no src, a
 * group outside 1..65536, blocks past src_len (or SIZE_MAX), or a block
 * of another length or a scale that is not finite and non-negative (what
 * came before it written). */
size_t rlxkv_q8_dequant(void *dst, int dtype, const uint8_t *src, size_t src_len, size_t n_blocks, size_t n_rows,
                        size_t group);
/* Validates a whole blob of either format without allocating: OK, or an
 * error. Fills *meta (may be NULL). Stale-ness is not judged here. */
int rlxkv_inspect(const uint8_t *buf, size_t len, rlxkv_blob_meta *meta);
/* Decodes a blob of either format into a new entry of its dtype (*out,
 * owned by the caller); a page into an entry of its start (a paging cache
 * takes it once it holds the page's first `start` tokens). When expect_fp is non-NULL and the blob's
 * fingerprint differs, returns RLXKV_STALE with *out = NULL (after
 * checking only the magic and the fingerprint). *fp_out (may be NULL)
 * gets the blob's fingerprint. */
int rlxkv_decode(const uint8_t *buf, size_t len, const uint64_t *expect_fp,
                 rlxkv_entry **out, uint64_t *fp_out);

/* ------------------------------------------------------------------------
 * Names: what a store calls the blob or page of an entry (FORMATS.md,
 * Names), the same in every tab, process and machine. The store itself is
 * JavaScript's (store/ in the package: IndexedDB, OPFS, a Node directory);
 * these are the names it gives and judges files by.
 * ---------------------------------------------------------------------- */

/* Longest page name, NUL included. */
#define RLXKV_PAGE_NAME_CAP 48
/* A page's key (FORMATS.md, Pages): a 128-bit hash chained over the
 * fingerprint and the tokens one at a time, then the dtype and the count;
 * its name is the key's 32 hex digits, then ".rlxkv". What a store names
 * each blob and page it writes: the same prefix of the same model and
 * dtype gets the same name everywhere. */
void rlxkv_page_key(uint64_t fingerprint, int dtype, const uint32_t *tokens, size_t n, uint64_t key[2]);
void rlxkv_page_name(uint64_t fingerprint, int dtype, const uint32_t *tokens, size_t n,
                     char name[RLXKV_PAGE_NAME_CAP]);
/* The name stores gave a blob before pages (and still take as its own):
 * 16 hex digits of rlxkv_hash64 of the tokens (little-endian u32s) seeded
 * with the fingerprint, then ".rlxkv", into name (at least 32 bytes). */
void rlxkv_blob_name(uint64_t fingerprint, const uint32_t *tokens, size_t n, char name[32]);

#ifdef __cplusplus
}
#endif
#endif /* RLXKV_H */
