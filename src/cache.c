/* The cache: a radix tree over token ids for prefix lookup, and two
 * recency lists of entries (in an array of slots) for eviction.
 *
 * Tree. A node is reached through an edge labelled with a run of tokens
 * (node->label); node->depth counts the tokens from the root to the node's
 * end. A node holds at most one entry, whose tokens spell the node's path,
 * so a lookup is one walk down the query: O(query length) whatever the
 * number of entries. Every node but the root holds an entry or has at least
 * two children (removal prunes and merges to keep it so): the tree has at
 * most 2 * entries + 1 nodes, and a prefix shared by many entries is stored
 * once. Children are kept sorted by their first token and found by binary
 * search, or, below a wide node, through a hash (see HASH_MIN_KIDS).
 *
 * Labels. No label is copied: node->label points into the tokens of an
 * entry in the node's subtree, its base, at offset depth - nlabel. Every
 * entry below a node spells the node's path, so any of them will do. A
 * node that holds an entry uses its own (so a lookup reads that entry's
 * tokens, not a separate copy); one that holds none uses one of its
 * children's. By that rule the nodes whose labels point into an entry form
 * a run up the path from the entry's node, and when the entry leaves,
 * rebase() moves that run to another entry below it: O(nodes on the path),
 * and nothing to allocate, so removal and eviction cannot fail.
 *
 * Partial reuse. An entry is trimmable when a partial hit may cut it to
 * fewer tokens: with a layout, every entry with tokens; without, those whose
 * blocks are multiples of n_tokens (read as token-major rows).
 * For each class k, node->trim[k].n counts the sources of trimmable entries
 * of that class at the node: its own entry, and each child whose own count
 * is not zero; those children are linked in a list (head, prev/next). So
 * n > 0 exactly when the subtree holds one, and finding it means following
 * the list down: O(depth), never a scan of entries. A change moves up only
 * while a count crosses zero, so a long chain of prompts one token apart
 * costs O(1) per insert here, not O(depth).
 *
 * Lists. Unpinned entries form an LRU list, pinned ones a list of their
 * own, both most recent first, linked through slots (see Recency below).
 * Eviction takes the LRU tail: O(1).
 *
 * Tiers. An entry may be resident (its KV in memory) or stored-only: a
 * small entry of its tokens alone, standing for a blob in storage that a
 * caller can load on a hit (rlxkv_cache_match). Stored-only entries are
 * nodes like any other, on a third list (STORED, most recent first), and
 * count apart from the memory budget. With the stored index on, evicting
 * an entry that has a blob leaves its stored-only entry behind. Those an
 * open places at once (rlxkv_cache_put_stored_many: a store's index) share
 * their tokens (a block per chain of pages) and are carved, with their
 * nodes, from one block (an arena): each holds its blocks by a count, the
 * last one out frees them. Partial
 * reuse keeps two counts per node: trimmable resident entries (what a
 * sync lookup may use) and trimmable entries of both tiers.
 *
 * Folds. Most pages of an index lie on runs: pages each extended by the
 * next one alone, up to one that none extends (a conversation's turns).
 * An open (put_stored_many) places a run as the stub of its end alone, one
 * node, whose edge holds the run's other pages: they are folded into it.
 * Their stubs and nodes are made (unfolded) when something needs them: a
 * walk that stops inside that edge, a pick of a trimmable entry that
 * reaches the end from above, the end's own removal or replacement, a
 * listing of stored-only entries. Until then they count in the totals, and
 * each has its recency slot on the STORED list, in its place, empty (its
 * entry the end's); the memory of their stubs and nodes is set aside in
 * the open's arena, so unfolding cannot fail. Nothing else can tell them
 * apart from stubs in the tree: a walk that takes the whole edge meets the
 * end first, deeper than any of them, and while they are folded no other
 * node or entry lies inside the edge. So an open of ten thousand pages in
 * fifty runs makes fifty stubs and nodes, and a conversation's first
 * lookup unfolds its own run. Built with RLXKV_FOLDS 0 (the browser build,
 * for its size budget: wasm/wasm.cmake), nothing is folded: every page is
 * placed at once, and the code for folds compiles away.
 */
#include <stdlib.h>
#include <string.h>

#include "cache_check.h"
#include "entry.h"

#ifndef RLXKV_FOLDS
#define RLXKV_FOLDS 1 /* see Folds above */
#endif

typedef struct node node;

/* A slot of a wide node's hash index: kid NULL when empty. */
struct kid_hash {
    uint32_t key;
    uint32_t at;              /* the kid's place in kids[] and keys[] */
    node *kid;
};

struct node {
    /* What a lookup reads first. */
    const uint32_t *label;    /* the edge from the parent, borrowed (see
                                 Labels above); NULL at the root */
    size_t nlabel;
    size_t depth;             /* tokens from the root through this edge */
    size_t nkids;
    uint32_t *keys;           /* sorted; keys[i] == kids[i]->label[0] */
    node **kids;              /* in the same allocation as keys */
    struct kid_hash *hash;    /* a wide node's index of kids by key (2 *
                                 cap slots, same allocation), or NULL */
    rlxkv_entry *entry;       /* its tokens are the path to here, or NULL */
    size_t *slab;             /* made in an arena's block (its holders' count), or NULL */
    uint32_t slot;            /* the entry's recency slot */
    node *parent;
    size_t kids_cap;          /* room in kids and keys */
    /* Per tier class (RESIDENT, ANY_TIER): trimmable entries in this
     * subtree, and the list of children whose count is not zero. */
    struct trim {
        size_t n;
        node *head;           /* first child with n > 0 */
        node *prev, *next;    /* siblings with n > 0 */
    } trim[2];
};

enum { RESIDENT = 0, ANY_TIER = 1 };

/* Recency. The lists live in one array of slots beside the tree, not in
 * the entries: a hit relinks three slots of a small dense array (24 bytes
 * an entry, 16 in wasm; in L2 at 10,000 entries) instead of writing into two
 * neighbouring entries, which sit kilobytes apart in cold memory. Slot
 * LRU heads the unpinned list, slot PINNED the pinned one and slot STORED
 * the stored-only entries; each list is circular through its head, most
 * recent first. Slot INTERIOR heads the unpinned entries whose values
 * serve other resident entries (see Pages): not evictable until those go.
 * Free slots are chained through next. */
typedef struct slot {
    rlxkv_entry *e;          /* NULL for a head or a free slot */
    uint32_t prev, next;
    uint32_t list;           /* LRU, PINNED, STORED or INTERIOR: which head it hangs from */
} slot;

enum { LRU = 0, PINNED = 1, STORED = 2, INTERIOR = 3, FIRST_ENTRY_SLOT = 4, NO_SLOT = 0 };

struct rlxkv_cache {
    node *root;
    slot *slots;
    uint32_t nslots, slots_cap;
    uint32_t free_slot;       /* first free slot, or NO_SLOT */
    size_t cap_bytes, bytes, entries, pinned_bytes, pinned_entries;
    size_t stored_entries;    /* stored-only */
    uint64_t stored_bytes;    /* their KV bytes, in storage */
    int stored_index;         /* evictions of stored entries leave them stored-only */
    int paging;               /* puts keep only new tokens' values (see Pages) */
    size_t hidden;            /* removed entries whose values still serve others */
    rlxkv_layout layout;
    uint64_t fingerprint, hits, misses, evictions, tokens_reused;
    uint64_t generation;      /* calls that freed an entry */
    uint32_t puts;            /* serials of entries (wraps) */
    /* While put_stored_many places its stubs, or unfolded() a run's: one
     * block their entries and nodes are carved from (block NULL otherwise). */
    struct arena {
        size_t *block;
        unsigned char *next, *end;
    } arena;
    struct fold *folds;       /* runs of pages folded (see Folds), newest first */
    uint32_t bind;            /* while unfolded() places a page: the slot kept for it */
};

/* A run of pages folded into the stub at its end (see Folds). It lies in
 * the arena block the end was carved from, after it, with the room set
 * aside for the pages' stubs and nodes: the end's hold on the block keeps
 * them, and nothing frees them but the block's last holder. */
struct fold {
    struct fold *next;
    rlxkv_entry *end;         /* flagged FOLDED */
    size_t n;                 /* pages, n >= 1 */
    uint32_t slot, serial;    /* the first page's recency slot and serial; the next ones' follow on */
    struct arena room;        /* for their stubs and nodes (block: the end's) */
    struct folded {
        size_t n_tokens, n_values;
    } page[];                 /* shallowest first; each stub's tokens are the end's first n_tokens */
};

static void unfolded(rlxkv_cache *c, rlxkv_entry *e);

/* n bytes, zeroed, from the cache's arena (its block then held once more),
 * or NULL when there is none or it is full: the caller mallocs. */
static void *arena_take(rlxkv_cache *c, size_t n, size_t **slab) {
    struct arena *a = &c->arena;
    n = (n + 15) & ~(size_t)15;
    if (!a->block || (size_t)(a->end - a->next) < n) return NULL;
    void *p = a->next;
    a->next += n;
    memset(p, 0, n);
    ++*a->block;
    *slab = a->block;
    return p;
}

/* ---- recency lists ---------------------------------------------------- */

/* Links slot i into `list` right after slot `at` (the list's head: as its
 * most recent; its last slot: as its least recent). */
static void slot_link_after(slot *s, uint32_t i, uint32_t list, uint32_t at) {
    uint32_t next = s[at].next;
    s[i].list = list;
    s[i].prev = at;
    s[i].next = next;
    s[next].prev = i;
    s[at].next = i;
}

static void slot_link(slot *s, uint32_t i, uint32_t list) { slot_link_after(s, i, list, list); }

static void slot_unlink(slot *s, uint32_t i) {
    s[s[i].prev].next = s[i].next;
    s[s[i].next].prev = s[i].prev;
}

static void slots_reset(rlxkv_cache *c) {
    for (uint32_t h = LRU; h <= INTERIOR; h++) {
        c->slots[h] = (slot){NULL, h, h, h};
    }
    c->nslots = FIRST_ENTRY_SLOT;
    c->free_slot = NO_SLOT;
}

/* Makes sure n slots are free from nslots on (one: or a free one), so
 * that what follows cannot fail halfway. */
static int slot_reserve(rlxkv_cache *c, size_t n) {
    while (n > c->slots_cap - c->nslots && (n > 1 || c->free_slot == NO_SLOT)) {
        size_t want = 2 * (size_t)c->slots_cap;
        if (c->slots_cap > UINT32_MAX / 2 || want > SIZE_MAX / sizeof(slot)) return 0;
        slot *s = realloc(c->slots, want * sizeof *s);
        if (!s) return 0;
        c->slots = s;
        c->slots_cap *= 2;
    }
    return 1;
}

static int is_stub(const rlxkv_entry *e) { return (e->flags & RLXKV_ENTRY_STUB) != 0; }
static int is_hidden(const rlxkv_entry *e) { return (e->flags & RLXKV_ENTRY_HIDDEN) != 0; }

/* Pinned: a resident entry on the PINNED list, or a stored-only one that
 * will be pinned once loaded. */
static int node_pinned(const rlxkv_cache *c, const node *n) {
    return is_stub(n->entry) ? (n->entry->flags & RLXKV_ENTRY_PIN_ON_LOAD) != 0
                             : c->slots[n->slot].list == PINNED;
}

/* The list an entry belongs on: STORED for a stub; else PINNED, INTERIOR
 * while its values serve others (or it is hidden), or LRU. */
static uint32_t list_of(const rlxkv_entry *e, int pinned) {
    return is_stub(e) ? STORED : pinned ? PINNED : e->users || is_hidden(e) ? INTERIOR : LRU;
}

/* Adds n's entry to its list (list_of), as the most recent, and to the
 * totals. A slot must have been reserved. */
static void enlist(rlxkv_cache *c, node *n, int pinned) {
    size_t b = rlxkv_entry_kv_bytes(n->entry);
    uint32_t i = c->free_slot, list = list_of(n->entry, pinned);
    if (RLXKV_FOLDS && c->bind) { /* a folded page's stub: its slot is listed and counted already (see Folds) */
        c->slots[c->bind].e = n->entry;
        n->slot = c->bind;
        return;
    }
    if (i != NO_SLOT) c->free_slot = c->slots[i].next;
    else i = c->nslots++;
    c->slots[i].e = n->entry;
    slot_link(c->slots, i, list);
    n->slot = i;
    if (list == STORED) {
        c->stored_entries++;
        c->stored_bytes += b;
        return;
    }
    c->entries++;
    c->bytes += b;
    if (pinned) {
        c->pinned_entries++;
        c->pinned_bytes += b;
    }
}

/* Takes n's entry off its list and out of the totals. */
static void unlist(rlxkv_cache *c, node *n) {
    size_t b = rlxkv_entry_kv_bytes(n->entry);
    uint32_t i = n->slot;
    if (c->slots[i].list == STORED) {
        c->stored_entries--;
        c->stored_bytes -= b;
    } else {
        if (c->slots[i].list == PINNED) {
            c->pinned_entries--;
            c->pinned_bytes -= b;
        }
        c->entries--;
        c->bytes -= b;
    }
    slot_unlink(c->slots, i);
    c->slots[i].e = NULL;
    c->slots[i].next = c->free_slot;
    c->free_slot = i;
    n->slot = NO_SLOT;
}

static void touch(rlxkv_cache *c, const node *n) {
    slot *s = c->slots;
    uint32_t i = n->slot, list = s[i].list;
    if (s[list].next == i) return;
    slot_unlink(s, i);
    slot_link(s, i, list);
}

/* The least recently used unpinned entry, or NULL. */
static rlxkv_entry *lru_tail(const rlxkv_cache *c) { return c->slots[c->slots[LRU].prev].e; }

