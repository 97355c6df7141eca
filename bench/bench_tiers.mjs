// Storage as a tier below memory, in Node (storage 'fs', a temporary
// directory on local disk), and float16 entries against the same KV
// widened to float32. Entries are the KV of a 0.5B model's 1,000-token
// prompt: 24 layers, head-major, 2 KV heads × 64 (24,576,000 bytes in f32).
//
//   node --expose-gc bench/bench_tiers.mjs [OUT.json] [--quick] [--dir DIR]
//   (default build/bench/tiers.json; DIR: where the stores go, default the OS temp dir)
//
// Workloads (each a function below, run in a fresh child process where
// memory or a cold start matters; the parent builds the stores):
//   open   openCache against store size: time, RSS after it
//   hit    await cache.match() of a stored-only entry vs fs.promises.readFile
//          of its file, back to back; peak RSS while one entry loads
//   flush  the longest event-loop stall while ~200 MB of dirty entries flush
//   check  every entry of the largest store reachable through match, its KV intact
//   f16    one KV as f16 entries and as f32 entries widened exactly
// Every figure is a median of repetitions; nothing asserts on time.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import init from '../js/index.js';
import { widenF16 } from '../format/f16.js';
import { median, pairRatio } from './stats.js';

const here = dirname(fileURLToPath(import.meta.url));
const self = fileURLToPath(import.meta.url);
const args = process.argv.slice(2);
const quick = args.includes('--quick');
const childAt = args.indexOf('--child');
const gc = typeof globalThis.gc === 'function' ? globalThis.gc : () => {};
const now = () => performance.now();

// ---- the entries ---------------------------------------------------------------
// Entries share no prefix: each is stored as one whole blob, so that a
// hit-load reads the one file its readFile reads (a hit over pages:
// bench/bench_pages.mjs). Were they to share one, its KV would be stored
// once (pages) and a hit would read its parent's file too.
const TOKENS = 1000, SHARED = 0, LAYERS = 24, HEADS = 2, HEAD_DIM = 64;
const BLOCK = HEADS * TOKENS * HEAD_DIM; // values per K or V block
// Where an entry's marker goes: k[0] at head 0's first token past the
// shared prefix (head-major), the entry's own.
const MARK = SHARED * HEAD_DIM;
const FP = 0x5eed0005n;
const layout = { order: 'head-major', heads: HEADS, headDim: HEAD_DIM, layers: LAYERS };
const CAP = 256 << 20;
function mix32(x) {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}
const tokensOf = (i) => Uint32Array.from({ length: TOKENS }, (_, j) => (j < SHARED ? mix32(j + 1) : mix32(Math.imul(i + 1, 7919) + j)) % 32000);
const queryOf = (i) => Uint32Array.from([...tokensOf(i), 1, 2, 3]);
/** Finite binary16 bits, pseudo-random (exponent below 31: no Inf/NaN). */
const f16Bits = (seed) => Uint16Array.from({ length: BLOCK }, (_, j) => {
  const h = mix32(seed * 131071 + j) & 0xffff;
  return (h & 0x7c00) === 0x7c00 ? h & 0xbfff : h;
});
/** One KV as f16 bits and as the same values in f32; entry i's marker in k[0][MARK] and v[last][last]. */
function kvTemplate() {
  const k16 = Array.from({ length: LAYERS }, (_, l) => f16Bits(l + 1));
  const v16 = Array.from({ length: LAYERS }, (_, l) => f16Bits(l + 101));
  return { f16: { k: k16, v: v16 }, f32: { k: k16.map((b) => widenF16(b)), v: v16.map((b) => widenF16(b)) } };
}
function markEntry(kv, i) {
  kv.k[0][MARK] = i;
  kv.v[LAYERS - 1][BLOCK - 1] = -i;
}
const ENTRY_BYTES = 2 * LAYERS * BLOCK * 4;

