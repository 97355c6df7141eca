/* The RLXKV001 codec (see FORMAT.md).
 *
 * Every length read from a blob is checked against the bytes that remain
 * before it is used, and in 64-bit arithmetic: a length can never exceed
 * what the input holds, so nothing derived from it overflows a size_t (wasm
 * has a 32-bit size_t, and a u64 field must not be silently narrowed there).
 * One decoder (rlxkv_decode_src) does it all, for a blob in memory and for a
 * file the store reads piece by piece: rlxkv_inspect is it without the
 * entry; with one, the entry is allocated once the header says how large
 * it is (never more than the blob implies) and each block goes straight
 * into place. */
#include <string.h>
#include <stdlib.h>

#include "codec.h"
#include "entry.h"

#define HEAD_BYTES RLXKV_BLOB_HEAD_BYTES

static const uint8_t kMagic[8] = {'R', 'L', 'X', 'K', 'V', '0', '0', '1'};

/* Floats are little-endian f32 in a blob; on little-endian hosts a block is
 * one memcpy, elsewhere each float's bits are placed byte by byte (a path
 * that is right on any host: RLXKV_CODEC_PORTABLE forces it, for testing).
 * Bits are moved, never values, so NaN payloads and -0.0 survive. */
#if RLXKV_BIG_ENDIAN || defined(RLXKV_CODEC_PORTABLE)
#define FLOATS_BYTEWISE 1
#else
#define FLOATS_BYTEWISE 0
#endif

static void put_floats(uint8_t *dst, const float *src, size_t n) {
#if FLOATS_BYTEWISE
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &src[i], 4);
        dst[4 * i] = (uint8_t)u;
        dst[4 * i + 1] = (uint8_t)(u >> 8);
        dst[4 * i + 2] = (uint8_t)(u >> 16);
        dst[4 * i + 3] = (uint8_t)(u >> 24);
    }
#else
    if (n) memcpy(dst, src, n * sizeof(float));
#endif
}

static void get_floats(float *dst, const uint8_t *src, size_t n) {
#if FLOATS_BYTEWISE
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = src + 4 * i;
        uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                     (uint32_t)p[3] << 24;
        memcpy(&dst[i], &u, 4);
    }
#else
    if (n) memcpy(dst, src, n * sizeof(float));
#endif
}

size_t rlxkv_encoded_size(const rlxkv_entry *e) {
    size_t size, n_blocks;
    if (!e) return 0;
    n_blocks = 2 * e->n_layers; /* entry_new keeps this from wrapping */
    /* head + n_layers field, then 8 per token and per block length. */
    if (e->n_tokens > (SIZE_MAX - HEAD_BYTES - 8) / 8) return 0;
    size = HEAD_BYTES + 8 + 8 * e->n_tokens;
    if (n_blocks > (SIZE_MAX - size) / 8) return 0;
    size += 8 * n_blocks;
    if (e->dtype != RLXKV_F32) return 0; /* RLXKV001 holds f32 only */
    if (e->n_values > (SIZE_MAX - size) / 4) return 0;
    return size + 4 * e->n_values;
}

int rlxkv_encode(const rlxkv_entry *e, uint64_t fingerprint, uint8_t *buf,
                 size_t cap, size_t *written) {
    size_t size = rlxkv_encoded_size(e), n_blocks, at;
    if (written) *written = 0;
    if (!size || !buf || cap < size) return RLXKV_ERR_INVALID;

    memcpy(buf, kMagic, 8);
    rlxkv_store_u64le(buf + 8, fingerprint);
    rlxkv_store_u64le(buf + 16, (uint64_t)e->n_tokens); /* past_len */
    rlxkv_store_u64le(buf + 24, (uint64_t)e->n_tokens);
    at = HEAD_BYTES;
    for (size_t i = 0; i < e->n_tokens; i++, at += 8)
        rlxkv_store_u64le(buf + at, e->tokens[i]);
    rlxkv_store_u64le(buf + at, (uint64_t)e->n_layers);
    at += 8;
    n_blocks = 2 * e->n_layers;
    for (size_t b = 0; b < n_blocks; b++) {
        size_t len = e->offs[b + 1] - e->offs[b];
        rlxkv_store_u64le(buf + at, (uint64_t)len);
        at += 8;
        put_floats(buf + at, (const float *)e->kv + e->offs[b], len);
        at += 4 * len;
    }
    if (written) *written = at;
    return RLXKV_OK;
}

