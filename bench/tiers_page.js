// In-page half of bench/bench_tiers_browser.mjs: a large IndexedDB store
// (storage 'idb'), its index opened on a fresh page, and one entry's
// hit-load (await cache.match) next to a raw IndexedDB get of the same
// record in the same page.
import { request } from './raw_idb.js';
const FP = 0x71e25n;
const PATH = '/tiers';
const CAP = 256 << 20;
// Large entries: a 0.5B model's 1,000-token prompt (24 layers, 2 KV heads x 64,
// head-major), 24,576,000 bytes. Small ones: 256 tokens, one layer of 256 floats.
const LARGE = { tokens: 1000, layers: 24, block: 2 * 1000 * 64 };
const SMALL = { tokens: 256, layers: 1, block: 256 };

async function init(entry) {
  return (await import(entry)).default();
}
function mix32(x) {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}
/** Entry i's tokens: large entries (i < 0x10000) 1,000 tokens, small ones 256; distinct from the first token. */
const tokensOf = (i, kind) => Uint32Array.from({ length: kind.tokens }, (_, j) => (j === 0 ? 40000 + i : mix32(i * 7919 + j) % 32000));
const queryOf = (i, kind) => Uint32Array.from([...tokensOf(i, kind), 1, 2, 3]);
/** KV of pseudo-random floats (not compressible), entry i's marker in k[0][0]. */
function kvOf(kind, seed) {
  const block = (l) => Float32Array.from({ length: kind.block }, (_, j) => (mix32(seed + l * 65537 + j) / 4294967296) - 0.5);
  return { k: Array.from({ length: kind.layers }, (_, l) => block(l)), v: Array.from({ length: kind.layers }, (_, l) => block(l + 1000)) };
}
const opts = { capBytes: CAP, fingerprint: FP, storage: 'idb', path: PATH };

/** Fills the store: `small` small entries in one flush, then `large` large ones, each flushed alone. */
export async function build({ entry, small, large }) {
  const rlx = await init(entry);
  const cache = await rlx.openCache(opts);
  const skv = kvOf(SMALL, 1);
  for (let i = 0; i < small; i++) cache.insert(tokensOf(0x10000 + i, SMALL), skv);
  await cache.flush();
  const lkv = kvOf(LARGE, 2);
  const t0 = performance.now();
  for (let i = 0; i < large; i++) {
    lkv.k[0][0] = i;
    cache.insert(tokensOf(i, LARGE), lkv);
    await cache.flush(); // capBytes holds ~10: each must be stored before it can be evicted
  }
  const flushMs = performance.now() - t0;
  const blobs = cache.listBlobs();
  await cache.close();
  const est = await navigator.storage.estimate();
  return { entries: blobs.length, bytes: blobs.reduce((n, b) => n + b.bytes, 0), usage: est.usage, quota: est.quota, large_flush_ms: flushMs };
}

/** A fresh page's openCache: the index only. */
export async function open({ entry }) {
  const rlx = await init(entry);
  const t0 = performance.now();
  const cache = await rlx.openCache(opts);
  const ms = performance.now() - t0;
  const r = { ms, loaded: cache.restoreReport.indexed, stored: cache.stats.storedEntries, resident: cache.stats.entries };
  await cache.close({ flush: false });
  return r;
}

/** The store's name of the blob of these tokens: what a one-entry store of them lists. */
async function blobNameOf(rlx, tokens) {
  const path = '/tiers-name';
  const c = await rlx.openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path });
  c.insert(tokens, { k: [Float32Array.of(0)], v: [Float32Array.of(0)] });
  await c.flush();
  const [{ name }] = c.listBlobs();
  await c.close({ flush: false });
  await request(indexedDB.deleteDatabase(path));
  return name;
}

