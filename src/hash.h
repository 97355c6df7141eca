/* Internal: the pieces of rlxkv_hash64 (FNV-1a, then splitmix64's
 * finaliser), so that a blob's name can hash its tokens one at a time, and
 * the page name's chain. */
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

/* The page name's chain (rlxkv_page_name): two 64-bit lanes, seeded by the
 * fingerprint and fed one token at a time, so the name of every prefix of
 * a prompt follows in one pass over it; the dtype and the token count are
 * mixed in at the end. */
typedef struct rlxkv_chain {
    uint64_t a, b;
} rlxkv_chain;

static inline rlxkv_chain rlxkv_chain_init(uint64_t fingerprint) {
    rlxkv_chain c = {rlxkv_fnv_final(fingerprint ^ 0x243f6a8885a308d3ull),
                     rlxkv_fnv_final(fingerprint + 0x13198a2e03707344ull)};
    return c;
}
static inline void rlxkv_chain_token(rlxkv_chain *c, uint32_t t) {
    c->a = (c->a ^ t) * 0x9e3779b97f4a7c15ull;
    c->a ^= c->a >> 32;
    c->b = (c->b + (t ^ 0xa0761d6478bd642full)) * 0xe7037ed1a0b428dbull;
    c->b ^= (c->b >> 29) ^ c->a;
}
/* The two halves of the name: the first never 0 (a parent key of (0, h)
 * names a blob by its 64-bit name, see FORMATS.md). */
static inline void rlxkv_chain_final(const rlxkv_chain *c, int dtype, uint64_t n, uint64_t out[2]) {
    out[0] = rlxkv_fnv_final(c->a ^ (n * 0x9e3779b97f4a7c15ull) ^ (uint64_t)dtype);
    out[1] = rlxkv_fnv_final(c->b ^ (out[0] << 17 | out[0] >> 47) ^ ((uint64_t)dtype << 56));
    if (!out[0]) out[0] = 1;
}
#endif
