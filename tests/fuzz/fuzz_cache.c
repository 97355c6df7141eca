/* libFuzzer harness: differential fuzzing of the cache against a model.
 *
 * The input is a program: its bytes pick a sequence of operations (insert
 * and put, lookup, lookup_partial, get, pin, unpin, remove, set_cap,
 * mark_clean, clear) over token sequences from a four-token alphabet, so
 * prefixes collide all the time. Beside the real cache runs a model that
 * is obviously right because it is dumb: a linear array of entries, each
 * with a logical clock tick of its last use, implementing the rules of
 * src/rlxkv.h:
 *
 *   - lookup: the longest entry (n_tokens >= 1) that is wholly a prefix of
 *     the query; it becomes most recent;
 *   - lookup_partial: over full-prefix entries (untrimmed while n_tokens <=
 *     max_match) and row-major entries (trimmed to the common prefix), the
 *     best matched = min(common prefix, max_match) >= 1; a tie goes to the
 *     untrimmed entry; among trimmed ties any candidate will do (cache.c
 *     picks one by its tree), so only its validity is checked;
 *   - insert: cap 0 stores nothing; NOSPACE, changing nothing, when the
 *     other pinned bytes are > 0 and other + new > cap; a replaced entry
 *     keeps its pin; the new entry is most recent and dirty; then least
 *     recently used unpinned entries are evicted until bytes <= cap, except
 *     that the last unpinned entry stays when no pinned bytes are held
 *     (cap > 0);
 *   - set_cap evicts the same way (cap 0: every unpinned entry goes);
 *   - pin/unpin that change the state make the entry the most recent of
 *     its new list (cache.c: unlist + enlist); get does not touch.
 *
 * After every step it compares: the return value, hit or miss, matched,
 * the hit entry's tokens, the floats rlxkv_hit_copy gives, the stats
 * (entries, bytes, cap, pinned, hits, misses, evictions, tokens_reused),
 * the whole entry set through rlxkv_cache_next (contents, pin and dirty
 * flags, pinned first, each list from most to least recently used) and
 * the internal invariants (rlxkv_cache_check). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_check.h"
#include "rlxkv.h"
#include "fuzz.h"

#define MAX_TOKENS 48
#define MAX_LAYERS 3
#define MAX_STEPS 300


static int g_step;
static const char *g_op = "start";
static void fuzz_where(FILE *out) { fprintf(out, "fuzz_cache: step %d (%s): ", g_step, g_op); }

/* ---- input ------------------------------------------------------------ */

typedef struct rd {
    const uint8_t *p;
    size_t n, i;
} rd;

static unsigned u8(rd *r) { return r->i < r->n ? r->p[r->i++] : 0; }
static int more(const rd *r) { return r->i < r->n; }

/* ---- the model -------------------------------------------------------- */

typedef struct ment {
    uint32_t tokens[MAX_TOKENS];
    size_t n;
    size_t n_layers;
    size_t lens[2 * MAX_LAYERS];
    float *floats;          /* all blocks, in order */
    size_t n_values;
    int pinned, dirty, row_major;
    uint64_t tick;          /* last use; larger is more recent */
} ment;

typedef struct model {
    ment *v;
    size_t n, room;
    size_t cap;
    uint64_t clock;
    uint64_t hits, misses, evictions, tokens_reused;
} model;

static size_t m_bytes_of(const ment *e) { return 4 * e->n_values; }

static size_t m_bytes(const model *m) {
    size_t b = 0;
    for (size_t i = 0; i < m->n; i++) b += m_bytes_of(&m->v[i]);
    return b;
}

static size_t m_pinned_bytes(const model *m) {
    size_t b = 0;
    for (size_t i = 0; i < m->n; i++)
        if (m->v[i].pinned) b += m_bytes_of(&m->v[i]);
    return b;
}

static long m_find(const model *m, const uint32_t *t, size_t n) {
    for (size_t i = 0; i < m->n; i++)
        if (m->v[i].n == n && (!n || !memcmp(m->v[i].tokens, t, n * sizeof *t))) return (long)i;
    return -1;
}

static void m_drop(model *m, size_t i) {
    free(m->v[i].floats);
    m->v[i] = m->v[--m->n];
}