/* A short buffer that agrees with the magic as far as it goes is a
 * truncated blob, not a foreign one. */
int rlxkv_blob_head(const uint8_t *buf, size_t len, uint64_t *fp) {
    if (!buf) return len ? RLXKV_ERR_INVALID : RLXKV_ERR_TRUNCATED;
    if (memcmp(buf, kMagic, len < 8 ? len : 8) != 0) return RLXKV_ERR_BAD_MAGIC;
    if (len < 16) return RLXKV_ERR_TRUNCATED;
    *fp = rlxkv_load_u64le(buf + 8);
    return RLXKV_OK;
}

/* A read position in a source. */
typedef struct cursor {
    const rlxkv_src *src;
    uint64_t at;
} cursor;

/* The next n bytes, which the caller's checks have found inside the blob:
 * in place when it is in memory, else read into dst. NULL (and *rc) when
 * the reader fails. */
static const uint8_t *next(cursor *c, uint8_t *dst, size_t n, int *rc) {
    const uint8_t *p = dst;
    if (c->src->buf) {
        p = c->src->buf + c->at;
    } else if (n) {
        int r = c->src->read(c->src->ctx, dst, n);
        if (r) {
            *rc = r;
            return NULL;
        }
    }
    c->at += n;
    return p;
}

/* Floats read raw into place: give them this host's byte order. */
static void floats_in_place(float *f, size_t n) {
#if FLOATS_BYTEWISE
    get_floats(f, (const uint8_t *)f, n); /* each float read whole, then written */
#else
    (void)f;
    (void)n;
#endif
}

