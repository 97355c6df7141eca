// The workload of the page benches (bench/bench_pages.mjs in Node,
// bench/pages_page.js in Chromium), plain ESM for both: a 1,000-token
// prompt's f16 KV in a model's shape (head-major), stored two ways:
//   paged  a 400-token system prompt, then 6 turns of 100 tokens, each
//          inserted and flushed in turn (so the store holds a blob and 6
//          pages, and a hit on the 1,000 tokens reads 7 pages, parents first);
//   whole  the same 1,000 tokens inserted once into an empty store (1 blob).
// Values are pseudo-random finite binary16 bits, a function of (layer, K/V,
// head, token, dim) only, so a prefix's blocks are the first rows of each
// head of the whole prompt's, and a hit can be checked value for value.

/** Model shapes (KV heads, head_dim, layers): f16, so 2 bytes a value. */
export const SHAPES = {
  'qwen2.5-0.5b': { layers: 24, heads: 2, headDim: 64 }, // 12,288 bytes a token
  'qwen2.5-7b': { layers: 28, heads: 4, headDim: 128 }, // 57,344 bytes a token
};
export const TOKENS = 1000;
export const SYSTEM = 400, TURN = 100, TURNS = 6; // 400 + 6 × 100 = 1,000: 7 pages
export const FP = 0x9a6e5n;
export const CAP = 512 << 20;

export const bytesPerToken = (s) => 2 * s.layers * s.heads * s.headDim * 2;
export const layoutOf = (s) => ({ order: 'head-major', heads: s.heads, headDim: s.headDim, layers: s.layers });

function mix32(x) {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

/** The prompt's tokens (salt: another prompt), and the query an app makes: them and 3 new ones. */
export const tokensOf = (salt = 0) => Uint32Array.from({ length: TOKENS }, (_, j) => mix32(j + 1 + salt * 7919) % 151000);
export const queryOf = (salt = 0) => Uint32Array.from([...tokensOf(salt), 151001, 151002, 151003]);

/** Block b (K: 0..layers-1, V: layers..) of the whole prompt: [heads, TOKENS, headDim] f16 bits. */
export function fullBlock(s, b) {
  const out = new Uint16Array(s.heads * TOKENS * s.headDim);
  for (let i = 0; i < out.length; i++) {
    const h = mix32(b * 0x9e3779b1 + i) & 0xffff;
    out[i] = (h & 0x7c00) === 0x7c00 ? h & 0xbfff : h; // no Inf/NaN
  }
  return out;
}

/** The whole prompt's blocks (K then V), made once. */
export const fullBlocks = (s) => Array.from({ length: 2 * s.layers }, (_, b) => fullBlock(s, b));

/** The KV of the first n tokens, cut from the whole prompt's blocks (head-major: n rows of each head). */
export function kvOf(s, blocks, n) {
  const cut = blocks.map((full) => {
    if (n === TOKENS) return full;
    const out = new Uint16Array(s.heads * n * s.headDim), row = s.headDim;
    for (let h = 0; h < s.heads; h++) out.set(full.subarray(h * TOKENS * row, (h * TOKENS + n) * row), h * n * row);
    return out;
  });
  return { k: cut.slice(0, s.layers), v: cut.slice(s.layers) };
}

/** The prefix lengths each variant inserts (and flushes) in turn. */
export const STEPS = {
  paged: [SYSTEM, ...Array.from({ length: TURNS }, (_, t) => SYSTEM + (t + 1) * TURN)],
  whole: [TOKENS],
};

/** Builds a variant into an open cache (empty store): each step inserted then flushed. */
export async function build(cache, s, blocks, variant, salt = 0) {
  const tokens = tokensOf(salt);
  for (const n of STEPS[variant]) {
    cache.insert(tokens.subarray(0, n), kvOf(s, blocks, n));
    await cache.flush();
  }
}

/** Bits of an f16 block (Uint16Array or Float16Array). */
const bits = (a) => new Uint16Array(a.buffer, a.byteOffset, a.length);

/**
 * Throws unless hit is the whole prompt's: 1,000 tokens, every block of
 * the right length, and the first and last K and V blocks value for value.
 */
export function check(hit, s, blocks) {
  if (!hit || hit.matched !== TOKENS) throw new Error(`pages bench: hit of ${hit && hit.matched} tokens, not ${TOKENS}`);
  if (hit.k.length !== s.layers || hit.v.length !== s.layers) throw new Error('pages bench: wrong layer count');
  const got = [...hit.k, ...hit.v];
  for (const b of [0, s.layers - 1, s.layers, 2 * s.layers - 1]) {
    const g = bits(got[b]), e = blocks[b];
    if (g.length !== e.length) throw new Error(`pages bench: block ${b} of ${g.length} values, not ${e.length}`);
    for (let i = 0; i < e.length; i++) if (g[i] !== e[i]) throw new Error(`pages bench: block ${b} differs at ${i}`);
  }
  for (const a of got) if (a.length !== blocks[0].length) throw new Error('pages bench: a block of the wrong length');
}