static void m_evict(model *m) {
    for (;;) {
        size_t unpinned = 0, lru = 0;
        uint64_t oldest = UINT64_MAX;
        if (m_bytes(m) <= m->cap) return;
        for (size_t i = 0; i < m->n; i++) {
            if (m->v[i].pinned) continue;
            unpinned++;
            if (m->v[i].tick < oldest) {
                oldest = m->v[i].tick;
                lru = i;
            }
        }
        if (!unpinned) return;
        if (m->cap && unpinned == 1 && m_pinned_bytes(m) == 0) return;
        m_drop(m, lru);
        m->evictions++;
    }
}

/* Takes ownership of ne->floats. */
static int m_insert(model *m, ment *ne) {
    long old;
    size_t others;
    if (!m->cap) {
        free(ne->floats);
        return RLXKV_OK;
    }
    old = m_find(m, ne->tokens, ne->n);
    others = m_pinned_bytes(m);
    if (old >= 0 && m->v[old].pinned) others -= m_bytes_of(&m->v[old]);
    if (others && (others > m->cap || m_bytes_of(ne) > m->cap - others)) {
        free(ne->floats);
        return RLXKV_ERR_NOSPACE;
    }
    ne->pinned = old >= 0 ? m->v[old].pinned : 0;
    ne->dirty = 1;
    ne->tick = ++m->clock;
    if (old >= 0) m_drop(m, (size_t)old);
    if (m->n == m->room) {
        m->room = m->room ? 2 * m->room : 16;
        m->v = realloc(m->v, m->room * sizeof *m->v);
        if (!m->v) abort();
    }
    m->v[m->n++] = *ne;
    m_evict(m);
    return RLXKV_OK;
}

static size_t common_prefix(const uint32_t *a, size_t na, const uint32_t *b, size_t nb) {
    size_t k = 0, lim = na < nb ? na : nb;
    while (k < lim && a[k] == b[k]) k++;
    return k;
}

/* Full lookup: the index of the longest full-prefix entry, or -1. */
static long m_lookup(const model *m, const uint32_t *q, size_t n) {
    long best = -1;
    for (size_t i = 0; i < m->n; i++) {
        const ment *e = &m->v[i];
        if (!e->n || e->n > n || common_prefix(e->tokens, e->n, q, n) != e->n) continue;
        if (best < 0 || e->n > m->v[best].n) best = (long)i;
    }
    return best;
}

/* What entry i offers a partial lookup of q[0..n) (n already cut to
 * max_match): 0 when nothing, else matched; *untrimmed says if whole. */
static size_t m_offer(const ment *e, const uint32_t *q, size_t n, int *untrimmed) {
    size_t cp;
    *untrimmed = 0;
    if (!e->n) return 0;
    cp = common_prefix(e->tokens, e->n, q, n);
    if (cp == e->n) {
        *untrimmed = 1;
        return cp;
    }
    return e->row_major ? cp : 0;
}

/* Best matched and whether an untrimmed entry achieves it (*full, its index
 * in *full_idx). */
static size_t m_partial(const model *m, const uint32_t *q, size_t n, int *full, long *full_idx) {
    size_t best = 0;
    *full = 0;
    *full_idx = -1;
    for (size_t i = 0; i < m->n; i++) {
        int u;
        size_t got = m_offer(&m->v[i], q, n, &u);
        if (!got) continue;
        if (got > best || (got == best && u && !*full)) {
            best = got;
            *full = u;
            *full_idx = u ? (long)i : -1;
        }
    }
    return best;
}

static void m_free(model *m) {
    for (size_t i = 0; i < m->n; i++) free(m->v[i].floats);
    free(m->v);
    memset(m, 0, sizeof *m);
}

/* ---- generating inputs ------------------------------------------------ */

static const uint32_t kAlphabet[4] = {0, 1, 2, 0xffffffffu};

/* A token sequence: random, or derived from an entry the model holds (so
 * that lookups and pins find something). */