/* Moves slot i to another list: to the front (most recent), or, with
 * `last`, to the back (the next to evict). */
static void slot_move(slot *s, uint32_t i, uint32_t list, int last) {
    slot_unlink(s, i);
    slot_link_after(s, i, list, last ? s[list].prev : list);
}

/* ---- nodes and their children ----------------------------------------- */

/* A node made in an arena has room for two children of its own, after it
 * (so a chain of pages there needs no other allocation): its kids and keys
 * arrays while it has at most two. */
enum { INLINE_KIDS = 2 };
#define ARENA_NODE (sizeof(node) + INLINE_KIDS * (sizeof(node *) + sizeof(uint32_t)))

static int kids_inline(const node *x) { return x->slab && x->kids == (node **)(x + 1); }

static node *node_new(rlxkv_cache *c, const uint32_t *label, size_t n) {
    size_t *slab = NULL;
    node *x = c ? arena_take(c, ARENA_NODE, &slab) : NULL;
    if (x) {
        x->slab = slab;
        x->kids = (node **)(x + 1);
        x->keys = (uint32_t *)(x->kids + INLINE_KIDS);
        x->kids_cap = INLINE_KIDS;
    } else if (!(x = calloc(1, sizeof *x))) {
        return NULL;
    }
    x->label = label;
    x->nlabel = n;
    return x;
}

static void kids_free(node *x) {
    if (!kids_inline(x)) free(x->kids);
}

static void node_free(node *x) {
    kids_free(x);
    if (!x->slab) free(x);
    else if (!--*x->slab) free(x->slab);
}

/* The tokens x's label borrows from: those of an entry in its subtree. Not
 * for the root, which has no label. */
static const uint32_t *base_of(const node *x) { return x->label - (x->depth - x->nlabel); }

/* The nodes from x up whose labels borrow from `from` borrow from `to`
 * instead: the tokens of another entry below each of them (so, with the
 * same tokens on their paths). The run stops at a node above x that holds
 * an entry: its label is its own entry's, even where that entry's tokens
 * are `from` too (stubs of one put_stored_many share theirs). */
static void rebase(const rlxkv_cache *c, node *x, const uint32_t *from, const uint32_t *to) {
    for (node *y = x; y != c->root && base_of(y) == from && (y == x || !y->entry); y = y->parent)
        y->label = to + (y->depth - y->nlabel);
}

/* Index of the first child whose first token is >= t. */
static size_t kid_index(const node *x, uint32_t t) {
    size_t lo = 0, hi = x->nkids;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->keys[mid] < t) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)(p))
#endif

/* Asks for n tokens at t at once, so that a label in cold memory arrives
 * in parallel rather than line by line as the comparison reaches it. */
static void prefetch_span(const uint32_t *t, size_t n) {
    const char *p = (const char *)t, *end = (const char *)(t + n);
    for (; p < end; p += 64) PREFETCH(p);
}

/* Wide nodes (the fork after a shared system prompt may have thousands of
 * children) also index their children in an open-addressing hash, so that
 * finding one costs one cache miss, not the ten-odd dependent ones of a
 * binary search over cold keys. Their arrays are then in no order: a child
 * is added at the end and a removed one's place taken by the last (each
 * hash slot knows its kid's place), so neither shifts 200,000 siblings.
 * Narrow nodes keep them sorted for the binary search. The hash is seeded
 * by the node's address, so no fixed set of token ids collides in every
 * process. */
#define HASH_MIN_KIDS 64

/* The hash has 2 * kids_cap slots, a power of two. */
static size_t hash_mask(const node *x) { return 2 * x->kids_cap - 1; }

static size_t hash_home(const node *x, uint32_t t) {
    uint32_t h = t ^ (uint32_t)((uintptr_t)x >> 4);
    h ^= h >> 16;
    h *= 0x7feb352dU;
    h ^= h >> 15;
    h *= 0x846ca68bU;
    h ^= h >> 16;
    return h & hash_mask(x);
}

/* The slot of key t, or the empty slot where it would go. */
static struct kid_hash *hash_slot(const node *x, uint32_t t) {
    size_t i = hash_home(x, t);
    while (x->hash[i].kid && x->hash[i].key != t) i = (i + 1) & hash_mask(x);
    return &x->hash[i];
}

static node *hash_find(const node *x, uint32_t t) { return hash_slot(x, t)->kid; }

/* Sets the kid for key t and its place, adding it if new. */
static void hash_put(node *x, uint32_t t, node *k, size_t at) {
    struct kid_hash *h = hash_slot(x, t);
    h->key = t;
    h->at = (uint32_t)at;
    h->kid = k;
}

/* Removes key t, shifting later slots of its probe run back into the gap
 * (no tombstones, so probes stay short). */
static void hash_del(node *x, uint32_t t) {
    size_t i = hash_home(x, t);
    while (x->hash[i].key != t || !x->hash[i].kid) i = (i + 1) & hash_mask(x);
    for (size_t j = i;;) {
        j = (j + 1) & hash_mask(x);
        if (!x->hash[j].kid) break;
        size_t home = hash_home(x, x->hash[j].key);
        /* j's entry may move to i unless its home lies cyclically in (i, j]. */
        if (i <= j ? home > i && home <= j : home > i || home <= j) continue;
        x->hash[i] = x->hash[j];
        i = j;
    }
    x->hash[i].kid = NULL;
}

static node *kid_find(const node *x, uint32_t t) {
    if (x->hash) return hash_find(x, t);
    size_t i = kid_index(x, t);
    return i < x->nkids && x->keys[i] == t ? x->kids[i] : NULL;
}

/* The place in kids[] of the child starting with t, which x has. */
static size_t kid_place(const node *x, uint32_t t) {
    return x->hash ? hash_slot(x, t)->at : kid_index(x, t);
}

/* Sorts kids[] and keys[] by key: a wide node's arrays on becoming narrow
 * (at most HASH_MIN_KIDS / 2 of them, so insertion sort). */
static void kids_sort(node *x) {
    for (size_t i = 1; i < x->nkids; i++) {
        uint32_t key = x->keys[i];
        node *kid = x->kids[i];
        size_t j = i;
        for (; j > 0 && x->keys[j - 1] > key; j--) {
            x->keys[j] = x->keys[j - 1];
            x->kids[j] = x->kids[j - 1];
        }
        x->keys[j] = key;
        x->kids[j] = kid;
    }
}

/* One allocation: kids, then the hash (wide nodes: twice cap slots, so at
 * most half full), then keys. */
static int kids_resize(node *x, size_t cap) {
    size_t nhash = cap >= HASH_MIN_KIDS ? 2 * cap : 0;
    size_t unit = sizeof(node *) + sizeof(uint32_t) + 2 * sizeof(struct kid_hash);
    if (cap > SIZE_MAX / unit || cap > UINT32_MAX) return 0;
    int was_wide = x->hash != NULL;
    node **kids = malloc(cap * sizeof *kids + nhash * sizeof(struct kid_hash) + cap * sizeof(uint32_t));
    if (!kids) return 0;
    struct kid_hash *hash = (struct kid_hash *)(kids + cap);
    uint32_t *keys = (uint32_t *)(hash + nhash);
    if (x->nkids) {
        memcpy(kids, x->kids, x->nkids * sizeof *kids);
        memcpy(keys, x->keys, x->nkids * sizeof *keys);
    }
    kids_free(x);
    x->kids = kids;
    x->keys = keys;
    x->kids_cap = cap;
    x->hash = nhash ? hash : NULL;
    if (nhash) {
        memset(hash, 0, nhash * sizeof *hash);
        for (size_t i = 0; i < x->nkids; i++) hash_put(x, keys[i], kids[i], i);
    } else if (was_wide) {
        kids_sort(x);
    }
    return 1;
}

/* Makes room for `extra` more children first, so that the changes that
 * follow cannot fail halfway. */
static int kids_reserve(node *x, size_t extra) {
    size_t cap = x->kids_cap ? x->kids_cap : 2;
    if (x->nkids + extra <= x->kids_cap) return 1;
    while (cap < x->nkids + extra) cap *= 2;
    return kids_resize(x, cap);
}

/* Hangs k below x (room reserved). */
static void kid_add(node *x, node *k) {
    size_t i = x->hash ? x->nkids : kid_index(x, k->label[0]), tail = x->nkids - i;
    memmove(x->kids + i + 1, x->kids + i, tail * sizeof *x->kids);
    memmove(x->keys + i + 1, x->keys + i, tail * sizeof *x->keys);
    x->kids[i] = k;
    x->keys[i] = k->label[0];
    x->nkids++;
    if (x->hash) hash_put(x, k->label[0], k, i);
    k->parent = x;
    k->depth = x->depth + k->nlabel;
}

static void kid_del(node *x, uint32_t key) {
    size_t i = kid_place(x, key);
    if (x->hash) {
        /* The last child takes the gap. */
        size_t last = x->nkids - 1;
        x->kids[i] = x->kids[last];
        x->keys[i] = x->keys[last];
        if (i != last) hash_slot(x, x->keys[i])->at = (uint32_t)i;
        hash_del(x, key);
    } else {
        size_t tail = x->nkids - i - 1;
        memmove(x->kids + i, x->kids + i + 1, tail * sizeof *x->kids);
        memmove(x->keys + i, x->keys + i + 1, tail * sizeof *x->keys);
    }
    x->nkids--;
    /* Give back what a once-wide node no longer needs; failing to is
     * harmless. */
    if (x->kids_cap > 8 && x->nkids <= x->kids_cap / 4) kids_resize(x, x->kids_cap / 2);
}

/* k takes the place of the child starting with `key`. */
static void kid_swap(node *x, uint32_t key, node *k) {
    size_t i = kid_place(x, key);
    x->kids[i] = k;
    if (x->hash) hash_put(x, key, k, i);
    k->parent = x;
}

/* ---- trimmable counts ------------------------------------------------- */

static void trim_link(node *p, node *k, int t) {
    k->trim[t].prev = NULL;
    k->trim[t].next = p->trim[t].head;
    if (p->trim[t].head) p->trim[t].head->trim[t].prev = k;
    p->trim[t].head = k;
}

static void trim_unlink(node *p, node *k, int t) {
    if (k->trim[t].prev) k->trim[t].prev->trim[t].next = k->trim[t].next;
    else p->trim[t].head = k->trim[t].next;
    if (k->trim[t].next) k->trim[t].next->trim[t].prev = k->trim[t].prev;
    k->trim[t].prev = k->trim[t].next = NULL;
}

/* k takes old's place in p's lists (k has old's counts). */
static void trim_swap(node *p, node *old, node *k) {
    for (int t = RESIDENT; t <= ANY_TIER; t++) {
        if (!old->trim[t].n) continue;
        k->trim[t].prev = old->trim[t].prev;
        k->trim[t].next = old->trim[t].next;
        if (k->trim[t].prev) k->trim[t].prev->trim[t].next = k;
        else p->trim[t].head = k;
        if (k->trim[t].next) k->trim[t].next->trim[t].prev = k;
    }
}

/* The classes an entry counts in: none, ANY_TIER, or both. */
static int counts_in(const rlxkv_entry *e, int t) {
    return (e->flags & RLXKV_ENTRY_TRIMMABLE) && !is_hidden(e) && (t == ANY_TIER || !is_stub(e));
}

/* n's entry joins (delta 1) or leaves (-1) the counts: n's, then each
 * ancestor's for as long as the count below it crosses zero. */
static void trim_count(node *n, const rlxkv_entry *e, int delta) {
    for (int t = RESIDENT; t <= ANY_TIER; t++) {
        if (!counts_in(e, t)) continue;
        for (node *x = n; x; x = x->parent) {
            size_t was = x->trim[t].n;
            x->trim[t].n += (size_t)delta;
            if (!x->parent || (was == 0) == (x->trim[t].n == 0)) break;
            if (was == 0) trim_link(x->parent, x, t);
            else trim_unlink(x->parent, x, t);
        }
    }
}

/* A trimmable entry of class t in x's subtree, which must hold one
 * (x->trim[t].n > 0): follow the children that count one down. The end of
 * a folded run reached from above is not the first on the way down: its
 * pages are (see Folds), so the run is unfolded and the way followed again. */
static node *trim_pick(rlxkv_cache *c, node *x, int t) {
    for (;;) {
        node *y = x;
        while (!y->entry || !counts_in(y->entry, t)) y = y->trim[t].head;
        if (y == x || !RLXKV_FOLDS || !(y->entry->flags & RLXKV_ENTRY_FOLDED)) return y;
        unfolded(c, y->entry);
    }
}

/* ---- tree shape ------------------------------------------------------- */

/* The tree is a radix tree over token ids: each edge carries a label (a run
 * of tokens), a node's path is the labels from the root down to it, and a
 * node holds the entry whose tokens are its path, if any. No node but the
 * root is empty of both entry and choice: an entry-less node has at least
 * two children. Labels are not copied: each points into the tokens of an
 * entry at or below its node (see rebase). Entries "abc", "abd" and "ax":
 *
 *          (root)
 *            | "a"
 *           [ ]            an entry-less node: two children
 *     "b" /     \ "x"
 *       [ ]     [ax]
 *  "c" /   \ "d"
 *   [abc]  [abd]
 *
 * Putting and dropping entries keeps that shape with three operations:
 * split (cut an edge, adding a node in the middle), make_node (a new leaf,
 * below a split or an existing node) and merge (fold an entry-less node with
 * one child into that child). Each is drawn below, before and after. */

/* Where a walk down q[0..n) stops: `at` is the deepest node whose whole
 * path is a prefix of q; if the walk went on partway into an edge, `edge`
 * is that child and `off` the label tokens matched in it. `depth` is the
 * number of query tokens matched in all. */
struct pos {
    node *at, *edge;
    size_t off, depth;
};

