/* Status strings, version and the 64-bit hash. */
#include "rlxkv.h"

const char *rlxkv_strerror(int status) {
    switch (status) {
    case RLXKV_OK: return "ok";
    case RLXKV_STALE: return "blob is of another fingerprint (stale)";
    case RLXKV_ERR_BAD_MAGIC: return "not an RLXKV001 blob (bad magic)";
    case RLXKV_ERR_TRUNCATED: return "blob is truncated";
    case RLXKV_ERR_CORRUPT: return "blob is corrupt";
    case RLXKV_ERR_NOMEM: return "out of memory";
    case RLXKV_ERR_NOSPACE: return "no space beside the pinned entries";
    case RLXKV_ERR_IO: return "I/O error";
    case RLXKV_ERR_QUOTA: return "disk full or storage quota exceeded";
    case RLXKV_ERR_INVALID: return "invalid argument";
    case RLXKV_ERR_NOTFOUND: return "not found";
    default: return "unknown status";
    }
}

const char *rlxkv_version(void) { return RLXKV_VERSION; }

/* FNV-1a over the bytes, then splitmix64's finaliser so that nearby inputs
 * land far apart (FNV alone leaves the high bits weak for short keys). */
uint64_t rlxkv_hash64(const void *data, size_t len, uint64_t seed) {
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull ^ seed;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
    return h;
}
