/* Codec tests: the reference vectors byte for byte, bit-exact floats, a
 * hostile-input sweep (every truncation, huge lengths, bad fields), the f16
 * variant, the exact widening of every binary16 value, the layer limit and
 * the names of blobs and pages. */
#define _POSIX_C_SOURCE 200809L /* strtok_r */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "entry.h"
#include "rlxkv.h"

/* CMake passes the shared vectors directory; this default is relative to
 * the repository root. */
#ifndef RLXKV_VECTORS
#define RLXKV_VECTORS "../shared/vectors"
#endif

#define MAX_BLOCKS 64

typedef struct vec {
    char name[64];
    uint64_t fp;
    uint64_t past_len, n_tokens, n_layers;
    size_t k_lens[MAX_BLOCKS], v_lens[MAX_BLOCKS];
    uint64_t token_sum;
    uint8_t *bytes;
    size_t len;
} vec;

static uint8_t *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    long n;
    *len = 0;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        buf = malloc((size_t)n + 1);
        if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) *len = (size_t)n;
        else {
            free(buf);
            buf = NULL;
        }
    }
    fclose(f);
    return buf;
}

static size_t parse_lens(const char *s, size_t *out) {
    size_t n = 0;
    while (*s && n < MAX_BLOCKS) {
        char *end;
        out[n++] = (size_t)strtoull(s, &end, 10);
        if (*end != ',') break;
        s = end + 1;
    }
    return n;
}

/* Reads MANIFEST: "name fp=0x.. past_len=N tokens=N layers=N k_lens=a,b
 * v_lens=a,b token_sum=N" per line. */
static size_t load_vectors(vec *v, size_t max) {
    char line[4096], path[512];
    size_t n = 0;
    FILE *f;
    snprintf(path, sizeof path, "%s/MANIFEST", RLXKV_VECTORS);
    f = fopen(path, "r");
    CHECK(f != NULL);
    if (!f) return 0;
    while (n < max && fgets(line, sizeof line, f)) {
        vec *x = &v[n];
        char *tok, *save = NULL;
        memset(x, 0, sizeof *x);
        tok = strtok_r(line, " \t\r\n", &save);
        if (!tok) continue;
        snprintf(x->name, sizeof x->name, "%s", tok);
        while ((tok = strtok_r(NULL, " \t\r\n", &save))) {
            if (!strncmp(tok, "fp=", 3)) x->fp = strtoull(tok + 3, NULL, 0);
            else if (!strncmp(tok, "past_len=", 9)) x->past_len = strtoull(tok + 9, NULL, 10);
            else if (!strncmp(tok, "tokens=", 7)) x->n_tokens = strtoull(tok + 7, NULL, 10);
            else if (!strncmp(tok, "layers=", 7)) x->n_layers = strtoull(tok + 7, NULL, 10);
            else if (!strncmp(tok, "k_lens=", 7)) CHECK_EQ(parse_lens(tok + 7, x->k_lens), x->n_layers);
            else if (!strncmp(tok, "v_lens=", 7)) CHECK_EQ(parse_lens(tok + 7, x->v_lens), x->n_layers);
            else if (!strncmp(tok, "token_sum=", 10)) x->token_sum = strtoull(tok + 10, NULL, 10);
        }
        snprintf(path, sizeof path, "%s/%s.rlxkv", RLXKV_VECTORS, x->name);
        x->bytes = read_all(path, &x->len);
        CHECK(x->bytes != NULL);
        if (x->bytes) n++;
    }
    fclose(f);
    return n;
}

static vec g_vec[16];
static size_t g_nvec;

static void free_vectors(void) {
    for (size_t i = 0; i < g_nvec; i++) free(g_vec[i].bytes);
}