/* How many tokens a and b have in common at the start, up to n. Two
 * 64-bit words at a time: this loop is most of a lookup. */
static size_t common_len(const uint32_t *a, const uint32_t *b, size_t n) {
    size_t k = 0;
    for (; k + 4 <= n; k += 4) {
        uint64_t a0, a1, b0, b1;
        memcpy(&a0, a + k, 8);
        memcpy(&a1, a + k + 2, 8);
        memcpy(&b0, b + k, 8);
        memcpy(&b1, b + k + 2, 8);
        if ((a0 ^ b0) | (a1 ^ b1)) break;
    }
    while (k < n && a[k] == b[k]) k++;
    return k;
}

/* Walks down q from node x, whose path q begins with (descend: the root):
 *   1. at node x, find the child y whose label starts with the next query
 *      token (none: stop at x);
 *   2. compare y's label with the query; if it matches whole, y is the new
 *      x and go to 1;
 *   3. else stop inside y's edge: `edge` = y, `off` = the tokens matched.
 * The walk is software-pipelined: while it compares one edge's label, it
 * fetches what the next step will read if the edge matches whole (the
 * child, then that child's label and recency slot), so that in a big
 * cache, where those are cold, the misses overlap the comparison instead
 * of following it. A long shared prefix (a system prompt) hides them. */
static void descend_from(const rlxkv_cache *c, node *x, const uint32_t *q, size_t n, struct pos *p) {
    size_t i = x->depth;
    node *y = i < n ? kid_find(x, q[i]) : NULL;
    p->edge = NULL;
    p->off = 0;
    if (y) prefetch_span(y->label, y->nlabel < n ? y->nlabel : n);
    while (y) {
        size_t lim = y->nlabel < n - i ? y->nlabel : n - i, mid = lim > 1 ? lim / 2 : 1;
        node *z = lim < n - i ? kid_find(y, q[i + lim]) : NULL;
        if (z) PREFETCH(z);
        size_t k = 1 + common_len(y->label + 1, q + i + 1, mid - 1);
        if (k == mid) {
            if (z) {
                size_t rest = n - i - lim;
                prefetch_span(z->label, z->nlabel < rest ? z->nlabel : rest);
                PREFETCH(&c->slots[z->slot]);
            }
            k += common_len(y->label + k, q + i + k, lim - k);
        }
        i += k;
        if (k < y->nlabel) {
            p->edge = y;
            p->off = k;
            break;
        }
        x = y;
        y = z; /* the child starting with q[i], or NULL (i == n or none) */
    }
    p->at = x;
    p->depth = i;
}

/* Cuts y's edge after k tokens, putting a new node above y with room for
 * `room` children. The new node borrows y's tokens. Returns it, or NULL
 * (nothing changed) when out of memory. Splitting "abcd" after k = 2:
 *
 *     [p]                 [p]
 *      | "abcd"            | "ab"
 *     [y]        =>       [m]        (new, entry-less until the caller fills it)
 *                          | "cd"
 *                         [y]
 *
 *   1. make m with label "ab" and room for its children: out of memory
 *      here leaves the tree untouched;
 *   2. put m in y's place among p's children, m's trimmable counts taken
 *      from y (its one source below);
 *   3. shorten y's label to "cd" and make y m's child. */
static node *split(rlxkv_cache *c, node *y, size_t k, size_t room) {
    node *p = y->parent, *m = node_new(c, y->label, k);
    if (!m || !kids_reserve(m, room)) {
        if (m) node_free(m);
        return NULL;
    }
    kid_swap(p, y->label[0], m);
    m->depth = y->depth - (y->nlabel - k);
    for (int t = RESIDENT; t <= ANY_TIER; t++) m->trim[t].n = y->trim[t].n != 0; /* y, its one source */
    trim_swap(p, y, m);
    y->label += k;
    y->nlabel -= k;
    kid_add(m, y);
    for (int t = RESIDENT; t <= ANY_TIER; t++)
        if (y->trim[t].n) trim_link(m, y, t);
    return m;
}

/* The node for e's tokens, where the walk down them stopped at p short of
 * a node of their own: made, a new leaf borrowing e's tokens, or an edge
 * split. NULL when out of memory, with the tree as it was. Three cases,
 * putting e at the node marked *:
 *
 *   e = "ab", the walk stopped 2 tokens into edge "abcd": split, no leaf
 *     [p]--"abcd"--[y]   =>   [p]--"ab"--[*]--"cd"--[y]
 *
 *   e = "abx", stopped 2 tokens into "abcd": split, and a leaf below
 *     [p]--"abcd"--[y]   =>   [p]--"ab"--[ ]--"cd"--[y]
 *                                          \--"x"--[*]
 *
 *   e = "abx", stopped at node x = [ab] (no child starts with "x"): a leaf
 *     [ab]               =>   [ab]--"x"--[*]
 *
 *   1. if e ends inside the edge, split it there: that node is e's;
 *   2. else make the leaf (its label: e's tokens past the stop);
 *   3. find its parent: the split of the edge (room for two children), or
 *      the node the walk stopped at (room for one more); failing either,
 *      free the leaf: the tree is as it was;
 *   4. add the leaf under it. */
static node *make_node(rlxkv_cache *c, const struct pos *p, const rlxkv_entry *e) {
    node *leaf, *at;
    if (p->depth == e->n_tokens) return split(c, p->edge, p->off, 1);
    leaf = node_new(c, e->tokens + p->depth, e->n_tokens - p->depth);
    if (!leaf) return NULL;
    at = p->edge ? split(c, p->edge, p->off, 2) : kids_reserve(p->at, 1) ? p->at : NULL;
    if (!at) {
        node_free(leaf);
        return NULL;
    }
    kid_add(at, leaf);
    return leaf;
}

/* n holds no entry and has one child: folds n's edge into the child, whose
 * base holds n's tokens too (the child's label points into an entry whose
 * tokens run through n's path, so it grows backwards in place):
 *
 *     [p]                  [p]
 *      | "ab"               | "abcd"
 *     [n]        =>       [ch]
 *      | "cd"
 *     [ch]
 *
 *   1. put ch in n's place among p's children;
 *   2. move ch's label start back over n's label;
 *   3. move n's trimmable counts' links to ch, and free n. */
static void merge(node *n) {
    node *p = n->parent, *ch = n->kids[0];
    kid_swap(p, n->label[0], ch);
    ch->label -= n->nlabel;
    ch->nlabel += n->nlabel;
    trim_swap(p, n, ch);
    node_free(n);
}

/* n has just lost its entry or a child: frees or merges what no longer
 * earns its place, up the path. Returns the lowest node left on the path.
 *   1. a node with an entry, the root, or two children or more: done;
 *   2. one child: merge n into it; done (its parent lost nothing);
 *   3. no child: delete n from its parent, free it, and go on from the
 *      parent, which has just lost a child. */
static node *tidy(rlxkv_cache *c, node *n) {
    while (n != c->root && !n->entry) {
        node *p = n->parent;
        if (n->nkids > 1) return n;
        if (n->nkids) {
            merge(n);
            return p;
        }
        kid_del(p, n->label[0]);
        node_free(n);
        n = p;
    }
    return n;
}

/* ---- folds ------------------------------------------------------------ */

/* A block of tokens stubs share, or an arena's: a count of its holders,
 * then the tokens. */
static size_t *block_new(size_t n) {
    if (n > (SIZE_MAX - sizeof(size_t)) / sizeof(uint32_t)) return NULL;
    size_t *b = malloc(sizeof(size_t) + n * sizeof(uint32_t));
    if (b) *b = 1; /* the call's own hold, let go at its end */
    return b;
}
static void block_release(size_t *b) {
    if (b && !--*b) free(b);
}

/* Arena bytes an unfold takes per page: a node, then a stub. */
#define ROUND16(n) (((n) + 15) & ~(size_t)15)
#define FOLDED_BYTES (ROUND16(ARENA_NODE) + ROUND16(sizeof(rlxkv_entry) + sizeof(size_t)))

static int put_stored_at(rlxkv_cache *c, node *from, const uint32_t *tokens, size_t n_tokens, int dtype,
                         size_t n_values, int row_major, size_t *shared, node **at);

/* If e ends a folded run, places the stubs of its pages as put_stored_many
 * would have (see Folds), and drops the run. Cannot fail: their entries
 * and nodes come from the run's room, their slots are listed already. A
 * run of pages "ab" and "abcd" folded into its end "abcdef", below x:
 *
 *     [x]--"abcdef"--[e]   =>   [x]--"ab"--[ab]--"cd"--[abcd]--"ef"--[e]
 *
 *   1. take the run off the cache's list, and e's flag off;
 *   2. for each page, shallowest first, put_stored_at from above e's
 *      edge: its walk stops inside the edge, which make_node splits there
 *      (the new node takes e's place among its parent's children and in
 *      their trimmable lists; its own children fit in it), and the page's
 *      stub hangs there, the end's tokens as far as the page goes; carved
 *      from the room, given the serial that was its turn, and bound to its
 *      slot (enlist(): c->bind);
 *   3. the cache's arena and count of puts as they were. */
static void unfolded(rlxkv_cache *c, rlxkv_entry *e) {
    if (!RLXKV_FOLDS || !e || !(e->flags & RLXKV_ENTRY_FOLDED)) return;
    struct fold **link = &c->folds, *f;
    while ((*link)->end != e) link = &(*link)->next;
    f = *link;
    *link = f->next;
    e->flags &= ~(unsigned)RLXKV_ENTRY_FOLDED;
    node *above = ((node *)e->node)->parent, *at;
    struct arena was = c->arena;
    uint32_t puts = c->puts;
    c->arena = f->room;
    for (size_t j = 0; j < f->n; j++) {
        c->puts = f->serial + (uint32_t)j - 1;
        c->bind = f->slot + (uint32_t)j;
        put_stored_at(c, above, e->tokens, f->page[j].n_tokens, e->dtype, f->page[j].n_values,
                      (e->flags & RLXKV_ENTRY_TRIMMABLE) != 0, e->shared, &at);
        above = at; /* the next page's walk starts at this one's node, not above the whole edge */
    }
    c->arena = was;
    c->puts = puts;
    c->bind = 0;
}

/* descend_from, as if no run were folded: a walk that stops inside the
 * edge of a folded run's end (where its pages end) unfolds the run and
 * goes on down from where it was (to the same depth). */
static void walk(rlxkv_cache *c, node *x, const uint32_t *q, size_t n, struct pos *p) {
    descend_from(c, x, q, n, p);
    if (RLXKV_FOLDS && c->folds && p->edge && p->edge->entry && (p->edge->entry->flags & RLXKV_ENTRY_FOLDED)) {
        unfolded(c, p->edge->entry);
        descend_from(c, p->at, q, n, p);
    }
}

static void descend(rlxkv_cache *c, const uint32_t *q, size_t n, struct pos *p) {
    walk(c, c->root, q, n, p);
}

/* The node whose path is exactly t[0..n), or NULL. */
static node *find_node(rlxkv_cache *c, const uint32_t *t, size_t n) {
    struct pos p;
    descend(c, t, n, &p);
    return !p.edge && p.depth == n ? p.at : NULL;
}

/* The entry of exactly these tokens, or NULL (a hidden one is gone). */
static rlxkv_entry *find_entry(rlxkv_cache *c, const uint32_t *t, size_t n) {
    node *x = find_node(c, t, n);
    return x && x->entry && !is_hidden(x->entry) ? x->entry : NULL;
}

/* ---- pages ------------------------------------------------------------ */

/* Pages (rlxkv.h). An entry of start s > 0 holds the values of tokens s..n-1
 * only; its parent, a resident entry whose tokens begin with the same s
 * tokens and whose own rows include token s-1 (parent->start < s <=
 * parent->n_tokens), serves the rest, through its own parent. So along a
 * chain the starts rise, and a chain ends at an entry of start 0:
 *
 *     T2 [1100, 1200) --parent--> T1 [1000, 1100) --parent--> S [0, 1000)
 *     U1 [1000, 1080) --parent----------------------------------^
 *
 * Each entry keeps a list of its users (the entries whose parent it is).
 * Users are not found through the tree: a parent may serve fewer tokens
 * than it has (U1 above could take its first 1,040 tokens from T1, cut),
 * so a user need not lie in its parent's subtree.
 *
 * Eviction takes leaves first: an entry with users hangs on the INTERIOR
 * list, out of the LRU's reach, and goes back to the LRU's end (the next to
 * evict) when its last user goes; so a cold conversation is evicted from
 * its newest turn back, and a pinned entry keeps its whole chain. Removing
 * an entry that has users hides it: it leaves the lookups, and goes when
 * its last user does. */

/* u is one of p's users. */
static void users_add(rlxkv_entry *p, rlxkv_entry *u) {
    u->parent = p;
    u->prev_user = NULL;
    u->next_user = p->first_user;
    if (p->first_user) p->first_user->prev_user = u;
    p->first_user = u;
    p->users++;
}

/* u stops using its parent; returns the parent, or NULL if it had none. */
static rlxkv_entry *users_del(rlxkv_entry *u) {
    rlxkv_entry *p = u->parent;
    if (!p) return NULL;
    if (u->prev_user) u->prev_user->next_user = u->next_user;
    else p->first_user = u->next_user;
    if (u->next_user) u->next_user->prev_user = u->prev_user;
    u->parent = u->prev_user = u->next_user = NULL;
    p->users--;
    return p;
}

/* e takes old's place in the chains: old's parent and users are e's. */
static void users_take(rlxkv_entry *e, rlxkv_entry *old) {
    rlxkv_entry *p = old->parent;
    e->parent = p;
    e->prev_user = old->prev_user;
    e->next_user = old->next_user;
    if (e->prev_user) e->prev_user->next_user = e;
    else if (p) p->first_user = e;
    if (e->next_user) e->next_user->prev_user = e;
    e->first_user = old->first_user;
    e->users = old->users;
    for (rlxkv_entry *u = e->first_user; u; u = u->next_user) u->parent = e;
    old->parent = old->first_user = old->prev_user = old->next_user = NULL;
    old->users = 0;
}

