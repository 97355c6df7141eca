/* Internal: a consistency check of the cache's tree and lists, for tests.
 * Not part of the public API. */
#ifndef RLXKV_CACHE_CHECK_H
#define RLXKV_CACHE_CHECK_H

#include "rlxkv.h"

/* Walks the whole tree and both lists; returns 1 when every invariant holds
 * (labels, depths, sorted children, compactness, row-major counts, lists,
 * totals), 0 otherwise. Labels are borrowed from the entries' tokens: each
 * must point into an entry of its subtree (the node's own entry if it has
 * one, else the same entry as one of its children) and read the tokens of
 * every entry below it. *nodes and *label_tokens (either may be NULL) get
 * the number of tree nodes and of tokens the edge labels spell (none of
 * them copied). O(size). */
int rlxkv_cache_check(const rlxkv_cache *c, size_t *nodes, size_t *label_tokens);

/* Bytes the tree allocates of its own: nodes and their child arrays (the
 * labels take none). O(size). */
size_t rlxkv_cache_tree_bytes(const rlxkv_cache *c);

#endif
