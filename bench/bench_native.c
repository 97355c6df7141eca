/* Native benchmarks: rlxkv (src/) next to the reference algorithm ported to
 * C (bench/baseline.c), every workload on both in this one process.
 *
 *   bench_native OUT.json          run everything, write the figures as JSON
 *   bench_native --quick OUT.json  fewer repetitions (a smoke run)
 *
 * Every figure is the median of several repetitions; a ratio is the median
 * of each repetition's own ratio (both sides timed in it, back to back).
 * Nothing asserts on time: the only failures are wrong results (each
 * workload checks that both sides return the same data before it is timed).
 * The workloads are tables (set_specs, inserts, sections); TIMED is the one
 * place anything is timed.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "baseline.h"
#include "rlxkv.h"

/* ---- helpers ---------------------------------------------------------- */

#define MAX_REPS 16
#define NO_CAP ((size_t)1 << 40) /* a byte cap no workload here reaches */

static int quick;                /* --quick: at most 3 repetitions */
static volatile uint64_t g_sink; /* keeps results alive */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* secs = the time the statements take; nothing around them is timed. */
#define TIMED(secs, ...) do { double t0_ = now_s(); __VA_ARGS__; (secs) = now_s() - t0_; } while (0)

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("bench_native: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    exit(1);
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) die("out of memory (%zu bytes)", n);
    return p;
}

static int reps(int n) { return quick && n > 3 ? 3 : n; }

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median of v[0..n): sorts a copy, as callers pair arrays repetition by
 * repetition afterwards. */
static double median(const double *v, int n) {
    double w[MAX_REPS];
    if (n < 1 || n > MAX_REPS) die("median over %d values", n);
    memcpy(w, v, (size_t)n * sizeof *w);
    qsort(w, (size_t)n, sizeof *w, cmp_double);
    return n % 2 ? w[n / 2] : (w[n / 2 - 1] + w[n / 2]) / 2;
}

/* Median over repetitions of num[r] / den[r]: both timed in the same
 * repetition, so load that drifts between repetitions cancels. */
static double ratio_median(const double *num, const double *den, int n) {
    double r[MAX_REPS];
    for (int i = 0; i < n && i < MAX_REPS; i++) r[i] = num[i] / den[i];
    return median(r, n);
}

/* JSON output: one object per section, "key": number lines written (and
 * echoed to stderr) as the figures come. A key is a printf format. */