static size_t gen_tokens(rd *r, const model *m, uint32_t *t) {
    unsigned mode = u8(r) % 8;
    size_t n = 0;
    if (mode >= 3 && m->n) {
        const ment *e = &m->v[u8(r) % m->n];
        unsigned how = u8(r) % 6;
        n = e->n;
        memcpy(t, e->tokens, n * sizeof *t);
        if (how == 1 && n) n = u8(r) % n;                   /* a proper prefix */
        else if (how == 2 || how == 3) {                       /* extended */
            size_t extra = 1 + u8(r) % 4;
            while (extra-- && n < MAX_TOKENS) t[n++] = kAlphabet[u8(r) % 4];
        } else if (how == 4 && n) {                            /* one token changed */
            size_t at = u8(r) % n;
            t[at] = kAlphabet[(u8(r) % 3 + 1 + (t[at] == 0xffffffffu ? 3 : t[at])) % 4];
        }
        return n;
    }
    n = mode == 0 ? u8(r) % (MAX_TOKENS + 1) : u8(r) % 9;
    for (size_t i = 0; i < n; i += 4) {
        unsigned b = u8(r);
        for (size_t j = i; j < n && j < i + 4; j++, b >>= 2) t[j] = kAlphabet[b & 3];
    }
    return n;
}

static uint64_t g_serial;

static uint32_t mix32(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return (uint32_t)(x ^ (x >> 31));
}

/* A new model entry with its shape and floats; not yet in the model. */
static void gen_entry(rd *r, const model *m, ment *e) {
    unsigned shape;
    uint64_t id = ++g_serial;
    memset(e, 0, sizeof *e);
    e->n = gen_tokens(r, m, e->tokens);
    e->n_layers = u8(r) % (MAX_LAYERS + 1);
    shape = u8(r) % 4;
    for (size_t b = 0; b < 2 * e->n_layers; b++) {
        if (shape <= 1) e->lens[b] = e->n * (u8(r) % 3);   /* row-major */
        else if (shape == 2) e->lens[b] = u8(r) % 13;       /* anything */
        else e->lens[b] = b ? e->lens[0] : u8(r) % 40;      /* all alike */
        e->n_values += e->lens[b];
    }
    e->row_major = e->n != 0;
    for (size_t b = 0; b < 2 * e->n_layers; b++)
        if (e->n && e->lens[b] % e->n) e->row_major = 0;
    e->floats = malloc((e->n_values ? e->n_values : 1) * sizeof *e->floats);
    if (!e->floats) abort();
    for (size_t i = 0; i < e->n_values; i++) {
        uint32_t bits = mix32(id << 20 | i);
        memcpy(&e->floats[i], &bits, 4);
    }
}

static size_t gen_cap(rd *r, const model *m) {
    unsigned k = u8(r);
    size_t bytes = m_bytes(m);
    switch (k % 8) {
    case 0: return 0;
    case 1: return SIZE_MAX;
    case 2: return bytes;
    case 3: return bytes ? bytes - 1 - u8(r) % (bytes < 64 ? bytes : 64) : 0;
    case 4: return m_pinned_bytes(m) + u8(r) % 32;
    default: return (size_t)u8(r) * (1 + (k >> 3) % 16) + (k >> 7);
    }
}

/* ---- comparing -------------------------------------------------------- */

static size_t block_off(const ment *e, size_t b) {
    size_t o = 0;
    for (size_t i = 0; i < b; i++) o += e->lens[i];
    return o;
}

static void same_entry(const rlxkv_cache *c, const rlxkv_entry *x, const ment *e) {
    REQUIRE(x != NULL);
    if (rlxkv_entry_n_tokens(x) != e->n ||
        (e->n && memcmp(rlxkv_entry_tokens(x), e->tokens, e->n * sizeof *e->tokens)))
        FAIL("entry tokens differ (n %zu vs model %zu)", rlxkv_entry_n_tokens(x), e->n);
    REQUIRE(rlxkv_entry_n_layers(x) == e->n_layers);
    REQUIRE(rlxkv_entry_n_values(x) == e->n_values);
    REQUIRE(rlxkv_entry_kv_bytes(x) == m_bytes_of(e));
    REQUIRE(!rlxkv_entry_row_major(x) == !e->row_major);
    for (size_t b = 0; b < 2 * e->n_layers; b++) {
        REQUIRE(rlxkv_entry_block_len(x, b) == e->lens[b]);
        if (e->lens[b])
            REQUIRE(!memcmp(rlxkv_entry_block(x, b), e->floats + block_off(e, b),
                            e->lens[b] * sizeof(float)));
    }
    if (e->n_values) REQUIRE(!memcmp(rlxkv_entry_data(x), e->floats, e->n_values * sizeof(float)));
    if (rlxkv_cache_is_pinned(c, x) != e->pinned) FAIL("pin flag differs (model %d)", e->pinned);
    if (rlxkv_cache_is_dirty(c, x) != e->dirty) FAIL("dirty flag differs (model %d)", e->dirty);
}