/** Hit-load of large entry i vs a raw get of its record (IDBFS layout: key path/name), alternating order. */
export async function hit({ entry, i, reps }) {
  const rlx = await init(entry);
  const cache = await rlx.openCache(opts);
  const key = `${PATH}/${await blobNameOf(rlx, tokensOf(i, LARGE))}`;
  const db = await request(indexedDB.open(PATH));
  const storeName = db.objectStoreNames[0];
  const q = queryOf(i, LARGE);
  const load = async () => {
    cache.clear(); // resident -> stored-only: the next match reads the record
    const t0 = performance.now();
    const h = await cache.match(q, { view: true });
    const ms = performance.now() - t0;
    if (!h || h.matched !== LARGE.tokens || h.k[0][0] !== i) throw new Error('hit-load: wrong hit');
    return ms;
  };
  const raw = async () => {
    const t0 = performance.now();
    const rec = await request(db.transaction([storeName], 'readonly').objectStore(storeName).get(key));
    const n = rec.contents.byteLength;
    const ms = performance.now() - t0;
    if (n < LARGE.layers * 2 * LARGE.block * 4) throw new Error('raw get: short record');
    return { ms, n };
  };
  await load(); await raw(); // warm
  const l = [], g = [];
  let bytes = 0;
  for (let r = 0; r < reps; r++) {
    if (r % 2) { const x = await raw(); g.push(x.ms); bytes = x.n; l.push(await load()); } else { l.push(await load()); const x = await raw(); g.push(x.ms); bytes = x.n; }
  }
  db.close();
  await cache.close({ flush: false });
  return { load: l, get: g, record_bytes: bytes };
}

/** Every large entry reachable through match. */
export async function check({ entry, large }) {
  const rlx = await init(entry);
  const cache = await rlx.openCache(opts);
  let ok = 0;
  for (let i = 0; i < large; i++) {
    const h = await cache.match(queryOf(i, LARGE), { view: true });
    if (h && h.matched === LARGE.tokens && h.k[0][0] === i) ok++;
  }
  const s = await cache.match(queryOf(0x10000 + 7, SMALL), { view: true });
  await cache.close({ flush: false });
  return { large, reachable: ok, small_hit: !!s && s.matched === SMALL.tokens };
}

/**
 * One large entry of float16 KV and the same values widened exactly to
 * float32, each in a store of its own: their records' bytes and hit-loads
 * (await cache.match of the stored-only entry), alternating.
 */
export async function f16({ entry, reps }) {
  const rlx = await init(entry);
  const { widenF16 } = await import('/format/f16.js');
  const id = 0x20000, tokens = tokensOf(id, LARGE), q = queryOf(id, LARGE);
  // Pseudo-random finite binary16 values (exponent below all ones).
  const bits = (seed) => Uint16Array.from({ length: LARGE.block }, (_, j) => mix32(seed * 65537 + j) & 0xfbff);
  const k = Array.from({ length: LARGE.layers }, (_, l) => bits(l + 1));
  const v = Array.from({ length: LARGE.layers }, (_, l) => bits(l + 1001));
  const kvs = { f16: { k, v }, f32: { k: k.map((b) => widenF16(b)), v: v.map((b) => widenF16(b)) } };
  const caches = {}, out = {};
  for (const dtype of ['f16', 'f32']) {
    const path = `/tiers-${dtype}`;
    const c = await rlx.openCache({ ...opts, path, f16As: 'Uint16Array' });
    c.insert(tokens, kvs[dtype]);
    await c.flush();
    caches[dtype] = c;
    out[dtype] = { record_bytes: c.listBlobs()[0].bytes, load_ms: [] };
  }
  for (let r = -1; r < reps; r++) { // r = -1: a warm-up pair, not kept
    for (const dtype of r % 2 ? ['f32', 'f16'] : ['f16', 'f32']) {
      const c = caches[dtype];
      c.clear();
      const t0 = performance.now();
      const h = await c.match(q, { view: true });
      const ms = performance.now() - t0;
      if (!h || h.dtype !== dtype || h.k[1][7] !== kvs[dtype].k[1][7]) throw new Error(`f16: the ${dtype} hit-load`);
      if (r >= 0) out[dtype].load_ms.push(ms);
    }
  }
  for (const dtype of ['f16', 'f32']) {
    await caches[dtype].close({ flush: false });
    await request(indexedDB.deleteDatabase(`/tiers-${dtype}`));
  }
  return out;
}
