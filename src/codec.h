/* Internal: what the store needs to know of the RLXKV001 layout, kept with
 * the codec so that one file owns the format. Not part of the public API. */
#ifndef RLXKV_CODEC_H
#define RLXKV_CODEC_H
#include <stddef.h>
#include <stdint.h>

#include "entry.h"

/* magic, fingerprint, past_len, n_tokens; the u64 tokens follow. */
#define RLXKV_BLOB_HEAD_BYTES 32

/* The magic and fingerprint: OK with *fp set, BAD_MAGIC, or TRUNCATED (a
 * short buffer that agrees with the magic as far as it goes). */
int rlxkv_blob_head(const uint8_t *buf, size_t len, uint64_t *fp);

/* Where a blob of len bytes is read from: the whole of it in memory (buf),
 * or, when buf is NULL, a reader that puts exactly the next n bytes at dst
 * (RLXKV_OK) or fails with a status. The reader is how the store decodes a
 * file straight into the entry's own allocation: the header and lengths
 * first, then each block into place, no whole-file buffer in between. */
typedef struct rlxkv_src {
    const uint8_t *buf;
    uint64_t len;
    int (*read)(void *ctx, uint8_t *dst, size_t n);
    void *ctx;
} rlxkv_src;

/* The one validating decoder behind rlxkv_inspect, rlxkv_decode and the
 * store's file loads: the same checks in the same order for every source.
 * With out NULL it only validates (then src->buf is required) and fills
 * *meta (may be NULL). With out, a blob of another fingerprint than
 * *expect_fp (if given) is RLXKV_STALE after only the magic and
 * fingerprint; else *out gets a new entry (owned by the caller). No
 * allocation exceeds what len implies. *fp_out (may be NULL) gets the
 * fingerprint once it is read. */
int rlxkv_decode_src(const rlxkv_src *src, const uint64_t *expect_fp, rlxkv_entry **out,
                     rlxkv_blob_meta *meta, uint64_t *fp_out);
#endif
