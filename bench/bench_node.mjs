// wasm under Node: the workloads of bench_native.c through the public JS API
// (js/index.js), with TypedArray copies of the same bytes as references.
//
//   node bench/bench_node.mjs OUT.json [--quick]
//
// Every figure is a median of several repetitions; nothing asserts on time.
// Results are checked (hits, round trips) before they are timed.
import { mkdtempSync, rmSync, openSync, writeSync, readSync, fsyncSync, closeSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import init from '../js/index.js';
import { median, pairRatio } from './stats.js';

const out = process.argv[2];
const quick = process.argv.includes('--quick');
if (!out) {
  console.error('usage: node bench/bench_node.mjs OUT.json [--quick]');
  process.exit(2);
}
const reps = (n) => (quick ? Math.min(n, 3) : n);
const note = (s) => console.error(`  ${s}`);
// With --expose-gc: collect before each timed large operation, so that a
// collection triggered by earlier garbage is not charged to it.
const gc = typeof globalThis.gc === 'function' ? globalThis.gc : () => {};
const now = () => performance.now();
let sink = 0;

const results = { config: { quick, node: process.version } };

// ---- wasm init ------------------------------------------------------------
{
  const s = [];
  for (let r = 0; r < reps(5); r++) {
    const t0 = now();
    await init({ newInstance: true });
    s.push(now() - t0);
  }
  results.init = { newInstance_ms: median(s) };
  note(`init (new instance): ${median(s).toFixed(2)} ms`);
}
const rlx = await init();

// ---- token sets (as bench_native.c: 2,000 tokens, the first 1,500 shared) --
const L = 2000, SHARED = 1500, EXTRA = 3, QUERIES = 1000;
function mix32(x) {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}
const shared = Uint32Array.from({ length: SHARED }, (_, j) => mix32(j + 1) % 32000);
function tokensOf(i, extra = 0) {
  const t = new Uint32Array(L + extra);
  t.set(shared);
  t[SHARED] = 32000 + i;
  for (let j = SHARED + 1; j < L; j++) t[j] = mix32(Math.imul(i, 1000003) + j) % 32000;
  for (let j = 0; j < extra; j++) t[L + j] = 7 + j;
  return t;
}
const target = (q, n) => (q * 7919) % n;
const tinyKv = (i) => ({ k: [Float32Array.of(i)], v: [Float32Array.of(-i)] });

// ---- lookup and insert --------------------------------------------------------
const Ns = [100, 1000, 10000];
const CAP = 0xffffffff; // the wasm32 maximum
const sets = [];
for (const N of Ns) {
  const cache = rlx.createCache({ capBytes: CAP, fingerprint: 1n });
  for (let i = 0; i < N; i++) cache.insert(tokensOf(i), tinyKv(i));
  const queries = Array.from({ length: QUERIES }, (_, q) => tokensOf(target(q, N), EXTRA));
  for (let q = 0; q < QUERIES; q++) {
    const hit = cache.lookup(queries[q], { view: true });
    if (!hit || hit.matched !== L || hit.tokens[SHARED] !== 32000 + target(q, N) || hit.k[0][0] !== target(q, N)) {
      throw new Error(`wrong hit at N=${N}, query ${q}`);
    }
  }
  sets.push({ N, cache, queries });
}
const narrow = Array.from({ length: QUERIES }, (_, q) => tokensOf(target(q, 100), EXTRA));

function lookupPass(cache, queries, opts) {
  const t0 = now();
  for (let q = 0; q < queries.length; q++) sink += cache.lookup(queries[q], opts).matched;
  return ((now() - t0) / queries.length) * 1000; // us
}

// As in the native bench: the timed pass follows enough passes over the
// same queries to reach steady state (the queries alone stream 8 MB).
const WARM_PASSES = 4;
console.error(`lookup (wasm): the three sets interleaved, each timed pass after ${WARM_PASSES} warm-up passes`);
{
  const R = reps(15);
  const view = sets.map(() => []), copy = sets.map(() => []), narrowS = [], ratio = [], ratioNarrow = [];
  for (let r = 0; r < R; r++) {
    sets.forEach((s, i) => {
      for (let w = 0; w < WARM_PASSES; w++) lookupPass(s.cache, s.queries, { view: true });
      view[i].push(lookupPass(s.cache, s.queries, { view: true }));
      copy[i].push(lookupPass(s.cache, s.queries, {}));
    });
    const big = sets[sets.length - 1].cache;
    for (let w = 0; w < WARM_PASSES; w++) lookupPass(big, narrow, { view: true });
    narrowS.push(lookupPass(big, narrow, { view: true }));
    ratio.push(view[sets.length - 1][r] / view[0][r]);
    ratioNarrow.push(narrowS[r] / view[0][r]);
  }
  sets.forEach((s, i) => {
    results[`set_${s.N}`] = { n: s.N, lookup_view_us: median(view[i]), lookup_copy_us: median(copy[i]) };
    note(`N=${s.N}: lookup ${median(view[i]).toFixed(3)} us (view), ${median(copy[i]).toFixed(3)} us (copy)`);
  });
  const last = results[`set_${Ns[Ns.length - 1]}`];
  last.lookup_narrow_us = median(narrowS);
  last.lookup_growth_from_100 = median(ratio);
  last.lookup_growth_narrow_from_100 = median(ratioNarrow);
  last.lookup_warm_passes = WARM_PASSES;
  note(`growth N=100 -> 10000: x${median(ratio).toFixed(2)} (same 100-entry working set: x${median(ratioNarrow).toFixed(2)})`);
}

console.error('insert (wasm): K more entries into each set, undone after each repetition');
{
  const layers = 4, row = 16, block = L * row; // 1,024,000 bytes of KV per entry, as bench_native.c
  const bigKv = {
    k: Array.from({ length: layers }, (_, l) => Float32Array.from({ length: block }, (_, j) => j * 0.5 + l)),
    v: Array.from({ length: layers }, (_, l) => Float32Array.from({ length: block }, (_, j) => -j * 0.25 - l)),
  };
  for (const s of sets) {
    const K = Math.min(s.N / 10, 100);
    const toks = Array.from({ length: K }, (_, j) => tokensOf(s.N + j));
    const kvs = toks.map((_, j) => tinyKv(s.N + j));
    const tiny = [], withKv = [];
    for (let r = 0; r < reps(9); r++) {
      let t0 = now();
      for (let j = 0; j < K; j++) s.cache.insert(toks[j], kvs[j]);
      tiny.push(((now() - t0) / K) * 1000);
      for (let j = 0; j < K; j++) if (!s.cache.remove(toks[j])) throw new Error('remove');
      if (r >= reps(5)) continue;
      t0 = now();
      for (let j = 0; j < K; j++) s.cache.insert(toks[j], bigKv);
      withKv.push(((now() - t0) / K) * 1000);
      for (let j = 0; j < K; j++) s.cache.remove(toks[j]);
    }
    Object.assign(results[`set_${s.N}`], { insert_k: K, insert_us: median(tiny), insert_copy_us: median(withKv), insert_copy_kv_bytes: 2 * layers * block * 4 });
    note(`N=${s.N}: insert ${median(tiny).toFixed(2)} us (tiny KV), ${median(withKv).toFixed(1)} us (1 MB KV)`);
  }
}
for (const s of sets) s.cache.clear();

// ---- the large entry: 1,024 tokens x 24 layers x 256 floats, K and V --------
console.error('large entry (48 MiB): hit, codec, fs store');
const BT = 1024, BL = 24, ROW = 256, FP = 0x5eedn;
const bigTokens = Uint32Array.from({ length: BT }, (_, i) => mix32(i + 77) % 32000);
const blk = BT * ROW;
const bigEntry = {
  tokens: bigTokens,
  k: Array.from({ length: BL }, (_, l) => Float32Array.from({ length: blk }, (_, j) => (j % 1000) * 0.001 + l)),
  v: Array.from({ length: BL }, (_, l) => Float32Array.from({ length: blk }, (_, j) => (j % 1000) * 0.001 + BL + l)),
};
const kvBytes = 2 * BL * blk * 4;
const bigQuery = new Uint32Array(BT + 3);
bigQuery.set(bigTokens);
bigQuery.set([1, 2, 3], BT);
const allBlocks = [...bigEntry.k, ...bigEntry.v];
const sameBlocks = (a, b) => a.length === b.length && a.every((x, i) => x.length === b[i].length && x[0] === b[i][0] && x[x.length - 1] === b[i][b[i].length - 1]);

{
  const cache = rlx.createCache({ capBytes: CAP, fingerprint: FP });
  cache.insert(bigTokens, bigEntry);
  const h = cache.lookup(bigQuery);
  if (h.matched !== BT || !sameBlocks([...h.k, ...h.v], allBlocks)) throw new Error('big hit differs');
  const R = reps(11);
  const view = [], copy = [], set = [], slice = [];
  const dst = allBlocks.map((b) => new Float32Array(b.length));
  for (let r = 0; r < R; r++) {
    const LOOPS = 2000;
    gc();
    let t0 = now();
    for (let i = 0; i < LOOPS; i++) sink += cache.lookup(bigQuery, { view: true }).matched;
    view.push((now() - t0) / LOOPS / 1000); // s
    gc();
    t0 = now();
    const hit = cache.lookup(bigQuery);
    copy.push((now() - t0) / 1000);
    sink += hit.k[0][1];
    t0 = now();
    for (let i = 0; i < allBlocks.length; i++) dst[i].set(allBlocks[i]);
    set.push((now() - t0) / 1000);
    gc();
    t0 = now();
    const copies = allBlocks.map((b) => b.slice());
    slice.push((now() - t0) / 1000);
    sink += copies[3][5];
  }
  results.hit = {
    kv_bytes: kvBytes, view_s: median(view), copy_s: median(copy), typed_set_s: median(set), typed_slice_s: median(slice),
    view_vs_slice: pairRatio(slice, view), copy_vs_slice: pairRatio(slice, copy), copy_vs_set: pairRatio(set, copy),
  };
  note(`hit: view ${(median(view) * 1e6).toFixed(2)} us, copy ${(median(copy) * 1e3).toFixed(2)} ms; TypedArray set ${(median(set) * 1e3).toFixed(2)} ms, slice ${(median(slice) * 1e3).toFixed(2)} ms`);
  await cache.close();
}

// Like with like: encoding into a ready buffer against TypedArray.set into
// one, encoding to a fresh Uint8Array and decoding to fresh copies against
// slice() (a fresh copy); decoding to views costs no copy at all.
let blob;
{
  blob = rlx.encodeEntry(bigEntry, FP);
  const back = rlx.decodeEntry(blob, { fingerprint: FP });
  if (!back || back.pastLen !== BT || !sameBlocks([...back.k, ...back.v], allBlocks)) throw new Error('codec round trip differs');
  const viewed = rlx.decodeEntry(blob, { fingerprint: FP, view: true });
  if (!sameBlocks([...viewed.k, ...viewed.v], allBlocks) || viewed.k[0].buffer !== blob.buffer) throw new Error('view decode differs');
  const ready = new Uint8Array(rlx.encodedSize(bigEntry));
  if (!rlx.encodeEntry(bigEntry, FP, { out: ready }).every((x, i) => x === blob[i])) throw new Error('encode into differs');
  const R = reps(11);
  const enc = [], encInto = [], dec = [], decView = [], set = [], slice = [];
  const dst = new Uint8Array(blob.length);
  for (let r = 0; r < R; r++) {
    gc();
    let t0 = now();
    const b = rlx.encodeEntry(bigEntry, FP);
    enc.push((now() - t0) / 1000);
    sink += b[100];
    t0 = now();
    rlx.encodeEntry(bigEntry, FP, { out: ready });
    encInto.push((now() - t0) / 1000);
    sink += ready[100];
    gc();
    t0 = now();
    const d = rlx.decodeEntry(blob, { fingerprint: FP });
    dec.push((now() - t0) / 1000);
    sink += d.k[0][1];
    t0 = now();
    for (let i = 0; i < 100; i++) sink += rlx.decodeEntry(blob, { fingerprint: FP, view: true }).k[0][1];
    decView.push((now() - t0) / 100 / 1000);
    t0 = now();
    dst.set(blob);
    set.push((now() - t0) / 1000);
    gc();
    t0 = now();
    const c = blob.slice();
    slice.push((now() - t0) / 1000);
    sink += c[7];
  }
  results.codec = {
    blob_bytes: blob.length, encode_s: median(enc), encode_into_s: median(encInto), decode_s: median(dec), decode_view_s: median(decView),
    typed_set_s: median(set), typed_slice_s: median(slice),
    // Fresh 48 MiB allocations take 20 to 70 ms depending on whether the
    // pages come back from the last one freed, which pairs badly within a
    // repetition: the fresh-memory comparisons are ratios of the medians.
    encode_vs_set: pairRatio(set, encInto), encode_vs_slice: median(slice) / median(enc),
    decode_vs_slice: median(slice) / median(dec), decode_vs_set: median(set) / median(dec), decode_view_vs_set: pairRatio(set, decView),
  };
  const mbs = (s) => (blob.length / s / 1e6).toFixed(0);
  note(`codec: encodeEntry ${mbs(median(enc))} MB/s (into a ready buffer ${mbs(median(encInto))}), decodeEntry ${mbs(median(dec))} MB/s (views: ${(median(decView) * 1e6).toFixed(1)} us); TypedArray set ${mbs(median(set))}, slice ${mbs(median(slice))} MB/s`);
}

{
  const dir = mkdtempSync(join(tmpdir(), 'rlxkv-bench-node-'));
  try {
    const path = join(dir, 'store');
    const R = reps(7);
    const flush = [], load = [], rawW = [], rawR = [], rawRP = [];
    const pre = Buffer.alloc(blob.length);
    const cache = await rlx.openCache({ capBytes: CAP, fingerprint: FP, storage: 'fs', path });
    const raw = join(dir, 'raw.bin');
    for (let r = 0; r < R; r++) {
      cache.insert(bigTokens, bigEntry); // dirty again (not timed)
      gc();
      let t0 = now();
      await cache.flush();
      flush.push((now() - t0) / 1000);
      t0 = now();
      const fd = openSync(raw, 'w');
      writeSync(fd, blob);
      fsyncSync(fd);
      closeSync(fd);
      rawW.push((now() - t0) / 1000);
    }
    await cache.close();
    for (let r = 0; r < R; r++) {
      gc();
      let t0 = now();
      const c = await rlx.openCache({ capBytes: CAP, fingerprint: FP, storage: 'fs', path, preload: true });
      load.push((now() - t0) / 1000);
      if (c.restoreReport.indexed !== 1 || c.restoreReport.bytes !== kvBytes) throw new Error('fs restore');
      await c.close({ flush: false });
      gc();
      t0 = now();
      const b = readFileSync(raw);
      rawR.push((now() - t0) / 1000);
      sink += b[9];
      t0 = now();
      const fd = openSync(raw, 'r');
      let got = 0;
      while (got < pre.length) {
        const n = readSync(fd, pre, got, pre.length - got, got);
        if (n <= 0) break;
        got += n;
      }
      closeSync(fd);
      rawRP.push((now() - t0) / 1000);
    }
    results.store = {
      blob_bytes: blob.length, flush_s: median(flush), load_s: median(load), raw_write_fsync_s: median(rawW),
      raw_read_s: median(rawR), raw_read_prealloc_s: median(rawRP),
      flush_vs_raw_write: pairRatio(rawW, flush), load_vs_readfile: pairRatio(rawR, load), load_vs_readsync: pairRatio(rawRP, load),
    };
    const mbs = (s) => (blob.length / s / 1e6).toFixed(0);
    note(`fs store: flush ${mbs(median(flush))} MB/s, restore (openCache) ${mbs(median(load))} MB/s; raw write+fsync ${mbs(median(rawW))}, raw readFile ${mbs(median(rawR))}, readSync into a ready Buffer ${mbs(median(rawRP))} MB/s`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

results.memory_bytes = rlx.memoryBytes;
writeFileSync(out, JSON.stringify(results, null, 2) + '\n');
console.error(`node: done (wasm memory ${(rlx.memoryBytes / 2 ** 20).toFixed(0)} MiB, checksum ${sink & 0xff})`);
