/* The C side of the wasm boundary: what wasm/native-cache.js calls instead
 * of reading C structs itself. A cache is
 * wrapped with a token scratch area and a result record, so that a lookup
 * is one copy of the tokens in, one call, and reads of one flat record of
 * u32s out. Everything else is called straight from the library (see
 * exports.txt). wasm32 only: pointers and size_t are 32 bits here. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "rlxkv.h"

_Static_assert(sizeof(void *) == 4 && sizeof(size_t) == 4, "wasm32: the record holds pointers as u32");

/* The result record, in u32s: a header, then four words per block. */
enum {
    REC_MATCHED = 0,    /* tokens covered by the hit */
    REC_ENTRY = 1,      /* the entry (borrowed), or 0 */
    REC_LAYERS = 2,
    REC_DTYPE = 3,      /* rlxkv_dtype */
    REC_TOKENS = 4,     /* address of the entry's tokens */
    REC_GENERATION = 5, /* low 32 bits of rlxkv_cache_generation */
    REC_DATA = 6,       /* a new entry's first value (rlxkv_web_entry_new) */
    REC_FLAGS = 7,      /* REC_RESIDENT | REC_DIRTY | REC_PINNED */
    REC_SERIAL = 8,     /* rlxkv_entry_serial */
    REC_N_TOKENS = 9,   /* the entry's own token count (>= matched) */
    REC_PIECES = 10,    /* how many entries the hit's values lie in (rlxkv_hit_pieces) */
    REC_START = 11,     /* the entry's first token with values of its own (rlxkv_entry_start) */
    REC_PARENT_N = 12,  /* its parent's token count, or 0 (rlxkv_entry_parent) */
    REC_PARENT_TOKENS = 13, /* address of its parent's tokens, or 0 */
    REC_HEAD = 16,
    /* then (none for a stored-only entry, which has no values) per piece,
     * first tokens first: its tokens from and to, then per
     * block b the address of its first run (bytes), run, stride and count
     * (values): rlxkv_span, with the block's address folded in. */
};

/* Words per piece in the record: from, to, then four per block. */
#define PIECE_WORDS(blocks) (2 + 4 * (blocks))


/* REC_FLAGS bits. */
enum { REC_RESIDENT = 1, REC_DIRTY = 2, REC_PINNED = 4 };

/* One cache as JS holds it. */
typedef struct web_cache {
    rlxkv_cache *cache;
    uint32_t *tokens;   /* scratch: the query or new entry's tokens, then block lengths */
    size_t tokens_cap;  /* in u32s */
    uint32_t *rec;
    size_t rec_cap;     /* in u32s */
    rlxkv_piece *pieces;
    size_t pieces_cap;
    rlxkv_hit last;            /* the hit the record describes */
} web_cache;

/* cap_bytes arrives as a double: budgets past 4 GiB saturate at size_t's
 * largest (wasm32 memory cannot hold more anyway). NULL when out of memory
 * or for a bad layout (*status says which). Free with rlxkv_web_cache_free. */
web_cache *rlxkv_web_cache_new(double cap_bytes, uint64_t fingerprint, int order, size_t heads,
                               size_t head_dim, size_t layers, int paging, int *status) {
    rlxkv_layout layout = {order, heads, head_dim, layers};
    web_cache *w = calloc(1, sizeof *w);
    size_t cap = cap_bytes >= (double)SIZE_MAX ? SIZE_MAX : (size_t)cap_bytes;
    *status = RLXKV_ERR_NOMEM;
    if (!w || !(w->cache = rlxkv_cache_new(cap, fingerprint))) {
        free(w);
        return NULL;
    }
    if ((*status = rlxkv_cache_set_layout(w->cache, &layout)) != RLXKV_OK ||
        (*status = rlxkv_cache_set_paging(w->cache, paging)) != RLXKV_OK) {
        rlxkv_cache_free(w->cache);
        free(w);
        return NULL;
    }
    return w;
}

void rlxkv_web_cache_free(web_cache *w) {
    if (!w) return;
    rlxkv_cache_free(w->cache);
    free(w->tokens);
    free(w->rec);
    free(w->pieces);
    free(w);
}

rlxkv_cache *rlxkv_web_cache_of(web_cache *w) { return w->cache; }

