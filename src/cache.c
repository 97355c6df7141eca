/* The cache: a radix tree over token ids for prefix lookup, and two
 * intrusive lists of entries for recency and eviction.
 *
 * Tree. A node is reached through an edge labelled with a run of tokens
 * (node->label); node->depth counts the tokens from the root to the node's
 * end. A node holds at most one entry, whose tokens spell the node's path,
 * so a lookup is one walk down the query: O(query length) whatever the
 * number of entries. Every node but the root holds an entry or has at least
 * two children (removal prunes and merges to keep it so): the tree has at
 * most 2 * entries + 1 nodes, and a prefix shared by many entries is stored
 * once. Children are kept sorted by their first token and found by binary
 * search.
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
 * Partial reuse. node->rm counts the row-major entries in the node's
 * subtree, and the children whose count is not zero are linked in a list
 * (rm_head, rm_prev/rm_next). Finding a row-major entry below a point then
 * means following that list down: O(depth), never a scan of entries.
 *
 * Lists. Unpinned entries form an LRU list, pinned ones a list of their
 * own, both most recent first. Eviction takes the LRU tail: O(1).
 */
#include <stdlib.h>
#include <string.h>

#include "cache_check.h"
#include "entry.h"

typedef struct node node;
struct node {
    /* What a lookup reads first. */
    const uint32_t *label;    /* the edge from the parent, borrowed (see
                                 Labels above); NULL at the root */
    size_t nlabel;
    size_t depth;             /* tokens from the root through this edge */
    size_t nkids;
    uint32_t *keys;           /* sorted; keys[i] == kids[i]->label[0] */
    node **kids;              /* in the same allocation as keys */
    rlxkv_entry *entry;       /* its tokens are the path to here, or NULL */
    node *parent;
    size_t cap;
    size_t rm;                /* row-major entries in this subtree */
    node *rm_head;            /* first child with rm > 0 */
    node *rm_prev, *rm_next;  /* siblings with rm > 0 */
};

typedef struct list {
    rlxkv_entry *head, *tail; /* most recent first */
} list;

struct rlxkv_cache {
    node *root;
    list lru;                 /* unpinned entries */
    list pinned;
    size_t cap, bytes, entries, pinned_bytes, pinned_entries;
    uint64_t fingerprint, hits, misses, evictions, tokens_reused;
};

/* ---- entry lists ------------------------------------------------------ */

static void list_push(list *l, rlxkv_entry *e) {
    e->prev = NULL;
    e->next = l->head;
    if (l->head) l->head->prev = e;
    else l->tail = e;
    l->head = e;
}

static void list_unlink(list *l, rlxkv_entry *e) {
    if (e->prev) e->prev->next = e->next;
    else l->head = e->next;
    if (e->next) e->next->prev = e->prev;
    else l->tail = e->prev;
    e->prev = e->next = NULL;
}

static list *list_of(rlxkv_cache *c, const rlxkv_entry *e) {
    return e->flags & RLXKV_ENTRY_PINNED ? &c->pinned : &c->lru;
}

/* Adds e to its list, as the most recent, and to the totals. */
static void enlist(rlxkv_cache *c, rlxkv_entry *e) {
    size_t b = rlxkv_entry_kv_bytes(e);
    list_push(list_of(c, e), e);
    c->entries++;
    c->bytes += b;
    if (e->flags & RLXKV_ENTRY_PINNED) {
        c->pinned_entries++;
        c->pinned_bytes += b;
    }
}

static void unlist(rlxkv_cache *c, rlxkv_entry *e) {
    size_t b = rlxkv_entry_kv_bytes(e);
    list_unlink(list_of(c, e), e);
    c->entries--;
    c->bytes -= b;
    if (e->flags & RLXKV_ENTRY_PINNED) {
        c->pinned_entries--;
        c->pinned_bytes -= b;
    }
}

static void touch(rlxkv_cache *c, rlxkv_entry *e) {
    list *l = list_of(c, e);
    if (l->head == e) return;
    list_unlink(l, e);
    list_push(l, e);
}

/* ---- nodes and their children ----------------------------------------- */

static node *node_new(const uint32_t *label, size_t n) {
    node *x = calloc(1, sizeof *x);
    if (!x) return NULL;
    x->label = label;
    x->nlabel = n;
    return x;
}

static void node_free(node *x) {
    free(x->kids);
    free(x);
}