static rlxkv_entry *drop_one(rlxkv_cache *c, rlxkv_entry *e);

/* p's users changed (one came or went): it moves between LRU and INTERIOR
 * as list_of says, arriving at the LRU's end (it was in use until now, but
 * by the leaf that just went, whose conversation goes cold with it); a
 * hidden entry without users is dropped, and so on up the chain. */
static void users_changed(rlxkv_cache *c, rlxkv_entry *p) {
    while (p) {
        if (is_hidden(p) && !p->users) {
            p = drop_one(c, p);
            continue;
        }
        node *n = p->node;
        uint32_t at = c->slots[n->slot].list, want = list_of(p, node_pinned(c, n));
        if (at != want) slot_move(c->slots, n->slot, want, want == LRU);
        return;
    }
}

/* Takes e out of the cache and frees it (e has no users):
 *   1. let go of its parent (dropped in turn if hidden and now unused);
 *   2. take its node off the recency lists and the node's entry off it;
 *   3. tidy the path (free or merge what no longer earns its place);
 *   4. the labels that borrowed e's tokens move to another entry below;
 *   5. a resident entry's values go: the generation moves (views stale). */
static void drop(rlxkv_cache *c, rlxkv_entry *e) { users_changed(c, drop_one(c, e)); }

/* drop's steps 1-5 but the parent's move: returns the parent it let go of
 * (NULL if none), for users_changed. (The end of a folded run takes its
 * pages with it only once they are in the tree: it unfolds them first.) */
static rlxkv_entry *drop_one(rlxkv_cache *c, rlxkv_entry *e) {
    unfolded(c, e);
    node *n = e->node;
    rlxkv_entry *parent = users_del(e);
    if (is_hidden(e)) c->hidden--;
    unlist(c, n);
    n->entry = NULL;
    trim_count(n, e, -1);
    n = tidy(c, n);
    /* The labels that borrowed e's tokens, a run from n up, move to another
     * entry below n (an entry-less node left standing has two children). */
    if (n != c->root && !n->entry) rebase(c, n, e->tokens, base_of(n->kids[0]));
    if (!is_stub(e)) c->generation++; /* a stored-only entry has no values to view */
    rlxkv_entry_free(e);
    return parent;
}

/* Frees x's subtree and its entries, without recursion: the tree can be as
 * deep as the longest entry is long. */
static void free_tree(node *x) {
    node *stop = x->parent;
    while (x != stop) {
        if (x->nkids) {
            x = x->kids[--x->nkids];
            continue;
        }
        node *p = x->parent;
        rlxkv_entry_free(x->entry);
        node_free(x);
        x = p;
    }
}

/* A stored-only entry: tokens, dtype and size, no values; flags beyond
 * STUB | STORED (TRIMMABLE) and the layout's order and heads as given.
 * NULL when out of memory. */
static rlxkv_entry *stub_new(const uint32_t *tokens, size_t n_tokens, int dtype, size_t n_values,
                             unsigned flags, uint8_t order, uint32_t heads) {
    rlxkv_entry *s = rlxkv_entry_alloc(n_tokens, 0, 0, dtype, NULL);
    if (!s) return NULL;
    if (n_tokens) memcpy(s->tokens, tokens, n_tokens * sizeof *s->tokens);
    s->n_values = n_values;
    s->flags = RLXKV_ENTRY_STUB | RLXKV_ENTRY_STORED | flags;
    s->order = order;
    s->heads = heads;
    return s;
}

/* A stored-only entry standing for e. */
static rlxkv_entry *stub_of(const rlxkv_entry *e) {
    return stub_new(e->tokens, e->n_tokens, e->dtype, e->n_values, e->flags & RLXKV_ENTRY_TRIMMABLE, e->order,
                    e->heads);
}

/* n's entry gives way to e (same tokens), which takes the labels that
 * borrowed the old one's tokens, its counts, its place in the chains (see
 * Pages) and, if pinned, its pin. The old entry is freed (the end of a
 * folded run once its pages are unfolded). A slot is free (unlisting the
 * old one freed one). */
static void swap_entry(rlxkv_cache *c, node *n, rlxkv_entry *e, int pinned) {
    unfolded(c, n->entry);
    rlxkv_entry *old = n->entry;
    unlist(c, n);
    trim_count(n, old, -1);
    if (is_hidden(old)) c->hidden--;
    users_take(e, old);
    if (n != c->root) rebase(c, n, old->tokens, e->tokens);
    n->entry = e;
    e->node = n;
    trim_count(n, e, 1);
    enlist(c, n, pinned);
    if (!is_stub(old)) c->generation++;
    rlxkv_entry_free(old);
}

/* Takes a resident entry without users out of memory: with the stored
 * index on, an entry whose blob is stored stays as a stored-only entry (or,
 * if even that much memory cannot be had, goes like any other); else it is
 * dropped. Its parent may then move to the LRU (users_changed). */
static void demote(rlxkv_cache *c, rlxkv_entry *v) {
    rlxkv_entry *s = c->stored_index && (v->flags & RLXKV_ENTRY_STORED) && !is_hidden(v) ? stub_of(v) : NULL;
    if (!s) {
        drop(c, v);
        return;
    }
    rlxkv_entry *p = users_del(v);
    if (node_pinned(c, v->node)) s->flags |= RLXKV_ENTRY_PIN_ON_LOAD;
    swap_entry(c, v->node, s, 0);
    users_changed(c, p);
}

/* Evicts least recently used unpinned entries until within the cap; only
 * leaves are on the LRU (see Pages), and a parent whose last user goes
 * joins its end. The last evictable entry stays when nothing pinned or
 * serving holds bytes: an entry that alone exceeds the cap is kept, alone,
 * rather than leave nothing to hit. A cap of 0 means off, and keeps
 * nothing. */
static void evict_to_cap(rlxkv_cache *c) {
    rlxkv_entry *v;
    while (c->bytes > c->cap_bytes && (v = lru_tail(c))) {
        if (c->cap_bytes && c->slots[LRU].next == c->slots[LRU].prev && !c->pinned_bytes &&
            c->slots[INTERIOR].next == INTERIOR)
            break;
        demote(c, v);
        c->evictions++;
    }
}

/* Hides e, which has users: it leaves the lookups, the counts of entries
 * and its pin, and goes when its last user does (see Pages). */
static void hide(rlxkv_cache *c, rlxkv_entry *e) {
    node *n = e->node;
    trim_count(n, e, -1);
    unlist(c, n);
    e->flags |= RLXKV_ENTRY_HIDDEN;
    e->flags &= ~(unsigned)RLXKV_ENTRY_DIRTY;
    c->hidden++;
    enlist(c, n, 0); /* INTERIOR; a slot was just freed */
}

/* Where a put of q[0..n) would take its first tokens' values from: the
 * parent and how many tokens it serves (cover), or NULL and 0. An entry
 * qualifies when it is resident, has values of this dtype, these layers and
 * these row lengths (rows: per block, values per token; NULL when the
 * layout says), and holds token cover-1 itself (start < cover): a deeper
 * candidate's parents are tried in turn. Candidates, the longest cover
 * first:
 *   1. where the walk down q stopped inside an edge: any resident entry
 *      that may be cut below it covers the walk's depth;
 *   2. then each node back up the path: its own entry, or one below it,
 *      covers the node's depth. */
static int fits_under(const rlxkv_cache *c, const rlxkv_entry *p, int dtype, size_t n_layers,
                      const size_t *rows) {
    if (p->dtype != dtype || p->n_layers != n_layers || is_stub(p)) return 0;
    if (c->layout.order != RLXKV_ORDER_ANY || !rows) return 1;
    size_t own = rlxkv_entry_rows(p);
    for (size_t i = 0; i < 2 * n_layers; i++)
        if (rlxkv_entry_block_len(p, i) != rows[i] * own) return 0;
    return 1;
}

static rlxkv_entry *chain_from(const rlxkv_cache *c, rlxkv_entry *p, size_t cover, int dtype,
                               size_t n_layers, const size_t *rows) {
    while (p && p->start >= cover) p = p->parent;
    return p && cover && fits_under(c, p, dtype, n_layers, rows) ? p : NULL;
}

static rlxkv_entry *parent_for(rlxkv_cache *c, const uint32_t *q, size_t n, int dtype,
                               size_t n_layers, const size_t *rows, size_t *cover) {
    struct pos p;
    rlxkv_entry *e;
    descend(c, q, n, &p);
    if (p.edge && p.edge->trim[RESIDENT].n &&
        (e = chain_from(c, trim_pick(c, p.edge, RESIDENT)->entry, p.depth, dtype, n_layers, rows))) {
        *cover = p.depth;
        return e;
    }
    for (node *x = p.at; x != c->root; x = x->parent) {
        if (x->entry && !is_hidden(x->entry) && (e = chain_from(c, x->entry, x->depth, dtype, n_layers, rows))) {
            *cover = x->depth;
            return e;
        }
        if (x->trim[RESIDENT].n && (e = chain_from(c, trim_pick(c, x, RESIDENT)->entry, x->depth, dtype, n_layers, rows))) {
            *cover = x->depth;
            return e;
        }
    }
    *cover = 0;
    return NULL;
}

/* Whether an entry of `own` bytes below parent can stay: it and the chain
 * it needs within the cap. Else eviction, which takes leaves first, would
 * take the new entry at once. put then files it whole (rlxkv_cache_held
 * says SIZE_MAX, so its caller brings every value), or refuses it
 * (NOSPACE) if it brings only its last tokens' values. The chain is
 * resident, so within c->bytes: it is walked only when the cache and e
 * together pass the cap. */
static int chain_fits(const rlxkv_cache *c, const rlxkv_entry *parent, size_t own) {
    if (c->bytes <= c->cap_bytes && own <= c->cap_bytes - c->bytes) return 1;
    for (; parent; parent = parent->parent) own += rlxkv_entry_kv_bytes(parent);
    return own <= c->cap_bytes;
}

/* parent_for's parent and cover (at most n), unless the chain cannot stay
 * beside the n - cover new tokens of token_bytes each (chain_fits): then
 * NULL and a cover of SIZE_MAX. */
static rlxkv_entry *parent_kept(rlxkv_cache *c, const uint32_t *q, size_t n, int dtype, size_t n_layers,
                                const size_t *rows, size_t token_bytes, size_t *cover) {
    rlxkv_entry *p = parent_for(c, q, n, dtype, n_layers, rows, cover);
    if (*cover > n) *cover = n;
    if (p && !chain_fits(c, p, (n - *cover) * token_bytes)) {
        *cover = SIZE_MAX;
        return NULL;
    }
    return p;
}

/* Values per token of each of e's blocks into rows (e has own rows). */
static void rows_of(const rlxkv_entry *e, size_t *rows) {
    size_t own = rlxkv_entry_rows(e);
    for (size_t i = 0; i < 2 * e->n_layers; i++) rows[i] = rlxkv_entry_block_len(e, i) / own;
}

/* Drops e's values of tokens start..from-1, keeping those of from..n-1 in
 * place (e is not in a cache yet): each block's kept rows, or each head's
 * (head-major, `heads` of them), move to the front of its new, shorter,
 * place. The allocation keeps its size. */
static void trim_front(rlxkv_entry *e, size_t from, int head_major, size_t heads) {
    size_t vsize = rlxkv_entry_value_size(e), own = rlxkv_entry_rows(e), keep = e->n_tokens - from;
    size_t cut = from - e->start, to = 0;
    for (size_t i = 0; i < 2 * e->n_layers; i++) {
        size_t len = e->offs[i + 1] - e->offs[i], runs = head_major ? heads : 1;
        size_t per_run = own ? len / runs : 0, unit = own ? per_run / own : 0;
        unsigned char *src = e->kv + e->offs[i] * vsize;
        e->offs[i] = to;
        for (size_t r = 0; r < runs; r++) {
            memmove(e->kv + to * vsize, src + (r * per_run + cut * unit) * vsize, keep * unit * vsize);
            to += keep * unit;
        }
    }
    e->offs[2 * e->n_layers] = to;
    e->n_values = to;
    e->start = from;
}

/* ---- the API ---------------------------------------------------------- */

rlxkv_cache *rlxkv_cache_new(size_t cap_bytes, uint64_t fingerprint) {
    rlxkv_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->root = node_new(NULL, NULL, 0);
    c->slots_cap = 16;
    c->slots = malloc(c->slots_cap * sizeof *c->slots);
    if (!c->root || !c->slots) {
        free(c->root);
        free(c->slots);
        free(c);
        return NULL;
    }
    slots_reset(c);
    c->cap_bytes = cap_bytes;
    c->fingerprint = fingerprint;
    return c;
}

void rlxkv_cache_clear(rlxkv_cache *c) {
    if (!c) return;
    if (c->stored_index) {
        /* Memory only: the stored stay known, stored-only. Leaves first
         * (see Pages): an evicted user hands its parent to the LRU, and a
         * pinned entry goes once its users have. */
        rlxkv_entry *v;
        for (;;) {
            v = NULL;
            for (uint32_t i = c->slots[PINNED].next; i != PINNED && !v; i = c->slots[i].next)
                if (!c->slots[i].e->users) v = c->slots[i].e;
            if (!v && !(v = lru_tail(c))) break;
            demote(c, v);
        }
        return;
    }
    node *r = c->root;
    c->folds = NULL; /* their records go with the arena blocks of their ends */
    for (size_t i = 0; i < r->nkids; i++) free_tree(r->kids[i]);
    rlxkv_entry_free(r->entry);
    r->entry = NULL;
    free(r->kids);
    r->kids = NULL;
    r->keys = NULL;
    r->hash = NULL;
    r->kids_cap = 0;
    r->nkids = 0;
    memset(r->trim, 0, sizeof r->trim);
    slots_reset(c);
    if (c->entries) c->generation++;
    c->bytes = c->entries = c->pinned_bytes = c->pinned_entries = c->hidden = 0;
    c->stored_entries = 0;
    c->stored_bytes = 0;
}