/* Room for n u32s in an array, grown by doubling; 0 when out of memory. */
static int reserve(uint32_t **a, size_t *cap, size_t n) {
    if (n <= *cap) return 1;
    size_t want = *cap ? *cap : 256;
    while (want < n) {
        if (want > SIZE_MAX / 8) return 0;
        want *= 2;
    }
    uint32_t *p = realloc(*a, want * sizeof *p);
    if (!p) return 0;
    *a = p;
    *cap = want;
    return 1;
}

/* The scratch area, with room for n u32s: JS writes tokens (and block
 * lengths) there before the call that reads them. NULL when out of memory. */
uint32_t *rlxkv_web_scratch(web_cache *w, size_t n) {
    return reserve(&w->tokens, &w->tokens_cap, n ? n : 1) ? w->tokens : NULL;
}

const uint32_t *rlxkv_web_record(const web_cache *w) { return w->rec; }

/* Fills the record for a hit (or a borrowed entry taken whole, or with
 * own_only the values it holds itself, as one piece). A hit on a whole
 * entry is one piece of whole blocks where it covers them (so a view can
 * take them), else of rlxkv_piece_block's runs. */
static int record(web_cache *w, const rlxkv_hit *h, int own_only) {
    const rlxkv_entry *e = h->entry;
    size_t blocks = e ? 2 * rlxkv_entry_n_layers(e) : 0, count = 0;
    if (e && own_only) count = 1;
    else if (e) count = rlxkv_hit_pieces(h, NULL, 0);
    if (count > w->pieces_cap) {
        rlxkv_piece *p = count <= SIZE_MAX / sizeof *p ? realloc(w->pieces, count * sizeof *p) : NULL;
        if (!p) return RLXKV_ERR_NOMEM;
        w->pieces = p;
        w->pieces_cap = count;
    }
    if (blocks > (SIZE_MAX / 2 - REC_HEAD) / 4 || (count && PIECE_WORDS(blocks) > (SIZE_MAX / 4 - REC_HEAD) / count) ||
        !reserve(&w->rec, &w->rec_cap, REC_HEAD + count * PIECE_WORDS(blocks)))
        return RLXKV_ERR_NOMEM;
    uint32_t *r = w->rec;
    memset(r, 0, REC_HEAD * sizeof *r);
    r[REC_GENERATION] = (uint32_t)rlxkv_cache_generation(w->cache);
    w->last = own_only ? (rlxkv_hit){NULL, 0} : *h;
    if (!e) return RLXKV_MISS;
    size_t vsize = rlxkv_dtype_size(rlxkv_entry_dtype(e));
    r[REC_MATCHED] = (uint32_t)h->matched;
    r[REC_ENTRY] = (uint32_t)(uintptr_t)e;
    r[REC_LAYERS] = (uint32_t)rlxkv_entry_n_layers(e);
    r[REC_DTYPE] = (uint32_t)rlxkv_entry_dtype(e);
    r[REC_TOKENS] = (uint32_t)(uintptr_t)rlxkv_entry_tokens(e);
    r[REC_FLAGS] = (rlxkv_entry_is_resident(e) ? REC_RESIDENT : 0) |
                   (rlxkv_cache_is_dirty(w->cache, e) ? REC_DIRTY : 0) |
                   (rlxkv_cache_is_pinned(w->cache, e) ? REC_PINNED : 0);
    r[REC_SERIAL] = rlxkv_entry_serial(e);
    r[REC_N_TOKENS] = (uint32_t)rlxkv_entry_n_tokens(e);
    r[REC_PIECES] = (uint32_t)count;
    r[REC_START] = (uint32_t)rlxkv_entry_start(e);
    const rlxkv_entry *parent = rlxkv_entry_is_resident(e) ? rlxkv_entry_parent(e) : NULL;
    r[REC_PARENT_N] = parent ? (uint32_t)rlxkv_entry_n_tokens(parent) : 0;
    r[REC_PARENT_TOKENS] = parent ? (uint32_t)(uintptr_t)rlxkv_entry_tokens(parent) : 0;
    if (own_only) w->pieces[0] = (rlxkv_piece){e, rlxkv_entry_start(e), rlxkv_entry_n_tokens(e)};
    else rlxkv_hit_pieces(h, w->pieces, count);
    int whole = count == 1 && !own_only && w->pieces[0].entry == e && !rlxkv_entry_start(e);
    for (size_t k = 0; k < count; k++) {
        const rlxkv_piece *pc = &w->pieces[k];
        uint32_t *at = r + REC_HEAD + k * PIECE_WORDS(blocks);
        at[0] = (uint32_t)pc->from;
        at[1] = (uint32_t)pc->to;
        for (size_t b = 0; b < blocks; b++) {
            rlxkv_span sp;
            uint32_t *s = at + 2 + 4 * b;
            if (whole) rlxkv_hit_block(h, b, &sp);
            else rlxkv_piece_block(pc, b, &sp);
            if (count == 1 && sp.count > 1 && sp.stride == sp.run) { /* one piece, its runs back to back: one run (a page's own rows) */
                sp.run *= sp.count;
                sp.count = 1;
            }
            s[0] = (uint32_t)((uintptr_t)rlxkv_entry_block(pc->entry, b) + sp.offset * vsize);
            s[1] = (uint32_t)sp.run;
            s[2] = (uint32_t)sp.stride;
            s[3] = (uint32_t)sp.count;
        }
    }
    return RLXKV_HIT;
}

