/* The cache's rules (src/rlxkv.h) as one deliberately simple model, and the
 * program that runs the cache and the model side by side, comparing them
 * after every step. Shared by the randomized test in tests/c/test_cache.c
 * (a PRNG writes the program) and the libFuzzer harness
 * tests/fuzz/fuzz_cache.c (the fuzzer does), so that there is one model.
 *
 * The model is obviously right because it is dumb: an unordered array of
 * entries, each with the logical-clock tick of its last use, and every
 * question answered by a linear scan. The rules it implements:
 *
 *   Entries. Resident entries hold tokens and values of a dtype (f32, f16:
 *   4 or 2 bytes a value; budgets count real bytes). Stored-only entries
 *   hold tokens, a dtype and a size, no values; they do not count against
 *   the cap, stats count them apart (stored_entries, stored_bytes).
 *
 *   Layouts. set_layout succeeds only on an empty cache (no entries of either tier)
 *   and for a whole layout (order ANY, or TOKEN/HEAD_MAJOR with heads >= 1,
 *   head_dim >= 1 and a row that does not overflow). A put whose blocks are
 *   not all heads * head_dim * n_tokens long (or of another layer count,
 *   when layers is given) returns SHAPE and changes nothing. An entry is
 *   trimmable (a partial hit may cut it) when it has tokens and, without a
 *   layout, its blocks are multiples of n_tokens (stored-only: as given).
 *
 *   Put. SHAPE first; cap 0 stores nothing (OK); NOSPACE, changing
 *   nothing, when the other pinned resident bytes are > 0 and they plus the
 *   new bytes exceed the cap. The entry replaces one of the same tokens
 *   (resident or stored-only) and keeps its pin; it is the most recent,
 *   dirty, not stored, and gets serial = the count of puts that stored
 *   something (put and put_stored). Then eviction.
 *
 *   Eviction (put, set_cap). While resident bytes > cap: the least recently
 *   used unpinned resident entry goes, except that the last one stays when
 *   cap > 0 and no pinned bytes are held. With the stored index on, one
 *   marked clean (stored) leaves a stored-only entry behind, the most recent
 *   of those, keeping its pin; else it is forgotten. Each counts an
 *   eviction.
 *
 *   put_stored. Bad dtype: INVALID. Cap 0, or a resident entry of the same
 *   tokens: OK, nothing changes. Else a stored-only entry, new or replacing
 *   one (keeping its pin), the most recent stored-only entry; a serial.
 *
 *   Lookups. lookup: the longest resident entry (n >= 1) wholly a prefix of
 *   the query. lookup_partial: over resident entries, matched = the common
 *   prefix with the query cut to max_match, >= 1; an entry that is not a
 *   whole prefix (of the cut query) must be trimmable. match: the same over
 *   both tiers (without RLXKV_MATCH_PARTIAL as lookup with the query cut to
 *   max_match). Of equal `matched`, the ranking is resident whole >
 *   resident cut > stored-only whole > stored-only cut; among cut entries of
 *   one rank any will do, so only validity is checked. A hit makes its
 *   entry the most recent of its tier and counts hits and tokens_reused; a
 *   miss counts misses. Copies: a whole hit is every block; a cut one the
 *   first `matched` rows (token-major, or ANY) or `matched` rows of every
 *   head (head-major), and rlxkv_hit_copy copies exactly those bits.
 *
 *   Pins. pin/unpin of an absent entry: NOTFOUND. A change of a resident
 *   entry makes it the most recent of its new list; on a stored-only entry
 *   it only records the pin, which the put that replaces it takes on.
 *
 *   Clear. Without the stored index, everything goes. With it, each
 *   resident entry is demoted as eviction does (pinned ones from most
 *   recent, then unpinned ones from least recent: cache.c's order, which
 *   decides the order of the stored-only entries left), counting no
 *   eviction.
 *
 *   Generation. Changes (grows) in exactly the steps that free a resident
 *   entry (replace, evict, remove, clear).
 *
 *   Serial. rlxkv_entry_serial of an entry a put or put_stored made is
 *   the count of puts and put_storeds that stored something, at that one
 *   (a stored-only entry left by eviction or clear is not checked).
 *
 * After every step the program compares the return value, the hit (entry,
 * matched, spans, copy), the stats, the layout, the generation, the whole
 * entry set and order through rlxkv_cache_next (pinned, then most recent
 * first) and rlxkv_cache_next_stored (most recent first), every entry's
 * fields, flags and values, and rlxkv_cache_check. */
#ifndef RLXKV_CACHE_MODEL_H
#define RLXKV_CACHE_MODEL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_check.h"
#include "rlxkv.h"

#define CM_MAX_TOKENS 48
#define CM_MAX_LAYERS 3

/* ======================================================================
 * The model
 * ==================================================================== */

typedef struct cm_entry {
    uint32_t tokens[CM_MAX_TOKENS];
    size_t n;
    int resident;                    /* 0: stored-only */
    int dtype;
    size_t n_values;
    size_t n_layers;                 /* resident only, as are lens and values */
    size_t lens[2 * CM_MAX_LAYERS];
    unsigned char *values;           /* n_values values of dtype, block after block */
    int row_major;                   /* blocks are multiples of n (n >= 1); stored-only: as given */
    int pinned;                      /* stored-only: pinned once a put replaces it */
    int dirty, stored;               /* resident only */
    uint32_t serial;                 /* 0 when no put made it (left by eviction) */
    uint64_t tick;                   /* last use; larger is more recent */
} cm_entry;

typedef struct cm_model {
    cm_entry *v;
    size_t n, room;
    size_t cap;
    rlxkv_layout layout;
    int stored_index;
    uint64_t clock, hits, misses, evictions, reused;
    uint32_t puts;
    int freed_resident;              /* this step freed a resident entry */
    int freed_stored;                /* this step freed a stored-only entry */
} cm_model;

/* Deviations of src/cache.c from the rules above, found by this model and
 * fixed (each has a unit test in tests/c/test_cache.c): a remove of a
 * stored-only entry moved the generation; rlxkv_cache_insert with cap 0
 * returned OK for an entry that does not fit the layout; set_layout
 * succeeded beside stored-only entries. Set one to 1 to step around it
 * again, should it come back while the fuzzer looks for others. */
#define CM_TOLERATE_STORED_FREE_GENERATION 0
#define CM_TOLERATE_INSERT_CAP0_SHAPE 0
#define CM_TOLERATE_LAYOUT_WITH_STORED 0

static size_t cm_vsize(int dtype) { return dtype == RLXKV_F16 ? 2 : 4; }
static size_t cm_bytes_of(const cm_entry *e) { return e->n_values * cm_vsize(e->dtype); }

typedef struct cm_totals {
    size_t entries, bytes, pinned_entries, pinned_bytes, stored_entries;
    uint64_t stored_bytes;
    size_t unpinned;
} cm_totals;

static cm_totals cm_sum(const cm_model *m) {
    cm_totals t;
    memset(&t, 0, sizeof t);
    for (size_t i = 0; i < m->n; i++) {
        const cm_entry *e = &m->v[i];
        if (!e->resident) {
            t.stored_entries++;
            t.stored_bytes += cm_bytes_of(e);
            continue;
        }
        t.entries++;
        t.bytes += cm_bytes_of(e);
        if (e->pinned) {
            t.pinned_entries++;
            t.pinned_bytes += cm_bytes_of(e);
        } else {
            t.unpinned++;
        }
    }
    return t;
}