void rlxkv_cache_set_stored_index(rlxkv_cache *c, int on) {
    if (c) c->stored_index = on != 0;
}

int rlxkv_cache_set_paging(rlxkv_cache *c, int on) {
    if (!c || c->entries || c->stored_entries) return RLXKV_ERR_INVALID;
    c->paging = on != 0;
    return RLXKV_OK;
}

size_t rlxkv_cache_held(const rlxkv_cache *c, const uint32_t *tokens, size_t n, int dtype,
                        size_t n_layers, const size_t *row_lens) {
    size_t cover = 0;
    if (!c || !c->paging || !n || !tokens || !c->cap_bytes) return 0;
    /* Its walks may unfold runs of pages (see Folds), which changes no answer: const to the caller. */
    rlxkv_cache *w = (rlxkv_cache *)c;
    const node *at = find_node(w, tokens, n);
    if (at && at->entry && !is_stub(at->entry)) return at->entry->start; /* as put: replaced, if hidden too */
    if (c->layout.order == RLXKV_ORDER_ANY && !row_lens) return 0;
    size_t per_token = 2 * n_layers * c->layout.heads * c->layout.head_dim;
    if (row_lens)
        for (size_t i = per_token = 0; i < 2 * n_layers; i++) per_token += row_lens[i];
    parent_kept(w, tokens, n, dtype, n_layers, row_lens, per_token * (dtype == RLXKV_F16 ? 2 : 4), &cover);
    return cover; /* SIZE_MAX: as put, a chain that cannot stay is not used */
}

void rlxkv_cache_free(rlxkv_cache *c) {
    if (!c) return;
    free_tree(c->root);
    free(c->slots);
    free(c);
}

uint64_t rlxkv_cache_fingerprint(const rlxkv_cache *c) { return c ? c->fingerprint : 0; }
uint64_t rlxkv_cache_generation(const rlxkv_cache *c) { return c ? c->generation : 0; }

int rlxkv_cache_set_layout(rlxkv_cache *c, const rlxkv_layout *layout) {
    if (!c || !layout || c->entries || c->stored_entries) return RLXKV_ERR_INVALID;
    if (layout->order == RLXKV_ORDER_ANY) {
        c->layout = (rlxkv_layout){RLXKV_ORDER_ANY, 0, 0, 0};
        return RLXKV_OK;
    }
    if (layout->order != RLXKV_TOKEN_MAJOR && layout->order != RLXKV_HEAD_MAJOR) return RLXKV_ERR_INVALID;
    if (!layout->heads || !layout->head_dim || layout->heads > UINT32_MAX) return RLXKV_ERR_INVALID;
    if (layout->head_dim > SIZE_MAX / layout->heads) return RLXKV_ERR_INVALID;
    c->layout = *layout;
    return RLXKV_OK;
}

void rlxkv_cache_layout(const rlxkv_cache *c, rlxkv_layout *out) {
    if (!out) return;
    if (c) *out = c->layout;
    else *out = (rlxkv_layout){RLXKV_ORDER_ANY, 0, 0, 0};
}

/* Whether a partial hit may cut e under the cache's layout (see Partial
 * reuse above). */
static int trimmable(const rlxkv_cache *c, const rlxkv_entry *e) {
    if (c->layout.order != RLXKV_ORDER_ANY) return e->n_tokens > 0;
    return rlxkv_entry_row_major(e);
}

/* Files e with its state flags `state` (DIRTY for a new entry, STORED for
 * one read from its blob): rlxkv_cache_put and _put_loaded.
 *   1. refuse what cannot go in (no cache, another layout), freeing e; a
 *      cache of cap 0 takes nothing;
 *   2. walk down e's tokens: the node of exactly those tokens, if there
 *      is one, holds the entry e replaces;
 *   3. with paging on, find e's parent (see Pages): the replaced entry's,
 *      or the entry that serves the most of e's first tokens (parent_for);
 *      e must bring values from there on (else NOTFOUND), and drops those
 *      it brings of tokens before (trim_front); a parent whose chain cannot
 *      stay beside e within the cap is not taken (chain_fits);
 *   4. check e fits beside the pinned bytes (the replaced entry's own
 *      excepted): else NOSPACE, nothing changed;
 *   5. reserve its recency slot and its node (make_node): out of memory,
 *      NOMEM with the tree as it was;
 *   6. only now change anything: set e's flags and serial, and swap it in
 *      for the old entry (taking its users), or hang it on the new node
 *      (whose label run now borrows e's tokens) and list it; become a
 *      user of its parent;
 *   7. evict least recently used entries to fit the cap. */
static int put(rlxkv_cache *c, rlxkv_entry *e, unsigned state) {
    if (!e) return RLXKV_ERR_INVALID;
    if (e->node) return RLXKV_ERR_INVALID; /* held by a cache: not ours to free */
    if (!c) {
        rlxkv_entry_free(e);
        return RLXKV_ERR_INVALID;
    }
    if (rlxkv_layout_check(&c->layout, e, NULL) != RLXKV_OK) {
        rlxkv_entry_free(e);
        return RLXKV_ERR_SHAPE;
    }
    if (!c->cap_bytes) {
        rlxkv_entry_free(e);
        return RLXKV_OK;
    }
    /* One walk down the tokens finds the entry it replaces, if any, and
     * where a new node would go. */
    struct pos p;
    descend(c, e->tokens, e->n_tokens, &p);
    node *n = !p.edge && p.depth == e->n_tokens ? p.at : NULL;
    rlxkv_entry *old = n ? n->entry : NULL, *parent = NULL;
    size_t cover = 0;
    if (c->paging && old && !is_stub(old)) {
        parent = old->parent;
        cover = old->start;
    } else if (c->paging && (c->layout.order != RLXKV_ORDER_ANY || rlxkv_entry_row_major(e))) {
        size_t fixed[16] = {0}, *rows = NULL;
        int own = rlxkv_entry_rows(e) > 0 && c->layout.order == RLXKV_ORDER_ANY;
        if (own && 2 * e->n_layers > 16 && !(rows = malloc(2 * e->n_layers * sizeof *rows))) {
            rlxkv_entry_free(e);
            return RLXKV_ERR_NOMEM;
        }
        if (own && !rows) rows = fixed;
        if (own) rows_of(e, rows);
        size_t held_rows = rlxkv_entry_rows(e);
        parent = parent_kept(c, e->tokens, e->n_tokens, e->dtype, e->n_layers, rows,
                             held_rows ? rlxkv_entry_kv_bytes(e) / held_rows : 0, &cover);
        if (rows != fixed) free(rows);
        if (cover == SIZE_MAX) { /* a chain that cannot stay: e whole, if it can be */
            if (e->start) {
                rlxkv_entry_free(e);
                return RLXKV_ERR_NOSPACE;
            }
            cover = 0;
        }
    }
    if (e->start > cover) {
        rlxkv_entry_free(e); /* its first tokens' values are not held */
        return RLXKV_ERR_NOTFOUND;
    }
    if (e->start < cover) trim_front(e, cover, c->layout.order == RLXKV_HEAD_MAJOR, c->layout.heads);
    /* It must fit beside the pins, except the one it replaces; with no
     * other pinned bytes it fits, if need be alone (see evict_to_cap). */
    size_t add = rlxkv_entry_kv_bytes(e);
    int pinned = old && node_pinned(c, n);
    size_t others = c->pinned_bytes;
    if (pinned && !is_stub(old)) others -= rlxkv_entry_kv_bytes(old);
    if (others && (others > c->cap_bytes || add > c->cap_bytes - others)) {
        rlxkv_entry_free(e);
        return RLXKV_ERR_NOSPACE;
    }
    if (!slot_reserve(c, 1) || (!n && !(n = make_node(c, &p, e)))) {
        rlxkv_entry_free(e);
        return RLXKV_ERR_NOMEM;
    }
    e->flags = state;
    if (trimmable(c, e)) e->flags |= RLXKV_ENTRY_TRIMMABLE;
    e->order = (uint8_t)c->layout.order;
    e->heads = (uint32_t)c->layout.heads;
    e->serial = ++c->puts;
    if (old && !is_stub(old)) {
        swap_entry(c, n, e, pinned); /* e takes old's parent and users */
    } else if (old) {
        swap_entry(c, n, e, pinned); /* a stored-only entry: no chains */
        if (parent) {
            users_add(parent, e);
            users_changed(c, parent);
        }
    } else {
        /* The node borrows its label from its own entry from now on, and
         * so does the run above it that borrowed from the same tokens. */
        if (n != c->root) rebase(c, n, base_of(n), e->tokens);
        n->entry = e;
        e->node = n;
        trim_count(n, e, 1);
        if (parent) users_add(parent, e);
        enlist(c, n, pinned);
        if (parent) users_changed(c, parent);
    }
    evict_to_cap(c);
    return RLXKV_OK;
}

int rlxkv_cache_put(rlxkv_cache *c, rlxkv_entry *e) { return put(c, e, RLXKV_ENTRY_DIRTY); }
int rlxkv_cache_put_loaded(rlxkv_cache *c, rlxkv_entry *e) { return put(c, e, RLXKV_ENTRY_STORED); }

/* put_stored from node `from`, whose path the tokens begin with (the
 * root, or a node a stub of the same call stands at). shared: the block
 * the stub borrows its tokens from (put_stored_many), or NULL to copy
 * them. *at: the node it stands at, or NULL. */
static int put_stored_at(rlxkv_cache *c, node *from, const uint32_t *tokens, size_t n_tokens, int dtype,
                         size_t n_values, int row_major, size_t *shared, node **at) {
    size_t vsize = rlxkv_dtype_size(dtype);
    *at = NULL;
    if (!c || (!tokens && n_tokens) || !vsize || n_values > SIZE_MAX / vsize) return RLXKV_ERR_INVALID;
    if (!c->cap_bytes && !(RLXKV_FOLDS && c->bind)) return RLXKV_OK; /* (a folded page is placed whatever the cap now) */
    struct pos p;
    walk(c, from, tokens, n_tokens, &p);
    node *n = !p.edge && p.depth == n_tokens ? p.at : NULL;
    if (n && n->entry && !is_stub(n->entry)) {
        *at = n;
        return RLXKV_OK; /* resident: newer than any blob */
    }
    int trim = n_tokens > 0 && (c->layout.order != RLXKV_ORDER_ANY || row_major); /* as trimmable() */
    unsigned flags = trim ? RLXKV_ENTRY_TRIMMABLE : 0;
    size_t *slab = NULL;
    rlxkv_entry *s = shared ? arena_take(c, sizeof *s + sizeof(size_t), &slab) : NULL;
    if (s) { /* as rlxkv_entry_alloc lays out an entry of no values, then as stub_new */
        s->slab = slab;
        s->dtype = (uint8_t)dtype;
        s->offs = (size_t *)(s + 1);
        s->kv = (unsigned char *)(s->offs + 1);
        s->n_values = n_values;
        s->flags = RLXKV_ENTRY_STUB | RLXKV_ENTRY_STORED | flags;
        s->order = (uint8_t)c->layout.order;
        s->heads = (uint32_t)c->layout.heads;
    } else {
        s = shared ? stub_new(NULL, 0, dtype, n_values, flags, (uint8_t)c->layout.order, (uint32_t)c->layout.heads)
                   : stub_new(tokens, n_tokens, dtype, n_values, flags, (uint8_t)c->layout.order, (uint32_t)c->layout.heads);
    }
    if (!s) return RLXKV_ERR_NOMEM;
    if (shared) {
        s->tokens = (uint32_t *)tokens;
        s->n_tokens = n_tokens;
        s->shared = shared;
        ++*shared;
    }
    s->serial = ++c->puts;
    if (n && n->entry) {
        s->flags |= n->entry->flags & RLXKV_ENTRY_PIN_ON_LOAD;
        swap_entry(c, n, s, 0);
        *at = n;
        return RLXKV_OK;
    }
    if (!((RLXKV_FOLDS && c->bind) || slot_reserve(c, 1)) || (!n && !(n = make_node(c, &p, s)))) {
        rlxkv_entry_free(s);
        return RLXKV_ERR_NOMEM;
    }
    if (n != c->root) rebase(c, n, base_of(n), s->tokens);
    n->entry = s;
    s->node = n;
    trim_count(n, s, 1);
    enlist(c, n, 0);
    *at = n;
    return RLXKV_OK;
}

int rlxkv_cache_put_stored(rlxkv_cache *c, const uint32_t *tokens, size_t n_tokens, int dtype,
                           size_t n_values, int row_major) {
    node *at;
    return put_stored_at(c, c ? c->root : NULL, tokens, n_tokens, dtype, n_values, row_major, NULL, &at);
}

/* The tokens of a put_stored_many call: an array, or packed (a store
 * index's: rlxkv_packed_tokens). */
typedef struct token_source {
    const uint32_t *array;
    const rlxkv_packed_tokens *packed;
    size_t n;
} token_source;

/* Tokens [at, at + n) of src into dst, unpacked: the low halves, then the
 * high halves of those of 0x10000 or more (their places ascending: the
 * first at or after `at` found by binary search). */