/* Looks up the n tokens in the scratch area: RLXKV_HIT / RLXKV_MISS with
 * the record filled, or an error. partial: lookup_partial with max_match. */
int rlxkv_web_lookup(web_cache *w, size_t n, int partial, size_t max_match) {
    rlxkv_hit h;
    int st = partial ? rlxkv_cache_lookup_partial(w->cache, w->tokens, n, max_match, &h)
                     : rlxkv_cache_lookup(w->cache, w->tokens, n, &h);
    if (st < 0) return st;
    return record(w, &h, 0);
}

/* rlxkv_cache_match over the n scratch tokens, into the record; a hit on
 * a stored-only entry too (its tokens and dtype: JS finds its blob or page). */
int rlxkv_web_match(web_cache *w, size_t n, int partial, size_t max_match) {
    rlxkv_hit h;
    int st = rlxkv_cache_match(w->cache, w->tokens, n, max_match, partial ? RLXKV_MATCH_PARTIAL : 0, &h);
    return st < 0 ? st : record(w, &h, 0);
}

/* The entry with exactly the n scratch tokens, whole (or with own_only
 * the values it holds itself, its page), into the record (no LRU touch):
 * RLXKV_HIT, RLXKV_MISS, or an error. */
int rlxkv_web_get(web_cache *w, size_t n, int own_only) {
    rlxkv_hit h = {rlxkv_cache_get(w->cache, w->tokens, n), n};
    return record(w, &h, own_only);
}

/* Entry e (from rlxkv_cache_next or _next_stored) into the record: whole,
 * or with own_only the values it holds itself (its page). */
int rlxkv_web_entry(web_cache *w, const rlxkv_entry *e, int own_only) {
    rlxkv_hit h = {e, e ? rlxkv_entry_n_tokens(e) : 0};
    return record(w, &h, own_only);
}

/* rlxkv_cache_held over the n scratch tokens, for a put of dtype and
 * n_layers: with has_rows, the 2 * n_layers row lengths follow the tokens
 * in the scratch area. */
size_t rlxkv_web_held(web_cache *w, size_t n, int dtype, size_t n_layers, int has_rows) {
    return rlxkv_cache_held(w->cache, w->tokens, n, dtype, n_layers, has_rows ? (const size_t *)(w->tokens + n) : NULL);
}

/* Stored-only entries (rlxkv_cache_put_stored_many) for count entries the
 * scratch area describes: count rlxkv_stored records (STORED_HEAD words
 * each), then n_tokens tokens, which their tokens_at count from. Each
 * record's status is set. */
enum { STORED_HEAD = 10 };
_Static_assert(sizeof(rlxkv_stored) == 4 * STORED_HEAD && offsetof(rlxkv_stored, like) == 12 &&
                   offsetof(rlxkv_stored, parent) == 16 && offsetof(rlxkv_stored, parent_n) == 24 &&
                   offsetof(rlxkv_stored, dtype) == 28 && offsetof(rlxkv_stored, status) == 36,
               "wasm/native-cache.js writes rlxkv_stored records as 10 words");
