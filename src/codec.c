/* The blob codec: RLXKV001 (f32 values) and its f16 variant RLXKVF16, which
 * differs only in the magic and in 2-byte values, pages of both, and the
 * names a store gives them (see FORMATS.md).
 *
 * Every length read from a blob is checked against the bytes that remain
 * before it is used, and in 64-bit arithmetic: a length can never exceed
 * what the input holds, so nothing derived from it overflows a size_t (wasm
 * has a 32-bit size_t, and a u64 field must not be silently narrowed there).
 * One decoder (rlxkv_decode_src) does it all, for a blob in memory and for a
 * file the store reads piece by piece or judges by seeking over its values:
 * rlxkv_inspect is it without the entry; with one, the entry is allocated
 * once the header says how large it is (never more than the blob implies)
 * and each block goes straight into place. One encoder (rlxkv_encode_to)
 * writes every blob, into memory or, in pieces, into a file. */
#include <string.h>
#include <stdlib.h>

#include "codec.h"
#include "entry.h"
#include "hash.h"

#define HEAD_BYTES RLXKV_BLOB_HEAD_BYTES
/* Tokens (and widened values) pass through a buffer of this many bytes on
 * the stack: the wasm stack is 256 KiB. */
#define CHUNK 4096

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

/* Pieces gathered into a small buffer until it fills (one sink call per
 * CHUNK bytes of small fields, not one per field). */
typedef struct out_buf {
    rlxkv_sink sink;
    void *ctx;
    size_t n;
    uint8_t b[CHUNK];
} out_buf;

static int out_flush(out_buf *o) {
    int rc = o->n ? o->sink(o->ctx, o->b, o->n) : RLXKV_OK;
    o->n = 0;
    return rc;
}

static int out_u64(out_buf *o, uint64_t v) {
    if (o->n + 8 > CHUNK) {
        int rc = out_flush(o);
        if (rc) return rc;
    }
    rlxkv_store_u64le(o->b + o->n, v);
    o->n += 8;
    return RLXKV_OK;
}

/* One block's values: straight from the entry when their bytes are the
 * blob's, else converted through the buffer. */
static int out_values(out_buf *o, const rlxkv_entry *e, size_t b, int widen) {
    size_t vsize = rlxkv_entry_value_size(e), n = e->offs[b + 1] - e->offs[b];
    const uint8_t *src = e->kv + vsize * e->offs[b];
    int rc = out_flush(o);
    if (rc || !n) return rc;
    if (!widen && !VALUES_BYTEWISE) return o->sink(o->ctx, src, n * vsize);
    while (n) {
        size_t take, osize = widen ? 4 : vsize;
        take = n < CHUNK / osize ? n : CHUNK / osize;
        if (widen) {
            const uint16_t *h = (const uint16_t *)(const void *)src;
            for (size_t i = 0; i < take; i++) {
                uint32_t u = widen1(h[i]);
                memcpy(o->b + 4 * i, &u, 4);
            }
            swap_values(o->b, o->b, take, 4);
        } else {
            swap_values(o->b, src, take, vsize);
        }
        if ((rc = o->sink(o->ctx, o->b, take * osize))) return rc;
        src += take * vsize;
        n -= take;
    }
    return RLXKV_OK;
}

int rlxkv_encode_to(const rlxkv_entry *e, uint64_t fingerprint, int as_f32, rlxkv_sink sink,
                    void *ctx) {
    int widen = as_f32 && e && e->dtype == RLXKV_F16, rc = RLXKV_OK;
    out_buf o;

    if (!e || !sink || e->start) return RLXKV_ERR_INVALID; /* a page holds part of a blob's values */
    if (e->n_layers > RLXKV_MAX_LAYERS) return RLXKV_ERR_LIMIT;
    if (!blob_size(e, widen ? 4 : rlxkv_entry_value_size(e))) return RLXKV_ERR_INVALID;
    o.sink = sink;
    o.ctx = ctx;
    memcpy(o.b, widen || e->dtype == RLXKV_F32 ? kMagic32 : kMagic16, 8);
    rlxkv_store_u64le(o.b + 8, fingerprint);
    rlxkv_store_u64le(o.b + 16, (uint64_t)e->n_tokens); /* past_len */
    rlxkv_store_u64le(o.b + 24, (uint64_t)e->n_tokens);
    o.n = HEAD_BYTES;
    for (size_t i = 0; i < e->n_tokens && !rc; i++) rc = out_u64(&o, e->tokens[i]);
    if (!rc) rc = out_u64(&o, (uint64_t)e->n_layers);
    for (size_t b = 0; b < 2 * e->n_layers && !rc; b++) {
        rc = out_u64(&o, (uint64_t)(e->offs[b + 1] - e->offs[b]));
        if (!rc) rc = out_values(&o, e, b, widen);
    }
    if (!rc) rc = out_flush(&o);
    return rc;
}