static void tokens_copy(uint32_t *dst, const token_source *src, size_t at, size_t n) {
    const rlxkv_packed_tokens *p = src->packed;
    if (!p) {
        memcpy(dst, src->array + at, n * sizeof *dst);
        return;
    }
    for (size_t i = 0; i < n; i++) dst[i] = p->low[at + i];
    size_t lo = 0, hi = p->high;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->places[mid] < at) lo = mid + 1;
        else hi = mid;
    }
    for (size_t h = lo; h < p->high && p->places[h] < at + n; h++) dst[p->places[h] - at] |= (uint32_t)p->highs[h] << 16;
}

/* The paths of put_stored_many's specs: a blob's (no parent), its own
 * tokens, in one block (*shared: a copy of the span of the array they lie
 * in, made here); a page's, its parent's first `start` tokens, then its
 * own. The ends of chains first (specs no page extends from their last
 * token): each gets a block of its own, and every spec up its chain whose
 * path ends where the walk is gets a view of it, so that a chain shares
 * one copy, linear in its tokens. A spec whose path breaks (a parent out
 * of range, of another length than parent_n, or broken; a loop) gets path
 * NULL. path[i], block[i], len[i]: out; blocks: every block made,
 * *n_blocks of them. Returns 0 if out of memory. */
static int stored_paths(const token_source *tokens, size_t n_tokens, size_t **shared, const rlxkv_stored *s, size_t count,
                        const uint32_t **path, size_t **block, size_t *len, size_t **blocks, size_t *n_blocks,
                        size_t *chain, unsigned char *extended) {
    size_t lo = n_tokens, hi = 0;
    for (size_t i = 0; i < count; i++) {
        path[i] = NULL;
        block[i] = NULL;
        extended[i] = 0;
        len[i] = s[i].parent ? s[i].start + s[i].n_tokens : s[i].n_tokens;
        if (s[i].tokens_at > n_tokens || s[i].n_tokens > n_tokens - s[i].tokens_at || len[i] < s[i].n_tokens ||
            (s[i].parent && !s[i].start))
            len[i] = SIZE_MAX; /* invalid */
        else if (!s[i].parent) { /* the blobs' span (pages' own tokens are copied into their chains) */
            if (s[i].tokens_at < lo) lo = s[i].tokens_at;
            if (s[i].tokens_at + len[i] > hi) hi = s[i].tokens_at + len[i];
        }
    }
    if (hi < lo) lo = hi;
    if (!(*shared = block_new(hi - lo))) return 0;
    const uint32_t *copy = (uint32_t *)(*shared + 1);
    if (hi > lo) tokens_copy((uint32_t *)(*shared + 1), tokens, lo, hi - lo);
    for (size_t i = 0; i < count; i++) {
        size_t p = s[i].parent;
        if (p && p <= count && len[i] != SIZE_MAX && s[i].start == len[p - 1]) extended[p - 1] = 1;
    }
    *n_blocks = 0;
    for (int ends = 1; ends >= 0; ends--) {
        for (size_t r = 0; r < count; r++) {
            if (path[r] || len[r] == SIZE_MAX || extended[r] == 2 || (ends && extended[r] == 1)) continue;
            if (!s[r].parent) {
                path[r] = copy + (s[r].tokens_at - lo);
                block[r] = *shared;
                continue;
            }
            size_t *b = block_new(len[r]);
            if (!b) return 0;
            blocks[(*n_blocks)++] = b;
            uint32_t *buf = (uint32_t *)(b + 1);
            size_t cur = r, end = len[r], n_chain = 0, steps = 0;
            int ok = 1;
            while (end > 0) {
                if (path[cur]) {
                    memcpy(buf, path[cur], end * sizeof *buf);
                    break;
                }
                size_t start = s[cur].parent ? s[cur].start : 0;
                if (end > start) tokens_copy(buf + start, tokens, s[cur].tokens_at, end - start);
                if (end == len[cur]) chain[n_chain++] = cur;
                if (!s[cur].parent) break;
                size_t p = s[cur].parent - 1;
                if (p >= count || len[p] == SIZE_MAX || extended[p] == 2 || len[p] != s[cur].parent_n || ++steps > count) {
                    ok = 0;
                    break;
                }
                if (start < end) end = start;
                cur = p;
            }
            for (size_t k = 0; k < n_chain; k++) {
                if (ok) {
                    path[chain[k]] = buf;
                    block[chain[k]] = b;
                } else {
                    extended[chain[k]] = 2; /* broken */
                }
            }
        }
    }
    return 1;
}

/* How many pages put_stored_many may fold into a run's end (see Folds)
 * from specs[i] on: m >= 1 pages, each but the first the next spec's
 * parent, extended by it at its end (so each page's path is a prefix of
 * the end's, specs[i + m]), all of one dtype and trimmability, and nothing
 * in the tree yet at or below the first page's end on the path (walked
 * from `from`): the end's node will be a new leaf, its edge holding every
 * page. (A spec that names one of them as its parent, or whose path runs
 * inside the edge, unfolds them when it is placed.) 0 if not, or if m + 1
 * fresh slots and the arena's room for the run (its record, then its
 * pages' stubs and nodes) cannot be had. */
static size_t fold_run(rlxkv_cache *c, node *from, const rlxkv_stored *s, size_t count, size_t i, const uint32_t **path,
                       const size_t *len) {
    size_t e = i, vsize = rlxkv_dtype_size(s[i].dtype);
    if (!RLXKV_FOLDS) return 0;
    while (e + 1 < count && path[e + 1] && s[e + 1].parent == e + 1 && s[e + 1].start == len[e] && s[e + 1].n_tokens &&
           s[e + 1].dtype == s[i].dtype && !s[e + 1].row_major == !s[i].row_major && s[e].n_values <= SIZE_MAX / (vsize | 1))
        e++;
    size_t m = e - i;
    struct pos p;
    if (!m || !s[i].parent || !vsize || m >= UINT32_MAX || s[e].n_values > SIZE_MAX / vsize) return 0;
    walk(c, from, path[e], len[e], &p);
    size_t need = ROUND16(sizeof(struct fold) + m * sizeof(struct folded)) + m * FOLDED_BYTES;
    /* (Beside the end's own stub and up to two nodes, first.) */
    if (p.depth >= len[i] || !c->arena.block || (size_t)(c->arena.end - c->arena.next) < need + FOLDED_BYTES + ROUND16(ARENA_NODE) ||
        !slot_reserve(c, m + 1))
        return 0;
    return m;
}

/* Stubs of one call share copies of its tokens: the blobs' one copy of
 * the span of the array they lie in, a chain of pages one block of its
 * path. A spec with a parent
 * is placed from its parent's node, and one whose tokens start where an
 * earlier one's do (`like`) from that one's, not from the root: a chain
 * of pages is then O(its own tokens) to place and to hold, not O(its
 * path) each: 10,000 pages in chains of 200 are 16 million path tokens,
 * 160 thousand of their own. A run of pages is placed folded (see Folds):
 * one stub and node for it all, at once. */
static int put_stored_many(rlxkv_cache *c, const token_source *tokens, rlxkv_stored *specs, size_t count) {
    size_t n_tokens = tokens->n;
    const rlxkv_packed_tokens *p = tokens->packed;
    if (!c || (!specs && count)) return RLXKV_ERR_INVALID;
    for (size_t i = 0; i < count; i++) specs[i].status = RLXKV_ERR_INVALID;
    if (p ? (!p->low && n_tokens) || (!(p->places && p->highs) && p->high) : !tokens->array && n_tokens) return RLXKV_ERR_INVALID;
    for (size_t h = 0; p && h < p->high; h++)
        if (p->places[h] >= n_tokens || (h && p->places[h] <= p->places[h - 1])) return RLXKV_ERR_INVALID;
    if (!c->cap_bytes) {
        for (size_t i = 0; i < count; i++) specs[i].status = RLXKV_OK;
        return RLXKV_OK;
    }
    /* The stubs' entries and nodes carved from one block (an arena), not
     * allocated one by one: ten thousand of each at an open. The block
     * goes with the last of them; none of it: one by one, as elsewhere. */
    size_t per = ROUND16(sizeof(rlxkv_entry) + sizeof(size_t)) + 2 * ROUND16(ARENA_NODE);
    size_t *arena = count && count < (SIZE_MAX - 16) / per / 2 ? malloc(16 + count * per) : NULL;
    if (arena) {
        *arena = 1; /* the call's own hold */
        c->arena = (struct arena){arena, (unsigned char *)arena + 16, (unsigned char *)arena + 16 + count * per};
    }
    size_t *shared = NULL;
    size_t n = count ? count : 1, n_blocks = 0;
    slot_reserve(c, count + 1); /* at once, not doubling as it goes (a failure: found again where it matters) */
    node **at = malloc(n * sizeof *at);
    const uint32_t **path = malloc(n * sizeof *path);
    size_t **block = malloc(n * sizeof *block), **blocks = malloc(n * sizeof *blocks);
    size_t *len = malloc(n * sizeof *len), *chain = malloc(n * sizeof *chain);
    unsigned char *extended = malloc(n);
    int st = RLXKV_ERR_NOMEM;
    if (!at || !path || !block || !blocks || !len || !chain || !extended ||
        !stored_paths(tokens, n_tokens, &shared, specs, count, path, block, len, blocks, &n_blocks, chain, extended))
        goto out;
    for (size_t i = 0; i < count; i++) {
        rlxkv_stored *r = &specs[i];
        at[i] = NULL;
        if (!path[i]) {
            r->status = r->parent && len[i] != SIZE_MAX ? RLXKV_ERR_NOTFOUND : RLXKV_ERR_INVALID;
            continue;
        }
        /* Where its path and its parent's (or like's) part: the lowest node
         * up that one's path at or above this one's length. */
        node *from = c->root;
        size_t hint = r->parent ? r->parent : r->like;
        if (hint && hint <= i && at[hint - 1] && (r->parent || specs[hint - 1].tokens_at == r->tokens_at)) {
            from = at[hint - 1];
            while (from->depth > (r->parent ? r->start : len[i])) from = from->parent;
        }
        /* A run of pages from here: its end placed now, the pages folded into it. */
        size_t m = fold_run(c, from, specs, count, i, path, len), e = i + m;
        c->puts += (uint32_t)m; /* the pages' serials, before the end's */
        specs[e].status = put_stored_at(c, from, path[e], len[e], specs[e].dtype, specs[e].n_values, specs[e].row_major,
                                        block[e], &at[e]);
        if (m && specs[e].status != RLXKV_OK) c->puts -= (uint32_t)m;
        if (m && specs[e].status == RLXKV_OK) {
            /* The run's record and room after the end's stub, in the block
             * that holds it (fold_run had the room); the pages' slots behind
             * the end's, on the STORED list, the first page's farthest. */
            node *n = at[e];
            struct arena *a = &c->arena;
            struct fold *f = (struct fold *)a->next;
            uint64_t bytes = 0;
            a->next += ROUND16(sizeof *f + m * sizeof f->page[0]);
            *f = (struct fold){c->folds, n->entry, m, c->nslots, n->entry->serial - (uint32_t)m, {NULL, a->next, a->next + m * FOLDED_BYTES}};
            f->room.block = a->block;
            a->next = f->room.end;
            for (size_t j = 0; j < m; j++) {
                f->page[j] = (struct folded){len[i + j], specs[i + j].n_values};
                bytes += specs[i + j].n_values * rlxkv_dtype_size(specs[e].dtype);
                c->slots[c->nslots].e = n->entry;
                slot_link_after(c->slots, c->nslots++, STORED, n->slot);
            }
            c->stored_entries += m;
            c->stored_bytes += bytes;
            n->entry->flags |= RLXKV_ENTRY_FOLDED;
            c->folds = f;
        }
        for (; i < e; i++) {
            specs[i].status = specs[e].status;
            at[i] = at[e]; /* a branch off a folded page starts from the run's end (climbing to its depth) */
        }
    }
    st = RLXKV_OK;
out:
    c->arena = (struct arena){NULL, NULL, NULL};
    block_release(arena);
    for (size_t k = 0; k < n_blocks; k++) block_release(blocks[k]);
    block_release(shared);
    free(at);
    free(path);
    free(block);
    free(blocks);
    free(len);
    free(chain);
    free(extended);
    return st;
}

int rlxkv_cache_put_stored_many(rlxkv_cache *c, const uint32_t *tokens, size_t n_tokens, rlxkv_stored *specs,
                                size_t count) {
    token_source src = {tokens, NULL, n_tokens};
    return put_stored_many(c, &src, specs, count);
}

int rlxkv_cache_put_stored_many_packed(rlxkv_cache *c, const rlxkv_packed_tokens *tokens, rlxkv_stored *specs,
                                       size_t count) {
    if (!tokens) return RLXKV_ERR_INVALID;
    token_source src = {NULL, tokens, tokens->n_tokens};
    return put_stored_many(c, &src, specs, count);
}

