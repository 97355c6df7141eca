/* The RLXKV001 codec (see FORMAT.md).
 *
 * Every length read from a blob is checked against the bytes that remain
 * before it is used, and in 64-bit arithmetic: a length can never exceed
 * what the input holds, so nothing derived from it overflows a size_t (wasm
 * has a 32-bit size_t, and a u64 field must not be silently narrowed there).
 * rlxkv_inspect does the whole validation without allocating; rlxkv_decode
 * runs it first, then makes one entry and copies into it. */
#include <string.h>
#include <stdlib.h>

#include "codec.h"
#include "entry.h"

#define HEAD_BYTES RLXKV_BLOB_HEAD_BYTES
/* Block-length arrays up to this many blocks live on the stack in decode. */
#define STACK_BLOCKS 256

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
    if (e->n_floats > (SIZE_MAX - size) / 4) return 0;
    return size + 4 * e->n_floats;
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
        put_floats(buf + at, e->kv + e->offs[b], len);
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

int rlxkv_inspect(const uint8_t *buf, size_t len, rlxkv_blob_meta *meta) {
    uint64_t fp, past_len, n_tokens, n_layers;
    size_t at, rem, n_floats = 0;
    int rc = rlxkv_blob_head(buf, len, &fp);
    if (rc) return rc;
    if (len < HEAD_BYTES) return RLXKV_ERR_TRUNCATED;
    past_len = rlxkv_load_u64le(buf + 16);
    n_tokens = rlxkv_load_u64le(buf + 24);
    if (past_len != n_tokens) return RLXKV_ERR_CORRUPT;
    at = HEAD_BYTES;
    rem = len - at;
    /* Compared as u64 before any narrowing: each token takes 8 bytes. */
    if (n_tokens > rem / 8) return RLXKV_ERR_TRUNCATED;
    for (uint64_t i = 0; i < n_tokens; i++, at += 8)
        if (rlxkv_load_u64le(buf + at) > UINT32_MAX) return RLXKV_ERR_CORRUPT;
    rem = len - at;

    if (rem < 8) return RLXKV_ERR_TRUNCATED;
    n_layers = rlxkv_load_u64le(buf + at);
    at += 8;
    rem -= 8;
    /* Each layer has at least two 8-byte block lengths. */
    if (n_layers > rem / 16) return RLXKV_ERR_TRUNCATED;
    for (uint64_t b = 0; b < 2 * n_layers; b++) {
        uint64_t blen;
        if (rem < 8) return RLXKV_ERR_TRUNCATED;
        blen = rlxkv_load_u64le(buf + at);
        at += 8;
        rem -= 8;
        if (blen > rem / 4) return RLXKV_ERR_TRUNCATED;
        at += 4 * (size_t)blen;
        rem -= 4 * (size_t)blen;
        n_floats += (size_t)blen; /* <= len / 4: cannot wrap */
    }
    if (rem) return RLXKV_ERR_CORRUPT;

    if (meta) {
        meta->fingerprint = fp;
        meta->n_tokens = (size_t)n_tokens;
        meta->n_layers = (size_t)n_layers;
        meta->n_floats = n_floats;
        meta->blob_bytes = len;
    }
    return RLXKV_OK;
}

int rlxkv_decode(const uint8_t *buf, size_t len, const uint64_t *expect_fp,
                 rlxkv_entry **out, uint64_t *fp_out) {
    size_t stack_lens[STACK_BLOCKS], *lens = stack_lens, n_blocks, at, ltok;
    rlxkv_blob_meta meta;
    rlxkv_entry *e;
    uint64_t fp;
    int rc;

    if (!out) return RLXKV_ERR_INVALID;
    *out = NULL;
    rc = rlxkv_blob_head(buf, len, &fp);
    if (rc) return rc;
    if (fp_out) *fp_out = fp;
    /* As the reference: another model's blob is stale whatever follows. */
    if (expect_fp && fp != *expect_fp) return RLXKV_STALE;
    rc = rlxkv_inspect(buf, len, &meta);
    if (rc) return rc;

    /* Validated: every offset below is inside buf. The lengths array is at
     * most len bytes (each block length takes 8 bytes of the blob). */
    n_blocks = 2 * meta.n_layers;
    if (n_blocks > STACK_BLOCKS) {
        lens = malloc(n_blocks * sizeof *lens);
        if (!lens) return RLXKV_ERR_NOMEM;
    }
    ltok = HEAD_BYTES + 8 * meta.n_tokens + 8; /* first block length */
    at = ltok;
    for (size_t b = 0; b < n_blocks; b++) {
        lens[b] = (size_t)rlxkv_load_u64le(buf + at);
        at += 8 + 4 * lens[b];
    }
    e = rlxkv_entry_new(meta.n_tokens, meta.n_layers, n_blocks ? lens : NULL, &rc);
    if (lens != stack_lens) free(lens);
    if (!e) return rc;

    /* Tokens are u64 in the blob and u32 in memory (inspect checked each
     * fits): narrowed one by one. */
    for (size_t i = 0; i < meta.n_tokens; i++)
        e->tokens[i] = (uint32_t)rlxkv_load_u64le(buf + HEAD_BYTES + 8 * i);
    at = ltok;
    for (size_t b = 0; b < n_blocks; b++) {
        size_t n = e->offs[b + 1] - e->offs[b];
        get_floats(e->kv + e->offs[b], buf + at + 8, n);
        at += 8 + 4 * n;
    }
    *out = e;
    return RLXKV_OK;
}