/* The sink of an encode into memory whose size was checked first. */
typedef struct mem_sink {
    uint8_t *at;
} mem_sink;

static int to_memory(void *ctx, const uint8_t *p, size_t n) {
    mem_sink *m = ctx;
    memcpy(m->at, p, n);
    m->at += n;
    return RLXKV_OK;
}

static int encode_mem(const rlxkv_entry *e, uint64_t fingerprint, int as_f32, uint8_t *buf,
                      size_t cap, size_t *written) {
    size_t size = as_f32 ? rlxkv_encoded_size_f32(e) : rlxkv_encoded_size(e);
    mem_sink m = {buf};
    int rc;
    if (written) *written = 0;
    if (e && e->n_layers > RLXKV_MAX_LAYERS) return RLXKV_ERR_LIMIT;
    if (!size || !buf || cap < size) return RLXKV_ERR_INVALID;
    rc = rlxkv_encode_to(e, fingerprint, as_f32, to_memory, &m);
    if (!rc && written) *written = size;
    return rc;
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

int rlxkv_blob_head(const uint8_t *buf, size_t len, uint64_t *fp, int *dtype) {
    return head_of(buf, len, fp, dtype, NULL);
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

/* n bytes not needed here: skipped by the source when it is not in memory. */
static int pass(cursor *c, uint64_t n) {
    if (!c->src->buf && n) {
        int r = c->src->skip(c->src->ctx, n);
        if (r) return r;
    }
    c->at += n;
    return RLXKV_OK;
}

/* n u64 tokens at p: each must fit a u32; then to the source's on_tokens. */
static int take_tokens(const rlxkv_src *src, uint64_t fp, const uint8_t *p, size_t n) {
    uint32_t run[CHUNK / 8];
    for (size_t i = 0; i < n;) {
        size_t k = n - i < CHUNK / 8 ? n - i : CHUNK / 8;
        for (size_t j = 0; j < k; j++, p += 8) {
            uint64_t t = rlxkv_load_u64le(p);
            if (t > UINT32_MAX) return RLXKV_ERR_CORRUPT;
            run[j] = (uint32_t)t;
        }
        if (src->on_tokens) src->on_tokens(src->ctx, fp, run, k);
        i += k;
    }
    return RLXKV_OK;
}

int rlxkv_decode_src(const rlxkv_src *src, const uint64_t *expect_fp, rlxkv_entry **out,
                     rlxkv_blob_meta *meta, uint64_t *fp_out) {
    uint8_t head[HEAD_BYTES] = {0}, word[8], *scratch = NULL, chunk[CHUNK];
    const uint8_t *p, *toks = NULL;
    uint64_t fp, n_tokens, n_layers, rem, cap, used = 0, start = 0, parent_n = 0, parent[2] = {0, 0};
    size_t h, vsize;
    rlxkv_entry *e = NULL;
    cursor c;
    int rc = RLXKV_OK, dtype, page = 0;

    if (out) *out = NULL;
    if (!src) return RLXKV_ERR_INVALID;
    if (!src->buf && (!src->read || (!out && !src->skip))) return RLXKV_ERR_INVALID;
    c.src = src;
    c.at = 0;

    /* Magic and fingerprint first: a short or foreign blob is told by what
     * it has, and staleness (as in the reference) by nothing more. */
    h = src->len < HEAD_BYTES ? (size_t)src->len : HEAD_BYTES;
    if (!(p = next(&c, head, h, &rc))) return rc;
    rc = head_of(p, h, &fp, &dtype, &page);
    if (rc) return rc;
    vsize = rlxkv_dtype_size(dtype);
    if (fp_out) *fp_out = fp;
    if (out && expect_fp && fp != *expect_fp) return RLXKV_STALE;
    /* A file larger than this host's address space can be judged, never
     * held. */
    if (out && src->len > SIZE_MAX) return RLXKV_ERR_LIMIT;
    if (h < HEAD_BYTES) return RLXKV_ERR_TRUNCATED;
    n_tokens = rlxkv_load_u64le(p + 24);
    if (!page && rlxkv_load_u64le(p + 16) != n_tokens) return RLXKV_ERR_CORRUPT; /* past_len */
    /* A page's start is in past_len's place: its own values begin past
     * the first token and before the last (a page of start 0 is a blob). */
    if (page && ((start = rlxkv_load_u64le(p + 16)) == 0 || start >= n_tokens)) return RLXKV_ERR_CORRUPT;

    /* Every length is compared, as a u64 before any narrowing, with the
     * bytes that remain: each token takes 8. */
    rem = src->len - HEAD_BYTES;
    if (n_tokens > rem / 8) return RLXKV_ERR_TRUNCATED;
    rem -= 8 * n_tokens;
    if (!n_tokens) {
        /* nothing to read */
    } else if (src->buf) {
        if (!(toks = next(&c, NULL, 8 * (size_t)n_tokens, &rc))) goto done;
        if ((rc = take_tokens(src, fp, toks, (size_t)n_tokens))) goto done;
    } else if (out) {
        /* A file's tokens wait in a scratch array: the entry's size is
         * known only from n_layers, which follows them. */
        if (!(scratch = malloc(8 * (size_t)n_tokens))) return RLXKV_ERR_NOMEM;
        if (!(toks = next(&c, scratch, 8 * (size_t)n_tokens, &rc))) goto done;
        if ((rc = take_tokens(src, fp, toks, (size_t)n_tokens))) goto done;
    } else {
        /* Judging a file: the tokens pass through a small buffer. */
        for (uint64_t i = 0; i < n_tokens;) {
            size_t k = n_tokens - i < CHUNK / 8 ? (size_t)(n_tokens - i) : CHUNK / 8;
            if (!next(&c, chunk, 8 * k, &rc)) goto done;
            if ((rc = take_tokens(src, fp, chunk, k))) goto done;
            i += k;
        }
    }
    rc = RLXKV_ERR_TRUNCATED;
    if (page) {
        /* The parent: its token count (at least start) and its key. */
        if (rem < PAGE_PARENT_BYTES) goto done;
        if (!(p = next(&c, word, 8, &rc))) goto done;
        parent_n = rlxkv_load_u64le(p);
        for (int k = 0; k < 2; k++) {
            if (!(p = next(&c, word, 8, &rc))) goto done;
            parent[k] = rlxkv_load_u64le(p);
        }
        rem -= PAGE_PARENT_BYTES;
        rc = RLXKV_ERR_CORRUPT;
        if (parent_n < start) goto done;
        rc = RLXKV_ERR_TRUNCATED;
    }
    if (rem < 8) goto done;
    if (!(p = next(&c, word, 8, &rc))) goto done;
    n_layers = rlxkv_load_u64le(p);
    rem -= 8;
    /* Each layer has at least two 8-byte block lengths; what is left after
     * them all bounds the values. */
    if (n_layers > rem / 16) goto done;
    /* Valid so far, but beyond what a reader here builds (FORMATS.md). */
    if (n_layers > RLXKV_MAX_LAYERS) {
        rc = RLXKV_ERR_LIMIT;
        goto done;
    }
    cap = (rem - 16 * n_layers) / vsize;
    if (out) {
        e = rlxkv_entry_alloc((size_t)n_tokens, (size_t)n_layers, (size_t)cap, dtype, &rc);
        if (!e) goto done;
        e->start = (size_t)start;
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
            uint8_t *dst = e->kv + vsize * used;
            e->offs[b + 1] = (size_t)(used + blen);
            if (src->buf) {
                swap_values(dst, src->buf + c.at, (size_t)blen, vsize);
            } else if (blen) {
                rc = src->read(src->ctx, dst, vsize * (size_t)blen);
                if (rc) goto done;
                swap_values(dst, dst, (size_t)blen, vsize);
            }
            c.at += vsize * blen;
        } else if ((rc = pass(&c, vsize * blen))) {
            goto done;
        }
        used += blen;
    }
    /* Nothing may follow the last block. */
    if (c.at != src->len) {
        rc = RLXKV_ERR_CORRUPT;
        goto done;
    }
    if (meta) {
        meta->fingerprint = fp;
        meta->n_tokens = n_tokens;
        meta->n_layers = (size_t)n_layers;
        meta->dtype = dtype;
        meta->n_values = used;
        meta->blob_bytes = src->len;
        meta->start = start;
        meta->parent_n = parent_n;
        meta->parent[0] = parent[0];
        meta->parent[1] = parent[1];
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
    rlxkv_src src = {buf, len, NULL, NULL, NULL, NULL};
    if (!buf) return rlxkv_blob_head(buf, len, NULL, NULL);
    return rlxkv_decode_src(&src, NULL, NULL, meta, NULL);
}

int rlxkv_decode(const uint8_t *buf, size_t len, const uint64_t *expect_fp,
                 rlxkv_entry **out, uint64_t *fp_out) {
    rlxkv_src src = {buf, len, NULL, NULL, NULL, NULL};
    if (!out) return RLXKV_ERR_INVALID;
    *out = NULL;
    if (!buf) return rlxkv_blob_head(buf, len, NULL, NULL);
    return rlxkv_decode_src(&src, expect_fp, out, NULL, fp_out);
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