static struct { FILE *f; int sections, keys; const char *section; } json;
static void jopen(const char *section) {
    fprintf(json.f, "%s\n  \"%s\": {", json.sections++ ? "," : "", section);
    json.section = section, json.keys = 0;
}
__attribute__((format(printf, 2, 3))) static void jnum(double v, const char *fmt, ...) {
    char key[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(key, sizeof key, fmt, ap);
    va_end(ap);
    fprintf(json.f, "%s\n    \"%s\": %.6g", json.keys++ ? "," : "", key, v);
    fprintf(stderr, "  %s.%s %.6g\n", json.section, key, v);
}
static void jclose(void) { fprintf(json.f, "\n  }"), fflush(json.f); }

/* ---- token sets ------------------------------------------------------- */

#define L_TOKENS 2000
#define L_SHARED 1500        /* the first 3/4 are shared by every entry */
#define Q_LEN (L_TOKENS + 3) /* a query: an entry, then three tokens */
#define N_QUERIES 1000

static uint32_t mix32(uint64_t x) {
    x = (x ^ (x >> 33)) * 0xff51afd7ed558ccdull;
    x = (x ^ (x >> 33)) * 0xc4ceb9fe1a85ec53ull;
    return (uint32_t)(x ^ (x >> 33));
}

/* Entry i: the shared 1,500 tokens, then 500 of its own (the first of which
 * differs between any two entries, so they part right after the prefix). */
static void gen_tokens(uint32_t *t, size_t i) {
    for (size_t j = 0; j < L_SHARED; j++) t[j] = mix32(j) % 32000;
    t[L_SHARED] = 32000 + (uint32_t)i;
    for (size_t j = L_SHARED + 1; j < L_TOKENS; j++) t[j] = mix32(i * 1000003u + j) % 32000;
}

/* Query q extends entry (q * 7919) mod n by three tokens. */
static size_t query_target(size_t q, size_t n) { return (q * 7919u) % n; }

static uint32_t *gen_queries(size_t n) {
    uint32_t *qs = xmalloc((size_t)N_QUERIES * Q_LEN * sizeof *qs);
    for (size_t q = 0; q < N_QUERIES; q++) {
        gen_tokens(qs + q * Q_LEN, query_target(q, n));
        for (size_t j = L_TOKENS; j < Q_LEN; j++) qs[q * Q_LEN + j] = 7 + (uint32_t)(j - L_TOKENS);
    }
    return qs;
}

/* Entry i with tiny KV (1 layer, one float of K and one of V), in rlxkv and
 * in the baseline. */
static rlxkv_entry *tiny_entry(const uint32_t *tokens, size_t i) {
    size_t lens[2] = {1, 1};
    rlxkv_entry *e = rlxkv_entry_new(L_TOKENS, 1, lens, RLXKV_F32, NULL);
    if (!e) die("entry_new");
    memcpy(rlxkv_entry_tokens_mut(e), tokens, L_TOKENS * sizeof *tokens);
    ((float *)rlxkv_entry_block_mut(e, 0))[0] = (float)i;
    ((float *)rlxkv_entry_block_mut(e, 1))[0] = -(float)i;
    return e;
}
static void tiny_bl_entry(bl_entry *e, const uint32_t *tokens, size_t i) {
    float k = (float)i, v = -(float)i;
    const float *kp = &k, *vp = &v;
    size_t one = 1;
    if (bl_entry_make(e, tokens, L_TOKENS, 1, &kp, &one, &vp, &one)) die("bl_entry_make");
}

static size_t heap_in_use(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
#else
    return 0; /* no mallinfo2: the memory figures read 0 */
#endif
}

/* ---- lookup and insert ------------------------------------------------ */

#define N_SETS 3
#define LOOKUP_WARM_PASSES 4
#define K_MAX 100
#define INS_LAYERS 4
#define INS_ROW 16 /* copy-included KV: 4 layers x 2,000 rows x 16 floats, K and V */

/* A set of n entries. The baseline times its first baseline_queries of the
 * 1,000 queries (all of them would take seconds per repetition; its cost per
 * lookup is what counts); each insert repetition adds k entries. */
static const struct { size_t n, baseline_queries; int baseline_reps; size_t k; } set_specs[N_SETS] = {
    {100, 1000, 7, 10}, {1000, 200, 7, 100}, {10000, 25, 5, 100}};

/* The two inserts. Copy excluded: entries made beforehand (rlxkv_cache_put
 * and bl_insert take ownership). Copy included: the caller keeps its KV, so
 * rlxkv_cache_insert copies it and the baseline gets a clone (a CacheEntry
 * built from tokens.clone(), kv.clone()). */
static const struct { const char *key; int copy_kv, reps; } inserts[] = {
    {"insert", 0, 11}, {"insert_copy", 1, 7}};

/* One set on both sides, with phase A's rlxkv times (narrow: the largest set's only). */
typedef struct lset {
    size_t n, k;
    rlxkv_cache *c;
    bl_cache b;
    uint32_t *qs, *ktok; /* the queries; the tokens of the k entries insert adds */
    double mem_rlxkv;    /* heap bytes per entry beyond tokens and KV */
    double lk[MAX_REPS], get[MAX_REPS], cold[MAX_REPS], narrow[MAX_REPS];
} lset;

typedef struct ins_kv { const float *k[INS_LAYERS], *v[INS_LAYERS]; size_t lens[INS_LAYERS]; } ins_kv;

/* Microseconds per query of one pass over the 1,000 queries. */
static double lookup_us(rlxkv_cache *c, const uint32_t *qs, int exact_get) {
    rlxkv_hit hit;
    uint64_t acc = 0;
    double t;
    TIMED(t, for (size_t q = 0; q < N_QUERIES; q++) {
        if (exact_get) acc += (uintptr_t)rlxkv_cache_get(c, qs + q * Q_LEN, L_TOKENS);
        else rlxkv_cache_lookup(c, qs + q * Q_LEN, Q_LEN, &hit), acc += hit.matched;
    });
    g_sink += acc;
    return t / N_QUERIES * 1e6;
}

/* Microseconds per entry to insert s's k entries on one side; undone after,
 * untimed. */
static double insert_us(lset *s, const ins_kv *kv, int copy_kv, int baseline) {
    rlxkv_entry *pre[K_MAX];
    bl_entry bpre[K_MAX];
    const uint32_t *tok = s->ktok;
    double t;
    for (size_t j = 0; j < s->k && !copy_kv; j++)
        if (baseline) tiny_bl_entry(&bpre[j], tok + j * L_TOKENS, s->n + j);
        else pre[j] = tiny_entry(tok + j * L_TOKENS, s->n + j);
    if (baseline) {
        TIMED(t, for (size_t j = 0; j < s->k; j++) {
            if (copy_kv && bl_entry_make(&bpre[j], tok + j * L_TOKENS, L_TOKENS, INS_LAYERS, kv->k, kv->lens,
                                         kv->v, kv->lens))
                die("bl_entry_make");
            if (bl_insert(&s->b, &bpre[j])) die("bl_insert");
        });
        if (s->b.len != s->n + s->k) die("baseline insert did not add");
        for (size_t j = 0; j < s->k; j++) bl_pop(&s->b);
    } else {
        TIMED(t, for (size_t j = 0; j < s->k; j++) {
            if (copy_kv ? rlxkv_cache_insert(s->c, tok + j * L_TOKENS, L_TOKENS, INS_LAYERS, RLXKV_F32,
                                             (const void *const *)kv->k, kv->lens,
                                             (const void *const *)kv->v, kv->lens)
                        : rlxkv_cache_put(s->c, pre[j]))
                die("insert");
        });
        for (size_t j = 0; j < s->k; j++)
            if (rlxkv_cache_remove(s->c, tok + j * L_TOKENS, L_TOKENS)) die("remove");
    }
    return t / (double)s->k * 1e6;
}

/* Phase A: the rlxkv sets, built one after the other (heap in use measured
 * around each build) and checked, then timed interleaved, repetition by
 * repetition, so that their growth is measured side by side. Returns the
 * number of repetitions. */
static int time_rlxkv_sets(lset *sets, double payload) {
    uint32_t tok[L_TOKENS];
    lset *largest = &sets[N_SETS - 1];
    for (int i = 0; i < N_SETS; i++) {
        lset *s = &sets[i];
        size_t h0 = heap_in_use();
        s->n = set_specs[i].n, s->k = set_specs[i].k;
        if (s->k > K_MAX) die("insert_k %zu over K_MAX", s->k);
        s->c = rlxkv_cache_new(NO_CAP, 1);
        for (size_t j = 0; j < s->n; j++) {
            gen_tokens(tok, j);
            if (rlxkv_cache_put(s->c, tiny_entry(tok, j))) die("put");
        }
        s->mem_rlxkv = ((double)(heap_in_use() - h0) - payload * (double)s->n) / (double)s->n;
        s->qs = gen_queries(s->n);
        for (size_t q = 0; q < N_QUERIES; q++) {
            rlxkv_hit hit;
            if (rlxkv_cache_lookup(s->c, s->qs + q * Q_LEN, Q_LEN, &hit) != RLXKV_HIT || hit.matched != L_TOKENS ||
                rlxkv_entry_tokens(hit.entry)[L_SHARED] != 32000 + query_target(q, s->n))
                die("rlxkv lookup gave a wrong hit");
        }
    }
    /* Diagnostic: the largest set queried over the smallest one's working
     * set (100 entries). */
    uint32_t *qs_narrow = gen_queries(100);
    int R = reps(15);
    fprintf(stderr, "lookup, rlxkv: the sets interleaved, %d repetitions\n", R);
    for (int r = 0; r < R; r++) {
        /* A set's first pass runs in caches the other sets have just
         * filled: timed apart, as "cold". The timed pass then follows
         * enough passes over the same queries to reach steady state (the
         * 1,000 queries stream 8 MB, so the shared L3 takes a few passes
         * to settle; passes 2, 3, 4 measured 0.78 / 0.48 / 0.43 us at
         * N = 10,000 while developing). */
        for (lset *s = sets; s < sets + N_SETS; s++) {
            s->cold[r] = lookup_us(s->c, s->qs, 0);
            for (int w = 1; w < LOOKUP_WARM_PASSES; w++) lookup_us(s->c, s->qs, 0);
            s->lk[r] = lookup_us(s->c, s->qs, 0);
            s->get[r] = lookup_us(s->c, s->qs, 1);
        }
        for (int w = 0; w < LOOKUP_WARM_PASSES; w++) lookup_us(largest->c, qs_narrow, 0);
        largest->narrow[r] = lookup_us(largest->c, qs_narrow, 0);
    }
    free(qs_narrow);
    return R;
}

/* Phase B on set i: the baseline set (built by push: tokens distinct and
 * under the cap, so bl_insert would reach the same state, only slower), its
 * lookups, each repetition followed by one warm and one timed rlxkv pass
 * (what its ratio pairs with), then the inserts on both; the set's JSON. */
static void bench_set(lset *sets, int i, int R, const ins_kv *kv, double payload) {
    lset *s = &sets[i];
    uint32_t tok[L_TOKENS];
    size_t bq = quick && set_specs[i].baseline_queries > 20 ? 20 : set_specs[i].baseline_queries;
    size_t h1 = heap_in_use(), m = 0;
    fprintf(stderr, "baseline lookup, insert: N=%zu\n", s->n);
    bl_cache_init(&s->b, NO_CAP);
    for (size_t j = 0; j < s->n; j++) {
        bl_entry e;
        gen_tokens(tok, j);
        tiny_bl_entry(&e, tok, j);
        if (bl_push_unchecked(&s->b, &e)) die("push");
    }
    double mem_baseline = ((double)(heap_in_use() - h1) - payload * (double)s->n) / (double)s->n;
    bl_entry *clones = xmalloc(bq * sizeof *clones);
    for (size_t q = 0; q < bq; q++) {
        size_t want = query_target(q, s->n);
        if (bl_longest_prefix(&s->b, s->qs + q * Q_LEN, Q_LEN, &m, &clones[0]) != 1 || m != L_TOKENS ||
            clones[0].tokens[L_SHARED] != 32000 + want || clones[0].kv.layers_k[0].ptr[0] != (float)want)
            die("baseline lookup gave a wrong hit");
        bl_entry_drop(&clones[0]);
    }
    int RB = reps(set_specs[i].baseline_reps);
    double bl_us[MAX_REPS], paired[MAX_REPS];
    for (int r = 0; r < RB; r++) {
        TIMED(bl_us[r], for (size_t q = 0; q < bq; q++)
                  bl_longest_prefix(&s->b, s->qs + q * Q_LEN, Q_LEN, &m, &clones[q]));
        bl_us[r] *= 1e6 / (double)bq;
        for (size_t q = 0; q < bq; q++) bl_entry_drop(&clones[q]);
        lookup_us(s->c, s->qs, 0);
        paired[r] = lookup_us(s->c, s->qs, 0);
    }
    free(clones);

    char section[16];
    snprintf(section, sizeof section, "set_%zu", s->n);
    jopen(section);
    jnum((double)s->n, "n");
    jnum(median(s->lk, R), "lookup_rlxkv_us");
    jnum(median(s->get, R), "lookup_rlxkv_get_us");
    jnum(median(s->cold, R), "lookup_rlxkv_cold_us");
    if (i == N_SETS - 1) { /* growth from the smallest set, per repetition (adjacent passes) */
        jnum(median(s->narrow, R), "lookup_rlxkv_narrow_us");
        jnum(ratio_median(s->lk, sets[0].lk, R), "lookup_growth_from_100");
        jnum(ratio_median(s->cold, sets[0].cold, R), "lookup_growth_cold_from_100");
        jnum(LOOKUP_WARM_PASSES, "lookup_warm_passes");
        jnum(ratio_median(s->narrow, sets[0].lk, R), "lookup_growth_narrow_from_100");
    }
    jnum(median(bl_us, RB), "lookup_baseline_us");
    jnum(median(paired, RB), "lookup_rlxkv_paired_us");
    jnum(ratio_median(bl_us, paired, RB), "lookup_speedup");
    jnum((double)bq, "lookup_baseline_queries");
    jnum(N_QUERIES, "lookup_queries");
    jnum(R, "lookup_reps");
    jnum((double)s->k, "insert_k");
    s->ktok = xmalloc(s->k * L_TOKENS * sizeof *s->ktok);
    for (size_t j = 0; j < s->k; j++) gen_tokens(s->ktok + j * L_TOKENS, s->n + j);
    for (size_t w = 0; w < sizeof inserts / sizeof *inserts; w++) {
        int RI = reps(inserts[w].reps);
        double rl[MAX_REPS], bl[MAX_REPS];
        for (int r = 0; r < RI; r++) { /* rlxkv, then the baseline */
            rl[r] = insert_us(s, kv, inserts[w].copy_kv, 0);
            bl[r] = insert_us(s, kv, inserts[w].copy_kv, 1);
        }
        jnum(median(rl, RI), "%s_rlxkv_us", inserts[w].key);
        jnum(median(bl, RI), "%s_baseline_us", inserts[w].key);
        jnum(ratio_median(bl, rl, RI), "%s_speedup", inserts[w].key);
    }
    jnum(2.0 * INS_LAYERS * L_TOKENS * INS_ROW * 4, "insert_copy_kv_bytes");
    jnum(s->mem_rlxkv, "mem_rlxkv_overhead_per_entry");
    jnum(mem_baseline, "mem_baseline_overhead_per_entry");
    jnum(payload, "mem_payload_per_entry");
    jclose();
    free(s->ktok);
    bl_cache_drop(&s->b);
}

static void bench_lookup_insert(void) {
    const double payload = 2 * 4 + L_TOKENS * 4; /* per entry: 2 floats, 2,000 tokens */
    lset sets[N_SETS];
    ins_kv kv;
    for (int l = 0; l < INS_LAYERS; l++) {
        float *k = xmalloc(L_TOKENS * INS_ROW * sizeof *k), *v = xmalloc(L_TOKENS * INS_ROW * sizeof *v);
        for (size_t j = 0; j < L_TOKENS * INS_ROW; j++)
            k[j] = (float)j * 0.5f + (float)l, v[j] = -(float)j * 0.25f - (float)l;
        kv.k[l] = k, kv.v[l] = v, kv.lens[l] = L_TOKENS * INS_ROW;
    }
    int R = time_rlxkv_sets(sets, payload);
    for (int i = 0; i < N_SETS; i++) bench_set(sets, i, R, &kv, payload);
    for (lset *s = sets; s < sets + N_SETS; s++) rlxkv_cache_free(s->c), free(s->qs);
    for (int l = 0; l < INS_LAYERS; l++) free((void *)kv.k[l]), free((void *)kv.v[l]);
}

/* ---- the large entry: hit, codec ------------------------------------- */

#define BIG_TOKENS 1024
#define BIG_LAYERS 24
#define BIG_ROW 256
#define BIG_QUERY (BIG_TOKENS + 3)
#define VIEW_LOOPS 20000 /* a view hit is averaged over this many calls */
static const uint64_t BIG_FP = 0x5eed;

/* What the steps work on: the entry (1,024 tokens x 24 layers x 256
 * floats, K and V) in rlxkv and in the baseline, its blob and ready
 * (touched) buffers; each section's setup adds its part. */
typedef struct big {
    rlxkv_cache *c;
    rlxkv_entry *e; /* owned by c, or by this struct while c is NULL */
    bl_cache b;     /* the baseline's copy of e */
    uint32_t query[BIG_QUERY];
    size_t kv_bytes, blob_len;
    float *dst;           /* a copying hit's destination (hit only) */
    uint8_t *blob, *buf2; /* e encoded; a buffer as large */
    bl_bytes bb;          /* the baseline's encode output, capacity kept (codec only) */
} big;

enum { HIT_VIEW, HIT_COPY, HIT_MEMCPY, HIT_CLONE, ENCODE, DECODE, MEMCPY, MEMCPY_FRESH, BL_ENCODE, BL_DECODE, N_STEPS };

/* Seconds step `op` takes in repetition r: the TIMED statements, with
 * untimed preparation before them and cleanup after the switch. */
static double big_step(big *g, int op, int r) {
    double t = 0;
    int st = 0;
    size_t m;
    uint64_t acc = 0;
    uint8_t *fresh = NULL;
    rlxkv_hit hit;
    rlxkv_entry *d = NULL;
    bl_entry be = {0};
    switch (op) {
    case HIT_VIEW:
        TIMED(t, for (int i = 0; i < VIEW_LOOPS; i++)
                     rlxkv_cache_lookup(g->c, g->query, BIG_QUERY, &hit), acc += (uintptr_t)hit.entry);
        t /= VIEW_LOOPS;
        break;
    case HIT_COPY:
        TIMED(t, rlxkv_cache_lookup(g->c, g->query, BIG_QUERY, &hit); rlxkv_hit_copy(&hit, g->dst, NULL));
        break;
    case HIT_MEMCPY:
        TIMED(t, memcpy(g->dst, rlxkv_entry_data(g->e), g->kv_bytes));
        acc = (uint64_t)g->dst[r];
        break;
    case HIT_CLONE: TIMED(t, st = bl_longest_prefix(&g->b, g->query, BIG_QUERY, &m, &be) != 1); break;
    case ENCODE: TIMED(t, st = rlxkv_encode(g->e, BIG_FP, g->blob, g->blob_len, NULL)); break;
    case DECODE: TIMED(t, st = rlxkv_decode(g->blob, g->blob_len, &BIG_FP, &d, NULL)); break;
    case MEMCPY: TIMED(t, memcpy(g->buf2, g->blob, g->blob_len)); acc = g->buf2[r * 4096]; break;
    case MEMCPY_FRESH:
        TIMED(t, fresh = xmalloc(g->blob_len); memcpy(fresh, g->blob, g->blob_len));
        acc = fresh[r * 4096];
        break;
    case BL_ENCODE: /* into the capacity kept: no regrowth */
        g->bb.len = 0;
        TIMED(t, st = bl_encode(&g->b.entries[0], BIG_FP, &g->bb));
        break;
    case BL_DECODE: TIMED(t, st = bl_decode(g->blob, g->blob_len, BIG_FP, &be) != 1); break;
    }
    if (st) die("step %d failed (%d)", op, st);
    g_sink += acc;
    rlxkv_entry_free(d), free(fresh), bl_entry_drop(&be);
    return t;
}

/* Whether a baseline entry holds the tokens and KV of e. */
static int bl_equals(const bl_entry *b, const rlxkv_entry *e) {
    size_t L = rlxkv_entry_n_layers(e);
    if (b->n_tokens != rlxkv_entry_n_tokens(e) || b->kv.n_layers != L ||
        memcmp(b->tokens, rlxkv_entry_tokens(e), b->n_tokens * 4))
        return 0;
    for (size_t i = 0; i < 2 * L; i++) {
        const bl_vecf *v = i < L ? &b->kv.layers_k[i] : &b->kv.layers_v[i - L];
        if (v->len != rlxkv_entry_block_len(e, i) || memcmp(v->ptr, rlxkv_entry_block(e, i), v->len * 4)) return 0;
    }
    return 1;
}

/* The sections' setups, untimed, each checking that both sides agree. Each
 * frees what the sections before it no longer need (dst, bb) before it
 * allocates, so the 48 MiB buffers land where they did when these figures
 * were first taken: with dst kept, hit.copy_vs_memcpy moved by ~15%. */
static void make_entry(big *g) {
    size_t lens[2 * BIG_LAYERS];
    for (int i = 0; i < 2 * BIG_LAYERS; i++) lens[i] = (size_t)BIG_TOKENS * BIG_ROW;
    if (!(g->e = rlxkv_entry_new(BIG_TOKENS, BIG_LAYERS, lens, RLXKV_F32, NULL))) die("big entry");
    for (size_t i = 0; i < BIG_TOKENS; i++) g->query[i] = mix32(i + 77) % 32000;
    g->query[BIG_TOKENS] = 1, g->query[BIG_TOKENS + 1] = 2, g->query[BIG_TOKENS + 2] = 3;
    memcpy(rlxkv_entry_tokens_mut(g->e), g->query, BIG_TOKENS * 4);
    for (int b = 0; b < 2 * BIG_LAYERS; b++) {
        float *f = rlxkv_entry_block_mut(g->e, (size_t)b);
        for (size_t j = 0; j < lens[b]; j++) f[j] = (float)(j % 1000) * 0.001f + (float)b;
    }
    g->kv_bytes = rlxkv_entry_n_values(g->e) * 4;
}
static void make_blob(big *g) {
    size_t w = 0;
    g->blob_len = rlxkv_encoded_size(g->e);
    g->blob = xmalloc(g->blob_len), g->buf2 = xmalloc(g->blob_len);
    memset(g->blob, 0, g->blob_len), memset(g->buf2, 0, g->blob_len);
    if (rlxkv_encode(g->e, BIG_FP, g->blob, g->blob_len, &w) || w != g->blob_len) die("encode");
}
static void setup_hit(big *g) {
    const float *kv[2 * BIG_LAYERS];
    size_t lens[BIG_LAYERS], m;
    rlxkv_hit hit;
    bl_entry be;
    make_entry(g);
    for (int b = 0; b < 2 * BIG_LAYERS; b++) kv[b] = rlxkv_entry_block(g->e, (size_t)b);
    for (int l = 0; l < BIG_LAYERS; l++) lens[l] = rlxkv_entry_block_len(g->e, (size_t)l);
    bl_cache_init(&g->b, NO_CAP);
    if (bl_entry_make(&be, g->query, BIG_TOKENS, BIG_LAYERS, kv, lens, kv + BIG_LAYERS, lens) ||
        bl_insert(&g->b, &be))
        die("baseline entry");
    g->c = rlxkv_cache_new(NO_CAP, BIG_FP);
    if (rlxkv_cache_put(g->c, g->e)) die("put big");
    g->e = (rlxkv_entry *)rlxkv_cache_get(g->c, g->query, BIG_TOKENS);
    g->dst = xmalloc(g->kv_bytes);
    memset(g->dst, 0, g->kv_bytes);
    if (rlxkv_cache_lookup(g->c, g->query, BIG_QUERY, &hit) != RLXKV_HIT || hit.matched != BIG_TOKENS)
        die("big lookup");
    rlxkv_hit_copy(&hit, g->dst, NULL);
    if (memcmp(g->dst, rlxkv_entry_data(g->e), g->kv_bytes)) die("hit_copy differs");
    if (bl_longest_prefix(&g->b, g->query, BIG_QUERY, &m, &be) != 1 || !bl_equals(&be, g->e))
        die("baseline clone differs");
    bl_entry_drop(&be);
}
static void setup_codec(big *g) {
    rlxkv_entry *d = NULL;
    bl_entry bd;
    free(g->dst), g->dst = NULL;
    make_blob(g);
    g->bb = (bl_bytes){xmalloc(g->blob_len), 0, g->blob_len};
    memset(g->bb.ptr, 0, g->blob_len);
    if (bl_encode(&g->b.entries[0], BIG_FP, &g->bb) || g->bb.len != g->blob_len ||
        memcmp(g->bb.ptr, g->blob, g->blob_len))
        die("baseline and rlxkv blobs differ");
    if (rlxkv_decode(g->blob, g->blob_len, &BIG_FP, &d, NULL) || !d) die("decode");
    if (bl_decode(g->blob, g->blob_len, BIG_FP, &bd) != 1 || !bl_equals(&bd, d)) die("baseline decode differs");
    rlxkv_entry_free(d);
    bl_entry_drop(&bd);
}
/* Recycled: mmap off and no trimming, so freed memory is reused. */
static void setup_recycled(big *g) {
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, 0x7fffffff);
    make_entry(g);
    make_blob(g);
}