static const model *g_sort_model;
static int cmp_order(const void *a, const void *b) {
    const ment *x = &g_sort_model->v[*(const size_t *)a], *y = &g_sort_model->v[*(const size_t *)b];
    if (x->pinned != y->pinned) return x->pinned ? -1 : 1;
    return x->tick > y->tick ? -1 : x->tick < y->tick ? 1 : 0;
}

static void compare_all(rlxkv_cache *c, const model *m) {
    rlxkv_stats st;
    size_t *order, k = 0;
    const rlxkv_entry *x;

    if (!rlxkv_cache_check(c, NULL, NULL)) FAIL("rlxkv_cache_check: invariants broken");
    rlxkv_cache_stats(c, &st);
    if (st.entries != m->n) FAIL("entries %zu, model %zu", st.entries, m->n);
    if (st.bytes != m_bytes(m)) FAIL("bytes %zu, model %zu", st.bytes, m_bytes(m));
    REQUIRE(st.cap_bytes == m->cap);
    {
        size_t pe = 0;
        for (size_t i = 0; i < m->n; i++) pe += m->v[i].pinned;
        if (st.pinned_entries != pe) FAIL("pinned entries %zu, model %zu", st.pinned_entries, pe);
    }
    if (st.pinned_bytes != m_pinned_bytes(m))
        FAIL("pinned bytes %zu, model %zu", st.pinned_bytes, m_pinned_bytes(m));
    if (st.hits != m->hits || st.misses != m->misses)
        FAIL("hits/misses %llu/%llu, model %llu/%llu", (unsigned long long)st.hits,
             (unsigned long long)st.misses, (unsigned long long)m->hits,
             (unsigned long long)m->misses);
    if (st.evictions != m->evictions)
        FAIL("evictions %llu, model %llu", (unsigned long long)st.evictions,
             (unsigned long long)m->evictions);
    REQUIRE(st.tokens_reused == m->tokens_reused);

    /* The whole set, in iteration order: pinned first, each group most
     * recent first. */
    order = malloc((m->n + 1) * sizeof *order);
    if (!order) abort();
    for (size_t i = 0; i < m->n; i++) order[i] = i;
    g_sort_model = m;
    qsort(order, m->n, sizeof *order, cmp_order);
    for (x = rlxkv_cache_next(c, NULL); x; x = rlxkv_cache_next(c, x), k++) {
        const ment *e;
        if (k >= m->n) FAIL("iteration yields more than the model's %zu entries", m->n);
        e = &m->v[order[k]];
        if (rlxkv_entry_n_tokens(x) != e->n ||
            (e->n && memcmp(rlxkv_entry_tokens(x), e->tokens, e->n * sizeof *e->tokens))) {
            long where = m_find(m, rlxkv_entry_tokens(x), rlxkv_entry_n_tokens(x));
            if (where < 0) FAIL("iteration #%zu: an entry the model does not hold", k);
            FAIL("iteration #%zu: order differs from the model (pinned %d, tick %llu vs %llu)", k,
                 e->pinned, (unsigned long long)m->v[where].tick, (unsigned long long)e->tick);
        }
        same_entry(c, x, e);
        if (rlxkv_cache_get(c, e->tokens, e->n) != x) FAIL("get does not find iterated entry");
    }
    if (k != m->n) FAIL("iteration yields %zu entries, model %zu", k, m->n);
    free(order);
}

/* The floats a hit of `matched` tokens of e must copy. */
static void check_copy(const rlxkv_hit *h, const ment *e) {
    size_t want = 0, *lens_out;
    float *buf;
    int whole = h->matched >= e->n;
    for (size_t b = 0; b < 2 * e->n_layers; b++)
        want += whole ? e->lens[b] : e->lens[b] / e->n * h->matched;
    if (rlxkv_hit_n_values(h) != want)
        FAIL("hit_n_values %zu, want %zu", rlxkv_hit_n_values(h), want);
    buf = malloc((want + 1) * sizeof *buf);
    lens_out = malloc((2 * e->n_layers + 1) * sizeof *lens_out);
    if (!buf || !lens_out) abort();
    rlxkv_hit_copy(h, buf, lens_out);
    {
        size_t at = 0;
        for (size_t b = 0; b < 2 * e->n_layers; b++) {
            size_t len = whole ? e->lens[b] : e->lens[b] / e->n * h->matched;
            if (lens_out[b] != len) FAIL("copied block %zu has %zu floats, want %zu", b, lens_out[b], len);
            if (len && memcmp(buf + at, e->floats + block_off(e, b), len * sizeof *buf))
                FAIL("copied block %zu differs from the entry's first rows", b);
            at += len;
        }
    }
    /* Without block lengths too. */
    rlxkv_hit_copy(h, buf, NULL);
    free(lens_out);
    free(buf);
}