/* The tokens x's label borrows from: those of an entry in its subtree. Not
 * for the root, which has no label. */
static const uint32_t *base_of(const node *x) { return x->label - (x->depth - x->nlabel); }

/* The nodes from x up whose labels borrow from `from` borrow from `to`
 * instead: the tokens of another entry below each of them (so, with the
 * same tokens on their paths). */
static void rebase(const rlxkv_cache *c, node *x, const uint32_t *from, const uint32_t *to) {
    for (; x != c->root && base_of(x) == from; x = x->parent) x->label = to + (x->depth - x->nlabel);
}

/* Index of the first child whose first token is >= t. */
static size_t kid_slot(const node *x, uint32_t t) {
    size_t lo = 0, hi = x->nkids;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->keys[mid] < t) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static node *kid_find(const node *x, uint32_t t) {
    size_t i = kid_slot(x, t);
    return i < x->nkids && x->keys[i] == t ? x->kids[i] : NULL;
}

static int kids_resize(node *x, size_t cap) {
    node **kids = malloc(cap * (sizeof *kids + sizeof(uint32_t)));
    if (!kids) return 0;
    uint32_t *keys = (uint32_t *)(kids + cap);
    if (x->nkids) {
        memcpy(kids, x->kids, x->nkids * sizeof *kids);
        memcpy(keys, x->keys, x->nkids * sizeof *keys);
    }
    free(x->kids);
    x->kids = kids;
    x->keys = keys;
    x->cap = cap;
    return 1;
}

/* Makes room for `extra` more children first, so that the changes that
 * follow cannot fail halfway. */
static int kids_reserve(node *x, size_t extra) {
    size_t cap = x->cap ? x->cap : 2;
    if (x->nkids + extra <= x->cap) return 1;
    while (cap < x->nkids + extra) cap *= 2;
    return kids_resize(x, cap);
}

/* Hangs k below x (room reserved). */
static void kid_add(node *x, node *k) {
    size_t i = kid_slot(x, k->label[0]), tail = x->nkids - i;
    memmove(x->kids + i + 1, x->kids + i, tail * sizeof *x->kids);
    memmove(x->keys + i + 1, x->keys + i, tail * sizeof *x->keys);
    x->kids[i] = k;
    x->keys[i] = k->label[0];
    x->nkids++;
    k->parent = x;
    k->depth = x->depth + k->nlabel;
}

static void kid_del(node *x, uint32_t key) {
    size_t i = kid_slot(x, key), tail = x->nkids - i - 1;
    memmove(x->kids + i, x->kids + i + 1, tail * sizeof *x->kids);
    memmove(x->keys + i, x->keys + i + 1, tail * sizeof *x->keys);
    x->nkids--;
    /* Give back what a once-wide node no longer needs; failing to is
     * harmless. */
    if (x->cap > 8 && x->nkids <= x->cap / 4) kids_resize(x, x->cap / 2);
}

/* k takes the place of the child starting with `key`. */
static void kid_swap(node *x, uint32_t key, node *k) {
    x->kids[kid_slot(x, key)] = k;
    k->parent = x;
}

/* ---- row-major counts ------------------------------------------------- */

static void rm_link(node *p, node *k) {
    k->rm_prev = NULL;
    k->rm_next = p->rm_head;
    if (p->rm_head) p->rm_head->rm_prev = k;
    p->rm_head = k;
}

static void rm_unlink(node *p, node *k) {
    if (k->rm_prev) k->rm_prev->rm_next = k->rm_next;
    else p->rm_head = k->rm_next;
    if (k->rm_next) k->rm_next->rm_prev = k->rm_prev;
    k->rm_prev = k->rm_next = NULL;
}

/* k takes old's place in p's list. */
static void rm_swap(node *p, node *old, node *k) {
    k->rm_prev = old->rm_prev;
    k->rm_next = old->rm_next;
    if (k->rm_prev) k->rm_prev->rm_next = k;
    else p->rm_head = k;
    if (k->rm_next) k->rm_next->rm_prev = k;
}

static void rm_add(node *x) {
    for (; x; x = x->parent)
        if (x->rm++ == 0 && x->parent) rm_link(x->parent, x);
}

static void rm_sub(node *x) {
    for (; x; x = x->parent)
        if (--x->rm == 0 && x->parent) rm_unlink(x->parent, x);
}

/* A row-major entry in x's subtree, which must hold one (x->rm > 0):
 * follow the children that count one down. */