static size_t cm_common(const uint32_t *a, size_t na, const uint32_t *b, size_t nb) {
    size_t k = 0;
    while (k < na && k < nb && a[k] == b[k]) k++;
    return k;
}

static long cm_find(const cm_model *m, const uint32_t *t, size_t n) {
    for (size_t i = 0; i < m->n; i++)
        if (m->v[i].n == n && cm_common(m->v[i].tokens, n, t, n) == n) return (long)i;
    return -1;
}

static int cm_trimmable(const cm_model *m, const cm_entry *e) {
    return e->n > 0 && (m->layout.order != RLXKV_ORDER_ANY || e->row_major);
}

static int cm_fits_layout(const cm_model *m, const cm_entry *e) {
    const rlxkv_layout *l = &m->layout;
    if (l->order == RLXKV_ORDER_ANY) return 1;
    if (l->layers && e->n_layers != l->layers) return 0;
    for (size_t b = 0; b < 2 * e->n_layers; b++)
        if (e->lens[b] != l->heads * l->head_dim * e->n) return 0;
    return 1;
}

static void cm_forget(cm_model *m, size_t i) {
    if (m->v[i].resident) m->freed_resident = 1;
    else m->freed_stored = 1;
    free(m->v[i].values);
    m->v[i] = m->v[--m->n];
}

static void cm_add(cm_model *m, const cm_entry *e) {
    if (m->n == m->room) {
        m->room = m->room ? 2 * m->room : 16;
        m->v = realloc(m->v, m->room * sizeof *m->v);
        if (!m->v) abort();
    }
    m->v[m->n++] = *e;
}

/* A resident entry leaves memory (eviction, clear). */
static void cm_demote(cm_model *m, size_t i) {
    cm_entry *e = &m->v[i];
    if (!m->stored_index || !e->stored) {
        cm_forget(m, i);
        return;
    }
    m->freed_resident = 1;
    free(e->values);
    e->values = NULL;
    e->resident = 0;
    e->n_layers = 0;
    e->dirty = e->stored = 0;
    e->serial = 0;
    e->tick = ++m->clock;
}

static void cm_evict(cm_model *m) {
    for (;;) {
        cm_totals t = cm_sum(m);
        long lru = -1;
        if (t.bytes <= m->cap || !t.unpinned) return;
        if (m->cap && t.unpinned == 1 && !t.pinned_bytes) return;
        for (size_t i = 0; i < m->n; i++)
            if (m->v[i].resident && !m->v[i].pinned && (lru < 0 || m->v[i].tick < m->v[lru].tick))
                lru = (long)i;
        cm_demote(m, (size_t)lru);
        m->evictions++;
    }
}

/* Takes ownership of ne->values in every case. */
static int cm_put(cm_model *m, cm_entry *ne, int via_insert) {
    long old;
    size_t others;
    if (CM_TOLERATE_INSERT_CAP0_SHAPE && via_insert && !m->cap) {
        free(ne->values);
        return RLXKV_OK;
    }
    if (!cm_fits_layout(m, ne)) {
        free(ne->values);
        return RLXKV_ERR_SHAPE;
    }
    if (!m->cap) {
        free(ne->values);
        return RLXKV_OK;
    }
    old = cm_find(m, ne->tokens, ne->n);
    others = cm_sum(m).pinned_bytes;
    if (old >= 0 && m->v[old].resident && m->v[old].pinned) others -= cm_bytes_of(&m->v[old]);
    if (others && (others > m->cap || cm_bytes_of(ne) > m->cap - others)) {
        free(ne->values);
        return RLXKV_ERR_NOSPACE;
    }
    ne->resident = 1;
    ne->pinned = old >= 0 && m->v[old].pinned;
    ne->dirty = 1;
    ne->stored = 0;
    ne->serial = ++m->puts;
    ne->tick = ++m->clock;
    if (old >= 0) cm_forget(m, (size_t)old);
    cm_add(m, ne);
    cm_evict(m);
    return RLXKV_OK;
}

static int cm_put_stored(cm_model *m, const uint32_t *t, size_t n, int dtype, size_t n_values,
                         int row_major) {
    long old;
    cm_entry s;
    if (dtype != RLXKV_F32 && dtype != RLXKV_F16) return RLXKV_ERR_INVALID;
    if (!m->cap) return RLXKV_OK;
    old = cm_find(m, t, n);
    if (old >= 0 && m->v[old].resident) return RLXKV_OK;
    memset(&s, 0, sizeof s);
    memcpy(s.tokens, t, n * sizeof *t);
    s.n = n;
    s.dtype = dtype;
    s.n_values = n_values;
    s.row_major = row_major && n > 0;
    s.pinned = old >= 0 && m->v[old].pinned;
    s.serial = ++m->puts;
    s.tick = ++m->clock;
    if (old >= 0) cm_forget(m, (size_t)old);
    cm_add(m, &s);
    return RLXKV_OK;
}

/* The longest entry of the tiers asked for (any: stored-only too) wholly a
 * prefix of q[0..n), or -1. */
static long cm_lookup(const cm_model *m, const uint32_t *q, size_t n, int any) {
    long best = -1;
    for (size_t i = 0; i < m->n; i++) {
        const cm_entry *e = &m->v[i];
        if (!e->n || e->n > n || (!any && !e->resident) || cm_common(e->tokens, e->n, q, n) != e->n) continue;
        if (best < 0 || e->n > m->v[best].n) best = (long)i;
    }
    return best;
}

/* Ranks of a partial candidate; of equal matched, the higher wins. */
enum { CM_STORED_CUT = 1, CM_STORED_WHOLE, CM_RESIDENT_CUT, CM_RESIDENT_WHOLE };

/* What entry e offers a partial lookup of q[0..n) (n already cut to
 * max_match): matched (0: nothing) and its rank. */
static size_t cm_offer(const cm_model *m, const cm_entry *e, const uint32_t *q, size_t n, int *rank) {
    size_t cp = cm_common(e->tokens, e->n, q, n);
    *rank = 0;
    if (!e->n || !cp) return 0;
    if (cp == e->n) *rank = e->resident ? CM_RESIDENT_WHOLE : CM_STORED_WHOLE;
    else if (cm_trimmable(m, e)) *rank = e->resident ? CM_RESIDENT_CUT : CM_STORED_CUT;
    return *rank ? cp : 0;
}

/* The best matched over the tiers asked for, its rank in *rank and, when
 * that rank is whole (so one entry), the entry in *whole. */
static size_t cm_partial(const cm_model *m, const uint32_t *q, size_t n, int any, int *rank, long *whole) {
    size_t best = 0;
    *rank = 0;
    *whole = -1;
    for (size_t i = 0; i < m->n; i++) {
        int r;
        size_t got;
        if (!any && !m->v[i].resident) continue;
        got = cm_offer(m, &m->v[i], q, n, &r);
        if (!got || got < best || (got == best && r <= *rank)) continue;
        best = got;
        *rank = r;
        *whole = r == CM_RESIDENT_WHOLE || r == CM_STORED_WHOLE ? (long)i : -1;
    }
    return best;
}

static void cm_hit(cm_model *m, size_t i, size_t matched) {
    m->v[i].tick = ++m->clock;
    m->hits++;
    m->reused += matched;
}

static int cm_pin(cm_model *m, const uint32_t *t, size_t n, int pin) {
    long i = cm_find(m, t, n);
    if (i < 0) return RLXKV_ERR_NOTFOUND;
    if (m->v[i].pinned != pin) {
        m->v[i].pinned = pin;
        if (m->v[i].resident) m->v[i].tick = ++m->clock;
    }
    return RLXKV_OK;
}