/** Fields of /proc/self/status in bytes (VmRSS, VmHWM), or null off Linux. */
function procStatus() {
  try {
    const s = readFileSync('/proc/self/status', 'utf8');
    const kb = (k) => Number(s.match(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm'))[1]) * 1024;
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
  } catch { return null; }
}
/** Resets VmHWM to the current RSS (Linux 4.0+); false where it cannot. */
function resetPeak() {
  try { writeFileSync('/proc/self/clear_refs', '5'); return true; } catch { return false; }
}

// ---- child workloads -------------------------------------------------------------
const workloads = {
  /** openCache of the store at path: ms, RSS before and after, entries found. */
  async open(path) {
    const rlx = await init();
    gc();
    const rss0 = process.memoryUsage().rss;
    const t0 = now();
    const cache = await rlx.openCache({ capBytes: CAP, fingerprint: FP, storage: 'fs', path, layout });
    const ms = now() - t0;
    gc();
    const rss1 = process.memoryUsage().rss;
    const r = { ms, rss_before: rss0, rss_after: rss1, loaded: cache.restoreReport.indexed, wasm_bytes: rlx.memoryBytes };
    await cache.close({ flush: false });
    return r;
  },

  /** Hit-load vs readFile, back to back, alternating order; then peak RSS of one load. */
  async hit(path, count, reps) {
    const rlx = await init();
    const cache = await rlx.openCache({ capBytes: CAP, fingerprint: FP, storage: 'fs', path, layout });
    const i = Number(count) >> 1;
    const q = queryOf(i);
    const file = join(path, await blobNameOf(rlx, tokensOf(i), dirname(path)));
    const load = [], raw = [];
    const one = async () => {
      cache.clear(); // resident -> stored-only: the next match reads the blob
      gc();
      const t0 = now();
      const h = await cache.match(q, { view: true });
      const t = now() - t0;
      if (!h || h.matched !== TOKENS || h.k[0][MARK] !== i) throw new Error('hit-load: wrong hit');
      return t;
    };
    const rawOne = async () => {
      gc();
      const t0 = now();
      const b = await readFile(file);
      const t = now() - t0;
      if (b.length !== statSync(file).size) throw new Error('readFile');
      return t;
    };
    // Diagnostic: what a load must do at least, through the public API:
    // readFile, decode to views of the bytes, insert (the copy into wasm).
    const mem = rlx.createCache({ capBytes: CAP, fingerprint: FP, layout });
    const floor = [];
    const floorOne = async () => {
      gc();
      const t0 = now();
      const e = rlx.decodeEntry(await readFile(file), { fingerprint: FP, view: true });
      mem.insert(e.tokens, e);
      const t = now() - t0;
      mem.clear();
      return t;
    };
    await one(); await rawOne(); await floorOne(); // warm: the file in the page cache, the code compiled
    for (let r = 0; r < Number(reps); r++) {
      if (r % 2) { raw.push(await rawOne()); load.push(await one()); } else { load.push(await one()); raw.push(await rawOne()); }
      floor.push(await floorOne());
    }
    await mem.close();
    const out = {
      load_ms: median(load), readfile_ms: median(raw), load_over_readfile: pairRatio(load, raw), file_bytes: statSync(file).size,
      floor_ms: median(floor), load_over_floor: pairRatio(load, floor),
    };
    await cache.close({ flush: false });
    return out;
  },

  /**
   * Peak RSS while one entry loads, in a fresh process: first with a wasm
   * heap that must grow for it, then (after clear) into heap memory
   * already resident.
   */
  async peak(path, count) {
    const rlx = await init();
    const cache = await rlx.openCache({ capBytes: CAP, fingerprint: FP, storage: 'fs', path, layout });
    const measure = async (i) => {
      gc();
      if (!resetPeak()) return null;
      const before = procStatus();
      const h = await cache.match(queryOf(i), { view: true });
      const after = procStatus();
      if (!h || h.k[0][MARK] !== i) throw new Error('peak: wrong hit');
      gc();
      const settled = procStatus();
      return { peak_increase: after.hwm - before.rss, kept: settled.rss - before.rss };
    };
    const cold = await measure(0);
    cache.clear();
    gc();
    const warm = await measure(Math.min(1, Number(count) - 1));
    await cache.close({ flush: false });
    return { entry_bytes: ENTRY_BYTES, cold, warm };
  },

  /** Every entry reachable through match, each one's KV intact (markers, and one whole block). */
  async check(path, count) {
    const rlx = await init();
    const cache = await rlx.openCache({ capBytes: CAP, fingerprint: FP, storage: 'fs', path, layout });
    const tpl = kvTemplate().f32;
    let ok = 0;
    const bad = [];
    for (let i = 0; i < Number(count); i++) {
      const h = await cache.match(queryOf(i), { view: true });
      const good = h && h.matched === TOKENS && h.k[0][MARK] === i && h.v[LAYERS - 1][BLOCK - 1] === -i &&
        sameValues(h.k[LAYERS >> 1], tpl.k[LAYERS >> 1]);
      if (good) ok++; else bad.push(i);
    }
    const r = { entries: Number(count), reachable: ok, bad: bad.slice(0, 10), stats: cache.stats };
    await cache.close({ flush: false });
    return r;
  },

  /** The longest event-loop stall while the cache flushes ~200 MB of dirty entries. */
  async flush(dir, reps) {
    const rlx = await init();
    const path = join(dir, 'flush');
    rmSync(path, { recursive: true, force: true });
    const cache = await rlx.openCache({ capBytes: CAP, fingerprint: FP, storage: 'fs', path, layout });
    const n = Math.round(200e6 / ENTRY_BYTES);
    const kv = kvTemplate().f32;
    const runs = [];
    for (let r = 0; r < Number(reps); r++) {
      for (let i = 0; i < n; i++) { markEntry(kv, 1000 + i); cache.insert(tokensOf(1000 + i), kv); }
      gc();
      const h = monitorEventLoopDelay({ resolution: 1 });
      let last = now(), gap = 0;
      const probe = setInterval(() => { const t = now(); gap = Math.max(gap, t - last); last = t; }, 1);
      await new Promise((res) => setTimeout(res, 20)); // the probe running before the flush starts
      h.enable();
      last = now();
      const t0 = now();
      await cache.flush();
      const ms = now() - t0;
      const t = now(); gap = Math.max(gap, t - last);
      clearInterval(probe);
      h.disable();
      runs.push({ ms, probe_max_gap_ms: gap, eld_max_ms: h.max / 1e6, eld_p99_ms: h.percentile(99) / 1e6 });
    }
    const bytes = n * ENTRY_BYTES;
    await cache.close({ flush: false });
    rmSync(path, { recursive: true, force: true });
    return {
      entries: n, bytes, flush_ms: median(runs.map((x) => x.ms)),
      max_stall_ms: median(runs.map((x) => x.probe_max_gap_ms)), eld_max_ms: median(runs.map((x) => x.eld_max_ms)),
      eld_p99_ms: median(runs.map((x) => x.eld_p99_ms)), runs,
    };
  },

  /**
   * One KV as f16 entries and as f32 entries (widened exactly): memory,
   * stored bytes, hit-load (the two dtypes' loads alternating, back to back).
   */
  async f16(dir, reps) {
    const tpl = kvTemplate();
    const out = {};
    const reopened = {};
    const N = 4; // entries of each dtype
    for (const dtype of ['f16', 'f32']) {
      // A module instance of its own, so that its wasm memory growth is this dtype's.
      const rlx = await init({ newInstance: true });
      const path = join(dir, `f16-${dtype}`);
      rmSync(path, { recursive: true, force: true });
      const mem0 = rlx.memoryBytes;
      const cache = await rlx.openCache({ capBytes: CAP, fingerprint: FP, storage: 'fs', path, layout, f16As: 'Uint16Array' });
      for (let i = 0; i < N; i++) {
        const kv = dtype === 'f16' ? tpl.f16 : tpl.f32;
        if (dtype === 'f32') markEntry(kv, i); else { kv.k[0][MARK] = i; kv.v[LAYERS - 1][BLOCK - 1] = i; }
        cache.insert(tokensOf(i), kv);
      }
      const r = { entries: N, cache_bytes: cache.bytes, wasm_growth: rlx.memoryBytes - mem0 };
      let stored = null;
      try {
        await cache.flush();
        stored = cache.listBlobs().reduce((n, b) => n + b.bytes, 0);
      } catch (err) {
        r.flush_error = `${err.code || err.name}: ${err.message}`;
      }
      await cache.close({ flush: false });
      r.stored_bytes = stored;
      if (stored !== null) {
        // Reopened: the entries come back only through their blobs.
        const back = await rlx.openCache({ capBytes: CAP, fingerprint: FP, storage: 'fs', path, layout, f16As: 'Uint16Array' });
        const first = await back.match(queryOf(1), { view: true });
        const want = dtype === 'f16' ? tpl.f16 : tpl.f32;
        const exact = !!first && first.dtype === dtype && sameValues(first.k[LAYERS >> 1], want.k[LAYERS >> 1]);
        r.restored_exact = exact;
        if (exact) reopened[dtype] = back;
        else {
          r.restore_error = first ? `came back as ${first.dtype}, values differ` : 'match() found nothing: the blob did not load';
          await back.close({ flush: false });
        }
      }
      out[dtype] = r;
    }
    if (reopened.f16 && reopened.f32) {
      const t = { f16: [], f32: [] };
      // One collection before all the pairs, none between: the first load
      // after a collection runs 1-2 ms slower (its file calls, its first
      // touches of memory), which would land on one side of each pair. A
      // load makes little garbage (views, not copies). The order alternates.
      const q = queryOf(2); // made before the clock starts: the hit is what is timed
      gc();
      for (let k = 0; k < Number(reps); k++) {
        for (const dtype of k % 2 ? ['f32', 'f16'] : ['f16', 'f32']) {
          const back = reopened[dtype];
          back.clear();
          const t0 = now();
          const h = await back.match(q, { view: true });
          t[dtype].push(now() - t0);
          if (!h || h.dtype !== dtype) throw new Error('f16: hit-load');
        }
      }
      for (const dtype of ['f16', 'f32']) {
        out[dtype].hit_load_ms = median(t[dtype]);
        out[dtype].hit_load_runs = t[dtype];
      }
      out.hit_load_pairs = pairRatio(t.f16, t.f32);
    }
    for (const back of Object.values(reopened)) await back.close({ flush: false });
    for (const dtype of ['f16', 'f32']) rmSync(join(dir, `f16-${dtype}`), { recursive: true, force: true });
    const rel = (k) => (out.f16[k] != null && out.f32[k] != null ? out.f16[k] / out.f32[k] : null);
    out.ratio = {
      cache_bytes: rel('cache_bytes'), wasm_growth: rel('wasm_growth'), stored_bytes: out.f16.restored_exact ? rel('stored_bytes') : null,
      hit_load: out.hit_load_pairs ?? null,
    };
    return out;
  },
};

function sameValues(a, b) {
  if (a.length !== b.length) return false;
  const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength), y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  for (let i = 4; i < x.length; i++) if (x[i] !== y[i]) return false; // past the marker
  return true;
}
/** The file name the store gives the entry of these tokens: what a one-entry store of them lists. */
async function blobNameOf(rlx, tokens, dir) {
  const path = mkdtempSync(join(dir, 'name-'));
  const c = await rlx.openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'fs', path });
  c.insert(tokens, { k: [Float32Array.of(0)], v: [Float32Array.of(0)] });
  await c.flush();
  const [{ name }] = c.listBlobs();
  await c.close({ flush: false });
  rmSync(path, { recursive: true, force: true });
  return name;
}

