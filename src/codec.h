/* Internal: what the store needs of the blob formats (RLXKV001 and its f16
 * variant RLXKVF16, see FORMATS.md), kept with the codec so that one file
 * owns the formats. Not part of the public API. */
#ifndef RLXKV_CODEC_H
#define RLXKV_CODEC_H
#include <stddef.h>
#include <stdint.h>

#include "entry.h"

/* magic, fingerprint, past_len, n_tokens; the u64 tokens follow. */
#define RLXKV_BLOB_HEAD_BYTES 32

/* The magic and fingerprint: OK with *fp and *dtype (may be NULL) set,
 * BAD_MAGIC, or TRUNCATED (a short buffer that agrees with one of the
 * magics as far as it goes). */
int rlxkv_blob_head(const uint8_t *buf, size_t len, uint64_t *fp, int *dtype);

/* Where a blob of len bytes is read from: the whole of it in memory (buf),
 * or, when buf is NULL, a reader that puts exactly the next n bytes at dst
 * (RLXKV_OK) or fails with a status, and a skipper that moves past the next
 * n bytes without reading them (a seek). The reader is how the store
 * decodes a file straight into the entry's own allocation; the skipper is
 * how it judges a file from its header, tokens and block lengths alone.
 * on_tokens (may be NULL) sees every token, in order, in runs, once the run
 * is validated, with the blob's fingerprint: the store hashes them into
 * the file name it checks. */
typedef struct rlxkv_src {
    const uint8_t *buf;
    uint64_t len;
    int (*read)(void *ctx, uint8_t *dst, size_t n);
    int (*skip)(void *ctx, uint64_t n);
    void (*on_tokens)(void *ctx, uint64_t fp, const uint32_t *tokens, size_t n);
    void *ctx;
} rlxkv_src;

/* The one validating decoder behind rlxkv_inspect, rlxkv_decode and the
 * store's file reads: the same checks in the same order for every source.
 * With out NULL it only validates (from buf, or through read and skip,
 * allocating nothing) and fills *meta (may be NULL). With out, a blob of
 * another fingerprint than *expect_fp (if given) is RLXKV_STALE after only
 * the magic and fingerprint; else *out gets a new entry (owned by the
 * caller) and *meta is filled too. No allocation exceeds what len implies.
 * *fp_out (may be NULL) gets the fingerprint once it is read. */
int rlxkv_decode_src(const rlxkv_src *src, const uint64_t *expect_fp, rlxkv_entry **out,
                     rlxkv_blob_meta *meta, uint64_t *fp_out);

/* Where the encoder puts a blob: each piece in order, n > 0 bytes at p
 * (valid for the call only). Returns RLXKV_OK or a status, which stops the
 * encoder and is returned by it. */
typedef int (*rlxkv_sink)(void *ctx, const uint8_t *p, size_t n);

/* The one encoder behind rlxkv_encode, rlxkv_encode_f32 and the store's
 * saves: the blob of e in pieces, values straight from the entry where the
 * host's byte order allows (no copy of the whole blob anywhere); as_f32
 * writes an f16 entry as RLXKV001, widened exactly. RLXKV_ERR_INVALID for
 * an entry whose blob size overflows, RLXKV_ERR_LIMIT for one of more than
 * RLXKV_MAX_LAYERS layers. */
int rlxkv_encode_to(const rlxkv_entry *e, uint64_t fingerprint, int as_f32, rlxkv_sink sink,
                    void *ctx);
#endif