/* ---- one input -------------------------------------------------------- */

static int do_insert(rd *r, rlxkv_cache *c, model *m) {
    ment e;
    int rc, want;
    gen_entry(r, m, &e);
    if (u8(r) & 1) {
        g_op = "put";
        int st = 12345;
        rlxkv_entry *x = rlxkv_entry_new(e.n, e.n_layers, e.lens, RLXKV_F32, &st);
        if (!x) FAIL("rlxkv_entry_new failed: %d", st);
        REQUIRE(st == RLXKV_OK);
        if (e.n) memcpy(rlxkv_entry_tokens_mut(x), e.tokens, e.n * sizeof *e.tokens);
        for (size_t b = 0; b < 2 * e.n_layers; b++)
            if (e.lens[b])
                memcpy(rlxkv_entry_block_mut(x, b), e.floats + block_off(&e, b),
                       e.lens[b] * sizeof(float));
        rc = rlxkv_cache_put(c, x);
    } else {
        const void *k[MAX_LAYERS + 1], *v[MAX_LAYERS + 1];
        size_t kl[MAX_LAYERS + 1], vl[MAX_LAYERS + 1];
        g_op = "insert";
        for (size_t l = 0; l < e.n_layers; l++) {
            k[l] = e.floats + block_off(&e, l);
            v[l] = e.floats + block_off(&e, e.n_layers + l);
            kl[l] = e.lens[l];
            vl[l] = e.lens[e.n_layers + l];
        }
        rc = rlxkv_cache_insert(c, e.tokens, e.n, e.n_layers, RLXKV_F32, k, kl, v, vl);
    }
    want = m_insert(m, &e);
    if (rc != want) FAIL("returned %d, model %d", rc, want);
    return rc;
}

static void do_lookup(rd *r, rlxkv_cache *c, model *m) {
    uint32_t q[MAX_TOKENS];
    size_t n = gen_tokens(r, m, q);
    rlxkv_hit h;
    long want = m_lookup(m, q, n);
    int rc;
    g_op = "lookup";
    memset(&h, 0x5a, sizeof h);
    rc = rlxkv_cache_lookup(c, n ? q : (u8(r) & 1 ? NULL : q), n, &h);
    if (rc != (want >= 0 ? RLXKV_HIT : RLXKV_MISS)) FAIL("returned %d, model %s", rc, want >= 0 ? "hit" : "miss");
    if (want < 0) {
        REQUIRE(h.entry == NULL && h.matched == 0);
        m->misses++;
        return;
    }
    same_entry(c, h.entry, &m->v[want]);
    REQUIRE(h.matched == m->v[want].n);
    check_copy(&h, &m->v[want]);
    m->v[want].tick = ++m->clock;
    m->hits++;
    m->tokens_reused += h.matched;
}

static void do_partial(rd *r, rlxkv_cache *c, model *m) {
    uint32_t q[MAX_TOKENS];
    size_t n = gen_tokens(r, m, q), mm, eff;
    unsigned how = u8(r) % 5;
    rlxkv_hit h;
    int full, rc;
    long full_idx, got;
    size_t want;
    g_op = "lookup_partial";
    mm = how == 0 ? SIZE_MAX : how == 1 ? n : how == 2 ? (n ? n - 1 : 0) : u8(r) % 12;
    eff = n < mm ? n : mm;
    want = m_partial(m, q, eff, &full, &full_idx);
    memset(&h, 0x5a, sizeof h);
    rc = rlxkv_cache_lookup_partial(c, q, n, mm, &h);
    if (rc != (want > 0 ? RLXKV_HIT : RLXKV_MISS)) FAIL("returned %d, model best matched %zu", rc, want);
    if (!want) {
        REQUIRE(h.entry == NULL && h.matched == 0);
        m->misses++;
        return;
    }
    if (h.matched != want) FAIL("matched %zu, model %zu (max_match %zu, n %zu)", h.matched, want, mm, n);
    REQUIRE(h.entry != NULL);
    got = m_find(m, rlxkv_entry_tokens(h.entry), rlxkv_entry_n_tokens(h.entry));
    if (got < 0) FAIL("hit an entry the model does not hold");
    if (full) {
        if (got != full_idx) FAIL("a whole entry of %zu tokens ties; the hit is another of %zu tokens",
                                  want, m->v[got].n);
    } else {
        int u;
        size_t offer = m_offer(&m->v[got], q, eff, &u);
        if (offer != want || u) FAIL("the hit entry is no valid trimmed candidate (offers %zu)", offer);
        REQUIRE(m->v[got].row_major && m->v[got].n > want);
    }
    same_entry(c, h.entry, &m->v[got]);
    check_copy(&h, &m->v[got]);
    m->v[got].tick = ++m->clock;
    m->hits++;
    m->tokens_reused += h.matched;
}

