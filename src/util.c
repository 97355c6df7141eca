/* Status strings, version and the 64-bit hash. */
#include "hash.h"
#include "rlxkv.h"

const char *rlxkv_strerror(int status) {
    switch (status) {
    case RLXKV_OK: return "ok";
    case RLXKV_STALE: return "blob is of another fingerprint (stale)";
    case RLXKV_HIT: return "hit";
    case RLXKV_MISS: return "miss";
    case RLXKV_ERR_BAD_MAGIC: return "not a blob (bad magic: neither RLXKV001 nor RLXKVF16)";
    case RLXKV_ERR_TRUNCATED: return "blob is truncated";
    case RLXKV_ERR_CORRUPT: return "blob is corrupt";
    case RLXKV_ERR_NOMEM: return "out of memory";
    case RLXKV_ERR_NOSPACE: return "no space beside the pinned entries";
    case RLXKV_ERR_IO: return "I/O error";
    case RLXKV_ERR_QUOTA: return "disk full or storage quota exceeded";
    case RLXKV_ERR_INVALID: return "invalid argument";
    case RLXKV_ERR_NOTFOUND: return "not found";
    case RLXKV_ERR_SHAPE: return "blocks do not match the cache's layout";
    case RLXKV_ERR_CHANGED: return "the file changed while it was read";
    case RLXKV_ERR_LIMIT: return "blob beyond this reader's limits (too many layers, or too large to hold)";
    default: return "unknown status";
    }
}

const char *rlxkv_version(void) { return RLXKV_VERSION; }

uint64_t rlxkv_hash64(const void *data, size_t len, uint64_t seed) {
    const unsigned char *p = data;
    uint64_t h = rlxkv_fnv_init(seed);
    for (size_t i = 0; i < len; i++) h = rlxkv_fnv_byte(h, p[i]);
    return rlxkv_fnv_final(h);
}
