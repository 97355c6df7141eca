/* Internal: what the store needs to know of the RLXKV001 layout, kept with
 * the codec so that one file owns the format. Not part of the public API. */
#ifndef RLXKV_CODEC_H
#define RLXKV_CODEC_H
#include <stddef.h>
#include <stdint.h>

/* magic, fingerprint, past_len, n_tokens; the u64 tokens follow. */
#define RLXKV_BLOB_HEAD_BYTES 32

/* The magic and fingerprint: OK with *fp set, BAD_MAGIC, or TRUNCATED (a
 * short buffer that agrees with the magic as far as it goes). */
int rlxkv_blob_head(const uint8_t *buf, size_t len, uint64_t *fp);
#endif
