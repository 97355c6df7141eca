/* Internal: a consistency check of the cache's tree and lists, for tests.
 * Not part of the public API. */
#ifndef RLXKV_CACHE_CHECK_H
#define RLXKV_CACHE_CHECK_H

#include "rlxkv.h"

/* Walks the whole tree and both lists; returns 1 when every invariant holds
 * (labels, depths, sorted children, compactness, row-major counts, lists,
 * totals), 0 otherwise. *nodes and *label_tokens (either may be NULL) get
 * the number of tree nodes and of tokens stored in edge labels. O(size). */
int rlxkv_cache_check(const rlxkv_cache *c, size_t *nodes, size_t *label_tokens);

#endif