if (childAt >= 0) {
  const [mode, ...rest] = args.slice(childAt + 1);
  process.stdout.write(JSON.stringify(await workloads[mode](...rest)) + '\n');
  process.exit(0);
}

// ---- parent: build the stores, run each workload -----------------------------------
/** A workload in a fresh node process (--expose-gc): its JSON. */
function inChild(mode, ...rest) {
  const outText = execFileSync(process.execPath, ['--expose-gc', self, '--child', mode, ...rest.map(String)],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 24 });
  return JSON.parse(outText.trim().split('\n').pop());
}

const outPath = args.find((a, i) => !a.startsWith('--') && args[i - 1] !== '--dir') || join(here, '../build/bench/tiers.json');
const base = args.includes('--dir') ? args[args.indexOf('--dir') + 1] : tmpdir();
const work = mkdtempSync(join(base, 'rlxkv-bench-tiers-'));
const note = (s) => console.error(`  ${s}`);
const results = { config: { quick, node: process.version, entry_bytes: ENTRY_BYTES, tokens: TOKENS, layers: LAYERS, heads: HEADS, head_dim: HEAD_DIM, cap_bytes: CAP } };
try {
  // Store sizes as entry counts: ~24 MB to ~2 GB, fewer if the disk is short.
  const free = (() => { const s = statfsSync(work); return s.bavail * s.bsize; })();
  let counts = quick ? [1, 4, 20] : [1, 4, 20, 84];
  counts = counts.filter((n) => n * ENTRY_BYTES * 1.5 + (400 << 20) < free);
  results.config.disk_free_bytes = free;
  results.config.store_dir = base;
  const R = quick ? 3 : 7;

  const path = join(work, 'store');
  const rlx = await init();
  const builder = await rlx.openCache({ capBytes: CAP, fingerprint: FP, storage: 'fs', path, layout });
  const kv = kvTemplate().f32;
  let built = 0;
  results.open = [];
  for (const n of counts) {
    const t0 = now();
    for (; built < n; built++) {
      markEntry(kv, built);
      builder.insert(tokensOf(built), kv);
      await builder.flush(); // one at a time: capBytes holds ~10, evicted ones must be stored first
    }
    note(`store of ${n} entries (${(n * ENTRY_BYTES / 1e6).toFixed(0)} MB) built in ${((now() - t0) / 1000).toFixed(1)} s`);
    const runs = Array.from({ length: R }, () => inChild('open', path));
    if (runs.some((r) => r.loaded !== n)) throw new Error(`open: found ${runs.map((r) => r.loaded)} of ${n} entries`);
    const row = {
      entries: n, store_bytes: n * ENTRY_BYTES, open_ms: median(runs.map((r) => r.ms)),
      rss_after_open: median(runs.map((r) => r.rss_after)), rss_open_increase: median(runs.map((r) => r.rss_after - r.rss_before)),
    };
    results.open.push(row);
    note(`open ${n} entries: ${row.open_ms.toFixed(1)} ms, RSS after ${(row.rss_after_open / 2 ** 20).toFixed(0)} MiB (+${(row.rss_open_increase / 2 ** 20).toFixed(1)} MiB)`);
  }
  await builder.close({ flush: false });
  const largest = counts[counts.length - 1];

  results.hit = inChild('hit', path, largest, quick ? 5 : 15);
  note(`hit-load ${results.hit.load_ms.toFixed(1)} ms vs readFile ${results.hit.readfile_ms.toFixed(1)} ms: ${results.hit.load_over_readfile.toFixed(2)}×`);
  results.peak = inChild('peak', path, largest);
  if (results.peak.cold) note(`peak RSS increase of one load: ${(results.peak.cold.peak_increase / ENTRY_BYTES).toFixed(2)}× the entry (heap growing), ${(results.peak.warm.peak_increase / ENTRY_BYTES).toFixed(2)}× (heap resident)`);
  results.check = inChild('check', path, largest);
  note(`check: ${results.check.reachable} of ${results.check.entries} entries reachable through match`);
  rmSync(path, { recursive: true, force: true }); // the big store goes before the next one is made

  results.flush = inChild('flush', work, quick ? 2 : 5);
  note(`flush of ${(results.flush.bytes / 1e6).toFixed(0)} MB: ${results.flush.flush_ms.toFixed(0)} ms, longest stall ${results.flush.max_stall_ms.toFixed(1)} ms (event-loop delay max ${results.flush.eld_max_ms.toFixed(1)} ms)`);

  results.f16 = inChild('f16', work, quick ? 5 : 31);
  note(`f16/f32: cache.bytes ${results.f16.ratio.cache_bytes.toFixed(3)}×, wasm growth ${results.f16.ratio.wasm_growth.toFixed(3)}×, stored ${results.f16.ratio.stored_bytes ?? 'n/a'}, hit-load ${results.f16.ratio.hit_load ?? 'n/a'}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}

mkdirSync(dirname(outPath), { recursive: true });
writeFileSync(outPath, JSON.stringify(results, null, 2) + '\n');
const { tiersTable } = await import('./report_tiers.mjs');
console.log(tiersTable({ tiers: results }));
console.log(`wrote ${outPath}`);