int rlxkv_cache_insert(rlxkv_cache *c, const uint32_t *tokens, size_t n_tokens,
                       size_t n_layers, int dtype, const void *const *k, const size_t *k_lens,
                       const void *const *v, const size_t *v_lens) {
    size_t vsize = rlxkv_dtype_size(dtype);
    if (!c || (!tokens && n_tokens) || !vsize) return RLXKV_ERR_INVALID;
    if (n_layers && (!k || !k_lens || !v || !v_lens)) return RLXKV_ERR_INVALID;
    if (n_layers > SIZE_MAX / (2 * sizeof(size_t))) return RLXKV_ERR_INVALID;
    for (size_t l = 0; l < n_layers; l++)
        if ((!k[l] && k_lens[l]) || (!v[l] && v_lens[l])) return RLXKV_ERR_INVALID;
    if (!c->cap_bytes) {
        /* Off: no point copying, but the same verdict as put's. */
        if (c->layout.order == RLXKV_ORDER_ANY) return RLXKV_OK;
        size_t want = rlxkv_layout_block_len(&c->layout, n_tokens);
        if (c->layout.layers && n_layers != c->layout.layers) return RLXKV_ERR_SHAPE;
        for (size_t l = 0; l < n_layers; l++)
            if (k_lens[l] != want || v_lens[l] != want) return RLXKV_ERR_SHAPE;
        return RLXKV_OK;
    }

    int st;
    size_t *lens = malloc(2 * n_layers * sizeof *lens + 1); /* + 1: never malloc(0) */
    if (!lens) return RLXKV_ERR_NOMEM;
    for (size_t l = 0; l < n_layers; l++) {
        lens[l] = k_lens[l];
        lens[n_layers + l] = v_lens[l];
    }
    rlxkv_entry *e = rlxkv_entry_new(n_tokens, n_layers, lens, dtype, &st);
    free(lens);
    if (!e) return st;
    if (n_tokens) memcpy(e->tokens, tokens, n_tokens * sizeof *tokens);
    for (size_t l = 0; l < n_layers; l++) {
        if (k_lens[l]) memcpy(rlxkv_entry_block_mut(e, l), k[l], k_lens[l] * vsize);
        if (v_lens[l]) memcpy(rlxkv_entry_block_mut(e, n_layers + l), v[l], v_lens[l] * vsize);
    }
    return rlxkv_cache_put(c, e);
}

static int hit_out(rlxkv_cache *c, const node *x, size_t matched, rlxkv_hit *hit) {
    touch(c, x);
    c->hits++;
    c->tokens_reused += matched;
    if (hit) {
        hit->entry = x->entry;
        hit->matched = matched;
    }
    return RLXKV_HIT;
}

static void hit_clear(rlxkv_hit *hit) {
    if (hit) {
        hit->entry = NULL;
        hit->matched = 0;
    }
}

static int miss_out(rlxkv_cache *c, rlxkv_hit *hit) {
    c->misses++;
    hit_clear(hit);
    return RLXKV_MISS;
}

/* The deepest entry of class t on the path of query, wholly a prefix of it. */
static int lookup_in(rlxkv_cache *c, const uint32_t *query, size_t n, rlxkv_hit *hit, int t) {
    struct pos p;
    descend(c, query, n, &p);
    /* The deepest entry on the path; the root's (empty) entry never hits. */
    for (node *x = p.at; x != c->root; x = x->parent)
        if (x->entry && !is_hidden(x->entry) && (t == ANY_TIER || !is_stub(x->entry)))
            return hit_out(c, x, x->depth, hit);
    return miss_out(c, hit);
}

/* As lookup_in, or an entry of class t that shares more of the query and is
 * cut to it. Of two equally long hits, a resident one wins. */
static int partial_in(rlxkv_cache *c, const uint32_t *query, size_t n, size_t max_match,
                      rlxkv_hit *hit, int t) {
    struct pos p;
    /* matched never exceeds max_match, so only that much of the query
     * counts; an entry running past it is a trimmed candidate like any
     * other that runs past the common prefix. */
    if (n > max_match) n = max_match;
    descend(c, query, n, &p);
    /* Every entry below the point where the walk stopped shares exactly
     * p.depth tokens with the query: the best any candidate can do. */
    if (p.edge && p.edge->trim[t].n)
        return hit_out(c, trim_pick(c, p.edge, p.edge->trim[RESIDENT].n ? RESIDENT : t), p.depth, hit);
    /* Then back up the path. A node's own entry is a full hit and wins the
     * tie against trimmable entries branching off there (unless it is
     * stored-only and one of those is resident). Nothing further down the
     * path counts a trimmable entry (we would have stopped there), so every
     * one a node counts branches off right at that node. */
    for (node *x = p.at; x != c->root; x = x->parent) {
        rlxkv_entry *e = x->entry && !is_hidden(x->entry) ? x->entry : NULL;
        if (e && (!is_stub(e) || (t == ANY_TIER && !x->trim[RESIDENT].n))) return hit_out(c, x, x->depth, hit);
        if (x->trim[RESIDENT].n) return hit_out(c, trim_pick(c, x, RESIDENT), x->depth, hit);
        if (x->trim[t].n) return hit_out(c, trim_pick(c, x, t), x->depth, hit);
    }
    return miss_out(c, hit);
}

int rlxkv_cache_lookup(rlxkv_cache *c, const uint32_t *query, size_t n, rlxkv_hit *hit) {
    hit_clear(hit);
    if (!c || (!query && n)) return RLXKV_ERR_INVALID;
    return lookup_in(c, query, n, hit, RESIDENT);
}

int rlxkv_cache_lookup_partial(rlxkv_cache *c, const uint32_t *query, size_t n,
                               size_t max_match, rlxkv_hit *hit) {
    hit_clear(hit);
    if (!c || (!query && n)) return RLXKV_ERR_INVALID;
    return partial_in(c, query, n, max_match, hit, RESIDENT);
}

int rlxkv_cache_match(rlxkv_cache *c, const uint32_t *query, size_t n, size_t max_match,
                      unsigned flags, rlxkv_hit *hit) {
    hit_clear(hit);
    if (!c || (!query && n) || (flags & ~(unsigned)RLXKV_MATCH_PARTIAL)) return RLXKV_ERR_INVALID;
    if (flags & RLXKV_MATCH_PARTIAL) return partial_in(c, query, n, max_match, hit, ANY_TIER);
    return lookup_in(c, query, n < max_match ? n : max_match, hit, ANY_TIER);
}

int rlxkv_entry_is_resident(const rlxkv_entry *e) { return e && !is_stub(e); }

/* The one place that knows how tokens lie in a block: tokens from..to-1
 * of an entry, which holds rows start..n-1, are rows from-start..to-start-1
 * of the whole block (token-major) or of each head (head-major: `heads`
 * runs of own-rows rows each). */
void rlxkv_piece_block(const rlxkv_piece *pc, size_t i, rlxkv_span *out) {
    const rlxkv_entry *e;
    *out = (rlxkv_span){0, 0, 0, 0};
    if (!pc || !(e = pc->entry) || i >= 2 * e->n_layers || pc->to <= pc->from) return;
    size_t len = rlxkv_entry_block_len(e, i), own = rlxkv_entry_rows(e);
    size_t first = pc->from - e->start, rows = pc->to - pc->from;
    if (e->order != RLXKV_HEAD_MAJOR && rows == own) {
        *out = (rlxkv_span){0, len, len, 1}; /* all it holds, row-major or not */
    } else if (e->order == RLXKV_HEAD_MAJOR) {
        size_t per_head = len / e->heads, unit = per_head / own; /* own * head_dim; head_dim */
        *out = (rlxkv_span){first * unit, rows * unit, per_head, e->heads};
    } else {
        size_t unit = len / own;
        *out = (rlxkv_span){first * unit, rows * unit, rows * unit, 1};
    }
}

/* The hit's values the entry holds itself: tokens start..matched-1. */
void rlxkv_hit_block(const rlxkv_hit *hit, size_t i, rlxkv_span *out) {
    rlxkv_piece pc = {NULL, 0, 0};
    const rlxkv_entry *e = hit ? hit->entry : NULL;
    if (e && !e->start && hit->matched >= e->n_tokens && i < 2 * e->n_layers && !is_stub(e)) {
        size_t len = rlxkv_entry_block_len(e, i); /* the whole block: one run */
        *out = (rlxkv_span){0, len, len, 1};
        return;
    }
    if (e && hit->matched > e->start && !is_stub(e)) pc = (rlxkv_piece){e, e->start, hit->matched};
    rlxkv_piece_block(&pc, i, out);
}

/* Pieces of a hit, the first tokens first: walk up the chain from the
 * hit's entry, each entry serving from its start up to where the one below
 * it began (entries whose start lies past that serve nothing and are
 * passed over), then reverse. */
size_t rlxkv_hit_pieces(const rlxkv_hit *hit, rlxkv_piece *out, size_t cap) {
    size_t n = 0, end;
    const rlxkv_entry *e;
    if (!hit || !(e = hit->entry) || is_stub(e)) return 0;
    for (end = hit->matched; e && end; e = e->parent) {
        if (e->start >= end) continue;
        if (n < cap) out[n] = (rlxkv_piece){e, e->start, end};
        n++;
        end = e->start;
    }
    for (size_t i = 0, m = n < cap ? n : cap; i < m / 2; i++) {
        rlxkv_piece t = out[i];
        out[i] = out[m - 1 - i];
        out[m - 1 - i] = t;
    }
    return n;
}

/* Piece k of the hit's count, the first tokens first, without allocating:
 * the (count-1-k)th from the hit's entry up. From `got` (the first
 * PIECES_AT_ONCE pieces, taken at once) when it has it. */
enum { PIECES_AT_ONCE = 64 };
static size_t piece_at(const rlxkv_hit *hit, size_t k, size_t count, const rlxkv_piece *got,
                       rlxkv_piece *out) {
    if (count <= PIECES_AT_ONCE) {
        *out = got[k];
        return 1;
    }
    size_t skip = count - 1 - k, end = hit->matched;
    for (const rlxkv_entry *e = hit->entry; e && end; e = e->parent) {
        if (e->start >= end) continue;
        if (!skip--) {
            *out = (rlxkv_piece){e, e->start, end};
            return 1;
        }
        end = e->start;
    }
    return 0;
}

size_t rlxkv_hit_n_values(const rlxkv_hit *hit) {
    rlxkv_piece got[PIECES_AT_ONCE], pc;
    size_t sum = 0, count = rlxkv_hit_pieces(hit, got, PIECES_AT_ONCE);
    rlxkv_span sp;
    for (size_t k = 0; k < count; k++) {
        piece_at(hit, k, count, got, &pc);
        for (size_t i = 0; i < 2 * pc.entry->n_layers; i++) {
            rlxkv_piece_block(&pc, i, &sp);
            sum += sp.run * sp.count;
        }
    }
    return sum;
}

/* Gathers the pieces into the layout one whole entry cut to `matched`
 * would have: block after block, and in each, run r of a piece of tokens
 * from..to-1 lands at (r * matched + from) * unit values, where unit is
 * the run's values per token. */
void rlxkv_hit_copy(const rlxkv_hit *hit, void *dst, size_t *block_lens_out) {
    rlxkv_piece got[PIECES_AT_ONCE], pc;
    size_t count = rlxkv_hit_pieces(hit, got, PIECES_AT_ONCE);
    if (!count) return;
    const rlxkv_entry *e = hit->entry;
    size_t vsize = rlxkv_entry_value_size(e), m = hit->matched;
    unsigned char *to = dst;
    rlxkv_span sp;
    for (size_t i = 0; i < 2 * e->n_layers; i++) {
        size_t len = 0;
        for (size_t k = 0; k < count; k++) {
            piece_at(hit, k, count, got, &pc);
            rlxkv_piece_block(&pc, i, &sp);
            const unsigned char *from = (const unsigned char *)rlxkv_entry_block(pc.entry, i);
            size_t unit = sp.run / (pc.to - pc.from);
            for (size_t r = 0; r < sp.count; r++)
                if (sp.run)
                    memcpy(to + (r * m + pc.from) * unit * vsize, from + (sp.offset + r * sp.stride) * vsize,
                           sp.run * vsize);
            len += sp.run * sp.count;
        }
        to += len * vsize;
        if (block_lens_out) block_lens_out[i] = len;
    }
}

const rlxkv_entry *rlxkv_cache_get(const rlxkv_cache *c, const uint32_t *tokens, size_t n) {
    if (!c || (!tokens && n)) return NULL;
    return find_entry((rlxkv_cache *)c, tokens, n); /* as held(): const to the caller */
}

int rlxkv_cache_remove(rlxkv_cache *c, const uint32_t *tokens, size_t n) {
    if (!c || (!tokens && n)) return RLXKV_ERR_INVALID;
    rlxkv_entry *e = find_entry(c, tokens, n);
    if (!e) return RLXKV_ERR_NOTFOUND;
    if (e->users) hide(c, e);
    else drop(c, e);
    return RLXKV_OK;
}

/* Moves e between the lists; it arrives as the most recent of its new one. */
static int set_pinned(rlxkv_cache *c, const uint32_t *tokens, size_t n, int pin) {
    if (!c || (!tokens && n)) return RLXKV_ERR_INVALID;
    node *x = find_node(c, tokens, n);
    if (!x || !x->entry || is_hidden(x->entry)) return RLXKV_ERR_NOTFOUND;
    if (node_pinned(c, x) == pin) return RLXKV_OK;
    if (is_stub(x->entry)) {
        /* Takes effect when it is loaded (a put of its tokens). */
        x->entry->flags ^= RLXKV_ENTRY_PIN_ON_LOAD;
        return RLXKV_OK;
    }
    unlist(c, x);
    enlist(c, x, pin); /* the slot just freed is free */
    return RLXKV_OK;
}

int rlxkv_cache_pin(rlxkv_cache *c, const uint32_t *tokens, size_t n) {
    return set_pinned(c, tokens, n, 1);
}

/* The unpinned entry is evictable from the next put or set_cap on. */
int rlxkv_cache_unpin(rlxkv_cache *c, const uint32_t *tokens, size_t n) {
    return set_pinned(c, tokens, n, 0);
}

int rlxkv_cache_is_pinned(const rlxkv_cache *c, const rlxkv_entry *e) {
    return c && e && node_pinned(c, e->node);
}

void rlxkv_cache_set_cap(rlxkv_cache *c, size_t cap_bytes) {
    if (!c) return;
    c->cap_bytes = cap_bytes;
    evict_to_cap(c);
}