static void do_pin(rd *r, rlxkv_cache *c, model *m, int pin) {
    uint32_t t[MAX_TOKENS];
    size_t n = gen_tokens(r, m, t);
    long i = m_find(m, t, n);
    int rc;
    g_op = pin ? "pin" : "unpin";
    rc = pin ? rlxkv_cache_pin(c, t, n) : rlxkv_cache_unpin(c, t, n);
    if (rc != (i >= 0 ? RLXKV_OK : RLXKV_ERR_NOTFOUND)) FAIL("returned %d", rc);
    if (i >= 0 && m->v[i].pinned != pin) {
        m->v[i].pinned = pin;
        m->v[i].tick = ++m->clock;
    }
}

static void do_remove(rd *r, rlxkv_cache *c, model *m) {
    uint32_t t[MAX_TOKENS];
    size_t n = gen_tokens(r, m, t);
    long i = m_find(m, t, n);
    int rc;
    g_op = "remove";
    rc = rlxkv_cache_remove(c, t, n);
    if (rc != (i >= 0 ? RLXKV_OK : RLXKV_ERR_NOTFOUND)) FAIL("returned %d", rc);
    if (i >= 0) m_drop(m, (size_t)i);
}

static void do_get(rd *r, rlxkv_cache *c, model *m) {
    uint32_t t[MAX_TOKENS];
    size_t n = gen_tokens(r, m, t);
    long i = m_find(m, t, n);
    const rlxkv_entry *x;
    g_op = "get";
    x = rlxkv_cache_get(c, t, n);
    if (!x != (i < 0)) FAIL("get %s, model %s", x ? "found" : "missed", i >= 0 ? "holds it" : "not");
    if (x) {
        same_entry(c, x, &m->v[i]);
        if (u8(r) & 1) {
            g_op = "mark_clean";
            rlxkv_cache_mark_clean(c, x);
            m->v[i].dirty = 0;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rd r = {data, size, 0};
    model m;
    rlxkv_cache *c;
    uint64_t fp = 0x1234abcdull;

    memset(&m, 0, sizeof m);
    g_step = 0;
    g_op = "new";
    m.cap = gen_cap(&r, &m);
    c = rlxkv_cache_new(m.cap, fp);
    REQUIRE(c != NULL);
    REQUIRE(rlxkv_cache_fingerprint(c) == fp);
    compare_all(c, &m);

    while (more(&r) && g_step < MAX_STEPS) {
        unsigned op = u8(&r);
        g_step++;
        if (op < 80) do_insert(&r, c, &m);
        else if (op < 120) do_lookup(&r, c, &m);
        else if (op < 165) do_partial(&r, c, &m);
        else if (op < 185) do_pin(&r, c, &m, 1);
        else if (op < 200) do_pin(&r, c, &m, 0);
        else if (op < 215) do_remove(&r, c, &m);
        else if (op < 235) do_get(&r, c, &m);
        else if (op < 253) {
            g_op = "set_cap";
            m.cap = gen_cap(&r, &m);
            rlxkv_cache_set_cap(c, m.cap);
            m_evict(&m);
        } else {
            g_op = "clear";
            rlxkv_cache_clear(c);
            for (size_t i = 0; i < m.n; i++) free(m.v[i].floats);
            m.n = 0;
        }
        compare_all(c, &m);
    }
    rlxkv_cache_free(c);
    m_free(&m);
    return 0;
}