int rlxkv_web_put_stored(web_cache *w, size_t count, size_t n_tokens) {
    return rlxkv_cache_put_stored_many(w->cache, w->tokens + STORED_HEAD * count, n_tokens, (rlxkv_stored *)w->tokens,
                                       count);
}

/* Stored-only entries for the count records of a store index
 * (format/store-index.js, RLXKVIX4), read in place: the scratch area
 * holds the addresses of its columns (js: putIndex), in this order:
 *   f64 n_values, bytes, last use (checked: sizes a blob can have, a
 *   finite time), start then parent_n (2 * count); u64 fingerprint; u32
 *   n (own tokens), parent (its place + 1, or 0); u8 flags (INDEX_*);
 *   the own tokens, record after record: n_tokens u16 low halves, then
 *   the places (u32) and high halves (u16) of the `high` ones of 0x10000
 *   or more; the names, name_bytes bytes (each name followed by '/').
 * The names are not read here, only counted: one '/' a record, the last
 * byte's.
 * A record is placed if it is valid, of the cache's fingerprint and not
 * flagged otherwise (INDEX_SKIP: the store lacks its blob). Out, in the
 * scratch area: 7 f64 sums (see below), the count (word 14) and places
 * (from word 16) of the records JS must look at, and from word 16 + count
 * each record's status (an i32): RLXKV_OK, RLXKV_ERR_NOTFOUND (its path
 * breaks: a parent missing or of another length), RLXKV_ERR_INVALID (not
 * placed: bad, foreign, of another fingerprint, skipped) or an error.
 * RLXKV_ERR_CORRUPT, nothing placed, if a column holds what no index does.
 * The columns are only read. */