int rlxkv_decode_src(const rlxkv_src *src, const uint64_t *expect_fp, rlxkv_entry **out,
                     rlxkv_blob_meta *meta, uint64_t *fp_out) {
    uint8_t head[HEAD_BYTES] = {0}, word[8], *scratch = NULL;
    const uint8_t *p, *toks = NULL;
    uint64_t fp, n_tokens, n_layers, rem, cap, used = 0;
    size_t h;
    rlxkv_entry *e = NULL;
    cursor c;
    int rc = RLXKV_OK;

    if (out) *out = NULL;
    if (!src || (!src->buf && (!out || !src->read)) || src->len > SIZE_MAX)
        return RLXKV_ERR_INVALID;
    c.src = src;
    c.at = 0;

    /* Magic and fingerprint first: a short or foreign blob is told by what
     * it has, and staleness (as in the reference) by nothing more. */
    h = src->len < HEAD_BYTES ? (size_t)src->len : HEAD_BYTES;
    if (!(p = next(&c, head, h, &rc))) return rc;
    rc = rlxkv_blob_head(p, h, &fp);
    if (rc) return rc;
    if (fp_out) *fp_out = fp;
    if (out && expect_fp && fp != *expect_fp) return RLXKV_STALE;
    if (h < HEAD_BYTES) return RLXKV_ERR_TRUNCATED;
    if (rlxkv_load_u64le(p + 16) != (n_tokens = rlxkv_load_u64le(p + 24)))
        return RLXKV_ERR_CORRUPT; /* past_len */

    /* Every length is compared, as a u64 before any narrowing, with the
     * bytes that remain: each token takes 8. */
    rem = src->len - HEAD_BYTES;
    if (n_tokens > rem / 8) return RLXKV_ERR_TRUNCATED;
    rem -= 8 * n_tokens;
    if (n_tokens) {
        /* A file's tokens wait in a scratch array: the entry's size is
         * known only from n_layers, which follows them. */
        if (!src->buf && !(scratch = malloc(8 * (size_t)n_tokens))) return RLXKV_ERR_NOMEM;
        if (!(toks = next(&c, scratch, 8 * (size_t)n_tokens, &rc))) goto done;
    }
    for (uint64_t i = 0; i < n_tokens; i++)
        if (rlxkv_load_u64le(toks + 8 * i) > UINT32_MAX) {
            rc = RLXKV_ERR_CORRUPT;
            goto done;
        }
    rc = RLXKV_ERR_TRUNCATED;
    if (rem < 8) goto done;
    if (!(p = next(&c, word, 8, &rc))) goto done;
    n_layers = rlxkv_load_u64le(p);
    rem -= 8;
    /* Each layer has at least two 8-byte block lengths; what is left after
     * them all bounds the floats. */
    if (n_layers > rem / 16) goto done;
    cap = (rem - 16 * n_layers) / 4;
    if (out) {
        e = rlxkv_entry_alloc((size_t)n_tokens, (size_t)n_layers, (size_t)cap, RLXKV_F32, &rc);
        if (!e) goto done;
        for (size_t i = 0; i < n_tokens; i++)
            e->tokens[i] = (uint32_t)rlxkv_load_u64le(toks + 8 * i);
    }
    rc = RLXKV_OK;
    for (uint64_t b = 0; b < 2 * n_layers; b++) {
        uint64_t blen;
        if (!(p = next(&c, word, 8, &rc))) goto done;
        blen = rlxkv_load_u64le(p);
        /* A block longer than the room left beside the lengths still to
         * come leaves one of them cut off: truncated. */
        if (blen > cap - used) {
            rc = RLXKV_ERR_TRUNCATED;
            goto done;
        }
        if (e) {
            float *dst = (float *)e->kv + used;
            e->offs[b + 1] = (size_t)(used + blen);
            if (src->buf) {
                get_floats(dst, src->buf + c.at, (size_t)blen);
            } else if (blen) {
                rc = src->read(src->ctx, (uint8_t *)dst, 4 * (size_t)blen);
                if (rc) goto done;
                floats_in_place(dst, (size_t)blen);
            }
        }
        c.at += 4 * blen;
        used += blen;
    }
    /* Nothing may follow the last block. */
    if (c.at != src->len) {
        rc = RLXKV_ERR_CORRUPT;
        goto done;
    }
    if (meta) {
        meta->fingerprint = fp;
        meta->n_tokens = (size_t)n_tokens;
        meta->n_layers = (size_t)n_layers;
        meta->dtype = RLXKV_F32;
        meta->n_values = (size_t)used;
        meta->blob_bytes = (size_t)src->len;
    }
done:
    free(scratch);
    if (rc) {
        rlxkv_entry_free(e);
        return rc;
    }
    if (out) *out = e;
    return RLXKV_OK;
}

int rlxkv_inspect(const uint8_t *buf, size_t len, rlxkv_blob_meta *meta) {
    rlxkv_src src = {buf, len, NULL, NULL};
    uint64_t fp;
    if (!buf) return rlxkv_blob_head(buf, len, &fp);
    return rlxkv_decode_src(&src, NULL, NULL, meta, NULL);
}

int rlxkv_decode(const uint8_t *buf, size_t len, const uint64_t *expect_fp,
                 rlxkv_entry **out, uint64_t *fp_out) {
    rlxkv_src src = {buf, len, NULL, NULL};
    uint64_t fp;
    if (!out) return RLXKV_ERR_INVALID;
    *out = NULL;
    if (!buf) return rlxkv_blob_head(buf, len, &fp);
    return rlxkv_decode_src(&src, expect_fp, out, NULL, fp_out);
}