static void big_close(big *g) {
    if (g->c) rlxkv_cache_free(g->c);
    else rlxkv_entry_free(g->e);
    bl_cache_drop(&g->b);
    free(g->dst), free(g->blob), free(g->buf2), free(g->bb.ptr);
    memset(g, 0, sizeof *g);
}

/* A section: its setup, its steps in the order a repetition runs them, with
 * the JSON key of each median, and its ratios, each the median over
 * repetitions of step num's time over step den's. A diagnostic runs each
 * step's repetitions in a row, after one untimed that warms the heap. */
typedef struct section {
    const char *name, *size_key;
    void (*setup)(big *g);
    int reps, diagnostic;
    struct { int op; const char *key; } steps[8];
    struct { const char *key; int num, den; } ratios[5];
} section;

static const section sections[] = {
    /* A view hit (a pointer to the entry); a copying hit into a ready
     * buffer; a memcpy of the same bytes into it; the baseline's clone. */
    {"hit", "kv_bytes", setup_hit, 11, 0,
     {{HIT_VIEW, "view_s"}, {HIT_COPY, "copy_s"}, {HIT_MEMCPY, "memcpy_s"}, {HIT_CLONE, "baseline_clone_s"}},
     {{"view_over_clone_speedup", HIT_CLONE, HIT_VIEW}, {"copy_over_clone_speedup", HIT_CLONE, HIT_COPY},
      {"copy_vs_memcpy", HIT_MEMCPY, HIT_COPY}}},
    /* rlxkv_encode into a ready buffer; rlxkv_decode into a new entry (its
     * allocation and first touch are part of decoding); memcpy of the blob
     * into a ready buffer, and into a fresh malloc; the baseline's
     * per-value encode (into a reserved vector) and decode. */
    {"codec", "blob_bytes", setup_codec, 11, 0,
     {{ENCODE, "encode_s"}, {DECODE, "decode_s"}, {MEMCPY, "memcpy_s"}, {MEMCPY_FRESH, "memcpy_fresh_s"},
      {BL_ENCODE, "baseline_encode_s"}, {BL_DECODE, "baseline_decode_s"}},
     {{"encode_vs_memcpy", MEMCPY, ENCODE}, {"decode_vs_memcpy", MEMCPY, DECODE},
      {"decode_vs_memcpy_fresh", MEMCPY_FRESH, DECODE}, {"encode_over_baseline_speedup", BL_ENCODE, ENCODE},
      {"decode_over_baseline_speedup", BL_DECODE, DECODE}}},
};

