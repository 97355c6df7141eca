/* The blob codec: RLXKV001 (f32 values) and its f16 variant RLXKVF16, which
 * differs only in the magic and in 2-byte values, pages of both, and the
 * names a store gives them (see FORMATS.md).
 *
 * Every length read from a blob is checked against the bytes that remain
 * before it is used, and in 64-bit arithmetic: a length can never exceed
 * what the input holds, so nothing derived from it overflows a size_t (wasm
 * has a 32-bit size_t, and a u64 field must not be silently narrowed there).
 * One decoder (decode) does it all: rlxkv_inspect is it without the entry;
 * with one, the entry is allocated once the header says how large it is
 * (never more than the blob implies) and each block goes straight into
 * place. One encoder (encode) writes every blob. */
#include <string.h>
#include <stdlib.h>

#include "entry.h"
#include "hash.h"

/* magic, fingerprint, past_len, n_tokens; the u64 tokens follow. */
#define HEAD_BYTES 32

static const uint8_t kMagic32[8] = {'R', 'L', 'X', 'K', 'V', '0', '0', '1'};
static const uint8_t kMagic16[8] = {'R', 'L', 'X', 'K', 'V', 'F', '1', '6'};
/* Pages (FORMATS.md): a blob's layout with the values of tokens start..n-1
 * only, and its parent's token count and name after the tokens. */
static const uint8_t kPage32[8] = {'R', 'L', 'X', 'K', 'V', 'P', 'G', '1'};
static const uint8_t kPage16[8] = {'R', 'L', 'X', 'K', 'V', 'P', 'H', '1'};
/* After a page's tokens: its parent's token count and key (two u64s). */
#define PAGE_PARENT_BYTES 24

/* Values are little-endian in a blob; on little-endian hosts a block is one
 * memcpy, elsewhere each value's bits are placed byte by byte (a path that
 * is right on any host: RLXKV_CODEC_PORTABLE forces it, for testing). Bits
 * are moved, never values, so NaN payloads and -0.0 survive. */
#if RLXKV_BIG_ENDIAN || defined(RLXKV_CODEC_PORTABLE)
#define VALUES_BYTEWISE 1
#else
#define VALUES_BYTEWISE 0
#endif

/* n values of `size` bytes from host order (src) to little-endian (dst),
 * or back: the same byte shuffle both ways. dst == src is allowed. */
static void swap_values(uint8_t *dst, const uint8_t *src, size_t n, size_t size) {
#if VALUES_BYTEWISE
    for (size_t i = 0; i < n; i++, dst += size, src += size) {
        uint32_t u = 0;
        uint8_t le[4];
        if (size == 4) {
            uint32_t v;
            memcpy(&v, src, 4);
            u = v;
        } else {
            uint16_t v;
            memcpy(&v, src, 2);
            u = v;
        }
        for (size_t b = 0; b < size; b++) le[b] = (uint8_t)(u >> (8 * b));
        memcpy(dst, le, size);
    }
#else
    if (n && dst != src) memcpy(dst, src, n * size);
#endif
}

/* ---------------------------------------------------------------------- *
 * f16 -> f32, exactly
 * ---------------------------------------------------------------------- */

/* Every binary16 value is exact in binary32: the sign moves up 16 bits, a
 * normal exponent is rebiased (15 -> 127), a subnormal is normalised, and
 * infinities and NaNs keep their payload, shifted into the top of the f32
 * mantissa (so a quiet NaN stays quiet and a signalling one signalling). */
static uint32_t widen1(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f) return sign | 0x7f800000u | man << 13;
    if (exp) return sign | (exp + 112) << 23 | man << 13;
    if (!man) return sign;
    /* man * 2^-24: shift its leading 1 up to bit 10, lowering the exponent
     * by one per step from that of 2^-14. */
    exp = 113;
    while (!(man & 0x400u)) {
        man <<= 1;
        exp--;
    }
    return sign | exp << 23 | (man & 0x3ffu) << 13;
}

void rlxkv_f16_widen(float *dst, const uint16_t *src, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t u = widen1(src[i]);
        memcpy(&dst[i], &u, 4);
    }
}

/* ---------------------------------------------------------------------- *
 * 8-bit pages: dequantization
 * ---------------------------------------------------------------------- */