enum { INDEX_CORRUPT = 1, INDEX_F16 = 2, INDEX_ROW_MAJOR = 4, INDEX_FOREIGN = 8, INDEX_TOO_LARGE = 16, INDEX_SKIP = 128 };
static int index_count(double x, size_t *out) {
    if (!(x >= 0 && x <= 9007199254740991.0) || x != (double)(uint64_t)x) return 0;
    *out = x > (double)SIZE_MAX ? SIZE_MAX : (size_t)x;
    return 1;
}
#define INDEX_COLUMN(type, k) ((const type *)(uintptr_t)w->tokens[k])
int rlxkv_web_put_index(web_cache *w, size_t count, size_t n_tokens, size_t high, size_t name_bytes) {
    const double *n_values = INDEX_COLUMN(double, 0), *bytes = INDEX_COLUMN(double, 1);
    const double *last_use = INDEX_COLUMN(double, 2), *starts = INDEX_COLUMN(double, 3);
    const uint64_t *fps = INDEX_COLUMN(uint64_t, 4);
    const uint32_t *ns = INDEX_COLUMN(uint32_t, 5), *parents = INDEX_COLUMN(uint32_t, 6);
    const uint8_t *flags = INDEX_COLUMN(uint8_t, 7);
    const uint16_t *low = INDEX_COLUMN(uint16_t, 8), *highs = INDEX_COLUMN(uint16_t, 10);
    const uint32_t *places = INDEX_COLUMN(uint32_t, 9);
    const uint8_t *names = INDEX_COLUMN(uint8_t, 11);
    int32_t *status = (int32_t *)(w->tokens + 16 + count);
    uint64_t fp = rlxkv_cache_fingerprint(w->cache);
    rlxkv_packed_tokens tokens = {low, n_tokens, places, highs, high};
    rlxkv_stored *s = malloc((count ? count : 1) * sizeof *s);
    if (!s) return RLXKV_ERR_NOMEM;
    int st = RLXKV_ERR_CORRUPT;
    size_t at = 0, slashes = 0;
    for (size_t k = 0; k < name_bytes; k++) slashes += names[k] == '/';
    if (slashes != count || (name_bytes && names[name_bytes - 1] != '/')) goto out;
    for (size_t i = 0; i < count; i++) {
        size_t n_value, start, parent_n, size, p = parents[i];
        if (!index_count(n_values[i], &n_value) || !index_count(starts[i], &start) || !index_count(bytes[i], &size) ||
            !(last_use[i] - last_use[i] == 0) || !index_count(starts[count + i], &parent_n) ||
            (start && (!ns[i] || parent_n < start || p > count)) || ns[i] > n_tokens - at)
            goto out;
        int placed = !(flags[i] & (INDEX_CORRUPT | INDEX_FOREIGN | INDEX_TOO_LARGE | INDEX_SKIP)) && fps[i] == fp;
        /* A page whose parent the index lacks (p 0) gets a place past the end: NOTFOUND. */
        s[i] = (rlxkv_stored){at, ns[i], n_value, 0, start ? (p ? p : count + 1) : 0, start, parent_n,
                              placed ? (flags[i] & INDEX_F16 ? RLXKV_F16 : RLXKV_F32) : -1, (flags[i] & INDEX_ROW_MAJOR) != 0, 0};
        at += ns[i];
    }
    st = rlxkv_cache_put_stored_many_packed(w->cache, &tokens, s, count);
    if (st == RLXKV_ERR_INVALID) st = RLXKV_ERR_CORRUPT; /* places out of order or range (the cache and specs are valid) */
    for (size_t i = 0; i < count; i++) status[i] = st < 0 ? st : s[i].status;
out:
    free(s);
    if (st < 0) return st;
    /* What the open reports (store/open.js openStore), counted here rather than
     * in a JS pass over every record: indexed, KV bytes, stale, corrupt,
     * foreign, too large, skipped (f64 each), then the count and places of
     * the records JS must look at (bad ones, pages whose path broke). */
    double sum[7] = {0};
    uint32_t *special = w->tokens + 16, n_special = 0;
    for (size_t i = 0; i < count; i++) {
        int f = flags[i];
        if ((f & INDEX_SKIP) || status[i] == RLXKV_ERR_NOTFOUND) continue;
        if (f & INDEX_CORRUPT) sum[3]++;
        else if (f & INDEX_TOO_LARGE) sum[5]++;
        else if (f & INDEX_FOREIGN) sum[4]++;
        else if (fps[i] != fp) sum[2]++;
        else if (status[i] >= 0) {
            sum[0]++;
            sum[1] += n_values[i] * (f & INDEX_F16 ? 2 : 4);
        } else sum[6]++;
    }
    for (size_t i = 0; i < count; i++) {
        int f = flags[i];
        if (!(f & INDEX_SKIP) && ((f & (INDEX_CORRUPT | INDEX_TOO_LARGE)) || status[i] == RLXKV_ERR_NOTFOUND)) special[n_special++] = (uint32_t)i;
    }
    memcpy(w->tokens, sum, sizeof sum);
    w->tokens[14] = n_special;
    return st;
}
#undef INDEX_COLUMN

/* Marks the resident entry of the n scratch tokens clean (how 1) or
 * unstored (how 2), if it is still the one of this serial (not replaced
 * since it was saved). 1 if marked, else 0. */
int rlxkv_web_mark(web_cache *w, size_t n, uint32_t serial, int how) {
    const rlxkv_entry *e = rlxkv_cache_get(w->cache, w->tokens, n);
    if (!e || !rlxkv_entry_is_resident(e) || rlxkv_entry_serial(e) != serial) return 0;
    if (how == 1) rlxkv_cache_mark_clean(w->cache, e);
    else rlxkv_cache_mark_unstored(w->cache, e);
    return 1;
}

/* A new entry of n_tokens tokens (copied from the scratch area, where the
 * 2 * n_layers block lengths follow them) and dtype, with the values of
 * tokens start..n_tokens-1 (rlxkv_entry_new_at). Returns it, owned by
 * JS until rlxkv_web_put; the record's REC_DATA word is then the address
 * of its first value (0 without layers). NULL with *status on failure. */
rlxkv_entry *rlxkv_web_entry_new(web_cache *w, size_t n_tokens, size_t start, size_t n_layers, int dtype,
                                 int *status) {
    size_t lens_at = n_tokens;
    if (!reserve(&w->rec, &w->rec_cap, REC_HEAD)) {
        *status = RLXKV_ERR_NOMEM;
        return NULL;
    }
    /* size_t is 32 bits here, so the u32 lengths are size_t lengths. */
    rlxkv_entry *e = rlxkv_entry_new_at(n_tokens, start, n_layers, (const size_t *)(w->tokens + lens_at), dtype, status);
    if (!e) return NULL;
    if (n_tokens) memcpy(rlxkv_entry_tokens_mut(e), w->tokens, n_tokens * sizeof *w->tokens);
    w->rec[REC_DATA] = (uint32_t)(uintptr_t)rlxkv_entry_block_mut(e, 0);
    return e;
}