static int cm_remove(cm_model *m, const uint32_t *t, size_t n) {
    long i = cm_find(m, t, n);
    if (i < 0) return RLXKV_ERR_NOTFOUND;
    cm_forget(m, (size_t)i);
    return RLXKV_OK;
}

static void cm_clear(cm_model *m) {
    if (!m->stored_index) {
        while (m->n) cm_forget(m, m->n - 1);
        return;
    }
    for (int pinned = 1; pinned >= 0; pinned--) {
        for (;;) {
            long pick = -1;
            for (size_t i = 0; i < m->n; i++) {
                const cm_entry *e = &m->v[i];
                if (!e->resident || e->pinned != pinned) continue;
                if (pick < 0 || (pinned ? e->tick > m->v[pick].tick : e->tick < m->v[pick].tick)) pick = (long)i;
            }
            if (pick < 0) break;
            cm_demote(m, (size_t)pick);
        }
    }
}

static int cm_set_layout(cm_model *m, const rlxkv_layout *l) {
    if (m->n) return RLXKV_ERR_INVALID; /* entries of either tier */
    if (l->order == RLXKV_ORDER_ANY) {
        m->layout = (rlxkv_layout){RLXKV_ORDER_ANY, 0, 0, 0};
        return RLXKV_OK;
    }
    if (l->order != RLXKV_TOKEN_MAJOR && l->order != RLXKV_HEAD_MAJOR) return RLXKV_ERR_INVALID;
    if (!l->heads || !l->head_dim || l->head_dim > SIZE_MAX / l->heads) return RLXKV_ERR_INVALID;
    m->layout = *l;
    return RLXKV_OK;
}

static void cm_free(cm_model *m) {
    for (size_t i = 0; i < m->n; i++) free(m->v[i].values);
    free(m->v);
    memset(m, 0, sizeof *m);
}

/* ======================================================================
 * The program: where its bytes come from, what it has done
 * ==================================================================== */

typedef struct cm_input {
    unsigned (*byte)(void *ctx);     /* the next byte of the program */
    int (*more)(void *ctx);          /* whether any are left */
    void *ctx;
} cm_input;

typedef struct cm_config {
    const uint32_t *alphabet;        /* token ids to draw from */
    size_t n_alpha;
    size_t max_tokens;               /* <= CM_MAX_TOKENS */
    int max_steps;
    int big;                         /* caps mostly unbounded (so that nodes grow wide) */
} cm_config;

/* How often each path of the program ran, to show that every rule is met. */
#define CM_PATHS(X)                                                                       \
    X(put_ok) X(put_replaces_resident) X(put_replaces_stored) X(put_takes_stored_pin)   \
    X(put_nospace) X(put_shape) X(put_cap0) X(insert) X(put_f16) X(put_refused_held)     \
    X(put_stored_new) X(put_stored_update) X(put_stored_beside_resident) X(put_stored_many) \
    X(put_stored_invalid) X(evict_forget) X(evict_to_stored) X(clear_to_stored)         \
    X(lookup_hit) X(lookup_miss) X(partial_resident_whole) X(partial_resident_cut)      \
    X(partial_miss) X(match_resident_whole) X(match_resident_cut) X(match_stored_whole) \
    X(match_stored_cut) X(match_miss) X(match_whole_stored) X(cut_head_major)           \
    X(cut_token_major) X(cut_any) X(copy_f16) X(pin_stored) X(pin_resident)             \
    X(pin_missing) X(remove_stored) X(remove_resident) X(mark_clean) X(mark_unstored)  \
    X(set_cap) X(stored_index_on) X(set_layout_ok) X(set_layout_invalid) X(clear)       \
    X(generation_moved) X(stored_listed) X(wide_root)

#define CM_ENUM(name) CM_##name,
enum { CM_PATHS(CM_ENUM) CM_N_PATHS };
#undef CM_ENUM
#define CM_NAME(name) #name,
static const char *const cm_path_names[CM_N_PATHS] = {CM_PATHS(CM_NAME)};
#undef CM_NAME

/* Summed over every run of the process. */
static unsigned long cm_paths[CM_N_PATHS];
#define CM_COUNT(p) (cm_paths[CM_##p]++)

static void cm_print_paths(FILE *out) {
    for (int i = 0; i < CM_N_PATHS; i++)
        fprintf(out, "%s%s %lu", i ? (i % 6 ? ", " : ",\n  ") : "  ", cm_path_names[i], cm_paths[i]);
    fputc('\n', out);
}

typedef struct cm_run {
    cm_input in;
    cm_config cfg;
    rlxkv_cache *c;
    cm_model m;
    int step;
    const char *op;
    uint64_t fills;                  /* entries filled so far: seeds their values */
    int unlisted;                    /* steps left whose comparison leaves out the stored-only listing */
    char err[600];
} cm_run;

static unsigned cm_u8(cm_run *r) { return r->in.more(r->in.ctx) ? r->in.byte(r->in.ctx) & 0xff : 0; }

/* Records what differs (with where the program was) and returns 0. */
static int cm_fail(cm_run *r, const char *fmt, ...) {
    va_list ap;
    int at = snprintf(r->err, sizeof r->err, "step %d (%s): ", r->step, r->op);
    va_start(ap, fmt);
    vsnprintf(r->err + at, sizeof r->err - (size_t)at, fmt, ap);
    va_end(ap);
    return 0;
}