static rlxkv_entry *rm_pick(node *x) {
    while (!x->entry || !(x->entry->flags & RLXKV_ENTRY_ROW_MAJOR)) x = x->rm_head;
    return x->entry;
}

/* ---- tree shape ------------------------------------------------------- */

/* Where a walk down q[0..n) stops: `at` is the deepest node whose whole
 * path is a prefix of q; if the walk went on partway into an edge, `edge`
 * is that child and `off` the label tokens matched in it. `depth` is the
 * number of query tokens matched in all. */
struct pos {
    node *at, *edge;
    size_t off, depth;
};

static void descend(const rlxkv_cache *c, const uint32_t *q, size_t n, struct pos *p) {
    node *x = c->root;
    size_t i = 0;
    p->edge = NULL;
    p->off = 0;
    while (i < n) {
        node *y = kid_find(x, q[i]);
        if (!y) break;
        size_t k = 1, lim = y->nlabel < n - i ? y->nlabel : n - i;
        while (k < lim && y->label[k] == q[i + k]) k++;
        i += k;
        if (k < y->nlabel) {
            p->edge = y;
            p->off = k;
            break;
        }
        x = y;
    }
    p->at = x;
    p->depth = i;
}

/* The node whose path is exactly t[0..n), or NULL. */
static node *find_node(const rlxkv_cache *c, const uint32_t *t, size_t n) {
    struct pos p;
    descend(c, t, n, &p);
    return !p.edge && p.depth == n ? p.at : NULL;
}

static rlxkv_entry *find_entry(const rlxkv_cache *c, const uint32_t *t, size_t n) {
    node *x = find_node(c, t, n);
    return x ? x->entry : NULL;
}

/* Cuts y's edge after k tokens, putting a new node above y with room for
 * `room` children. The new node borrows y's tokens. Returns it, or NULL
 * (nothing changed) when out of memory. */
static node *split(node *y, size_t k, size_t room) {
    node *p = y->parent, *m = node_new(y->label, k);
    if (!m || !kids_reserve(m, room)) {
        if (m) node_free(m);
        return NULL;
    }
    kid_swap(p, y->label[0], m);
    m->depth = y->depth - (y->nlabel - k);
    m->rm = y->rm;
    if (y->rm) rm_swap(p, y, m);
    y->label += k;
    y->nlabel -= k;
    kid_add(m, y);
    if (y->rm) rm_link(m, y);
    return m;
}

/* The node for e's tokens, where the walk down them stopped at p short of
 * a node of their own: made, a new leaf borrowing e's tokens, or an edge
 * split. NULL when out of memory, with the tree as it was. */
static node *make_node(const struct pos *p, const rlxkv_entry *e) {
    node *leaf, *at;
    if (p->depth == e->n_tokens) return split(p->edge, p->off, 1);
    leaf = node_new(e->tokens + p->depth, e->n_tokens - p->depth);
    if (!leaf) return NULL;
    at = p->edge ? split(p->edge, p->off, 2) : kids_reserve(p->at, 1) ? p->at : NULL;
    if (!at) {
        node_free(leaf);
        return NULL;
    }
    kid_add(at, leaf);
    return leaf;
}

/* n holds no entry and has one child: folds n's edge into the child, whose
 * base holds n's tokens too. */
static void merge(node *n) {
    node *p = n->parent, *ch = n->kids[0];
    kid_swap(p, n->label[0], ch);
    ch->label -= n->nlabel;
    ch->nlabel += n->nlabel;
    if (n->rm) rm_swap(p, n, ch);
    node_free(n);
}

/* n has just lost its entry or a child: frees or merges what no longer
 * earns its place, up the path. Returns the lowest node left on the path. */