static uint32_t f2u(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float u2f(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---------------------------------------------------------------------- */

static void test_manifest_present(void) {
    CHECK(g_nvec >= 2);
}

static void test_vectors_decode(void) {
    for (size_t i = 0; i < g_nvec; i++) {
        const vec *v = &g_vec[i];
        rlxkv_blob_meta meta;
        rlxkv_entry *e = NULL;
        uint64_t fp = 0, sum = 0;
        CHECK_EQ(rlxkv_inspect(v->bytes, v->len, &meta), RLXKV_OK);
        CHECK_EQ(meta.fingerprint, v->fp);
        CHECK_EQ(meta.n_tokens, v->n_tokens);
        CHECK_EQ(meta.n_layers, v->n_layers);
        CHECK_EQ(meta.blob_bytes, v->len);
        CHECK_EQ(rlxkv_decode(v->bytes, v->len, NULL, &e, &fp), RLXKV_OK);
        if (!e) continue;
        CHECK_EQ(fp, v->fp);
        CHECK_EQ(v->past_len, v->n_tokens);
        CHECK_EQ(rlxkv_entry_n_tokens(e), v->n_tokens);
        CHECK_EQ(rlxkv_entry_n_layers(e), v->n_layers);
        size_t total = 0;
        for (size_t l = 0; l < v->n_layers; l++) {
            CHECK_EQ(rlxkv_entry_block_len(e, l), v->k_lens[l]);
            CHECK_EQ(rlxkv_entry_block_len(e, v->n_layers + l), v->v_lens[l]);
            total += v->k_lens[l] + v->v_lens[l];
        }
        CHECK_EQ(rlxkv_entry_n_values(e), total);
        CHECK_EQ(meta.n_values, total);
        CHECK_EQ(rlxkv_entry_kv_bytes(e), 4 * total);
        for (size_t t = 0; t < rlxkv_entry_n_tokens(e); t++) sum += rlxkv_entry_tokens(e)[t];
        CHECK_EQ(sum, v->token_sum);
        /* The floats as stored, bit for bit, read independently of decode. */
        size_t at = 32 + 8 * v->n_tokens + 8;
        int same = 1;
        for (size_t b = 0; b < 2 * v->n_layers; b++) {
            const float *blk = rlxkv_entry_block(e, b);
            at += 8;
            for (size_t j = 0; j < rlxkv_entry_block_len(e, b); j++, at += 4) {
                uint32_t w = (uint32_t)v->bytes[at] | (uint32_t)v->bytes[at + 1] << 8 |
                             (uint32_t)v->bytes[at + 2] << 16 | (uint32_t)v->bytes[at + 3] << 24;
                if (f2u(blk[j]) != w) same = 0;
            }
        }
        CHECK(same);
        CHECK_EQ(at, v->len);
        rlxkv_entry_free(e);
    }
}

static void test_vectors_reencode(void) {
    for (size_t i = 0; i < g_nvec; i++) {
        const vec *v = &g_vec[i];
        rlxkv_entry *e = NULL;
        size_t written = 0;
        CHECK_EQ(rlxkv_decode(v->bytes, v->len, &v->fp, &e, NULL), RLXKV_OK);
        if (!e) continue;
        CHECK_EQ(rlxkv_encoded_size(e), v->len);
        uint8_t *buf = malloc(v->len + 16);
        memset(buf, 0xEE, v->len + 16);
        CHECK_EQ(rlxkv_encode(e, v->fp, buf, v->len + 16, &written), RLXKV_OK);
        CHECK_EQ(written, v->len);
        CHECK(memcmp(buf, v->bytes, v->len) == 0);
        CHECK_EQ(buf[v->len], 0xEE); /* nothing written past the blob */
        /* One byte short is refused, the exact size is enough. */
        CHECK_EQ(rlxkv_encode(e, v->fp, buf, v->len - 1, &written), RLXKV_ERR_INVALID);
        CHECK_EQ(written, 0);
        CHECK_EQ(rlxkv_encode(e, v->fp, buf, v->len, NULL), RLXKV_OK);
        CHECK(memcmp(buf, v->bytes, v->len) == 0);
        free(buf);
        rlxkv_entry_free(e);
    }
}

/* The small reference vector, built by hand (tokens 7,8,9, 0.42f everywhere)
 * and encoded without decoding anything first. */
static void test_encode_matches_reference(void) {
    const vec *v = NULL;
    for (size_t i = 0; i < g_nvec; i++)
        if (!strcmp(g_vec[i].name, "seed_small")) v = &g_vec[i];
    CHECK(v != NULL);
    if (!v) return;
    size_t lens[2] = {6, 6};
    rlxkv_entry *e = rlxkv_entry_new(3, 1, lens, RLXKV_F32, NULL);
    uint8_t buf[256];
    size_t w;
    rlxkv_entry_tokens_mut(e)[0] = 7;
    rlxkv_entry_tokens_mut(e)[1] = 8;
    rlxkv_entry_tokens_mut(e)[2] = 9;
    for (size_t b = 0; b < 2; b++)
        for (size_t j = 0; j < 6; j++) ((float *)rlxkv_entry_block_mut(e, b))[j] = 0.42f;
    CHECK_EQ(rlxkv_encode(e, 0xABCD, buf, sizeof buf, &w), RLXKV_OK);
    CHECK_EQ(w, v->len);
    CHECK(w == v->len && memcmp(buf, v->bytes, w) == 0);
    rlxkv_entry_free(e);
}

static void test_stale(void) {
    for (size_t i = 0; i < g_nvec; i++) {
        const vec *v = &g_vec[i];
        uint64_t other = v->fp ^ 1, fp = 0;
        rlxkv_entry dummy, *e = &dummy; /* must be reset to NULL */
        CHECK_EQ(rlxkv_decode(v->bytes, v->len, &other, &e, &fp), RLXKV_STALE);
        CHECK(e == NULL);
        CHECK_EQ(fp, v->fp);
        /* Stale is judged on magic + fingerprint alone, like the reference:
         * a bad body behind another fingerprint is still just stale. */
        uint8_t *b = malloc(v->len);
        memcpy(b, v->bytes, v->len);
        b[16] ^= 0xFF; /* past_len no longer matches */
        CHECK_EQ(rlxkv_decode(b, v->len, &other, &e, NULL), RLXKV_STALE);
        CHECK_EQ(rlxkv_decode(b, 16, &other, &e, NULL), RLXKV_STALE);
        CHECK_EQ(rlxkv_decode(b, v->len, &v->fp, &e, NULL), RLXKV_ERR_CORRUPT);
        CHECK(e == NULL);
        CHECK_EQ(rlxkv_decode(b, 15, &other, &e, NULL), RLXKV_ERR_TRUNCATED);
        b[0] = 'X';
        CHECK_EQ(rlxkv_decode(b, v->len, &other, &e, NULL), RLXKV_ERR_BAD_MAGIC);
        free(b);
    }
}

static void test_bad_magic(void) {
    const vec *v = &g_vec[0];
    uint8_t *b = malloc(v->len);
    rlxkv_entry *e;
    for (size_t i = 0; i < 8; i++) {
        memcpy(b, v->bytes, v->len);
        b[i] ^= 0x20;
        CHECK_EQ(rlxkv_inspect(b, v->len, NULL), RLXKV_ERR_BAD_MAGIC);
        CHECK_EQ(rlxkv_decode(b, v->len, NULL, &e, NULL), RLXKV_ERR_BAD_MAGIC);
        CHECK(e == NULL);
        /* A short buffer that already disagrees is foreign, not truncated. */
        CHECK_EQ(rlxkv_inspect(b, i + 1, NULL), RLXKV_ERR_BAD_MAGIC);
    }
    CHECK_EQ(rlxkv_inspect((const uint8_t *)"RLXKV002", 8, NULL), RLXKV_ERR_BAD_MAGIC);
    CHECK_EQ(rlxkv_inspect((const uint8_t *)"hello, world, this is text", 26, NULL),
             RLXKV_ERR_BAD_MAGIC);
    CHECK_EQ(rlxkv_inspect(NULL, 0, NULL), RLXKV_ERR_TRUNCATED);
    CHECK_EQ(rlxkv_inspect(NULL, 5, NULL), RLXKV_ERR_INVALID);
    CHECK_EQ(rlxkv_decode(v->bytes, v->len, NULL, NULL, NULL), RLXKV_ERR_INVALID);
    free(b);
    /* The error codes are distinct. */
    CHECK(RLXKV_ERR_BAD_MAGIC != RLXKV_ERR_TRUNCATED);
    CHECK(RLXKV_ERR_TRUNCATED != RLXKV_ERR_CORRUPT);
    CHECK(RLXKV_ERR_BAD_MAGIC != RLXKV_ERR_CORRUPT);
}

/* Every prefix of every vector is truncated, for inspect and decode alike;
 * each prefix is copied into its own allocation so ASan sees any overread. */
static void test_every_truncation(void) {
    for (size_t i = 0; i < g_nvec; i++) {
        const vec *v = &g_vec[i];
        size_t bad_inspect = 0, bad_decode = 0, bad_fp = 0;
        for (size_t n = 0; n < v->len; n++) {
            uint8_t *b = malloc(n ? n : 1);
            rlxkv_entry *e = NULL;
            memcpy(b, v->bytes, n);
            if (rlxkv_inspect(b, n, NULL) != RLXKV_ERR_TRUNCATED) bad_inspect++;
            if (rlxkv_decode(b, n, NULL, &e, NULL) != RLXKV_ERR_TRUNCATED || e) bad_decode++;
            if (rlxkv_decode(b, n, &v->fp, &e, NULL) != RLXKV_ERR_TRUNCATED || e) bad_fp++;
            free(b);
        }
        CHECK_EQ(bad_inspect, 0);
        CHECK_EQ(bad_decode, 0);
        CHECK_EQ(bad_fp, 0);
    }
}

static size_t first_block_len_at(const vec *v) { return 32 + 8 * v->n_tokens + 8; }

/* A length field set to values far past the input (and to values that a
 * 32-bit size_t would wrap to something small) is refused, without the huge
 * allocation the reference would attempt (ASan aborts on one). */
static void test_huge_lengths(void) {
    static const uint64_t huge[] = {
        (uint64_t)1 << 62, UINT64_MAX, (uint64_t)1 << 32, ((uint64_t)1 << 32) + 3,
        ((uint64_t)1 << 32) + 1, ((uint64_t)1 << 63) + 1, (uint64_t)SIZE_MAX,
        (uint64_t)SIZE_MAX / 8 + 1, (uint64_t)SIZE_MAX / 4 + 1, (uint64_t)SIZE_MAX / 16 + 1};
    for (size_t i = 0; i < g_nvec; i++) {
        const vec *v = &g_vec[i];
        size_t fields[2 + 2 * MAX_BLOCKS], nf = 0;
        fields[nf++] = 24;                            /* n_tokens (with past_len) */
        fields[nf++] = first_block_len_at(v) - 8;     /* n_layers */
        size_t at = first_block_len_at(v);
        for (size_t b = 0; b < 2 * v->n_layers; b++) { /* every block length */
            fields[nf++] = at;
            at += 8 + 4 * (b < v->n_layers ? v->k_lens[b] : v->v_lens[b - v->n_layers]);
        }
        uint8_t *b = malloc(v->len);
        for (size_t f = 0; f < nf; f++) {
            for (size_t h = 0; h < sizeof huge / sizeof huge[0]; h++) {
                rlxkv_entry *e = NULL;
                int rc1, rc2;
                memcpy(b, v->bytes, v->len);
                rlxkv_store_u64le(b + fields[f], huge[h]);
                if (fields[f] == 24) rlxkv_store_u64le(b + 16, huge[h]);
                rc1 = rlxkv_inspect(b, v->len, NULL);
                rc2 = rlxkv_decode(b, v->len, NULL, &e, NULL);
                CHECK(rc1 == RLXKV_ERR_TRUNCATED || rc1 == RLXKV_ERR_CORRUPT);
                CHECK_EQ(rc2, rc1);
                CHECK(e == NULL);
            }
        }
        /* past_len alone: 2^32 + n_tokens would equal n_tokens if narrowed. */
        memcpy(b, v->bytes, v->len);
        rlxkv_store_u64le(b + 16, ((uint64_t)1 << 32) + v->n_tokens);
        CHECK_EQ(rlxkv_inspect(b, v->len, NULL), RLXKV_ERR_CORRUPT);
        rlxkv_store_u64le(b + 16, UINT64_MAX);
        CHECK_EQ(rlxkv_inspect(b, v->len, NULL), RLXKV_ERR_CORRUPT);
        free(b);
    }
}

static void test_corrupt_fields(void) {
    for (size_t i = 0; i < g_nvec; i++) {
        const vec *v = &g_vec[i];
        uint8_t *b = malloc(v->len + 8);
        rlxkv_entry *e = NULL;

        /* past_len != n_tokens, either way */
        memcpy(b, v->bytes, v->len);
        rlxkv_store_u64le(b + 16, v->n_tokens + 1);
        CHECK_EQ(rlxkv_inspect(b, v->len, NULL), RLXKV_ERR_CORRUPT);
        CHECK_EQ(rlxkv_decode(b, v->len, NULL, &e, NULL), RLXKV_ERR_CORRUPT);
        rlxkv_store_u64le(b + 16, v->n_tokens - 1);
        CHECK_EQ(rlxkv_inspect(b, v->len, NULL), RLXKV_ERR_CORRUPT);

        /* a token that does not fit in u32, at each position (2^32 + 7 would
         * read back as 7 if narrowed blindly) */
        for (size_t t = 0; t < v->n_tokens; t++) {
            memcpy(b, v->bytes, v->len);
            rlxkv_store_u64le(b + 32 + 8 * t, (uint64_t)1 << 32);
            CHECK_EQ(rlxkv_inspect(b, v->len, NULL), RLXKV_ERR_CORRUPT);
            rlxkv_store_u64le(b + 32 + 8 * t, ((uint64_t)1 << 32) + 7);
            CHECK_EQ(rlxkv_decode(b, v->len, NULL, &e, NULL), RLXKV_ERR_CORRUPT);
            CHECK(e == NULL);
            rlxkv_store_u64le(b + 32 + 8 * t, UINT32_MAX); /* the largest valid */
            CHECK_EQ(rlxkv_inspect(b, v->len, NULL), RLXKV_OK);
        }

        /* trailing bytes: 1, 4 (one more float) and 8 */
        for (size_t extra = 1; extra <= 8; extra++) {
            memcpy(b, v->bytes, v->len);
            memset(b + v->len, 0, extra);
            CHECK_EQ(rlxkv_inspect(b, v->len + extra, NULL), RLXKV_ERR_CORRUPT);
            CHECK_EQ(rlxkv_decode(b, v->len + extra, &v->fp, &e, NULL), RLXKV_ERR_CORRUPT);
            CHECK(e == NULL);
        }

        /* one float moved from the last block to the one before: still a
         * valid blob (lengths are per block), decoded accordingly */
        if (v->n_layers) {
            size_t at = first_block_len_at(v), nb = 2 * v->n_layers, last_len = 0, prev_at = 0;
            for (size_t k = 0; k + 1 < nb; k++) {
                prev_at = at;
                at += 8 + 4 * (k < v->n_layers ? v->k_lens[k] : v->v_lens[k - v->n_layers]);
            }
            last_len = v->v_lens[v->n_layers - 1];
            if (nb >= 2 && last_len) {
                size_t prev_len = (size_t)rlxkv_load_u64le(v->bytes + prev_at);
                memcpy(b, v->bytes, v->len);
                rlxkv_store_u64le(b + prev_at, prev_len + 1);
                /* the last block's first float now ends the block before,
                 * and its length field follows that float */
                memcpy(b + at, v->bytes + at + 8, 4);
                rlxkv_store_u64le(b + at + 4, last_len - 1);
                CHECK_EQ(rlxkv_decode(b, v->len, NULL, &e, NULL), RLXKV_OK);
                if (e) {
                    CHECK_EQ(rlxkv_entry_block_len(e, nb - 2), prev_len + 1);
                    CHECK_EQ(rlxkv_entry_block_len(e, nb - 1), last_len - 1);
                    rlxkv_entry_free(e);
                }
            }
        }
        free(b);
    }
}

/* A hand-built entry with the awkward floats, per-block lengths (zero-length
 * blocks too) and the extreme token ids: bit-exact both ways, and the float
 * bytes sit where the format says. */
static void test_bit_exact_floats(void) {
    static const uint32_t bits[] = {
        0x7fc00000u, 0x7fc00001u, 0xffbadbadu, 0x7f800001u, 0xff800001u, /* NaNs */
        0x80000000u, 0x00000000u,                                        /* -0, +0 */
        0x00000001u, 0x807fffffu, 0x00400000u,                           /* subnormals */
        0x7f800000u, 0xff800000u, 0x3f800000u, 0xc2f6e979u, 0x7f7fffffu, 0x00800000u};
    const size_t nb = sizeof bits / sizeof bits[0];
    size_t lens[6] = {nb, 0, 3, 5, nb, 1}; /* 3 layers: K 16,0,3 / V 5,16,1 */
    rlxkv_entry *e = rlxkv_entry_new(4, 3, lens, RLXKV_F32, NULL), *d = NULL;
    uint32_t toks[4] = {0, UINT32_MAX, 0x80000000u, 42};
    size_t size, w, k = 0;
    uint8_t *buf;
    CHECK(e != NULL);
    if (!e) return;
    memcpy(rlxkv_entry_tokens_mut(e), toks, sizeof toks);
    for (size_t b = 0; b < 6; b++)
        for (size_t j = 0; j < lens[b]; j++) ((float *)rlxkv_entry_block_mut(e, b))[j] = u2f(bits[k++ % nb]);
    size = rlxkv_encoded_size(e);
    CHECK_EQ(size, 40 + 8 * 4 + 8 * 6 + 4 * (nb + 0 + 3 + 5 + nb + 1));
    buf = malloc(size);
    CHECK_EQ(rlxkv_encode(e, 0x0123456789abcdefull, buf, size, &w), RLXKV_OK);
    CHECK_EQ(w, size);
    /* fields at their offsets, little-endian */
    CHECK(memcmp(buf, "RLXKV001", 8) == 0);
    CHECK_EQ(rlxkv_load_u64le(buf + 8), 0x0123456789abcdefull);
    CHECK_EQ(buf[8], 0xef);
    CHECK_EQ(rlxkv_load_u64le(buf + 16), 4);
    CHECK_EQ(rlxkv_load_u64le(buf + 24), 4);
    CHECK_EQ(rlxkv_load_u64le(buf + 40), UINT32_MAX);
    CHECK_EQ(rlxkv_load_u64le(buf + 64), 3);  /* n_layers */
    CHECK_EQ(rlxkv_load_u64le(buf + 72), nb); /* K0 length */
    /* the first float of K0 is 0x7fc00000 as bytes 00 00 c0 7f */
    CHECK(buf[80] == 0x00 && buf[81] == 0x00 && buf[82] == 0xc0 && buf[83] == 0x7f);
    /* the second, a NaN with payload 1 */
    CHECK(buf[84] == 0x01 && buf[85] == 0x00 && buf[86] == 0xc0 && buf[87] == 0x7f);

    CHECK_EQ(rlxkv_decode(buf, size, NULL, &d, NULL), RLXKV_OK);
    if (d) {
        CHECK_EQ(rlxkv_entry_n_tokens(d), 4);
        CHECK(memcmp(rlxkv_entry_tokens(d), toks, sizeof toks) == 0);
        CHECK_EQ(rlxkv_entry_n_values(d), rlxkv_entry_n_values(e));
        for (size_t b = 0; b < 6; b++) CHECK_EQ(rlxkv_entry_block_len(d, b), lens[b]);
        CHECK(memcmp(rlxkv_entry_data(d), rlxkv_entry_data(e),
                     4 * rlxkv_entry_n_values(e)) == 0);
        uint8_t *again = malloc(size);
        CHECK_EQ(rlxkv_encode(d, 0x0123456789abcdefull, again, size, NULL), RLXKV_OK);
        CHECK(memcmp(again, buf, size) == 0);
        free(again);
        rlxkv_entry_free(d);
    }
    free(buf);
    rlxkv_entry_free(e);
}

static void test_empty_entry(void) {
    rlxkv_entry *e = rlxkv_entry_new(0, 0, NULL, RLXKV_F32, NULL), *d = NULL;
    uint8_t buf[64];
    size_t w;
    rlxkv_blob_meta m;
    CHECK_EQ(rlxkv_encoded_size(e), 40);
    CHECK_EQ(rlxkv_encode(e, 7, buf, sizeof buf, &w), RLXKV_OK);
    CHECK_EQ(w, 40);
    CHECK_EQ(rlxkv_inspect(buf, w, &m), RLXKV_OK);
    CHECK(m.n_tokens == 0 && m.n_layers == 0 && m.n_values == 0 && m.fingerprint == 7);
    CHECK_EQ(rlxkv_decode(buf, w, NULL, &d, NULL), RLXKV_OK);
    CHECK(d && rlxkv_entry_n_tokens(d) == 0 && rlxkv_entry_n_layers(d) == 0);
    rlxkv_entry_free(d);
    /* n_layers = 1 with no room for its two block lengths */
    rlxkv_store_u64le(buf + 32, 1);
    CHECK_EQ(rlxkv_inspect(buf, w, NULL), RLXKV_ERR_TRUNCATED);
    rlxkv_entry_free(e);
    /* NULL and short-buffer arguments */
    CHECK_EQ(rlxkv_encoded_size(NULL), 0);
    CHECK_EQ(rlxkv_encode(NULL, 0, buf, sizeof buf, NULL), RLXKV_ERR_INVALID);
}

/* More blocks than decode keeps on its stack: the heap path. */
static void test_many_layers(void) {
    enum { L = 300 };
    size_t lens[2 * L];
    for (size_t i = 0; i < 2 * L; i++) lens[i] = i % 3;
    rlxkv_entry *e = rlxkv_entry_new(2, L, lens, RLXKV_F32, NULL), *d = NULL;
    rlxkv_entry_tokens_mut(e)[0] = 5;
    rlxkv_entry_tokens_mut(e)[1] = 6;
    for (size_t i = 0; i < rlxkv_entry_n_values(e); i++)
        ((float *)e->kv)[i] = (float)i; /* kv is bytes: the values are f32 here */
    size_t size = rlxkv_encoded_size(e);
    uint8_t *buf = malloc(size), *again = malloc(size);
    CHECK_EQ(rlxkv_encode(e, 1, buf, size, NULL), RLXKV_OK);
    CHECK_EQ(rlxkv_decode(buf, size, NULL, &d, NULL), RLXKV_OK);
    if (d) {
        CHECK_EQ(rlxkv_entry_n_layers(d), L);
        for (size_t i = 0; i < 2 * L; i++) CHECK_EQ(rlxkv_entry_block_len(d, i), lens[i]);
        CHECK(memcmp(rlxkv_entry_data(d), rlxkv_entry_data(e), 4 * rlxkv_entry_n_values(e)) == 0);
        CHECK_EQ(rlxkv_encode(d, 1, again, size, NULL), RLXKV_OK);
        CHECK(memcmp(again, buf, size) == 0);
        rlxkv_entry_free(d);
    }
    free(buf);
    free(again);
    rlxkv_entry_free(e);
}

/* encoded_size refuses sizes that would wrap: entries faked on the stack,
 * as no allocation that large could be made. */
static void test_encoded_size_overflow(void) {
    size_t offs[3] = {0, 0, 0};
    uint8_t buf[64];
    rlxkv_entry fake;
    memset(&fake, 0, sizeof fake);
    fake.offs = offs;
    fake.n_tokens = SIZE_MAX / 8;
    CHECK_EQ(rlxkv_encoded_size(&fake), 0);
    CHECK_EQ(rlxkv_encode(&fake, 0, buf, sizeof buf, NULL), RLXKV_ERR_INVALID);
    fake.n_tokens = 0;
    fake.n_layers = 1;
    fake.n_values = SIZE_MAX / 4;
    CHECK_EQ(rlxkv_encoded_size(&fake), 0);
    fake.n_values = (SIZE_MAX - 56) / 4 + 1;
    CHECK_EQ(rlxkv_encoded_size(&fake), 0);
    fake.n_values = (SIZE_MAX - 56) / 4; /* the largest that fits */
    CHECK_EQ(rlxkv_encoded_size(&fake), 56 + 4 * fake.n_values);
}

/* Random mutations of the vectors: never a crash, decode agrees with
 * inspect, and any blob that decodes re-encodes to the same bytes (the
 * format has one encoding per entry). */
static uint64_t rng_next(uint64_t *s) {
    *s += 0x9e3779b97f4a7c15ull;
    uint64_t z = *s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void test_mutations(void) {
    uint64_t seed = 12345;
    size_t disagree = 0, not_canonical = 0, ok = 0;
    for (size_t i = 0; i < g_nvec; i++) {
        const vec *v = &g_vec[i];
        for (int round = 0; round < 3000; round++) {
            size_t len = v->len;
            uint8_t *b;
            rlxkv_entry *e = NULL;
            rlxkv_blob_meta m;
            int rc1, rc2;
            if (rng_next(&seed) % 4 == 0) len = (size_t)(rng_next(&seed) % (v->len + 16));
            b = malloc(len ? len : 1);
            for (size_t j = 0; j < len; j++) b[j] = j < v->len ? v->bytes[j] : (uint8_t)rng_next(&seed);
            for (int flips = (int)(rng_next(&seed) % 4); flips >= 0 && len; flips--) {
                /* bias toward the header, where the lengths are */
                size_t lim = (rng_next(&seed) & 1) ? (len < 80 ? len : 80) : len;
                b[rng_next(&seed) % lim] = (uint8_t)rng_next(&seed);
            }
            rc1 = rlxkv_inspect(b, len, &m);
            rc2 = rlxkv_decode(b, len, NULL, &e, NULL);
            if (rc1 != rc2 || (rc2 == RLXKV_OK) != (e != NULL)) disagree++;
            if (e) {
                uint8_t *again = malloc(len);
                ok++;
                if (rlxkv_encoded_size(e) != len ||
                    rlxkv_encode(e, m.fingerprint, again, len, NULL) != RLXKV_OK ||
                    memcmp(again, b, len) != 0)
                    not_canonical++;
                free(again);
                rlxkv_entry_free(e);
            }
            free(b);
        }
    }
    CHECK_EQ(disagree, 0);
    CHECK_EQ(not_canonical, 0);
    CHECK(ok > 0);
}


/* ---------------------------------------------------------------------- *
 * The f16 variant (RLXKVF16) and the exact widening
 * ---------------------------------------------------------------------- */

/* The f32 bits of binary16 h, computed the slow way: from its value as a
 * double for finite ones, by the rule for the others. An oracle apart from
 * the codec's bit shuffling. */
static uint32_t widen_oracle(uint16_t h) {
    int sign = h >> 15, exp = (h >> 10) & 31, man = h & 1023;
    double v;
    if (exp == 31) return (uint32_t)sign << 31 | 0x7f800000u | (uint32_t)man << 13;
    v = exp ? (1024 + man) * ldexp(1.0, exp - 25) : man * ldexp(1.0, -24);
    return f2u((float)(sign ? -v : v)) | (uint32_t)sign << 31; /* -0.0 keeps its sign */
}

static void test_widen_every_f16(void) {
    uint16_t *h = malloc(65536 * 2);
    float *f = malloc(65536 * 4);
    size_t bad = 0;
    for (size_t i = 0; i < 65536; i++) h[i] = (uint16_t)i;
    rlxkv_f16_widen(f, h, 65536);
    for (size_t i = 0; i < 65536; i++) bad += f2u(f[i]) != widen_oracle((uint16_t)i);
    CHECK_EQ(bad, 0);
    /* landmarks, spelled out */
    CHECK_EQ(f2u(f[0x0000]), 0x00000000u); /* +0 */
    CHECK_EQ(f2u(f[0x8000]), 0x80000000u); /* -0 */
    CHECK_EQ(f2u(f[0x0001]), 0x33800000u); /* smallest subnormal, 2^-24 */
    CHECK_EQ(f2u(f[0x03ff]), 0x387fc000u); /* largest subnormal */
    CHECK_EQ(f2u(f[0x3c00]), 0x3f800000u); /* 1 */
    CHECK_EQ(f2u(f[0x7bff]), 0x477fe000u); /* 65504 */
    CHECK_EQ(f2u(f[0x7c00]), 0x7f800000u); /* +inf */
    CHECK_EQ(f2u(f[0xfc00]), 0xff800000u); /* -inf */
    CHECK_EQ(f2u(f[0x7e00]), 0x7fc00000u); /* quiet NaN */
    CHECK_EQ(f2u(f[0x7c01]), 0x7f802000u); /* signalling NaN, payload 1, shifted */
    CHECK_EQ(f2u(f[0xfe55]), 0xffcaa000u); /* negative quiet NaN with a payload */
    free(h);
    free(f);
}

/* The binary16 nearest x (a finite double), ties to even, saturating at
 * +-65504, as a double: an oracle of its own (units of the binary16
 * spacing at |x|, rounded in double), beside rlxkv_q8_dequant's bit
 * arithmetic. */
static double f16_nearest_oracle(double x) {
    double a = fabs(x), units, whole;
    int e;
    if (a >= 65520.0) return x < 0 ? -65504.0 : 65504.0; /* past the last tie: saturated */
    frexp(a, &e); /* a in [2^(e-1), 2^e) */
    double unit = ldexp(1.0, (e - 1 < -14 ? -14 : e - 1) - 10);
    units = a / unit; /* exact: a power of two */
    whole = floor(units);
    if (units - whole > 0.5 || (units - whole == 0.5 && fmod(whole, 2.0) == 1.0)) whole += 1.0;
    a = whole * unit > 65504.0 ? 65504.0 : whole * unit;
    return x < 0 || (x == 0 && signbit(x)) ? -a : a;
}

/* A q8 block's length field: n values, u64 little-endian. */
static void put_len(uint8_t *at, uint64_t n) {
    for (int b = 0; b < 8; b++) at[b] = (uint8_t)(n >> (8 * b));
}

/* rlxkv_q8_dequant over scales a page may hold (finite, non-negative
 * binary16: every subnormal one, then every 13th from 0x400 to the
 * largest, 0x7bff, so that each exponent and mantissa bit is met; all
 * 31,744 once agreed, but take 20 s under the sanitizers and valgrind)
 * and every int8: into f32 each q x scale
 * exactly; into f16 each rounded to nearest, ties to even, saturating
 * (the oracle's, and bit for bit the sign of zero). Then blocks one after
 * another, its sizes and refusals. */
static void test_q8_dequant(void) {
    enum { GROUP = 256, BLOCK = 8 + GROUP + 2 };
    uint8_t block[BLOCK], *row = block + 8;
    float f32[GROUP];
    uint16_t f16[GROUP];
    size_t bad32 = 0, bad16 = 0;
    put_len(block, GROUP);
    for (int j = 0; j < GROUP; j++) row[2 + j] = (uint8_t)j; /* q: 0..127, then -128..-1 */
    for (uint32_t bits = 0; bits < 0x7c00u; bits += bits < 0x400 ? 1 : 13) {
        uint16_t h = (uint16_t)bits;
        float s;
        rlxkv_f16_widen(&s, &h, 1);
        row[0] = (uint8_t)bits;
        row[1] = (uint8_t)(bits >> 8);
        CHECK_EQ(rlxkv_q8_dequant(f32, RLXKV_F32, block, BLOCK, 1, 1, GROUP), BLOCK);
        CHECK_EQ(rlxkv_q8_dequant(f16, RLXKV_F16, block, BLOCK, 1, 1, GROUP), BLOCK);
        for (int j = 0; j < GROUP; j++) {
            double want = (double)(int8_t)row[2 + j] * s, got;
            float w = (float)want;
            bad32 += f2u(f32[j]) != f2u(w) || (double)w != want;
            rlxkv_f16_widen(&w, &f16[j], 1);
            got = w;
            bad16 += got != f16_nearest_oracle(want) || signbit(got) != signbit(f16_nearest_oracle(want));
        }
    }
    CHECK_EQ(bad32, 0);
    CHECK_EQ(bad16, 0);
    /* Two blocks of two rows of 4, each after its length. Landmarks: -0 (a
     * negative q times scale 0), saturation past 65504, and the second
     * block's rows read after its own length field. */
    uint8_t two[2 * (8 + 2 * 6)] = {0};
    const uint8_t rows[2][12] = {{0x00, 0x00, 0x80, 0x05, 0x7f, 0x81,   /* scale 0: -128 -> -0, 5, 127, -127 */
                                  0xb0, 0x60, 0x7f, 0x81, 0x03, 0x01},  /* scale 600: 127 x 600 past 65504 */
                                 {0x00, 0x3c, 0x01, 0xff, 0x02, 0xfe,   /* scale 1 */
                                  0x00, 0x40, 0x01, 0x00, 0x00, 0x00}}; /* scale 2 */
    for (int b = 0; b < 2; b++) {
        put_len(two + 20 * b, 8);
        memcpy(two + 20 * b + 8, rows[b], 12);
    }
    CHECK_EQ(rlxkv_q8_dequant(f16, RLXKV_F16, two, sizeof two, 2, 2, 4), sizeof two);
    CHECK_EQ(f16[0], 0x8000);
    CHECK_EQ(f16[1], 0x0000);
    CHECK_EQ(f16[4], 0x7bff);
    CHECK_EQ(f16[5], 0xfbff);
    CHECK_EQ(f16[6], 0x6708); /* 1800 */
    CHECK_EQ(f16[7], 0x60b0); /* 600 */
    CHECK_EQ(f16[8], 0x3c00);  /* 1 */
    CHECK_EQ(f16[9], 0xbc00);  /* -1 */
    CHECK_EQ(f16[12], 0x4000); /* 2 */
    CHECK_EQ(rlxkv_q8_dequant(f32, RLXKV_F32, two, sizeof two, 2, 2, 4), sizeof two);
    CHECK_EQ(f2u(f32[0]), 0x80000000u); /* -0 */
    CHECK_EQ(f2u(f32[4]), f2u(76200.0f)); /* f32 does not saturate */
    CHECK_EQ(f2u(f32[11]), f2u(-2.0f));
    CHECK_EQ(f2u(f32[12]), f2u(2.0f));
    /* A block whose length is not n_rows x group: 0 (the blocks before it written). */
    put_len(two + 20, 9);
    f32[8] = 7;
    CHECK_EQ(rlxkv_q8_dequant(f32, RLXKV_F32, two, sizeof two, 2, 2, 4), 0);
    CHECK_EQ(f2u(f32[8]), f2u(7.0f));
    /* A scale that is infinite, NaN or negative: 0. */
    two[8] = 0x00;
    two[9] = 0x7c;
    CHECK_EQ(rlxkv_q8_dequant(f32, RLXKV_F32, two, sizeof two, 2, 2, 4), 0);
    two[9] = 0x80;
    CHECK_EQ(rlxkv_q8_dequant(f32, RLXKV_F32, two, sizeof two, 2, 2, 4), 0);
    two[9] = 0x00;
    /* Blocks past the bytes given: nothing read. */
    put_len(two + 20, 8);
    f32[0] = 7;
    CHECK_EQ(rlxkv_q8_dequant(f32, RLXKV_F32, two, sizeof two - 1, 2, 2, 4), 0);
    CHECK_EQ(f2u(f32[0]), f2u(7.0f));
    /* Nothing read or written for another dtype, no source, a group outside 1..65536, or a size past SIZE_MAX. */
    f32[0] = 7;
    CHECK_EQ(rlxkv_q8_dequant(f32, 2, block, BLOCK, 1, 1, GROUP), 0);
    CHECK_EQ(rlxkv_q8_dequant(f32, -1, block, BLOCK, 1, 1, GROUP), 0);
    CHECK_EQ(rlxkv_q8_dequant(f32, RLXKV_F32, NULL, BLOCK, 1, 1, GROUP), 0);
    CHECK_EQ(rlxkv_q8_dequant(f32, RLXKV_F32, block, BLOCK, 1, 1, 0), 0);
    CHECK_EQ(rlxkv_q8_dequant(f32, RLXKV_F32, block, SIZE_MAX, 1, 1, 65537), 0);
    CHECK_EQ(rlxkv_q8_dequant(f32, RLXKV_F32, block, SIZE_MAX, 2, SIZE_MAX / 65538, GROUP), 0);
    CHECK_EQ(rlxkv_q8_dequant(f32, RLXKV_F32, block, SIZE_MAX, SIZE_MAX, 1, 1), 0);
#if SIZE_MAX > 0xffffffffu
    /* Rows whose bytes overflow size_t (2^48 rows of 65534 + 2 wrap to 0):
     * refused before the block's length is read, though it says as much. */
    uint8_t wrap[8];
    put_len(wrap, (uint64_t)65534 << 48);
    CHECK_EQ(rlxkv_q8_dequant(f32, RLXKV_F32, wrap, sizeof wrap, 1, (size_t)1 << 48, 65534), 0);
#endif
    CHECK_EQ(f2u(f32[0]), f2u(7.0f));
    CHECK_EQ(rlxkv_q8_dequant(f32, RLXKV_F32, block, BLOCK, 0, 1, GROUP), 0); /* no blocks: nothing read */
}

/* An f16 entry whose values are every landmark bit pattern, and tokens at
 * the extremes. */
static rlxkv_entry *f16_entry(size_t *lens) {
    static const uint16_t bits[] = {0x7e00, 0x7e01, 0xfe55, 0x7c01, 0xfc01, 0x8000, 0x0000,
                                    0x0001, 0x83ff, 0x0200, 0x7c00, 0xfc00, 0x3c00, 0xc248,
                                    0x7bff, 0x0400};
    const size_t nb = sizeof bits / sizeof bits[0];
    rlxkv_entry *e = rlxkv_entry_new(3, 3, lens, RLXKV_F16, NULL);
    uint32_t toks[3] = {0, UINT32_MAX, 7};
    size_t k = 0;
    if (!e) return NULL;
    memcpy(rlxkv_entry_tokens_mut(e), toks, sizeof toks);
    for (size_t b = 0; b < 6; b++)
        for (size_t j = 0; j < lens[b]; j++) ((uint16_t *)rlxkv_entry_block_mut(e, b))[j] = bits[k++ % nb];
    return e;
}

static void test_f16_round_trip(void) {
    size_t lens[6] = {16, 0, 3, 5, 16, 1}, n = 16 + 3 + 5 + 16 + 1;
    rlxkv_entry *e = f16_entry(lens), *d = NULL;
    rlxkv_blob_meta m;
    size_t size, w;
    uint8_t *buf;
    CHECK(e != NULL);
    if (!e) return;
    size = rlxkv_encoded_size(e);
    CHECK_EQ(size, 40 + 8 * 3 + 8 * 6 + 2 * n); /* 2 bytes per value, lengths count values */
    buf = malloc(size);
    CHECK_EQ(rlxkv_encode(e, 0xabcdull, buf, size - 1, &w), RLXKV_ERR_INVALID);
    CHECK_EQ(w, 0);
    CHECK_EQ(rlxkv_encode(e, 0xabcdull, buf, size, &w), RLXKV_OK);
    CHECK_EQ(w, size);
    CHECK(memcmp(buf, "RLXKVF16", 8) == 0);
    CHECK_EQ(rlxkv_load_u64le(buf + 8), 0xabcd);
    CHECK_EQ(rlxkv_load_u64le(buf + 56), 3);  /* n_layers */
    CHECK_EQ(rlxkv_load_u64le(buf + 64), 16); /* K0 length, in values */
    CHECK(buf[72] == 0x00 && buf[73] == 0x7e && buf[74] == 0x01 && buf[75] == 0x7e); /* u16 LE */
    CHECK_EQ(rlxkv_inspect(buf, size, &m), RLXKV_OK);
    CHECK(m.dtype == RLXKV_F16 && m.n_values == n && m.n_layers == 3 && m.n_tokens == 3);
    CHECK(m.fingerprint == 0xabcd && m.blob_bytes == size);
    CHECK_EQ(rlxkv_decode(buf, size, NULL, &d, NULL), RLXKV_OK);
    if (d) {
        uint8_t *again = malloc(size);
        CHECK_EQ(rlxkv_entry_dtype(d), RLXKV_F16);
        CHECK_EQ(rlxkv_entry_kv_bytes(d), 2 * n);
        for (size_t b = 0; b < 6; b++) CHECK_EQ(rlxkv_entry_block_len(d, b), lens[b]);
        CHECK(memcmp(rlxkv_entry_data(d), rlxkv_entry_data(e), 2 * n) == 0); /* bits, NaNs too */
        CHECK(memcmp(rlxkv_entry_tokens(d), rlxkv_entry_tokens(e), 12) == 0);
        CHECK_EQ(rlxkv_encode(d, 0xabcdull, again, size, NULL), RLXKV_OK);
        CHECK(memcmp(again, buf, size) == 0);
        free(again);
        rlxkv_entry_free(d);
    }
    /* stale after the head, as RLXKV001 */
    CHECK_EQ(rlxkv_decode(buf, size, &(uint64_t){1}, &d, NULL), RLXKV_STALE);
    CHECK(d == NULL);
    /* every truncation is TRUNCATED, a trailing byte CORRUPT */
    for (size_t len = 0; len < size; len++) CHECK_EQ(rlxkv_inspect(buf, len, NULL), RLXKV_ERR_TRUNCATED);
    {
        uint8_t *more = malloc(size + 1);
        memcpy(more, buf, size);
        more[size] = 0;
        CHECK_EQ(rlxkv_inspect(more, size + 1, NULL), RLXKV_ERR_CORRUPT);
        free(more);
    }
    /* an odd block length no longer fits: the value bytes are counted in 2s */
    rlxkv_store_u64le(buf + 64, 17);
    CHECK_EQ(rlxkv_inspect(buf, size, NULL), RLXKV_ERR_TRUNCATED);
    /* a magic that is neither */
    memcpy(buf, "RLXKVF32", 8);
    CHECK_EQ(rlxkv_inspect(buf, size, NULL), RLXKV_ERR_BAD_MAGIC);
    CHECK_EQ(rlxkv_inspect((const uint8_t *)"RLXKVF", 6, NULL), RLXKV_ERR_TRUNCATED);
    CHECK_EQ(rlxkv_inspect((const uint8_t *)"RLXKVG", 6, NULL), RLXKV_ERR_BAD_MAGIC);
    free(buf);
    rlxkv_entry_free(e);
}

/* rlxkv_encode_f32 writes an f16 entry as the RLXKV001 blob of the f32
 * entry holding the widened values, byte for byte; an f32 entry as
 * rlxkv_encode does. */
static void test_encode_f32_widens(void) {
    size_t lens[6] = {16, 0, 3, 5, 16, 1}, n = 41, size, w;
    rlxkv_entry *e = f16_entry(lens), *wide = rlxkv_entry_new(3, 3, lens, RLXKV_F32, NULL), *d = NULL;
    uint8_t *a, *b;
    CHECK(e && wide);
    if (!e || !wide) return;
    memcpy(rlxkv_entry_tokens_mut(wide), rlxkv_entry_tokens(e), 12);
    rlxkv_f16_widen((float *)rlxkv_entry_block_mut(wide, 0), rlxkv_entry_data(e), n);
    size = rlxkv_encoded_size_f32(e);
    CHECK_EQ(size, rlxkv_encoded_size(wide));
    a = malloc(size);
    b = malloc(size);
    CHECK_EQ(rlxkv_encode_f32(e, 9, a, size - 1, &w), RLXKV_ERR_INVALID);
    CHECK_EQ(rlxkv_encode_f32(e, 9, a, size, &w), RLXKV_OK);
    CHECK_EQ(w, size);
    CHECK_EQ(rlxkv_encode(wide, 9, b, size, NULL), RLXKV_OK);
    CHECK(memcmp(a, b, size) == 0);
    CHECK(memcmp(a, "RLXKV001", 8) == 0);
    CHECK_EQ(rlxkv_decode(a, size, NULL, &d, NULL), RLXKV_OK);
    CHECK(d && rlxkv_entry_dtype(d) == RLXKV_F32);
    rlxkv_entry_free(d);
    /* an f32 entry: the same as rlxkv_encode */
    CHECK_EQ(rlxkv_encode_f32(wide, 9, a, size, NULL), RLXKV_OK);
    CHECK(memcmp(a, b, size) == 0);
    free(a);
    free(b);
    rlxkv_entry_free(e);
    rlxkv_entry_free(wide);
}

/* Past RLXKV_MAX_LAYERS: a valid blob of empty blocks is refused with
 * LIMIT (after the length checks), and no such blob is written. */
static void test_layer_limit(void) {
    for (size_t layers = RLXKV_MAX_LAYERS; layers <= RLXKV_MAX_LAYERS + 1; layers++) {
        size_t len = 40 + 8 + 16 * layers;
        uint8_t *buf = calloc(1, len);
        rlxkv_entry *d = NULL;
        int want = layers > RLXKV_MAX_LAYERS ? RLXKV_ERR_LIMIT : RLXKV_OK;
        memcpy(buf, "RLXKVF16", 8);
        rlxkv_store_u64le(buf + 16, 1);
        rlxkv_store_u64le(buf + 24, 1);
        rlxkv_store_u64le(buf + 40, layers);
        CHECK_EQ(rlxkv_inspect(buf, len, NULL), want);
        CHECK_EQ(rlxkv_decode(buf, len, NULL, &d, NULL), want);
        CHECK((d != NULL) == (want == RLXKV_OK));
        if (d) {
            size_t w;
            uint8_t *again = malloc(len);
            CHECK_EQ(rlxkv_encode(d, 0, again, len, &w), RLXKV_OK);
            CHECK(w == len && memcmp(again, buf, len) == 0);
            free(again);
        }
        /* a length check still comes first: one byte short is truncated */
        CHECK_EQ(rlxkv_inspect(buf, len - 1, NULL), RLXKV_ERR_TRUNCATED);
        rlxkv_entry_free(d);
        free(buf);
    }
    {
        size_t *lens = calloc(2 * (RLXKV_MAX_LAYERS + 1), sizeof *lens);
        rlxkv_entry *e = rlxkv_entry_new(1, RLXKV_MAX_LAYERS + 1, lens, RLXKV_F32, NULL);
        uint8_t buf[8];
        CHECK(e != NULL);
        CHECK_EQ(rlxkv_encoded_size(e), 0);
        CHECK_EQ(rlxkv_encoded_size_f32(e), 0);
        CHECK_EQ(rlxkv_encode(e, 0, buf, sizeof buf, NULL), RLXKV_ERR_LIMIT);
        rlxkv_entry_free(e);
        free(lens);
    }
}

/* ---------------------------------------------------------------------- *
 * Names (FORMATS.md, Names)
 * ---------------------------------------------------------------------- */

/* A blob's 64-bit name is rlxkv_hash64 of its tokens (little-endian u32s),
 * seeded with the fingerprint, in 16 hex digits. */
static void test_blob_name(void) {
    uint32_t t[3] = {7, 0x01020304u, UINT32_MAX};
    uint8_t le[12];
    char name[32], want[32];
    for (size_t i = 0; i < 3; i++)
        for (size_t b = 0; b < 4; b++) le[4 * i + b] = (uint8_t)(t[i] >> (8 * b));
    for (size_t n = 0; n <= 3; n++) {
        rlxkv_blob_name(0xABCD, t, n, name);
        snprintf(want, sizeof want, "%016" PRIx64 ".rlxkv", rlxkv_hash64(le, 4 * n, 0xABCD));
        CHECK(!strcmp(name, want));
        CHECK_EQ(strlen(name), 22);
    }
    rlxkv_blob_name(0xABCE, t, 3, want);
    CHECK(strcmp(name, want) != 0); /* the fingerprint seeds the name */
    /* Seed and first token must not cancel out: (1, [1]) vs (2, [2]). */
    {
        uint32_t one = 1, two = 2;
        rlxkv_blob_name(1, &one, 1, name);
        rlxkv_blob_name(2, &two, 1, want);
        CHECK(strcmp(name, want) != 0);
    }
    rlxkv_blob_name(0, NULL, 0, name);
    CHECK_EQ(strlen(name), 22);
}

/* Names are zero-padded hex, formatted by hand (no printf in the wasm):
 * hashes with leading zero digits. */
static void test_blob_name_padding(void) {
    uint32_t t[1];
    char name[32], want[32];
    int found = 0;
    for (uint32_t i = 0; i < 100000 && found < 3; i++) {
        uint8_t le[4] = {(uint8_t)i, (uint8_t)(i >> 8), (uint8_t)(i >> 16), (uint8_t)(i >> 24)};
        uint64_t h = rlxkv_hash64(le, 4, 0x1111222233334444ull);
        if (h >> 56) continue; /* two leading zeros at least */
        t[0] = i;
        rlxkv_blob_name(0x1111222233334444ull, t, 1, name);
        snprintf(want, sizeof want, "%016" PRIx64 ".rlxkv", h);
        CHECK(!strcmp(name, want));
        found++;
    }
    CHECK_EQ(found, 3);
}

/* A page name is its key's 32 hex digits; every token, the count, the
 * fingerprint and the dtype change it. */
static void test_page_names(void) {
    const uint32_t t[3] = {90, 91, 92};
    char page[RLXKV_PAGE_NAME_CAP], other[RLXKV_PAGE_NAME_CAP], want[RLXKV_PAGE_NAME_CAP];
    uint64_t key[2];
    rlxkv_page_name(1, RLXKV_F32, t, 3, page);
    rlxkv_page_key(1, RLXKV_F32, t, 3, key);
    CHECK(key[0] != 0);
    snprintf(want, sizeof want, "%016" PRIx64 "%016" PRIx64 ".rlxkv", key[0], key[1]);
    CHECK(!strcmp(page, want));
    CHECK_EQ(strlen(page), 32 + 6);
    rlxkv_page_name(1, RLXKV_F16, t, 3, other);
    CHECK(strcmp(page, other) != 0);
    rlxkv_page_name(2, RLXKV_F32, t, 3, other);
    CHECK(strcmp(page, other) != 0);
    rlxkv_page_name(1, RLXKV_F32, t, 2, other);
    CHECK(strcmp(page, other) != 0);
    rlxkv_page_name(1, RLXKV_F32, (const uint32_t[]){90, 91, 93}, 3, other);
    CHECK(strcmp(page, other) != 0);
}

int main(void) {
    g_nvec = load_vectors(g_vec, sizeof g_vec / sizeof g_vec[0]);
    RUN(test_manifest_present);
    if (g_nvec) {
        RUN(test_vectors_decode);
        RUN(test_vectors_reencode);
        RUN(test_encode_matches_reference);
        RUN(test_stale);
        RUN(test_bad_magic);
        RUN(test_every_truncation);
        RUN(test_huge_lengths);
        RUN(test_corrupt_fields);
        RUN(test_mutations);
    }
    RUN(test_bit_exact_floats);
    RUN(test_empty_entry);
    RUN(test_many_layers);
    RUN(test_encoded_size_overflow);
    RUN(test_widen_every_f16);
    RUN(test_q8_dequant);
    RUN(test_f16_round_trip);
    RUN(test_encode_f32_widens);
    RUN(test_layer_limit);
    RUN(test_blob_name);
    RUN(test_blob_name_padding);
    RUN(test_page_names);
    free_vectors();
    return check_report();
}
