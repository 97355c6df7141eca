/* Internal: the pieces of rlxkv_hash64 (FNV-1a, then splitmix64's
 * finaliser), so the store can hash a blob's tokens in place, one at a time. */
#ifndef RLXKV_HASH_H
#define RLXKV_HASH_H
#include <stdint.h>

static inline uint64_t rlxkv_fnv_byte(uint64_t h, unsigned char b) {
    return (h ^ b) * 0x100000001b3ull;
}
/* The seed is hashed as 8 little-endian bytes ahead of the data: XORing it
 * into the offset basis would let (seed, data) pairs cancel out, e.g.
 * (1, [1]) and (2, [2]). */
static inline uint64_t rlxkv_fnv_init(uint64_t seed) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < 8; i++) h = rlxkv_fnv_byte(h, (unsigned char)(seed >> (8 * i)));
    return h;
}
/* FNV alone leaves the high bits weak for short keys: avalanche them. */
static inline uint64_t rlxkv_fnv_final(uint64_t h) {
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
    return h;
}
#endif