/* x (finite, no f32 subnormal) rounded to the nearest binary16, ties to
 * even, at most +-65504 (the largest finite: a value past it saturates, it
 * does not become infinite): its bits, as FORMATS.md's 8-bit pages restore
 * to f16. With e the exponent of |x| (at least -14, binary16's least
 * normal one), |x| x 2^(10 - e) is exact, and rounded to an integer n (the
 * FPU's ties to even) it is the binary16's 11-bit significand, 1024 to
 * 2048 for a normal (2048 carries into the exponent, as the bits add up),
 * below 1024 a subnormal's: the bits are ((e + 14) << 10) + n. */
static uint16_t narrow1(float x) {
    uint32_t b, to_units;
    float units;
    memcpy(&b, &x, 4);
    int e = (int)(b >> 23 & 0xff) - 127;
    if (e < -14) e = -14;
    to_units = (uint32_t)(137 - e) << 23; /* 2^(10 - e) */
    memcpy(&units, &to_units, 4);
    uint32_t h = ((uint32_t)(e + 14) << 10) + (uint32_t)__builtin_rintf(__builtin_fabsf(x) * units);
    return (uint16_t)((b >> 16 & 0x8000u) | (h < 0x7bffu ? h : 0x7bffu));
}

size_t rlxkv_q8_dequant(void *dst, int dtype, const uint8_t *src, size_t src_len, size_t n_blocks, size_t n_rows, size_t group) {
    float *f32 = dst;
    uint16_t *f16 = dst;
    const uint8_t *at = src;
    /* A block: its length, then n_rows rows of a scale and group int8s (group at most the format's 65536). */
    if ((unsigned)dtype > RLXKV_F16 || !src || group - 1 >= 65536 || n_rows > (SIZE_MAX - 8) / (group + 2) ||
        n_blocks > src_len / (8 + n_rows * (group + 2)))
        return 0;
    for (size_t b = 0; b < n_blocks; b++) {
        if (rlxkv_load_u64le(at) != (uint64_t)n_rows * group) return 0; /* not a block of n_rows rows */
        at += 8;
        for (size_t r = 0; r < n_rows; r++) {
            /* The scale: a finite, non-negative binary16, exact in f32. */
            uint16_t h = (uint16_t)(at[0] | at[1] << 8);
            uint32_t bits = widen1(h);
            float scale;
            if (h >= 0x7c00) return 0; /* infinite, NaN or negative: no page's */
            memcpy(&scale, &bits, 4);
            at += 2;
            /* q x scale is exact in f32 (8 bits by 11): only the f16 store rounds. */
            for (size_t j = 0; j < group; j++) {
                float x = (float)(int8_t)*at++ * scale;
                if (dtype == RLXKV_F32) *f32++ = x;
                else *f16++ = narrow1(x);
            }
        }
    }
    return (size_t)(at - src);
}

/* ---------------------------------------------------------------------- *
 * Encoding
 * ---------------------------------------------------------------------- */

static size_t blob_size(const rlxkv_entry *e, size_t vsize) {
    size_t size, n_blocks;
    if (!e || e->start || e->n_layers > RLXKV_MAX_LAYERS) return 0; /* a page: not a blob of its own */
    n_blocks = 2 * e->n_layers;
    /* head + n_layers field, then 8 per token and per block length. */
    if (e->n_tokens > (SIZE_MAX - HEAD_BYTES - 8) / 8) return 0;
    size = HEAD_BYTES + 8 + 8 * e->n_tokens;
    if (n_blocks > (SIZE_MAX - size) / 8) return 0;
    size += 8 * n_blocks;
    if (e->n_values > (SIZE_MAX - size) / vsize) return 0;
    return size + vsize * e->n_values;
}

size_t rlxkv_encoded_size(const rlxkv_entry *e) {
    return e ? blob_size(e, rlxkv_entry_value_size(e)) : 0;
}

size_t rlxkv_encoded_size_f32(const rlxkv_entry *e) { return blob_size(e, 4); }

/* The blob of e into buf (size bytes, its exact size), values straight
 * from the entry where the host's byte order allows; as_f32 writes an f16
 * entry as RLXKV001, widened exactly. */