#define CM_REQUIRE(r, cond) \
    do {                    \
        if (!(cond)) return cm_fail(r, "line %d: %s", __LINE__, #cond); \
    } while (0)
#define CM_TRY(x) \
    do {          \
        if (!(x)) return 0; \
    } while (0)

/* ---- generating ------------------------------------------------------- */

static uint32_t cm_mix32(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return (uint32_t)(x ^ (x >> 31));
}

static uint32_t cm_token(cm_run *r) { return r->cfg.alphabet[cm_u8(r) % r->cfg.n_alpha]; }

/* A token sequence: random, or derived from an entry the model holds (so
 * that lookups and pins find something and prefixes collide). */
static size_t cm_gen_tokens(cm_run *r, uint32_t *t) {
    const cm_model *m = &r->m;
    size_t max = r->cfg.max_tokens, n;
    unsigned mode = cm_u8(r) % 8;
    if (mode >= 3 && m->n) {
        const cm_entry *e = &m->v[cm_u8(r) % m->n];
        unsigned how = cm_u8(r) % 6;
        n = e->n;
        memcpy(t, e->tokens, n * sizeof *t);
        if (how == 1 && n) n = cm_u8(r) % n;                  /* a proper prefix */
        else if (how == 2 || how == 3) {                      /* extended */
            size_t extra = 1 + cm_u8(r) % 4;
            while (extra-- && n < max) t[n++] = cm_token(r);
        } else if (how == 4 && n) {                           /* one token changed */
            size_t at = cm_u8(r) % n;
            uint32_t was = t[at];
            for (int tries = 0; tries < 4 && t[at] == was; tries++) t[at] = cm_token(r);
        }
        return n;
    }
    n = mode == 0 ? cm_u8(r) % (max + 1) : cm_u8(r) % (max < 8 ? max + 1 : 9);
    for (size_t i = 0; i < n; i++) t[i] = cm_token(r);
    return n;
}

/* A new entry with its shape and values; not yet in the model. Under a
 * layout it mostly fits it, and sometimes misses by a value or a layer. */
static void cm_gen_entry(cm_run *r, cm_entry *e) {
    const rlxkv_layout *l = &r->m.layout;
    uint64_t id = ++r->fills;
    unsigned shape;
    size_t vsize;
    memset(e, 0, sizeof *e);
    e->n = cm_gen_tokens(r, e->tokens);
    e->dtype = cm_u8(r) % 3 == 0 ? RLXKV_F16 : RLXKV_F32;
    shape = cm_u8(r) % 8;
    if (l->order != RLXKV_ORDER_ANY && shape < 6) {
        e->n_layers = l->layers ? l->layers : cm_u8(r) % (CM_MAX_LAYERS + 1);
        if (shape == 5) e->n_layers = cm_u8(r) % (CM_MAX_LAYERS + 1); /* maybe the wrong count */
        for (size_t b = 0; b < 2 * e->n_layers; b++) e->lens[b] = l->heads * l->head_dim * e->n;
        if (shape == 4 && e->n_layers) e->lens[cm_u8(r) % (2 * e->n_layers)] += 1; /* one value off */
    } else {
        e->n_layers = cm_u8(r) % (CM_MAX_LAYERS + 1);
        for (size_t b = 0; b < 2 * e->n_layers; b++) {
            if (shape % 4 <= 1) e->lens[b] = e->n * (cm_u8(r) % 3);  /* row-major */
            else if (shape % 4 == 2) e->lens[b] = cm_u8(r) % 13;     /* anything */
            else e->lens[b] = b ? e->lens[0] : cm_u8(r) % 40;        /* all alike */
        }
    }
    for (size_t b = 0; b < 2 * e->n_layers; b++) e->n_values += e->lens[b];
    e->row_major = e->n != 0;
    for (size_t b = 0; b < 2 * e->n_layers; b++)
        if (e->n && e->lens[b] % e->n) e->row_major = 0;
    vsize = cm_vsize(e->dtype);
    e->values = malloc(e->n_values * vsize + 1);
    if (!e->values) abort();
    for (size_t i = 0; i < e->n_values; i++) {
        uint32_t bits = cm_mix32(id << 24 | i);
        memcpy(e->values + i * vsize, &bits, vsize);
    }
}

static size_t cm_gen_cap(cm_run *r) {
    unsigned k = cm_u8(r);
    cm_totals t = cm_sum(&r->m);
    if (r->cfg.big && k % 16) return SIZE_MAX - k;
    switch (k % 8) {
    case 0: return 0;
    case 1: return SIZE_MAX;
    case 2: return t.bytes;
    case 3: return t.bytes ? t.bytes - 1 - cm_u8(r) % (t.bytes < 64 ? t.bytes : 64) : 0;
    case 4: return t.pinned_bytes + cm_u8(r) % 32;
    default: return (size_t)cm_u8(r) * (1 + (k >> 3) % 16) + (k >> 7);
    }
}

static rlxkv_layout cm_gen_layout(cm_run *r) {
    unsigned k = cm_u8(r);
    rlxkv_layout l;
    l.order = k % 8 < 3 ? RLXKV_HEAD_MAJOR : k % 8 < 6 ? RLXKV_TOKEN_MAJOR : k % 8 == 6 ? RLXKV_ORDER_ANY : 7;
    l.heads = cm_u8(r) % 4;           /* 0: refused */
    l.head_dim = cm_u8(r) % 4;
    l.layers = cm_u8(r) % 3;
    if (k >> 7 && (k >> 6 & 1)) l.head_dim = SIZE_MAX / 2 + 1; /* a row that overflows (heads >= 2) */
    if (l.head_dim > 3 && l.heads < 2) l.heads = 2;
    return l;
}

/* ---- comparing -------------------------------------------------------- */

static int cm_same_entry(cm_run *r, const rlxkv_entry *x, const cm_entry *e) {
    const rlxkv_cache *c = r->c;
    size_t vsize = cm_vsize(e->dtype);
    if (!x) return cm_fail(r, "no entry where the model has one of %zu tokens", e->n);
    if (rlxkv_entry_n_tokens(x) != e->n || (e->n && memcmp(rlxkv_entry_tokens(x), e->tokens, e->n * sizeof *e->tokens)))
        return cm_fail(r, "entry tokens differ (n %zu, model %zu)", rlxkv_entry_n_tokens(x), e->n);
    if (rlxkv_entry_is_resident(x) != e->resident)
        return cm_fail(r, "entry of %zu tokens: resident %d, model %d", e->n, rlxkv_entry_is_resident(x), e->resident);
    CM_REQUIRE(r, rlxkv_entry_dtype(x) == e->dtype);
    CM_REQUIRE(r, rlxkv_entry_n_values(x) == e->n_values);
    CM_REQUIRE(r, rlxkv_entry_kv_bytes(x) == cm_bytes_of(e));
    if (rlxkv_cache_is_pinned(c, x) != e->pinned)
        return cm_fail(r, "pin flag differs (model %d, resident %d)", e->pinned, e->resident);
    if (rlxkv_cache_is_dirty(c, x) != (e->resident && e->dirty))
        return cm_fail(r, "dirty flag differs (model %d)", e->dirty);
    if (e->serial && rlxkv_entry_serial(x) != e->serial)
        return cm_fail(r, "serial %u, model %u (resident %d)", (unsigned)rlxkv_entry_serial(x), (unsigned)e->serial,
                       e->resident);
    if (!e->resident) {
        CM_REQUIRE(r, rlxkv_entry_n_layers(x) == 0);
        return 1;
    }
    CM_REQUIRE(r, rlxkv_entry_n_layers(x) == e->n_layers);
    CM_REQUIRE(r, !rlxkv_entry_row_major(x) == !e->row_major);
    for (size_t b = 0, at = 0; b < 2 * e->n_layers; at += e->lens[b], b++) {
        CM_REQUIRE(r, rlxkv_entry_block_len(x, b) == e->lens[b]);
        if (e->lens[b]) CM_REQUIRE(r, !memcmp(rlxkv_entry_block(x, b), e->values + at * vsize, e->lens[b] * vsize));
    }
    CM_REQUIRE(r, rlxkv_entry_block(x, 2 * e->n_layers) == NULL);
    if (e->n_values) CM_REQUIRE(r, !memcmp(rlxkv_entry_data(x), e->values, e->n_values * vsize));
    return 1;
}

static const cm_model *cm_sort_model;
/* Iteration order: resident pinned, resident unpinned, stored-only; each
 * from most to least recent. */
static int cm_cmp_order(const void *a, const void *b) {
    const cm_entry *x = &cm_sort_model->v[*(const size_t *)a], *y = &cm_sort_model->v[*(const size_t *)b];
    int kx = !x->resident ? 2 : !x->pinned, ky = !y->resident ? 2 : !y->pinned;
    if (kx != ky) return kx - ky;
    return x->tick > y->tick ? -1 : x->tick < y->tick ? 1 : 0;
}

static int cm_compare_all(cm_run *r) {
    const rlxkv_cache *c = r->c;
    const cm_model *m = &r->m;
    cm_totals t = cm_sum(m);
    rlxkv_stats st;
    rlxkv_layout lay;
    size_t *order, k = 0;
    const rlxkv_entry *x;
    int ok = 1;

    if (!rlxkv_cache_check(c, NULL, NULL)) return cm_fail(r, "rlxkv_cache_check: invariants broken");
    rlxkv_cache_stats(c, &st);
    if (st.entries != t.entries) return cm_fail(r, "entries %zu, model %zu", st.entries, t.entries);
    if (st.bytes != t.bytes) return cm_fail(r, "bytes %zu, model %zu", st.bytes, t.bytes);
    CM_REQUIRE(r, st.cap_bytes == m->cap);
    if (st.pinned_entries != t.pinned_entries || st.pinned_bytes != t.pinned_bytes)
        return cm_fail(r, "pinned %zu/%zu bytes, model %zu/%zu", st.pinned_entries, st.pinned_bytes,
                       t.pinned_entries, t.pinned_bytes);
    if (st.hits != m->hits || st.misses != m->misses)
        return cm_fail(r, "hits/misses %llu/%llu, model %llu/%llu", (unsigned long long)st.hits,
                       (unsigned long long)st.misses, (unsigned long long)m->hits, (unsigned long long)m->misses);
    if (st.evictions != m->evictions)
        return cm_fail(r, "evictions %llu, model %llu", (unsigned long long)st.evictions,
                       (unsigned long long)m->evictions);
    CM_REQUIRE(r, st.tokens_reused == m->reused);
    if (st.stored_entries != t.stored_entries || st.stored_bytes != t.stored_bytes)
        return cm_fail(r, "stored %zu/%llu bytes, model %zu/%llu", st.stored_entries,
                       (unsigned long long)st.stored_bytes, t.stored_entries, (unsigned long long)t.stored_bytes);
    rlxkv_cache_layout(c, &lay);
    CM_REQUIRE(r, lay.order == m->layout.order && lay.heads == m->layout.heads &&
                      lay.head_dim == m->layout.head_dim && lay.layers == m->layout.layers);

    /* The whole set, through both iterators, in order. */
    order = malloc((m->n + 1) * sizeof *order);
    if (!order) abort();
    for (size_t i = 0; i < m->n; i++) order[i] = i;
    cm_sort_model = m;
    qsort(order, m->n, sizeof *order, cm_cmp_order);
    /* For a few steps after a put_stored_many, the stored-only entries are
     * not listed: listing them unfolds its runs (cache.c, Folds), and the
     * steps in between are to meet them folded. */
    int tiers = r->unlisted ? (r->unlisted--, 1) : 2;
    for (int tier = 0; tier < tiers && ok; tier++) {
        size_t end = tier ? m->n : t.entries;
        for (x = tier ? rlxkv_cache_next_stored(c, NULL) : rlxkv_cache_next(c, NULL); x && ok;
             x = tier ? rlxkv_cache_next_stored(c, x) : rlxkv_cache_next(c, x), k++) {
            const cm_entry *e;
            if (k >= end) {
                ok = cm_fail(r, "%s yields more than the model's %zu", tier ? "next_stored" : "next",
                             tier ? t.stored_entries : t.entries);
                break;
            }
            e = &m->v[order[k]];
            if (rlxkv_entry_n_tokens(x) != e->n || (e->n && memcmp(rlxkv_entry_tokens(x), e->tokens, e->n * sizeof *e->tokens))) {
                long where = cm_find(m, rlxkv_entry_tokens(x), rlxkv_entry_n_tokens(x));
                ok = where < 0 ? cm_fail(r, "%s #%zu: an entry the model does not hold", tier ? "next_stored" : "next", k)
                               : cm_fail(r, "%s #%zu: order differs (model: pinned %d resident %d tick %llu here, "
                                         "this one's tick %llu)", tier ? "next_stored" : "next", k, e->pinned,
                                         e->resident, (unsigned long long)e->tick, (unsigned long long)m->v[where].tick);
                break;
            }
            ok = cm_same_entry(r, x, e);
            if (ok && rlxkv_cache_get(c, e->tokens, e->n) != x) ok = cm_fail(r, "get does not find an iterated entry");
        }
        if (ok && k != end)
            ok = cm_fail(r, "%s yields %zu entries, model %zu", tier ? "next_stored" : "next",
                         tier ? k - t.entries : k, tier ? t.stored_entries : t.entries);
    }
    free(order);
    if (ok && t.stored_entries) CM_COUNT(stored_listed);
    return ok;
}

/* The span block b of e must have for a hit of `matched` tokens. */
static rlxkv_span cm_span(const cm_model *m, const cm_entry *e, size_t b, size_t matched) {
    size_t len = e->lens[b];
    if (matched >= e->n) return (rlxkv_span){0, len, len, 1};
    if (m->layout.order == RLXKV_HEAD_MAJOR)
        return (rlxkv_span){0, matched * m->layout.head_dim, e->n * m->layout.head_dim, m->layout.heads};
    if (m->layout.order == RLXKV_TOKEN_MAJOR)
        return (rlxkv_span){0, matched * m->layout.heads * m->layout.head_dim, matched * m->layout.heads * m->layout.head_dim, 1};
    return (rlxkv_span){0, len / e->n * matched, len / e->n * matched, 1};
}

/* The hit's spans, value count and copy (bits and block lengths). */
static int cm_check_copy(cm_run *r, const rlxkv_hit *h, const cm_entry *e) {
    size_t vsize = cm_vsize(e->dtype), want = 0, at = 0, lens_out[2 * CM_MAX_LAYERS + 1];
    unsigned char *buf, *exp;
    rlxkv_span sp;
    if (!e->resident) {
        CM_REQUIRE(r, rlxkv_hit_n_values(h) == 0);
        rlxkv_hit_block(h, 0, &sp);
        CM_REQUIRE(r, sp.run == 0 && sp.count == 0);
        return 1;
    }
    if (h->matched < e->n)
        cm_paths[r->m.layout.order == RLXKV_HEAD_MAJOR    ? CM_cut_head_major
                 : r->m.layout.order == RLXKV_TOKEN_MAJOR ? CM_cut_token_major
                                                          : CM_cut_any]++;
    if (e->dtype == RLXKV_F16) CM_COUNT(copy_f16);
    for (size_t b = 0; b < 2 * e->n_layers; b++) {
        rlxkv_span w = cm_span(&r->m, e, b, h->matched);
        rlxkv_hit_block(h, b, &sp);
        if (sp.offset != w.offset || sp.run != w.run || sp.stride != w.stride || sp.count != w.count)
            return cm_fail(r, "block %zu span {%zu,%zu,%zu,%zu}, model {%zu,%zu,%zu,%zu} (matched %zu of %zu)", b,
                           sp.offset, sp.run, sp.stride, sp.count, w.offset, w.run, w.stride, w.count, h->matched, e->n);
        want += w.run * w.count;
    }
    if (rlxkv_hit_n_values(h) != want) return cm_fail(r, "hit_n_values %zu, model %zu", rlxkv_hit_n_values(h), want);
    buf = malloc(want * vsize + 1);
    exp = malloc(want * vsize + 1);
    if (!buf || !exp) abort();
    /* What the copy must hold, row by row: of every head (head-major) or of
     * the whole block. */
    for (size_t b = 0, from = 0; b < 2 * e->n_layers; from += e->lens[b], b++) {
        const unsigned char *blk = e->values + from * vsize;
        size_t len = e->lens[b];
        if (h->matched >= e->n) {
            memcpy(exp + at * vsize, blk, len * vsize);
            at += len;
        } else if (r->m.layout.order == RLXKV_HEAD_MAJOR) {
            size_t hd = r->m.layout.head_dim;
            for (size_t hh = 0; hh < r->m.layout.heads; hh++)
                for (size_t tk = 0; tk < h->matched; tk++, at += hd)
                    memcpy(exp + at * vsize, blk + ((hh * e->n + tk) * hd) * vsize, hd * vsize);
        } else {
            size_t row = len / e->n;
            for (size_t tk = 0; tk < h->matched; tk++, at += row)
                memcpy(exp + at * vsize, blk + tk * row * vsize, row * vsize);
        }
    }
    CM_REQUIRE(r, at == want);
    rlxkv_hit_copy(h, buf, lens_out);
    for (size_t b = 0; b < 2 * e->n_layers; b++) {
        rlxkv_span w = cm_span(&r->m, e, b, h->matched);
        if (lens_out[b] != w.run * w.count) {
            free(buf);
            free(exp);
            return cm_fail(r, "copied block %zu has %zu values, model %zu", b, lens_out[b], w.run * w.count);
        }
    }
    if (want && memcmp(buf, exp, want * vsize)) {
        free(buf);
        free(exp);
        return cm_fail(r, "copied values differ from the model's rows (matched %zu of %zu, layout %d)", h->matched,
                       e->n, r->m.layout.order);
    }
    rlxkv_hit_copy(h, buf, NULL); /* without block lengths too */
    free(buf);
    free(exp);
    return 1;
}

/* ---- the operations ----------------------------------------------------- */

static int cm_do_put(cm_run *r) {
    cm_entry e;
    cm_model *m = &r->m;
    long old;
    int rc, want, via_insert, old_resident, old_pinned_stored, clean;
    cm_gen_entry(r, &e);
    via_insert = cm_u8(r) & 1;
    old = cm_find(m, e.tokens, e.n);
    old_resident = old >= 0 && m->v[old].resident;
    old_pinned_stored = old >= 0 && !m->v[old].resident && m->v[old].pinned;
    if (!via_insert) {
        int st = 12345;
        rlxkv_entry *x = rlxkv_entry_new(e.n, e.n_layers, e.lens, e.dtype, &st);
        r->op = "put";
        if (!x || st != RLXKV_OK) return cm_fail(r, "rlxkv_entry_new failed: %d", st);
        if (e.n) memcpy(rlxkv_entry_tokens_mut(x), e.tokens, e.n * sizeof *e.tokens);
        for (size_t b = 0, at = 0; b < 2 * e.n_layers; at += e.lens[b], b++)
            if (e.lens[b]) memcpy(rlxkv_entry_block_mut(x, b), e.values + at * cm_vsize(e.dtype), e.lens[b] * cm_vsize(e.dtype));
        rc = rlxkv_cache_put(r->c, x);
    } else {
        const void *k[CM_MAX_LAYERS + 1], *v[CM_MAX_LAYERS + 1];
        size_t kl[CM_MAX_LAYERS + 1], vl[CM_MAX_LAYERS + 1], off[2 * CM_MAX_LAYERS + 1] = {0};
        r->op = "insert";
        CM_COUNT(insert);
        for (size_t b = 0; b < 2 * e.n_layers; b++) off[b + 1] = off[b] + e.lens[b];
        for (size_t l = 0; l < e.n_layers; l++) {
            k[l] = e.values + off[l] * cm_vsize(e.dtype);
            v[l] = e.values + off[e.n_layers + l] * cm_vsize(e.dtype);
            kl[l] = e.lens[l];
            vl[l] = e.lens[e.n_layers + l];
        }
        rc = rlxkv_cache_insert(r->c, e.tokens, e.n, e.n_layers, e.dtype, k, kl, v, vl);
    }
    clean = cm_u8(r) % 4 == 0;
    want = cm_put(m, &e, via_insert);
    if (rc != want)
        return cm_fail(r, "returned %d, model %d (cap %zu, %zu tokens, %zu layers, layout %d)", rc, want, m->cap, e.n,
                       e.n_layers, m->layout.order);
    if (rc == RLXKV_ERR_SHAPE) CM_COUNT(put_shape);
    else if (rc == RLXKV_ERR_NOSPACE) CM_COUNT(put_nospace);
    else if (!m->cap) CM_COUNT(put_cap0);
    else {
        CM_COUNT(put_ok);
        if (e.dtype == RLXKV_F16) CM_COUNT(put_f16);
        if (old >= 0) {
            if (old_pinned_stored) CM_COUNT(put_takes_stored_pin);
            if (old_resident) CM_COUNT(put_replaces_resident);
            else CM_COUNT(put_replaces_stored);
        }
        /* As a store's load does: the entry comes in clean, its blob stored. */
        long i = cm_find(m, e.tokens, e.n);
        if (clean && i >= 0 && m->v[i].resident) {
            CM_COUNT(mark_clean);
            rlxkv_cache_mark_clean(r->c, rlxkv_cache_get(r->c, e.tokens, e.n));
            m->v[i].dirty = 0;
            m->v[i].stored = 1;
        }
    }
    return 1;
}

static int cm_do_put_stored(cm_run *r) {
    uint32_t t[CM_MAX_TOKENS];
    size_t n = cm_gen_tokens(r, t), n_values;
    unsigned k = cm_u8(r);
    int dtype = k % 16 == 15 ? 2 : k % 3 == 0 ? RLXKV_F16 : RLXKV_F32, row_major = (k >> 4) & 1, rc, want;
    long old = cm_find(&r->m, t, n);
    r->op = "put_stored";
    n_values = (k >> 5) & 1 ? n * (cm_u8(r) % 8) : cm_u8(r) * 3;
    rc = rlxkv_cache_put_stored(r->c, n ? t : (cm_u8(r) & 1 ? NULL : t), n, dtype, n_values, row_major);
    want = cm_put_stored(&r->m, t, n, dtype, n_values, row_major);
    if (rc != want) return cm_fail(r, "returned %d, model %d", rc, want);
    if (rc != RLXKV_OK) CM_COUNT(put_stored_invalid);
    else if (r->m.cap && old >= 0 && r->m.v[old].resident) CM_COUNT(put_stored_beside_resident);
    else if (r->m.cap) {
        if (old >= 0) CM_COUNT(put_stored_update);
        else CM_COUNT(put_stored_new);
    }
    return 1;
}

/* put_stored_many of an index of a blob and a run of pages, each of its
 * path and a few tokens more (its own), against put_stored of each whole
 * path in order, which is what it does; the cache may fold the run
 * (cache.c, Folds), which no step may tell apart. */
static int cm_do_put_stored_many(cm_run *r) {
    uint32_t path[CM_MAX_TOKENS];
    rlxkv_stored s[8];
    size_t len[8], n = cm_gen_tokens(r, path), count = 1 + cm_u8(r) % 8, max = r->cfg.max_tokens;
    unsigned k = cm_u8(r);
    int dtype = k % 16 == 15 ? 2 : k % 3 == 0 ? RLXKV_F16 : RLXKV_F32, row_major = (k >> 4) & 1, rc;
    r->op = "put_stored_many";
    if (!n) path[n++] = cm_token(r); /* a page's start is its parent's length: not 0 */
    len[0] = n;
    for (size_t i = 0; i < count; i++) {
        size_t add = i ? 1 + cm_u8(r) % 3 : n;
        if (i && len[i - 1] + add > max) {
            count = i;
            break;
        }
        if (i) len[i] = len[i - 1] + add;
        for (size_t j = len[i] - add; i && j < len[i]; j++) path[j] = cm_token(r);
        s[i] = (rlxkv_stored){.tokens_at = len[i] - add, .n_tokens = add, .n_values = (k >> 5) & 1 ? len[i] * (cm_u8(r) % 8) : cm_u8(r) * 3,
                              .parent = i, .start = i ? len[i - 1] : 0, .parent_n = i ? len[i - 1] : 0, .dtype = dtype,
                              .row_major = row_major};
    }
    rc = rlxkv_cache_put_stored_many(r->c, path, len[count - 1], s, count);
    if (rc != RLXKV_OK) return cm_fail(r, "returned %d", rc);
    for (size_t i = 0; i < count; i++) {
        int want = cm_put_stored(&r->m, path, len[i], dtype, s[i].n_values, row_major);
        if (!r->m.cap) want = RLXKV_OK; /* cap 0: nothing placed, each spec OK without a look (rlxkv.h) */
        if (s[i].status != want) return cm_fail(r, "spec %zu of %zu: status %d, model %d", i, count, s[i].status, want);
    }
    CM_COUNT(put_stored_many);
    r->unlisted = cm_u8(r) % 8;
    return 1;
}

/* Checks a hit or miss against the model's answer; on a hit of entry i
 * (or, with whole < 0, of any entry of rank `rank` offering `want`). */
static int cm_check_hit(cm_run *r, int rc, const rlxkv_hit *h, size_t want, int rank, long whole,
                        const uint32_t *q, size_t eff, int any) {
    cm_model *m = &r->m;
    long got;
    if (rc != (want ? RLXKV_HIT : RLXKV_MISS)) return cm_fail(r, "returned %d, model best matched %zu", rc, want);
    if (!want) {
        CM_REQUIRE(r, h->entry == NULL && h->matched == 0);
        m->misses++;
        return 1;
    }
    if (h->matched != want) return cm_fail(r, "matched %zu, model %zu", h->matched, want);
    CM_REQUIRE(r, h->entry != NULL);
    got = cm_find(m, rlxkv_entry_tokens(h->entry), rlxkv_entry_n_tokens(h->entry));
    if (got < 0) return cm_fail(r, "hit an entry the model does not hold");
    if (whole >= 0 && got != whole)
        return cm_fail(r, "the whole entry of %zu tokens (rank %d) should win; the hit is one of %zu tokens, resident %d",
                       want, rank, m->v[got].n, m->v[got].resident);
    if (whole < 0) {
        int rk;
        size_t offer = cm_offer(m, &m->v[got], q, eff, &rk);
        if (offer != want || rk != rank || (!any && !m->v[got].resident))
            return cm_fail(r, "the hit (%zu tokens, resident %d) is no valid cut candidate of rank %d (offers %zu, rank %d)",
                           m->v[got].n, m->v[got].resident, rank, offer, rk);
    }
    CM_TRY(cm_same_entry(r, h->entry, &m->v[got]));
    CM_TRY(cm_check_copy(r, h, &m->v[got]));
    cm_hit(m, (size_t)got, h->matched);
    return 1;
}

static int cm_do_lookup(cm_run *r) {
    uint32_t q[CM_MAX_TOKENS];
    size_t n = cm_gen_tokens(r, q);
    rlxkv_hit h;
    long want = cm_lookup(&r->m, q, n, 0);
    int rc;
    r->op = "lookup";
    memset(&h, 0x5a, sizeof h);
    rc = rlxkv_cache_lookup(r->c, n ? q : (cm_u8(r) & 1 ? NULL : q), n, &h);
    if (want >= 0) CM_COUNT(lookup_hit);
    else CM_COUNT(lookup_miss);
    return cm_check_hit(r, rc, &h, want >= 0 ? r->m.v[want].n : 0, CM_RESIDENT_WHOLE, want, q, n, 0);
}

/* lookup_partial, or match with or without RLXKV_MATCH_PARTIAL. */
static int cm_do_partial(cm_run *r, int via_match) {
    uint32_t q[CM_MAX_TOKENS];
    size_t n = cm_gen_tokens(r, q), mm, eff, want;
    unsigned how = cm_u8(r) % 5, partial = via_match ? cm_u8(r) % 3 != 0 : 1;
    rlxkv_hit h;
    int rank, rc;
    long whole;
    mm = how == 0 ? SIZE_MAX : how == 1 ? n : how == 2 ? (n ? n - 1 : 0) : cm_u8(r) % 12;
    eff = n < mm ? n : mm;
    memset(&h, 0x5a, sizeof h);
    if (!via_match) {
        r->op = "lookup_partial";
        rc = rlxkv_cache_lookup_partial(r->c, q, n, mm, &h);
    } else {
        r->op = partial ? "match partial" : "match";
        if (cm_u8(r) % 32 == 0) { /* an unknown flag */
            rc = rlxkv_cache_match(r->c, q, n, mm, partial | 4u, &h);
            CM_REQUIRE(r, rc == RLXKV_ERR_INVALID && h.entry == NULL);
            return 1;
        }
        rc = rlxkv_cache_match(r->c, q, n, mm, partial ? RLXKV_MATCH_PARTIAL : 0, &h);
    }
    if (partial) {
        want = cm_partial(&r->m, q, eff, via_match, &rank, &whole);
    } else {
        whole = cm_lookup(&r->m, q, eff, 1);
        want = whole >= 0 ? r->m.v[whole].n : 0;
        rank = 0;
        if (whole >= 0 && !r->m.v[whole].resident) CM_COUNT(match_whole_stored);
    }
    if (!want) {
        if (via_match) CM_COUNT(match_miss);
        else CM_COUNT(partial_miss);
    } else if (partial) {
        static const int paths[2][5] = {{0, 0, 0, CM_partial_resident_cut, CM_partial_resident_whole},
                                        {0, CM_match_stored_cut, CM_match_stored_whole, CM_match_resident_cut,
                                         CM_match_resident_whole}};
        cm_paths[paths[via_match][rank]]++;
    }
    return cm_check_hit(r, rc, &h, want, rank, whole, q, eff, via_match);
}

static int cm_do_pin(cm_run *r, int pin) {
    uint32_t t[CM_MAX_TOKENS];
    size_t n = cm_gen_tokens(r, t);
    long i = cm_find(&r->m, t, n);
    int rc, want;
    r->op = pin ? "pin" : "unpin";
    rc = pin ? rlxkv_cache_pin(r->c, t, n) : rlxkv_cache_unpin(r->c, t, n);
    if (i < 0) CM_COUNT(pin_missing);
    else if (r->m.v[i].resident) CM_COUNT(pin_resident);
    else CM_COUNT(pin_stored);
    want = cm_pin(&r->m, t, n, pin);
    if (rc != want) return cm_fail(r, "returned %d, model %d", rc, want);
    return 1;
}

static int cm_do_remove(cm_run *r) {
    uint32_t t[CM_MAX_TOKENS];
    size_t n = cm_gen_tokens(r, t);
    long i = cm_find(&r->m, t, n);
    int rc, want;
    r->op = "remove";
    if (i >= 0) {
        if (r->m.v[i].resident) CM_COUNT(remove_resident);
        else CM_COUNT(remove_stored);
    }
    rc = rlxkv_cache_remove(r->c, t, n);
    want = cm_remove(&r->m, t, n);
    if (rc != want) return cm_fail(r, "returned %d, model %d", rc, want);
    return 1;
}

/* get, then maybe mark the entry clean or unstored, or put it again. */
static int cm_do_get(cm_run *r) {
    uint32_t t[CM_MAX_TOKENS];
    size_t n = cm_gen_tokens(r, t);
    long i = cm_find(&r->m, t, n);
    const rlxkv_entry *x;
    unsigned what;
    r->op = "get";
    x = rlxkv_cache_get(r->c, t, n);
    if (!x != (i < 0)) return cm_fail(r, "get %s, model %s", x ? "found" : "missed", i >= 0 ? "holds it" : "not");
    if (!x) return 1;
    CM_TRY(cm_same_entry(r, x, &r->m.v[i]));
    what = cm_u8(r) % 8;
    if (what < 3) {
        r->op = "mark_clean";
        CM_COUNT(mark_clean);
        rlxkv_cache_mark_clean(r->c, x);
        if (r->m.v[i].resident) r->m.v[i].dirty = 0, r->m.v[i].stored = 1;
    } else if (what == 3) {
        r->op = "mark_unstored";
        CM_COUNT(mark_unstored);
        rlxkv_cache_mark_unstored(r->c, x);
        if (r->m.v[i].resident) r->m.v[i].dirty = 0, r->m.v[i].stored = 0;
    } else if (what == 5) {
        /* As a store's flush does: every resident entry marked clean. */
        r->op = "mark_clean all";
        for (size_t k = 0; k < r->m.n; k++) {
            cm_entry *e = &r->m.v[k];
            if (!e->resident) continue;
            CM_COUNT(mark_clean);
            rlxkv_cache_mark_clean(r->c, rlxkv_cache_get(r->c, e->tokens, e->n));
            e->dirty = 0;
            e->stored = 1;
        }
    } else if (what == 4) {
        r->op = "put of a held entry";
        CM_COUNT(put_refused_held);
        CM_REQUIRE(r, rlxkv_cache_put(r->c, (rlxkv_entry *)x) == RLXKV_ERR_INVALID);
    }
    return 1;
}

static int cm_do_set_layout(cm_run *r) {
    rlxkv_layout l;
    int rc, want;
    if (cm_u8(r) & 1) {
        r->op = "clear (before set_layout)";
        rlxkv_cache_clear(r->c);
        cm_clear(&r->m);
        CM_TRY(cm_compare_all(r));
    }
    l = cm_gen_layout(r);
    r->op = "set_layout";
    if (CM_TOLERATE_LAYOUT_WITH_STORED && cm_sum(&r->m).stored_entries && !cm_sum(&r->m).entries) return 1;
    rc = rlxkv_cache_set_layout(r->c, &l);
    want = cm_set_layout(&r->m, &l);
    if (rc != want)
        return cm_fail(r, "set_layout {%d, %zu, %zu, %zu} returned %d, model %d", l.order, l.heads, l.head_dim,
                       l.layers, rc, want);
    if (rc == RLXKV_OK) CM_COUNT(set_layout_ok);
    else CM_COUNT(set_layout_invalid);
    return 1;
}

/* One step: an operation on both, then everything compared. */
static int cm_step(cm_run *r) {
    unsigned op = cm_u8(r);
    uint64_t gen = rlxkv_cache_generation(r->c), evictions = r->m.evictions;
    cm_totals before = cm_sum(&r->m);
    r->m.freed_resident = r->m.freed_stored = 0;
    if (r->cfg.big && op >= 237 && cm_u8(r) % 16) op = 80; /* keep the entries: a lookup */
    if (op < 60) CM_TRY(cm_do_put(r));
    else if (op < 76) CM_TRY(cm_do_put_stored(r));
    else if (op < 80) CM_TRY(cm_do_put_stored_many(r));
    else if (op < 102) CM_TRY(cm_do_lookup(r));
    else if (op < 130) CM_TRY(cm_do_partial(r, 0));
    else if (op < 160) CM_TRY(cm_do_partial(r, 1));
    else if (op < 175) CM_TRY(cm_do_pin(r, 1));
    else if (op < 185) CM_TRY(cm_do_pin(r, 0));
    else if (op < 196) CM_TRY(cm_do_remove(r));
    else if (op < 214) CM_TRY(cm_do_get(r));
    else if (op < 229) {
        r->op = "set_cap";
        CM_COUNT(set_cap);
        r->m.cap = cm_gen_cap(r);
        rlxkv_cache_set_cap(r->c, r->m.cap);
        cm_evict(&r->m);
    } else if (op < 237) {
        r->op = "set_stored_index";
        r->m.stored_index = cm_u8(r) % 3 != 0;
        if (r->m.stored_index) CM_COUNT(stored_index_on);
        rlxkv_cache_set_stored_index(r->c, r->m.stored_index ? 1 + (int)(op & 1) : 0);
    } else if (op < 246) {
        CM_TRY(cm_do_set_layout(r));
    } else {
        r->op = "clear";
        CM_COUNT(clear);
        rlxkv_cache_clear(r->c);
        cm_clear(&r->m);
        if (cm_sum(&r->m).stored_entries > before.stored_entries) CM_COUNT(clear_to_stored);
    }
    if (r->m.evictions != evictions) {
        cm_totals after = cm_sum(&r->m);
        if (after.stored_entries > before.stored_entries) CM_COUNT(evict_to_stored);
        else CM_COUNT(evict_forget);
    }
    {
        uint64_t now = rlxkv_cache_generation(r->c);
        if (now < gen) return cm_fail(r, "generation went back from %llu to %llu", (unsigned long long)gen,
                                      (unsigned long long)now);
        int either = CM_TOLERATE_STORED_FREE_GENERATION && r->m.freed_stored && !r->m.freed_resident;
        if (!either && (now != gen) != r->m.freed_resident)
            return cm_fail(r, "generation %s (%llu to %llu), but the model %s",
                           now != gen ? "moved" : "stayed", (unsigned long long)gen, (unsigned long long)now,
                           r->m.freed_resident ? "freed a resident entry" : "freed no resident entry");
        if (now != gen) CM_COUNT(generation_moved);
    }
    if (r->m.n > 64) {
        /* The root has a child per distinct first token: over 64, a hash. */
        size_t firsts = 0;
        for (size_t i = 0; i < r->m.n; i++) {
            size_t j = 0;
            if (!r->m.v[i].n) continue;
            while (j < i && (!r->m.v[j].n || r->m.v[j].tokens[0] != r->m.v[i].tokens[0])) j++;
            firsts += j == i;
        }
        if (firsts > 64) CM_COUNT(wide_root);
    }
    return cm_compare_all(r);
}

/* Runs one program from `in`: a cache and a model, step after step, until
 * the input ends, max_steps, or they differ. Returns 1, or 0 with r->err
 * saying what differed. */
static int cm_run_program(cm_run *r, const cm_input *in, const cm_config *cfg) {
    uint64_t fp = 0x1234abcdull;
    int ok = 1;
    memset(r, 0, sizeof *r);
    r->in = *in;
    r->cfg = *cfg;
    if (r->cfg.max_tokens > CM_MAX_TOKENS) r->cfg.max_tokens = CM_MAX_TOKENS;
    r->op = "new";
    r->m.cap = cm_gen_cap(r);
    r->c = rlxkv_cache_new(r->m.cap, fp);
    if (!r->c) return cm_fail(r, "rlxkv_cache_new failed");
    if (rlxkv_cache_fingerprint(r->c) != fp) ok = cm_fail(r, "fingerprint differs");
    r->m.stored_index = cm_u8(r) & 1;
    rlxkv_cache_set_stored_index(r->c, r->m.stored_index);
    if (ok) ok = cm_compare_all(r);
    while (ok && r->in.more(r->in.ctx) && r->step < r->cfg.max_steps) {
        r->step++;
        ok = cm_step(r);
    }
    rlxkv_cache_free(r->c);
    cm_free(&r->m);
    return ok;
}

#endif