void rlxkv_cache_stats(const rlxkv_cache *c, rlxkv_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!c) return;
    out->entries = c->entries - c->hidden;
    out->bytes = c->bytes;
    out->cap_bytes = c->cap_bytes;
    out->pinned_entries = c->pinned_entries;
    out->pinned_bytes = c->pinned_bytes;
    out->hits = c->hits;
    out->misses = c->misses;
    out->evictions = c->evictions;
    out->tokens_reused = c->tokens_reused;
    out->stored_entries = c->stored_entries;
    out->stored_bytes = c->stored_bytes;
}

const rlxkv_entry *rlxkv_cache_next_stored(const rlxkv_cache *c, const rlxkv_entry *prev) {
    if (!c) return NULL;
    while (RLXKV_FOLDS && !prev && c->folds) unfolded((rlxkv_cache *)c, c->folds->end); /* each page an entry in its slot (as held()) */
    const slot *s = c->slots;
    return s[s[prev ? ((const node *)prev->node)->slot : STORED].next].e;
}

/* Pinned, then LRU, then INTERIOR: each list ends at its head, whose e is
 * NULL; hidden entries are passed over. */
const rlxkv_entry *rlxkv_cache_next(const rlxkv_cache *c, const rlxkv_entry *prev) {
    if (!c) return NULL;
    const slot *s = c->slots;
    static const uint32_t order[] = {PINNED, LRU, INTERIOR};
    uint32_t i = prev ? ((const node *)prev->node)->slot : PINNED, list = prev ? s[i].list : PINNED;
    for (size_t k = 0; k < 3; k++) {
        if (order[k] != list) continue;
        for (;;) {
            i = s[i].next;
            if (i == order[k]) {
                if (++k == 3) return NULL;
                i = order[k];
                continue;
            }
            if (!is_hidden(s[i].e)) return s[i].e;
        }
    }
    return NULL;
}

int rlxkv_cache_is_dirty(const rlxkv_cache *c, const rlxkv_entry *e) {
    return c && e && (e->flags & RLXKV_ENTRY_DIRTY) ? 1 : 0;
}

void rlxkv_cache_mark_clean(rlxkv_cache *c, const rlxkv_entry *e) {
    /* The cache owns its entries, so dropping const here is sound. */
    if (c && e) {
        ((rlxkv_entry *)e)->flags &= ~RLXKV_ENTRY_DIRTY;
        ((rlxkv_entry *)e)->flags |= RLXKV_ENTRY_STORED;
    }
}

void rlxkv_cache_mark_unstored(rlxkv_cache *c, const rlxkv_entry *e) {
    if (c && e && !is_stub(e)) ((rlxkv_entry *)e)->flags &= ~(RLXKV_ENTRY_DIRTY | RLXKV_ENTRY_STORED);
}

/* ---- consistency check (tests) ---------------------------------------- */

/* The node after x in preorder, or NULL: down the first child, else on to
 * the next sibling of the nearest ancestor that has one. Iterative: the
 * tree can be as deep as the longest entry is long. */
static const node *preorder_next(const rlxkv_cache *c, const node *x) {
    if (x->nkids) return x->kids[0];
    for (; x != c->root; x = x->parent) {
        const node *p = x->parent;
        size_t i = kid_place(p, x->label[0]);
        if (i + 1 < p->nkids) return p->kids[i + 1];
    }
    return NULL;
}

/* What a walk of the tree adds up, to compare with the cache's totals. */
struct tally {
    size_t entries, bytes, pinned, stubs, hidden, folds;
    uint64_t stub_bytes;
};

/* e's place in the chains (see Pages): a stub or a whole entry has no
 * parent; a page's parent is resident, serves its first tokens (same
 * tokens, start < e's start <= its n_tokens) with values like e's; the
 * user lists agree both ways; a hidden entry has users; nothing but a
 * paging cache has pages. */
static int check_chain(const rlxkv_cache *c, const rlxkv_entry *e) {
    const rlxkv_entry *p = e->parent;
    size_t users = 0;
    for (const rlxkv_entry *u = e->first_user, *prev = NULL; u; prev = u, u = u->next_user) {
        if (u->parent != e || u->prev_user != prev || ++users > e->users) return 0;
    }
    if (users != e->users || (is_hidden(e) && !users) || (is_stub(e) && (users || p || e->start))) return 0;
    if (!p) return e->start == 0;
    if (!c->paging || is_stub(p) || !p->node || p->start >= e->start || e->start > p->n_tokens) return 0;
    if (p->dtype != e->dtype || p->n_layers != e->n_layers) return 0;
    if (memcmp(p->tokens, e->tokens, e->start * sizeof *e->tokens)) return 0;
    for (const rlxkv_entry *u = p->first_user; u; u = u->next_user)
        if (u == e) return 1;
    return 0;
}

/* The fold whose end is e, or NULL (the cache may be broken). */
static const struct fold *fold_find(const rlxkv_cache *c, const rlxkv_entry *e) {
    size_t k = 0;
    for (const struct fold *f = c->folds; f && k <= c->stored_entries; f = f->next, k++)
        if (f->end == e) return f;
    return NULL;
}

/* A run folded into the stub at x (see Folds): its pages end inside x's
 * edge, shallowest first; their slots, on the STORED list, hold the end;
 * their stubs' room is there. Counted into t as stubs. */
static int check_fold(const rlxkv_cache *c, const node *x, const struct fold *f, struct tally *t) {
    if (!f) return 0;
    size_t above = x->depth - x->nlabel, vsize = rlxkv_entry_value_size(f->end);
    if (!f->n || f->slot < FIRST_ENTRY_SLOT || f->slot + f->n > c->nslots || f->end->n_layers) return 0;
    if ((size_t)(f->room.end - f->room.next) < f->n * FOLDED_BYTES || !f->room.block || f->end->slab != f->room.block) return 0;
    for (size_t j = 0; j < f->n; j++) {
        if (f->page[j].n_tokens <= (j ? f->page[j - 1].n_tokens : above) || f->page[j].n_tokens >= x->depth) return 0;
        if (c->slots[f->slot + j].e != f->end || c->slots[f->slot + j].list != STORED) return 0;
        t->stubs++;
        t->stub_bytes += f->page[j].n_values * vsize;
    }
    return 1;
}

static int check_node(const rlxkv_cache *c, const node *x, struct tally *t) {
    size_t n_trim[2] = {0, 0}, linked[2] = {0, 0};
    if (x == c->root) {
        if (x->parent || x->nlabel || x->depth) return 0;
    } else {
        const node *p = x->parent;
        size_t i;
        int from_kid = 0;
        if (!p || !x->nlabel || !x->label || x->depth != p->depth + x->nlabel) return 0;
        i = kid_place(p, x->label[0]);
        if (i >= p->nkids || p->kids[i] != x) return 0;
        if (!x->entry && x->nkids < 2) return 0; /* should have been tidied */
        /* The label borrows from its own entry, else from a child's base:
         * so, down the line, from an entry in the subtree (whose tokens
         * are checked against every label on its path below). */
        for (size_t k = 0; k < x->nkids; k++) from_kid |= base_of(x->kids[k]) == base_of(x);
        if (x->entry ? base_of(x) != x->entry->tokens : !from_kid) return 0;
    }
    if (x->nkids > x->kids_cap) return 0;
    if (!x->hash != (x->kids_cap < HASH_MIN_KIDS)) return 0;
    if (x->hash) {
        size_t used = 0;
        for (size_t i = 0; i <= hash_mask(x); i++) used += x->hash[i].kid != NULL;
        if (used != x->nkids) return 0;
    }
    for (size_t i = 0; i < x->nkids; i++) {
        const node *k = x->kids[i];
        if (k->parent != x || x->keys[i] != k->label[0]) return 0;
        if (x->hash && (hash_find(x, x->keys[i]) != k || hash_slot(x, x->keys[i])->at != i)) return 0;
        if (!x->hash && i && x->keys[i - 1] >= x->keys[i]) return 0;
        for (int tr = RESIDENT; tr <= ANY_TIER; tr++) {
            n_trim[tr] += k->trim[tr].n != 0;
            linked[tr] += k->trim[tr].n != 0;
        }
    }
    for (int tr = RESIDENT; tr <= ANY_TIER; tr++) {
        for (const node *k = x->trim[tr].head, *prev = NULL; k; prev = k, k = k->trim[tr].next) {
            if (k->parent != x || !k->trim[tr].n || k->trim[tr].prev != prev || !linked[tr]) return 0;
            linked[tr]--;
        }
        if (linked[tr]) return 0;
    }
    if (x->entry) {
        const rlxkv_entry *e = x->entry;
        size_t end = e->n_tokens;
        if (e->node != x || e->n_tokens != x->depth) return 0;
        if (e->order != c->layout.order) return 0;
        if (!check_chain(c, e)) return 0;
        if (is_stub(e)) {
            if (e->n_layers || !(e->flags & RLXKV_ENTRY_STORED) || (e->flags & RLXKV_ENTRY_DIRTY)) return 0;
            if (c->slots[x->slot].list != STORED) return 0;
            if ((e->flags & RLXKV_ENTRY_FOLDED) && (t->folds++, !check_fold(c, x, fold_find(c, e), t))) return 0;
        } else {
            if (!(e->flags & RLXKV_ENTRY_TRIMMABLE) != !trimmable(c, e)) return 0;
            if (rlxkv_layout_check(&c->layout, e, NULL) || (e->flags & RLXKV_ENTRY_PIN_ON_LOAD)) return 0;
            if (c->slots[x->slot].list != list_of(e, node_pinned(c, x))) return 0;
        }
        for (int tr = RESIDENT; tr <= ANY_TIER; tr++) n_trim[tr] += counts_in(e, tr);
        for (const node *y = x; y != c->root; y = y->parent) {
            end -= y->nlabel;
            if (memcmp(e->tokens + end, y->label, y->nlabel * sizeof *y->label)) return 0;
        }
        if (x->slot < FIRST_ENTRY_SLOT || x->slot >= c->nslots || c->slots[x->slot].e != e) return 0;
        t->hidden += is_hidden(e);
        if (is_stub(e)) {
            t->stubs++;
            t->stub_bytes += rlxkv_entry_kv_bytes(e);
        } else {
            t->entries++;
            t->bytes += rlxkv_entry_kv_bytes(e);
            t->pinned += node_pinned(c, x);
        }
    }
    return n_trim[RESIDENT] == x->trim[RESIDENT].n && n_trim[ANY_TIER] == x->trim[ANY_TIER].n &&
           x->trim[RESIDENT].n <= x->trim[ANY_TIER].n;
}

/* Walks the list hanging from head `list`: links both ways, every slot on
 * it an entry's, marked as on it. */
static int check_list(const rlxkv_cache *c, uint32_t list, size_t *n, uint64_t *bytes) {
    const slot *s = c->slots;
    uint32_t prev = list;
    for (uint32_t i = s[list].next; i != list; prev = i, i = s[i].next) {
        if (i < FIRST_ENTRY_SLOT || i >= c->nslots || *n > c->entries + c->stored_entries) return 0;
        const rlxkv_entry *e = s[i].e;
        if (s[i].prev != prev || s[i].list != list || !e || !e->node) return 0;
        (*n)++;
        if (((const node *)e->node)->slot == i) {
            *bytes += rlxkv_entry_kv_bytes(e);
            continue;
        }
        /* A folded page's slot (see Folds): its end's entry, in the run's range. */
        const struct fold *f = (e->flags & RLXKV_ENTRY_FOLDED) ? fold_find(c, e) : NULL;
        if (!f || i < f->slot || i - f->slot >= f->n) return 0;
        *bytes += f->page[i - f->slot].n_values * rlxkv_entry_value_size(e);
    }
    return s[list].prev == prev;
}

int rlxkv_cache_check(const rlxkv_cache *c, size_t *nodes, size_t *label_tokens) {
    size_t n_nodes = 0, n_label = 0, lru_n = 0, pin_n = 0, stored_n = 0, in_n = 0;
    uint64_t lru_bytes = 0, pin_bytes = 0, stored_bytes = 0, in_bytes = 0;
    struct tally t = {0, 0, 0, 0, 0, 0, 0};
    size_t folds = 0;
    int ok = 1;
    for (const struct fold *f = c->folds; f && folds <= c->stored_entries; f = f->next) folds++;
    for (const node *x = c->root; x; x = preorder_next(c, x)) {
        n_nodes++;
        n_label += x->nlabel;
        if (!check_node(c, x, &t)) ok = 0;
    }
    if (!check_list(c, LRU, &lru_n, &lru_bytes)) ok = 0;
    if (!check_list(c, PINNED, &pin_n, &pin_bytes)) ok = 0;
    if (!check_list(c, STORED, &stored_n, &stored_bytes)) ok = 0;
    if (!check_list(c, INTERIOR, &in_n, &in_bytes)) ok = 0;
    if (t.entries != c->entries || lru_n + pin_n + in_n != c->entries) ok = 0;
    if (t.bytes != c->bytes || lru_bytes + pin_bytes + in_bytes != c->bytes) ok = 0;
    if (t.hidden != c->hidden) ok = 0;
    if (t.pinned != c->pinned_entries || pin_n != t.pinned || pin_bytes != c->pinned_bytes) ok = 0;
    if (t.stubs != c->stored_entries || stored_n != t.stubs) ok = 0;
    if (t.stub_bytes != c->stored_bytes || stored_bytes != c->stored_bytes) ok = 0;
    if (t.folds != folds) ok = 0; /* each on the list the fold of a stub in the tree */
    if (nodes) *nodes = n_nodes;
    if (label_tokens) *label_tokens = n_label;
    return ok;
}

size_t rlxkv_cache_tree_bytes(const rlxkv_cache *c) {
    size_t bytes = 0;
    for (const node *x = c->root; x; x = preorder_next(c, x)) {
        bytes += sizeof *x + x->kids_cap * (sizeof *x->kids + sizeof *x->keys);
        if (x->hash) bytes += 2 * x->kids_cap * sizeof *x->hash;
    }
    return bytes;
}
