// The store of bench/bench_open.mjs (Node) and bench/open_page.js
// (Chromium), plain ESM for both: 52 conversations over one system prompt,
// each 200 turns of 16 tokens, every turn inserted as a page (its own
// tokens' KV) and each conversation flushed in turn: 1 + 52 × 200 = 10,401
// pages, 16 tokens each, f16 KV of Qwen2.5-0.5B's shape (12,288 bytes a
// token): 2.04 GB of KV in 10,401 blobs (a page of 200 turns holds 3,216
// tokens' ids: every page's whole path is in its own file).
export const SHAPE = { layers: 24, heads: 2, headDim: 64 };
export const PAGE = 16, TURNS = 200, CONVERSATIONS = 52;
export const PAGES = 1 + CONVERSATIONS * TURNS;
export const FP = 0x09e4n;
export const CAP = 256 << 20;
export const layout = { order: 'head-major', ...SHAPE };
export const bytesPerToken = 2 * SHAPE.layers * SHAPE.heads * SHAPE.headDim * 2;

function mix32(x) {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

/** The tokens of conversation c up to the end of its turn `turns` (0: the system prompt alone). */
export function tokensOf(c, turns = TURNS) {
  return Uint32Array.from({ length: PAGE * (1 + turns) }, (_, j) => (j < PAGE ? mix32(j + 1) : mix32(c * 1e6 + j)) % 151000);
}

/** A page's marker, in its first value: which page it is (a finite f16, never Inf/NaN). */
export const markerOf = (c, turn) => (c * 256 + turn) % 0x7000;

/** The KV of one page's own tokens: head-major f16 bits, one value marked (markerOf). */
function pageKv(marker) {
  const n = SHAPE.heads * PAGE * SHAPE.headDim;
  const blocks = Array.from({ length: 2 * SHAPE.layers }, (_, b) => Uint16Array.from({ length: n }, (_, i) => mix32(b * 7919 + i) & 0x3bff));
  blocks[0][0] = marker;
  return { k: blocks.slice(0, SHAPE.layers), v: blocks.slice(SHAPE.layers) };
}

/**
 * Fills `cache` (an open cache on an empty store, capBytes CAP): the
 * system prompt pinned, then each conversation's turns inserted as pages
 * and flushed. progress(c) after each conversation.
 */
export async function build(cache, progress = () => {}) {
  const kv = pageKv(0);
  const system = tokensOf(0, 0);
  cache.insert(system, kv);
  cache.pin(system);
  for (let c = 0; c < CONVERSATIONS; c++) {
    const all = tokensOf(c);
    for (let t = 1; t <= TURNS; t++) {
      kv.k[0][0] = markerOf(c, t);
      cache.insert(all.subarray(0, PAGE * (1 + t)), kv, { start: PAGE * t });
    }
    await cache.flush();
    progress(c);
  }
}

/** Checks a hit on the whole of conversation c: every turn's page, in place. Throws if not. */
export function check(hit, c) {
  const n = PAGE * (1 + TURNS);
  if (!hit || hit.matched !== n) throw new Error(`conversation ${c}: matched ${hit && hit.matched} of ${n} tokens`);
  for (let t = 1; t <= TURNS; t++) {
    const got = hit.k[0][PAGE * t * SHAPE.headDim]; // head 0, the page's first row, first value
    if (got !== markerOf(c, t)) throw new Error(`conversation ${c}, turn ${t}: marker ${got}, want ${markerOf(c, t)}`);
  }
}