static void encode(const rlxkv_entry *e, uint64_t fingerprint, int as_f32, uint8_t *p) {
    int widen = as_f32 && e->dtype == RLXKV_F16;
    size_t vsize = rlxkv_entry_value_size(e);
    memcpy(p, widen || e->dtype == RLXKV_F32 ? kMagic32 : kMagic16, 8);
    rlxkv_store_u64le(p + 8, fingerprint);
    rlxkv_store_u64le(p + 16, (uint64_t)e->n_tokens); /* past_len */
    rlxkv_store_u64le(p + 24, (uint64_t)e->n_tokens);
    p += HEAD_BYTES;
    for (size_t i = 0; i < e->n_tokens; i++, p += 8) rlxkv_store_u64le(p, e->tokens[i]);
    rlxkv_store_u64le(p, (uint64_t)e->n_layers);
    p += 8;
    for (size_t b = 0; b < 2 * e->n_layers; b++) {
        size_t n = e->offs[b + 1] - e->offs[b];
        const uint8_t *src = e->kv + vsize * e->offs[b];
        rlxkv_store_u64le(p, (uint64_t)n);
        p += 8;
        if (widen) {
            const uint16_t *h = (const uint16_t *)(const void *)src;
            for (size_t i = 0; i < n; i++) {
                uint32_t u = widen1(h[i]);
                memcpy(p + 4 * i, &u, 4);
            }
            swap_values(p, p, n, 4);
            p += 4 * n;
        } else {
            swap_values(p, src, n, vsize);
            p += vsize * n;
        }
    }
}

static int encode_mem(const rlxkv_entry *e, uint64_t fingerprint, int as_f32, uint8_t *buf,
                      size_t cap, size_t *written) {
    size_t size = as_f32 ? rlxkv_encoded_size_f32(e) : rlxkv_encoded_size(e);
    if (written) *written = 0;
    if (e && e->n_layers > RLXKV_MAX_LAYERS) return RLXKV_ERR_LIMIT;
    if (!size || !buf || cap < size) return RLXKV_ERR_INVALID; /* a page too: it holds part of a blob's values */
    encode(e, fingerprint, as_f32, buf);
    if (written) *written = size;
    return RLXKV_OK;
}

int rlxkv_encode(const rlxkv_entry *e, uint64_t fingerprint, uint8_t *buf, size_t cap,
                 size_t *written) {
    return encode_mem(e, fingerprint, 0, buf, cap, written);
}

int rlxkv_encode_f32(const rlxkv_entry *e, uint64_t fingerprint, uint8_t *buf, size_t cap,
                     size_t *written) {
    return encode_mem(e, fingerprint, 1, buf, cap, written);
}

/* ---------------------------------------------------------------------- *
 * Decoding
 * ---------------------------------------------------------------------- */

/* A short buffer that agrees with a magic as far as it goes is a truncated
 * blob, not a foreign one. *page (may be NULL) tells a page's magic. */
static int head_of(const uint8_t *buf, size_t len, uint64_t *fp, int *dtype, int *page) {
    size_t m = len < 8 ? len : 8;
    int is32, is16, p32, p16;
    if (!buf) return len ? RLXKV_ERR_INVALID : RLXKV_ERR_TRUNCATED;
    is32 = memcmp(buf, kMagic32, m) == 0;
    is16 = memcmp(buf, kMagic16, m) == 0;
    p32 = memcmp(buf, kPage32, m) == 0;
    p16 = memcmp(buf, kPage16, m) == 0;
    if (!is32 && !is16 && !p32 && !p16) return RLXKV_ERR_BAD_MAGIC;
    if (len < 16) return RLXKV_ERR_TRUNCATED;
    if (fp) *fp = rlxkv_load_u64le(buf + 8);
    if (dtype) *dtype = is32 || p32 ? RLXKV_F32 : RLXKV_F16;
    if (page) *page = p32 || p16;
    return RLXKV_OK;
}

/* n u64 tokens at p: each must fit a u32. */
static int check_tokens(const uint8_t *p, uint64_t n) {
    for (uint64_t i = 0; i < n; i++, p += 8)
        if (rlxkv_load_u64le(p) > UINT32_MAX) return RLXKV_ERR_CORRUPT;
    return RLXKV_OK;
}