static node *prune(rlxkv_cache *c, node *n) {
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

/* Takes e out of the cache and frees it. */
static void drop(rlxkv_cache *c, rlxkv_entry *e) {
    node *n = e->node;
    unlist(c, e);
    n->entry = NULL;
    if (e->flags & RLXKV_ENTRY_ROW_MAJOR) rm_sub(n);
    n = prune(c, n);
    /* The labels that borrowed e's tokens, a run from n up, move to another
     * entry below n (an entry-less node left standing has two children). */
    if (n != c->root && !n->entry) rebase(c, n, e->tokens, base_of(n->kids[0]));
    rlxkv_entry_free(e);
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

/* Evicts least recently used unpinned entries until within the cap. The
 * last unpinned entry stays when nothing pinned holds bytes: an entry that
 * alone exceeds the cap is kept, alone, rather than leave nothing to hit.
 * A cap of 0 means off, and keeps nothing. */
static void evict_to_cap(rlxkv_cache *c) {
    while (c->bytes > c->cap && c->lru.tail) {
        rlxkv_entry *v = c->lru.tail;
        if (c->cap && v == c->lru.head && !c->pinned_bytes) break;
        drop(c, v);
        c->evictions++;
    }
}

/* ---- the API ---------------------------------------------------------- */

rlxkv_cache *rlxkv_cache_new(size_t cap_bytes, uint64_t fingerprint) {
    rlxkv_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->root = node_new(NULL, 0);
    if (!c->root) {
        free(c);
        return NULL;
    }
    c->cap = cap_bytes;
    c->fingerprint = fingerprint;
    return c;
}

void rlxkv_cache_clear(rlxkv_cache *c) {
    if (!c) return;
    node *r = c->root;
    for (size_t i = 0; i < r->nkids; i++) free_tree(r->kids[i]);
    rlxkv_entry_free(r->entry);
    r->entry = NULL;
    r->nkids = 0;
    r->rm = 0;
    r->rm_head = NULL;
    c->lru.head = c->lru.tail = c->pinned.head = c->pinned.tail = NULL;
    c->bytes = c->entries = c->pinned_bytes = c->pinned_entries = 0;
}

void rlxkv_cache_free(rlxkv_cache *c) {
    if (!c) return;
    free_tree(c->root);
    free(c);
}

uint64_t rlxkv_cache_fingerprint(const rlxkv_cache *c) { return c ? c->fingerprint : 0; }

int rlxkv_cache_put(rlxkv_cache *c, rlxkv_entry *e) {
    if (!e) return RLXKV_ERR_INVALID;
    if (e->node) return RLXKV_ERR_INVALID; /* held by a cache: not ours to free */
    if (!c) {
        rlxkv_entry_free(e);
        return RLXKV_ERR_INVALID;
    }
    if (!c->cap) {
        rlxkv_entry_free(e);
        return RLXKV_OK;
    }
    /* One walk down the tokens finds the entry it replaces, if any, and
     * where a new node would go. */
    struct pos p;
    descend(c, e->tokens, e->n_tokens, &p);
    node *n = !p.edge && p.depth == e->n_tokens ? p.at : NULL;
    rlxkv_entry *old = n ? n->entry : NULL;
    /* It must fit beside the pins, except the one it replaces; with no
     * other pinned bytes it fits, if need be alone (see evict_to_cap). */
    size_t add = rlxkv_entry_kv_bytes(e);
    size_t others = c->pinned_bytes;
    if (old && (old->flags & RLXKV_ENTRY_PINNED)) others -= rlxkv_entry_kv_bytes(old);
    if (others && (others > c->cap || add > c->cap - others)) {
        rlxkv_entry_free(e);
        return RLXKV_ERR_NOSPACE;
    }
    if (!n) n = make_node(&p, e);
    if (!n) {
        rlxkv_entry_free(e);
        return RLXKV_ERR_NOMEM;
    }
    e->flags = RLXKV_ENTRY_DIRTY;
    if (rlxkv_entry_row_major(e)) e->flags |= RLXKV_ENTRY_ROW_MAJOR;
    /* The node borrows its label from its own entry from now on, and so
     * does the run above it that borrowed from the same tokens. */
    if (n != c->root) rebase(c, n, base_of(n), e->tokens);
    if (old) {
        e->flags |= old->flags & RLXKV_ENTRY_PINNED;
        unlist(c, old);
        if (old->flags & RLXKV_ENTRY_ROW_MAJOR) rm_sub(n);
        rlxkv_entry_free(old);
    }
    n->entry = e;
    e->node = n;
    if (e->flags & RLXKV_ENTRY_ROW_MAJOR) rm_add(n);
    enlist(c, e);
    evict_to_cap(c);
    return RLXKV_OK;
}

int rlxkv_cache_insert(rlxkv_cache *c, const uint32_t *tokens, size_t n_tokens,
                       size_t n_layers, const float *const *k, const size_t *k_lens,
                       const float *const *v, const size_t *v_lens) {
    if (!c || (!tokens && n_tokens)) return RLXKV_ERR_INVALID;
    if (n_layers && (!k || !k_lens || !v || !v_lens)) return RLXKV_ERR_INVALID;
    if (n_layers > SIZE_MAX / (2 * sizeof(size_t))) return RLXKV_ERR_INVALID;
    for (size_t l = 0; l < n_layers; l++)
        if ((!k[l] && k_lens[l]) || (!v[l] && v_lens[l])) return RLXKV_ERR_INVALID;
    if (!c->cap) return RLXKV_OK; /* off: no point copying */

    int st;
    size_t *lens = malloc(2 * n_layers * sizeof *lens + 1); /* + 1: never malloc(0) */
    if (!lens) return RLXKV_ERR_NOMEM;
    for (size_t l = 0; l < n_layers; l++) {
        lens[l] = k_lens[l];
        lens[n_layers + l] = v_lens[l];
    }
    rlxkv_entry *e = rlxkv_entry_new(n_tokens, n_layers, lens, &st);
    free(lens);
    if (!e) return st;
    if (n_tokens) memcpy(e->tokens, tokens, n_tokens * sizeof *tokens);
    for (size_t l = 0; l < n_layers; l++) {
        if (k_lens[l]) memcpy(rlxkv_entry_block_mut(e, l), k[l], k_lens[l] * sizeof(float));
        if (v_lens[l])
            memcpy(rlxkv_entry_block_mut(e, n_layers + l), v[l], v_lens[l] * sizeof(float));
    }
    return rlxkv_cache_put(c, e);
}

static int hit_out(rlxkv_cache *c, rlxkv_entry *e, size_t matched, rlxkv_hit *hit) {
    touch(c, e);
    c->hits++;
    c->tokens_reused += matched;
    if (hit) {
        hit->entry = e;
        hit->matched = matched;
    }
    return 1;
}

static int miss_out(rlxkv_cache *c, rlxkv_hit *hit) {
    c->misses++;
    if (hit) {
        hit->entry = NULL;
        hit->matched = 0;
    }
    return 0;
}

int rlxkv_cache_lookup(rlxkv_cache *c, const uint32_t *query, size_t n, rlxkv_hit *hit) {
    struct pos p;
    if (hit) {
        hit->entry = NULL;
        hit->matched = 0;
    }
    if (!c || (!query && n)) return RLXKV_ERR_INVALID;
    descend(c, query, n, &p);
    /* The deepest entry on the path; the root's (empty) entry never hits. */
    for (node *x = p.at; x != c->root; x = x->parent)
        if (x->entry) return hit_out(c, x->entry, x->depth, hit);
    return miss_out(c, hit);
}

int rlxkv_cache_lookup_partial(rlxkv_cache *c, const uint32_t *query, size_t n,
                               size_t max_match, rlxkv_hit *hit) {
    struct pos p;
    node *x;
    if (hit) {
        hit->entry = NULL;
        hit->matched = 0;
    }
    if (!c || (!query && n)) return RLXKV_ERR_INVALID;
    /* matched never exceeds max_match, so only that much of the query
     * counts; an entry running past it is a trimmed candidate like any
     * other that runs past the common prefix. */
    if (n > max_match) n = max_match;
    descend(c, query, n, &p);
    /* Every entry below the point where the walk stopped shares exactly
     * p.depth tokens with the query: the best any candidate can do. */
    if (p.edge && p.edge->rm) return hit_out(c, rm_pick(p.edge), p.depth, hit);
    /* Then back up the path. A node's own entry is a full hit and wins the
     * tie against row-major entries branching off there. Nothing further
     * down the path counts a row-major entry (we would have stopped there),
     * so every one a node counts branches off right at that node. */
    for (x = p.at; x != c->root; x = x->parent) {
        if (x->entry) return hit_out(c, x->entry, x->depth, hit);
        if (x->rm) return hit_out(c, rm_pick(x), x->depth, hit);
    }
    return miss_out(c, hit);
}

static size_t hit_block_len(const rlxkv_hit *hit, size_t i) {
    const rlxkv_entry *e = hit->entry;
    size_t len = rlxkv_entry_block_len(e, i);
    if (hit->matched >= e->n_tokens) return len;
    return len / e->n_tokens * hit->matched;
}

size_t rlxkv_hit_n_floats(const rlxkv_hit *hit) {
    size_t sum = 0;
    if (!hit || !hit->entry) return 0;
    if (hit->matched >= hit->entry->n_tokens) return hit->entry->n_floats;
    for (size_t i = 0; i < 2 * hit->entry->n_layers; i++) sum += hit_block_len(hit, i);
    return sum;
}

void rlxkv_hit_copy(const rlxkv_hit *hit, float *dst, size_t *block_lens_out) {
    if (!hit || !hit->entry) return;
    const rlxkv_entry *e = hit->entry;
    for (size_t i = 0; i < 2 * e->n_layers; i++) {
        size_t len = hit_block_len(hit, i);
        if (len) memcpy(dst, rlxkv_entry_block(e, i), len * sizeof *dst);
        dst += len;
        if (block_lens_out) block_lens_out[i] = len;
    }
}

const rlxkv_entry *rlxkv_cache_get(const rlxkv_cache *c, const uint32_t *tokens, size_t n) {
    if (!c || (!tokens && n)) return NULL;
    return find_entry(c, tokens, n);
}

int rlxkv_cache_remove(rlxkv_cache *c, const uint32_t *tokens, size_t n) {
    if (!c || (!tokens && n)) return RLXKV_ERR_INVALID;
    rlxkv_entry *e = find_entry(c, tokens, n);
    if (!e) return RLXKV_ERR_NOTFOUND;
    drop(c, e);
    return RLXKV_OK;
}

/* Moves e between the lists; it arrives as the most recent of its new one. */
static int set_pinned(rlxkv_cache *c, const uint32_t *tokens, size_t n, int pin) {
    if (!c || (!tokens && n)) return RLXKV_ERR_INVALID;
    rlxkv_entry *e = find_entry(c, tokens, n);
    if (!e) return RLXKV_ERR_NOTFOUND;
    if (!(e->flags & RLXKV_ENTRY_PINNED) == !pin) return RLXKV_OK;
    unlist(c, e);
    e->flags ^= RLXKV_ENTRY_PINNED;
    enlist(c, e);
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
    return c && e && (e->flags & RLXKV_ENTRY_PINNED) ? 1 : 0;
}

void rlxkv_cache_set_cap(rlxkv_cache *c, size_t cap_bytes) {
    if (!c) return;
    c->cap = cap_bytes;
    evict_to_cap(c);
}

void rlxkv_cache_stats(const rlxkv_cache *c, rlxkv_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!c) return;
    out->entries = c->entries;
    out->bytes = c->bytes;
    out->cap_bytes = c->cap;
    out->pinned_entries = c->pinned_entries;
    out->pinned_bytes = c->pinned_bytes;
    out->hits = c->hits;
    out->misses = c->misses;
    out->evictions = c->evictions;
    out->tokens_reused = c->tokens_reused;
}

const rlxkv_entry *rlxkv_cache_next(const rlxkv_cache *c, const rlxkv_entry *prev) {
    if (!c) return NULL;
    if (!prev) return c->pinned.head ? c->pinned.head : c->lru.head;
    if (prev->next) return prev->next;
    return prev->flags & RLXKV_ENTRY_PINNED ? c->lru.head : NULL;
}

int rlxkv_cache_is_dirty(const rlxkv_cache *c, const rlxkv_entry *e) {
    return c && e && (e->flags & RLXKV_ENTRY_DIRTY) ? 1 : 0;
}

void rlxkv_cache_mark_clean(rlxkv_cache *c, const rlxkv_entry *e) {
    /* The cache owns its entries, so dropping const here is sound. */
    if (c && e) ((rlxkv_entry *)e)->flags &= ~RLXKV_ENTRY_DIRTY;
}

/* ---- consistency check (tests) ---------------------------------------- */

static int check_node(const rlxkv_cache *c, const node *x, size_t *n_entries,
                      size_t *n_bytes, size_t *n_pinned) {
    size_t rm = 0, linked = 0;
    if (x == c->root) {
        if (x->parent || x->nlabel || x->depth) return 0;
    } else {
        const node *p = x->parent;
        size_t i;
        int from_kid = 0;
        if (!p || !x->nlabel || !x->label || x->depth != p->depth + x->nlabel) return 0;
        i = kid_slot(p, x->label[0]);
        if (i >= p->nkids || p->kids[i] != x) return 0;
        if (!x->entry && x->nkids < 2) return 0; /* should have been pruned */
        /* The label borrows from its own entry, else from a child's base:
         * so, down the line, from an entry in the subtree (whose tokens
         * are checked against every label on its path below). */
        for (size_t k = 0; k < x->nkids; k++) from_kid |= base_of(x->kids[k]) == base_of(x);
        if (x->entry ? base_of(x) != x->entry->tokens : !from_kid) return 0;
    }
    if (x->nkids > x->cap) return 0;
    for (size_t i = 0; i < x->nkids; i++) {
        const node *k = x->kids[i];
        if (k->parent != x || x->keys[i] != k->label[0]) return 0;
        if (i && x->keys[i - 1] >= x->keys[i]) return 0;
        rm += k->rm;
        linked += k->rm != 0;
    }
    for (const node *k = x->rm_head, *prev = NULL; k; prev = k, k = k->rm_next) {
        if (k->parent != x || !k->rm || k->rm_prev != prev || !linked) return 0;
        linked--;
    }
    if (linked) return 0;
    if (x->entry) {
        const rlxkv_entry *e = x->entry;
        size_t end = e->n_tokens;
        if (e->node != x || e->n_tokens != x->depth) return 0;
        if (!(e->flags & RLXKV_ENTRY_ROW_MAJOR) != !rlxkv_entry_row_major(e)) return 0;
        rm += (e->flags & RLXKV_ENTRY_ROW_MAJOR) != 0;
        for (const node *y = x; y != c->root; y = y->parent) {
            end -= y->nlabel;
            if (memcmp(e->tokens + end, y->label, y->nlabel * sizeof *y->label)) return 0;
        }
        (*n_entries)++;
        *n_bytes += rlxkv_entry_kv_bytes(e);
        *n_pinned += (e->flags & RLXKV_ENTRY_PINNED) != 0;
    }
    return rm == x->rm;
}

static int check_list(const list *l, int pinned, size_t *n, size_t *bytes) {
    const rlxkv_entry *prev = NULL;
    for (const rlxkv_entry *e = l->head; e; prev = e, e = e->next) {
        if (e->prev != prev || !e->node || !(e->flags & RLXKV_ENTRY_PINNED) != !pinned) return 0;
        (*n)++;
        *bytes += rlxkv_entry_kv_bytes(e);
    }
    return l->tail == prev;
}

int rlxkv_cache_check(const rlxkv_cache *c, size_t *nodes, size_t *label_tokens) {
    size_t n_nodes = 0, n_label = 0, n_entries = 0, n_bytes = 0, n_pinned = 0;
    size_t lru_n = 0, lru_bytes = 0, pin_n = 0, pin_bytes = 0;
    const node *x = c->root;
    int ok = 1;
    /* Preorder, iteratively: down the first child, else on to the next
     * sibling of the nearest ancestor that has one. */
    for (;;) {
        n_nodes++;
        n_label += x->nlabel;
        if (!check_node(c, x, &n_entries, &n_bytes, &n_pinned)) ok = 0;
        if (x->nkids) {
            x = x->kids[0];
            continue;
        }
        while (x != c->root) {
            const node *p = x->parent;
            size_t i = kid_slot(p, x->label[0]);
            if (i + 1 < p->nkids) break;
            x = p;
        }
        if (x == c->root) break;
        x = x->parent->kids[kid_slot(x->parent, x->label[0]) + 1];
    }
    if (!check_list(&c->lru, 0, &lru_n, &lru_bytes)) ok = 0;
    if (!check_list(&c->pinned, 1, &pin_n, &pin_bytes)) ok = 0;
    if (n_entries != c->entries || lru_n + pin_n != c->entries) ok = 0;
    if (n_bytes != c->bytes || lru_bytes + pin_bytes != c->bytes) ok = 0;
    if (n_pinned != c->pinned_entries || pin_n != n_pinned || pin_bytes != c->pinned_bytes) ok = 0;
    if (nodes) *nodes = n_nodes;
    if (label_tokens) *label_tokens = n_label;
    return ok;
}

size_t rlxkv_cache_tree_bytes(const rlxkv_cache *c) {
    size_t bytes = 0;
    const node *x = c->root;
    /* Preorder, as above. */
    for (;;) {
        bytes += sizeof *x + x->cap * (sizeof *x->kids + sizeof *x->keys);
        if (x->nkids) {
            x = x->kids[0];
            continue;
        }
        while (x != c->root) {
            const node *p = x->parent;
            if (kid_slot(p, x->label[0]) + 1 < p->nkids) break;
            x = p;
        }
        if (x == c->root) break;
        x = x->parent->kids[kid_slot(x->parent, x->label[0]) + 1];
    }
    return bytes;
}