/* rlxkv_cache_put, or for an entry read from its blob (loaded)
 * rlxkv_cache_put_loaded. */
int rlxkv_web_put(web_cache *w, rlxkv_entry *e, int loaded) {
    return loaded ? rlxkv_cache_put_loaded(w->cache, e) : rlxkv_cache_put(w->cache, e);
}

uint32_t rlxkv_web_generation(const web_cache *w) { return (uint32_t)rlxkv_cache_generation(w->cache); }

/* The page keys (rlxkv_page_key, FORMATS.md "Names") of the prefixes of
 * tokens that end at ends[0..m), ascending (JS checks), in one pass over the
 * tokens: a prefix's chain is the one before it fed on, so the names of a
 * prompt's grid points cost its length, not its length times theirs. dtype
 * as rlxkv_page_key mixes it in (2: a published q8 page's, which no entry
 * has). Each key as four u32s from keys[4i]: its first half's high and low
 * words, then its second's (JS makes the hex without BigInt). */
void rlxkv_web_page_keys(uint64_t fingerprint, int dtype, const uint32_t *tokens, const uint32_t *ends,
                         size_t m, uint32_t *keys) {
    rlxkv_chain c = rlxkv_chain_init(fingerprint);
    size_t at = 0;
    for (size_t i = 0; i < m; i++) {
        uint64_t key[2];
        for (; at < ends[i]; at++) rlxkv_chain_token(&c, tokens[at]);
        rlxkv_chain_final(&c, dtype, ends[i], key);
        keys[4 * i] = (uint32_t)(key[0] >> 32);
        keys[4 * i + 1] = (uint32_t)key[0];
        keys[4 * i + 2] = (uint32_t)(key[1] >> 32);
        keys[4 * i + 3] = (uint32_t)key[1];
    }
}

/* Stats as doubles, in this order: entries, bytes, cap_bytes,
 * pinned_entries, pinned_bytes, hits, misses, evictions, tokens_reused,
 * stored_entries, stored_bytes. (Counters stay exact in a double up to 2^53.) */
enum { STATS_FIELDS = 11 };
_Static_assert(sizeof(rlxkv_stats) == 72 && offsetof(rlxkv_stats, stored_bytes) == 64,
               "rlxkv_stats changed (wasm32 layout): update STATS_FIELDS and wasm/native-cache.js");
void rlxkv_web_stats(const rlxkv_cache *c, double out[STATS_FIELDS]) {
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
    out[9] = (double)s.stored_entries;
    out[10] = (double)s.stored_bytes;
}

/* The C codec over the cache's entries, for the tests that hold the JS
 * codec (format/blob.js) to it. Encodes the entry of the n scratch tokens into
 * a new buffer (*len bytes; free it) or returns NULL. */
uint8_t *rlxkv_web_encode(web_cache *w, size_t n, uint64_t fingerprint, size_t *len) {
    const rlxkv_entry *e = rlxkv_cache_get(w->cache, w->tokens, n);
    size_t size = e && rlxkv_entry_is_resident(e) ? rlxkv_encoded_size(e) : 0;
    uint8_t *buf = size ? malloc(size) : NULL;
    if (buf && rlxkv_encode(e, fingerprint, buf, size, len) != RLXKV_OK) {
        free(buf);
        buf = NULL;
    }
    return buf;
}

/* Decodes a blob with the C decoder and puts its entry in the cache: the
 * decoder's or the put's status (RLXKV_STALE for another fingerprint). */
int rlxkv_web_decode_put(web_cache *w, const uint8_t *buf, size_t len, uint64_t fingerprint) {
    rlxkv_entry *e = NULL;
    int st = rlxkv_decode(buf, len, &fingerprint, &e, NULL);
    if (st != RLXKV_OK) return st;
    return rlxkv_cache_put(w->cache, e);
}