/* The one validating decoder behind rlxkv_inspect and rlxkv_decode: the
 * same checks in the same order for both. With out NULL it only validates
 * (allocating nothing) and fills *meta (may be NULL). With out, a blob of
 * another fingerprint than *expect_fp (if given) is RLXKV_STALE after only
 * the magic and fingerprint; else *out gets a new entry (owned by the
 * caller). No allocation exceeds what len implies. *fp_out (may be NULL)
 * gets the fingerprint once it is read. */
static int decode(const uint8_t *buf, size_t len, const uint64_t *expect_fp, rlxkv_entry **out,
                  rlxkv_blob_meta *meta, uint64_t *fp_out) {
    const uint8_t *p, *toks;
    uint64_t fp, n_tokens, n_layers, rem, cap, used = 0, start = 0, parent_n = 0, parent[2] = {0, 0};
    size_t h, at, vsize;
    rlxkv_entry *e = NULL;
    int rc = RLXKV_OK, dtype, page = 0;

    /* Magic and fingerprint first: a short or foreign blob is told by what
     * it has, and staleness (as in the reference) by nothing more. */
    h = len < HEAD_BYTES ? len : HEAD_BYTES;
    rc = head_of(buf, h, &fp, &dtype, &page);
    if (rc) return rc;
    vsize = rlxkv_dtype_size(dtype);
    if (fp_out) *fp_out = fp;
    if (out && expect_fp && fp != *expect_fp) return RLXKV_STALE;
    if (h < HEAD_BYTES) return RLXKV_ERR_TRUNCATED;
    n_tokens = rlxkv_load_u64le(buf + 24);
    if (!page && rlxkv_load_u64le(buf + 16) != n_tokens) return RLXKV_ERR_CORRUPT; /* past_len */
    /* A page's start is in past_len's place: its own values begin past
     * the first token and before the last (a page of start 0 is a blob). */
    if (page && ((start = rlxkv_load_u64le(buf + 16)) == 0 || start >= n_tokens)) return RLXKV_ERR_CORRUPT;

    /* Every length is compared, as a u64 before any narrowing, with the
     * bytes that remain: each token takes 8. */
    rem = len - HEAD_BYTES;
    if (n_tokens > rem / 8) return RLXKV_ERR_TRUNCATED;
    rem -= 8 * n_tokens;
    toks = buf + HEAD_BYTES;
    if ((rc = check_tokens(toks, n_tokens))) return rc;
    at = HEAD_BYTES + 8 * (size_t)n_tokens;
    if (page) {
        /* The parent: its token count (at least start) and its key. */
        if (rem < PAGE_PARENT_BYTES) return RLXKV_ERR_TRUNCATED;
        parent_n = rlxkv_load_u64le(buf + at);
        parent[0] = rlxkv_load_u64le(buf + at + 8);
        parent[1] = rlxkv_load_u64le(buf + at + 16);
        at += PAGE_PARENT_BYTES;
        rem -= PAGE_PARENT_BYTES;
        if (parent_n < start) return RLXKV_ERR_CORRUPT;
    }
    if (rem < 8) return RLXKV_ERR_TRUNCATED;
    n_layers = rlxkv_load_u64le(buf + at);
    at += 8;
    rem -= 8;
    /* Each layer has at least two 8-byte block lengths; what is left after
     * them all bounds the values. */
    if (n_layers > rem / 16) return RLXKV_ERR_TRUNCATED;
    /* Valid so far, but beyond what a reader here builds (FORMATS.md). */
    if (n_layers > RLXKV_MAX_LAYERS) return RLXKV_ERR_LIMIT;
    cap = (rem - 16 * n_layers) / vsize;
    if (out) {
        e = rlxkv_entry_alloc((size_t)n_tokens, (size_t)n_layers, (size_t)cap, dtype, &rc);
        if (!e) return rc;
        e->start = (size_t)start;
        for (size_t i = 0; i < n_tokens; i++) e->tokens[i] = (uint32_t)rlxkv_load_u64le(toks + 8 * i);
    }
    for (uint64_t b = 0; b < 2 * n_layers; b++) {
        uint64_t blen;
        p = buf + at;
        blen = rlxkv_load_u64le(p);
        at += 8;
        /* A block longer than the room left beside the lengths still to
         * come leaves one of them cut off: truncated. */
        if (blen > cap - used) {
            rc = RLXKV_ERR_TRUNCATED;
            goto done;
        }
        if (e) {
            e->offs[b + 1] = (size_t)(used + blen);
            swap_values(e->kv + vsize * used, buf + at, (size_t)blen, vsize);
        }
        at += vsize * (size_t)blen;
        used += blen;
    }
    /* Nothing may follow the last block. */
    if (at != len) {
        rc = RLXKV_ERR_CORRUPT;
        goto done;
    }
    if (meta) {
        meta->fingerprint = fp;
        meta->n_tokens = n_tokens;
        meta->n_layers = (size_t)n_layers;
        meta->dtype = dtype;
        meta->n_values = used;
        meta->blob_bytes = len;
        meta->start = start;
        meta->parent_n = parent_n;
        meta->parent[0] = parent[0];
        meta->parent[1] = parent[1];
    }
done:
    if (rc) {
        rlxkv_entry_free(e);
        return rc;
    }
    if (out) *out = e;
    return RLXKV_OK;
}

