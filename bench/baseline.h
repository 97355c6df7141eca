/* The benchmark baseline: a faithful C port of the reference algorithm
 * (/work/shared/seed/prompt_cache.rs, `PromptCache`, `save_entry`,
 * `load_entry`). Kept under bench/ only; nothing in src/ uses it.
 *
 * What it keeps from the reference, on purpose:
 *   - entries in a vector, recency ticks in a parallel vector;
 *   - lookup = a linear scan over every entry computing its common prefix
 *     with the query, then a full clone (malloc + copy) of the best entry;
 *   - insert = a linear scan for an entry with equal tokens (slice equality:
 *     length, then memcmp), push, then evict by scanning for the min tick
 *     and `Vec::remove` (shifting the tail);
 *   - the codec writes and reads one value at a time through an 8 KiB
 *     buffer (`BufWriter::write_all` / `BufReader::read_exact` per u64 and
 *     per f32), decoding each block into a vector with push per float.
 * A KV is `Vec<Vec<f32>>` per side, as `KvCacheState`.
 */
#ifndef RLXKV_BENCH_BASELINE_H
#define RLXKV_BENCH_BASELINE_H

#include <stddef.h>
#include <stdint.h>

/* Vec<f32> */
typedef struct bl_vecf {
    float *ptr;
    size_t len, cap;
} bl_vecf;

/* KvCacheState { past_len, layers_kv_base, layers_k, layers_v } */
typedef struct bl_kv {
    size_t past_len;
    size_t n_layers;
    size_t *layers_kv_base; /* n_layers zeros, as the reference */
    bl_vecf *layers_k;      /* n_layers */
    bl_vecf *layers_v;
} bl_kv;

/* CacheEntry { tokens, kv } */
typedef struct bl_entry {
    uint32_t *tokens;
    size_t n_tokens;
    bl_kv kv;
} bl_entry;

typedef struct bl_cache {
    bl_entry *entries;
    uint64_t *ticks;
    size_t len, cap; /* both vectors share len; capacities grow alike */
    uint64_t clock;
    size_t bytes, cap_bytes;
} bl_cache;

/* An entry owning copies of tokens and of each K/V block (k[l] has k_lens[l]
 * floats). Returns 0 on success, -1 out of memory. */
int bl_entry_make(bl_entry *e, const uint32_t *tokens, size_t n_tokens, size_t n_layers,
                  const float *const *k, const size_t *k_lens, const float *const *v,
                  const size_t *v_lens);
int bl_entry_clone(bl_entry *dst, const bl_entry *src); /* CacheEntry::clone */
void bl_entry_drop(bl_entry *e);
size_t bl_entry_kv_bytes(const bl_entry *e);

void bl_cache_init(bl_cache *c, size_t cap_bytes);
void bl_cache_drop(bl_cache *c);
/* PromptCache::longest_prefix: 1 and a clone in *out (caller drops it) on a
 * hit, 0 on a miss, -1 out of memory. */
int bl_longest_prefix(bl_cache *c, const uint32_t *query, size_t n, size_t *matched,
                      bl_entry *out);
/* PromptCache::insert: takes ownership of *e (moved). 0, or -1 out of memory. */
int bl_insert(bl_cache *c, bl_entry *e);
/* Entries.push with no duplicate check or eviction: only for building a set
 * whose tokens are known distinct and under the cap (the state bl_insert
 * would reach, minus its quadratic cost). */
int bl_push_unchecked(bl_cache *c, bl_entry *e);
/* Vec::pop of the last entry (dropped). */
void bl_pop(bl_cache *c);

/* A growable byte vector (Vec<u8>). */
typedef struct bl_bytes {
    uint8_t *ptr;
    size_t len, cap;
} bl_bytes;

/* save_entry's serialization into memory: per-value write_all through an
 * 8 KiB BufWriter whose sink appends to *out. 0, or -1. */
int bl_encode(const bl_entry *e, uint64_t fingerprint, bl_bytes *out);
/* load_entry's parsing from memory through an 8 KiB BufReader: 1 and *out
 * on success, 0 when stale (magic or fingerprint), -1 on error. */
int bl_decode(const uint8_t *buf, size_t len, uint64_t fingerprint, bl_entry *out);
/* save_entry / load_entry on a file (BufWriter<File> / BufReader<File>: the
 * same 8 KiB buffering over write(2) / read(2); no fsync, as the reference). */
int bl_save_entry(const char *path, const bl_entry *e, uint64_t fingerprint);
int bl_load_entry(const char *path, uint64_t fingerprint, bl_entry *out);

#endif