/* Run last, a diagnostic: glibc serves allocations above its mmap threshold
 * (at most 32 MiB) with a fresh mmap, so every 48 MiB entry is
 * first-touched, page by page; the baseline's 1 MiB vectors are recycled
 * instead. This measures decode when its allocations come back warm. */
static const section recycled = {"recycled", "blob_bytes", setup_recycled, 9, 1,
                                 {{DECODE, "decode_s"}, {MEMCPY, "memcpy_s"}}, {{0}}};

static void run_section(big *g, const section *sec) {
    double s[N_STEPS][MAX_REPS];
    int R = reps(sec->reps), n = 0;
    while (n < (int)(sizeof sec->steps / sizeof sec->steps[0]) && sec->steps[n].key) n++;
    sec->setup(g);
    for (int i = 0; sec->diagnostic && i < n; i++)
        for (int r = -1; r < R; r++) {
            double t = big_step(g, sec->steps[i].op, r < 0 ? 0 : r);
            if (r >= 0) s[sec->steps[i].op][r] = t;
        }
    for (int r = 0; !sec->diagnostic && r < R; r++)
        for (int i = 0; i < n; i++) s[sec->steps[i].op][r] = big_step(g, sec->steps[i].op, r);
    jopen(sec->name);
    /* kv_bytes: the entry's KV; blob_bytes: its encoding */
    jnum((double)(strcmp(sec->size_key, "kv_bytes") ? g->blob_len : g->kv_bytes), "%s", sec->size_key);
    if (!sec->diagnostic) jnum(R, "reps");
    for (int i = 0; i < (int)(sizeof sec->ratios / sizeof sec->ratios[0]) && sec->ratios[i].key; i++)
        jnum(ratio_median(s[sec->ratios[i].num], s[sec->ratios[i].den], R), "%s", sec->ratios[i].key);
    for (int i = 0; i < n; i++) jnum(median(s[sec->steps[i].op], R), "%s", sec->steps[i].key);
    jclose();
}

/* ---- main ------------------------------------------------------------- */

int main(int argc, char **argv) {
    big g = {0};
    quick = argc > 1 && !strcmp(argv[1], "--quick");
    if (argc != 2 + quick) {
        fprintf(stderr, "usage: bench_native [--quick] OUT.json\n");
        return 2;
    }
    if (!(json.f = fopen(argv[1 + quick], "w"))) die("cannot write %s", argv[1 + quick]);

    double t0 = now_s();
    fprintf(json.f, "{");
    jopen("config");
    jnum(quick, "quick");
    fprintf(json.f, ",\n    \"compiler\": \"%s\"", __VERSION__);
    jclose();
    bench_lookup_insert();
    fprintf(stderr, "large entry (1,024 tokens x 24 layers x 256 floats, K and V)\n");
    for (size_t i = 0; i < sizeof sections / sizeof *sections; i++) run_section(&g, &sections[i]);
    big_close(&g);
    run_section(&g, &recycled);
    big_close(&g);
    fprintf(json.f, "\n}\n");
    fclose(json.f);
    fprintf(stderr, "native: %.0f s (checksum %llu)\n", now_s() - t0, (unsigned long long)(g_sink & 0xff));
    return 0;
}