int rlxkv_inspect(const uint8_t *buf, size_t len, rlxkv_blob_meta *meta) {
    if (!buf) return head_of(buf, len, NULL, NULL, NULL);
    return decode(buf, len, NULL, NULL, meta, NULL);
}

int rlxkv_decode(const uint8_t *buf, size_t len, const uint64_t *expect_fp,
                 rlxkv_entry **out, uint64_t *fp_out) {
    if (!out) return RLXKV_ERR_INVALID;
    *out = NULL;
    if (!buf) return head_of(buf, len, NULL, NULL, NULL);
    return decode(buf, len, expect_fp, out, NULL, fp_out);
}

/* ---------------------------------------------------------------------- *
 * Names (FORMATS.md, Names)
 * ---------------------------------------------------------------------- */

#define SUFFIX ".rlxkv"
#define SUFFIX_LEN 6

/* v in lowercase hex, at least min_digits (zero-padded), at p; returns the
 * end. The library's only formatting: it keeps the printf family (several
 * KB of wasm) out of the build. */
static char *put_hex(char *p, uint64_t v, int min_digits) {
    char digits[16];
    int n = 0;
    do {
        digits[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v || n < min_digits);
    while (n) *p++ = digits[--n];
    return p;
}

/* A page's name from its key (rlxkv_chain_final): 32 hex digits; a key
 * whose first half is 0 names a blob by its 64-bit name (16 digits). */
static void name_from_key(const uint64_t key[2], char name[RLXKV_PAGE_NAME_CAP]) {
    char *p = key[0] ? put_hex(put_hex(name, key[0], 16), key[1], 16) : put_hex(name, key[1], 16);
    memcpy(p, SUFFIX, SUFFIX_LEN + 1);
}

void rlxkv_page_key(uint64_t fingerprint, int dtype, const uint32_t *tokens, size_t n, uint64_t key[2]) {
    rlxkv_chain c = rlxkv_chain_init(fingerprint);
    for (size_t i = 0; i < n; i++) rlxkv_chain_token(&c, tokens[i]);
    rlxkv_chain_final(&c, dtype, n, key);
}

void rlxkv_page_name(uint64_t fingerprint, int dtype, const uint32_t *tokens, size_t n,
                     char name[RLXKV_PAGE_NAME_CAP]) {
    uint64_t key[2];
    rlxkv_page_key(fingerprint, dtype, tokens, n, key);
    name_from_key(key, name);
}

/* rlxkv_hash64 fed one token at a time, as little-endian u32 bytes
 * (test_codec checks they agree). */
static uint64_t name_hash_token(uint64_t h, uint32_t t) {
    for (int i = 0; i < 4; i++) h = rlxkv_fnv_byte(h, (unsigned char)(t >> (8 * i)));
    return h;
}

void rlxkv_blob_name(uint64_t fingerprint, const uint32_t *tokens, size_t n, char name[32]) {
    uint64_t h = rlxkv_fnv_init(fingerprint);
    for (size_t i = 0; i < n; i++) h = name_hash_token(h, tokens[i]);
    memcpy(put_hex(name, rlxkv_fnv_final(h), 16), SUFFIX, SUFFIX_LEN + 1);
}
