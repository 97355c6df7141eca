/* The few C helpers that exist only for the JS side: they flatten structs
 * whose layout JS would otherwise have to know. Everything else is called
 * straight from the library (see exports.txt). */
#include <stddef.h>

#include "rlxkv.h"

/* Stats as doubles, in this order: entries, bytes, cap_bytes,
 * pinned_entries, pinned_bytes, hits, misses, evictions, tokens_reused.
 * (Counters stay exact in a double up to 2^53.) */
void rlxkv_web_stats(const rlxkv_cache *c, double *out) {
    rlxkv_stats s;
    rlxkv_cache_stats(c, &s);
    out[0] = (double)s.entries;
    out[1] = (double)s.bytes;
    out[2] = (double)s.cap_bytes;
    out[3] = (double)s.pinned_entries;
    out[4] = (double)s.pinned_bytes;
    out[5] = (double)s.hits;
    out[6] = (double)s.misses;
    out[7] = (double)s.evictions;
    out[8] = (double)s.tokens_reused;
}

/* web/storage.js reads rlxkv_blob_info records at these offsets (wasm32). */
_Static_assert(offsetof(rlxkv_blob_info, file_bytes) == 80, "blob_info layout");
_Static_assert(offsetof(rlxkv_blob_info, n_tokens) == 88, "blob_info layout");
_Static_assert(offsetof(rlxkv_blob_info, kv_bytes) == 96, "blob_info layout");
_Static_assert(offsetof(rlxkv_blob_info, mtime) == 104, "blob_info layout");
_Static_assert(offsetof(rlxkv_blob_info, fingerprint) == 112, "blob_info layout");
_Static_assert(offsetof(rlxkv_blob_info, mtime_ns) == 120, "blob_info layout");
_Static_assert(offsetof(rlxkv_blob_info, status) == 124, "blob_info layout");
_Static_assert(offsetof(rlxkv_blob_info, error) == 128, "blob_info layout");
_Static_assert(offsetof(rlxkv_blob_info, dtype) == 132, "blob_info layout");
size_t rlxkv_web_blob_info_size(void) { return sizeof(rlxkv_blob_info); }

/* The load and prune reports are all uint64_t: storage.js reads them as
 * BigUint64 fields. */
_Static_assert(sizeof(rlxkv_load_report) == 9 * sizeof(uint64_t), "load_report layout");
_Static_assert(sizeof(rlxkv_prune_report) == 8 * sizeof(uint64_t), "prune_report layout");
