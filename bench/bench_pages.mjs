// Node: the hit-load of a 1,000-token prompt stored as pages (issue #23),
// as an app sees it through the public API, and the gather of a hit over
// pages against a memcpy of the same bytes.
//
//   node --expose-gc bench/bench_pages.mjs [OUT.json] [--quick]   (default build/bench/pages.json)
//
// The store (bench/pages_workload.js): a 400-token system prompt, then 6
// turns of 100 tokens, each inserted and flushed in turn (storage 'fs', a
// temporary directory on local disk): a hit on the 1,000 tokens reads 7
// pages, parents first. Beside it the same 1,000 tokens stored whole (1
// blob), and a raw file of the same bytes as that blob. f16 KV, head-major,
// in Qwen2.5-0.5B's shape (24 layers, 2 KV heads × 64: 12,288 bytes a
// token); without --quick also Qwen2.5-7B's (28 × 4 × 128: 57,344).
//
// hit      each repetition a fresh process (a reload): the time from
//          openCache to `await cache.match(query)` returning the hit's k/v
//          arrays (copies, or view: true), and fs.promises.readFile of the
//          raw file, back to back, which goes first alternating (the files
//          in the OS page cache for both). Then, untimed for the target:
//          the same hit looked up again from memory (its gather alone), a
//          readFile of each page file in turn, and a check of the values.
// gather   in one process, a resident hit: cache.lookup (copies) of the
//          7-page path, and of the 1-page entry, against a TypedArray set()
//          of the same bytes from wasm memory, into new arrays (what lookup
//          hands out: fresh memory) and into arrays touched beforehand.
// Medians; each ratio is the median of the repetitions' own ratios.
// Nothing asserts on time.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import init from '../js/index.js';
import { median, pairRatio } from './stats.js';
import { CAP, FP, SHAPES, STEPS, TOKENS, build, bytesPerToken, check, fullBlocks, kvOf, layoutOf, queryOf, tokensOf } from './pages_workload.js';

const here = dirname(fileURLToPath(import.meta.url));
const self = fileURLToPath(import.meta.url);
const args = process.argv.slice(2);
const quick = args.includes('--quick');
const childAt = args.indexOf('--child');
const gc = typeof globalThis.gc === 'function' ? globalThis.gc : () => {};
const now = () => performance.now();
const blobFiles = (dir) => readdirSync(dir).filter((n) => n.endsWith('.rlxkv')).sort();

/** Time spent in WebAssembly.Memory.prototype.grow (and bytes grown) between reset() and stop(). */
function growMeter() {
  const M = WebAssembly.Memory.prototype, grow = M.grow;
  const m = { ms: 0, bytes: 0, on: false, reset() { m.ms = 0; m.bytes = 0; m.on = true; }, stop() { m.on = false; } };
  M.grow = function (pages) {
    const t0 = now();
    try { return grow.call(this, pages); } finally { if (m.on) { m.ms += now() - t0; m.bytes += pages * 65536; } }
  };
  return m;
}

// ---- child workloads -------------------------------------------------------------
const workloads = {
  /** One hit-load after a reload (this fresh process) and one readFile of the raw file. */
  async hit({ shape, dir, raw, view, rawFirst, pageFiles }) {
    const s = SHAPES[shape];
    const rlx = await init(); // the module's load is not the cache's: untimed
    const q = queryOf();
    const grows = growMeter();
    let cache, hit, open_ms, match_ms;
    const load = async () => {
      gc();
      const t0 = now();
      cache = await rlx.openCache({ capBytes: CAP, fingerprint: FP, storage: 'fs', path: dir, layout: layoutOf(s) });
      const t1 = now();
      grows.reset();
      hit = await cache.match(q, { view });
      const t2 = now();
      grows.stop();
      open_ms = t1 - t0;
      match_ms = t2 - t1;
    };
    let readfile_ms;
    const rawRead = async () => {
      gc();
      const t0 = now();
      const b = await readFile(raw);
      readfile_ms = now() - t0;
      if (!b.length) throw new Error('readFile: empty');
    };
    if (rawFirst) { await rawRead(); await load(); } else { await load(); await rawRead(); }
    const out = { open_ms, match_ms, total_ms: open_ms + match_ms, readfile_ms, view: hit.view, indexed: cache.restoreReport.indexed, match_grow_ms: grows.ms, match_grew_bytes: grows.bytes };
    // Checked before the diagnostics: a view of a gathered hit holds until the next gathered hit.
    check(hit, s, fullBlocks(s));
    // Diagnostics: the same hit again from memory (the gather or the views alone), the page files read one by one.
    gc();
    let t0 = now();
    const again = cache.lookup(q, { view });
    out.relookup_ms = now() - t0;
    if (!again || again.matched !== TOKENS) throw new Error('relookup: no hit');
    gc();
    t0 = now();
    for (const f of pageFiles) await readFile(join(dir, f));
    out.readfile_pages_ms = now() - t0;
    await cache.close({ flush: false });
    return out;
  },

  /** The gather of a resident hit over 7 pages against memcpy of the same bytes. */
  async gather({ shape, reps }) {
    const s = SHAPES[shape];
    const rlx = await init();
    const blocks = fullBlocks(s);
    const tokens = tokensOf();
    const q = queryOf();
    const paged = rlx.createCache({ capBytes: CAP, fingerprint: FP, layout: layoutOf(s) });
    for (const n of STEPS.paged) paged.insert(tokens.subarray(0, n), kvOf(s, blocks, n));
    const whole = rlx.createCache({ capBytes: CAP, fingerprint: FP, layout: layoutOf(s) });
    whole.insert(tokens, kvOf(s, blocks, TOKENS));
    if (!paged.paging || paged.bytes !== whole.bytes) throw new Error(`gather: the paged cache holds ${paged.bytes} bytes, the whole one ${whole.bytes}`);
    const source = whole.lookup(q, { view: true }); // views of the wasm heap: memcpy's source
    if (!source.view) throw new Error('gather: no view of the whole entry');
    check(paged.lookup(q), s, blocks);
    check(whole.lookup(q), s, blocks);
    const pagedView = paged.lookup(q, { view: true });
    const srcBlocks = () => [...source.k, ...source.v].map((a) => new Uint16Array(a.buffer, a.byteOffset, a.length));
    const ready = srcBlocks().map((a) => new Uint16Array(a.length).fill(1));
    let sink = 0;
    const OPS = {
      // What lookup hands out: new arrays, gathered from 7 pages' runs (2 heads × 7 pieces a block).
      gather_pages: () => { sink += paged.lookup(q).k.length; },
      // The same hit stored whole: one piece, each block one slice() of the heap.
      copy_whole: () => { sink += whole.lookup(q).k.length; },
      // memcpy into new arrays (fresh memory, as lookup's): new TypedArray(n).set(view), block by block.
      memcpy_fresh: () => { for (const a of srcBlocks()) { const o = new Uint16Array(a.length); o.set(a); sink += o.length; } },
      // memcpy as ArrayBuffer.slice, what a one-piece copy does.
      slice_fresh: () => { for (const a of srcBlocks()) sink += a.buffer.slice(a.byteOffset, a.byteOffset + a.byteLength).byteLength; },
      // memcpy into arrays touched beforehand (ready memory): no allocation.
      memcpy_ready: () => { const src = srcBlocks(); for (let b = 0; b < src.length; b++) ready[b].set(src[b]); sink += ready.length; },
    };
    const names = Object.keys(OPS);
    const t = Object.fromEntries(names.map((n) => [n, []]));
    for (let r = -2; r < reps; r++) { // two rounds of warm-up
      for (let i = 0; i < names.length; i++) {
        const n = names[(i + r + 2) % names.length]; // the order rotates
        gc();
        const t0 = now();
        OPS[n]();
        const ms = now() - t0;
        if (r >= 0) t[n].push(ms);
      }
    }
    const out = { bytes: paged.bytes, reps, paged_view_is_view: pagedView.view, sink };
    for (const n of names) out[`${n}_ms`] = median(t[n]);
    // Speeds against memcpy (memcpy's time / the copy's): 1 is memcpy's speed.
    out.gather_speed_vs_memcpy_fresh = pairRatio(t.memcpy_fresh, t.gather_pages);
    out.gather_speed_vs_memcpy_ready = pairRatio(t.memcpy_ready, t.gather_pages);
    out.gather_speed_vs_slice_fresh = pairRatio(t.slice_fresh, t.gather_pages);
    out.copy_whole_speed_vs_memcpy_fresh = pairRatio(t.memcpy_fresh, t.copy_whole);
    out.gather_over_copy_whole = pairRatio(t.gather_pages, t.copy_whole);
    await paged.close();
    await whole.close();
    return out;
  },
};

if (childAt >= 0) {
  const [mode, arg] = args.slice(childAt + 1);
  process.stdout.write(JSON.stringify(await workloads[mode](JSON.parse(arg))) + '\n');
  process.exit(0);
}

// ---- parent: build the stores, run each workload in fresh processes ----------------
function inChild(mode, arg) {
  const text = execFileSync(process.execPath, ['--expose-gc', self, '--child', mode, JSON.stringify(arg)],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 24 });
  return JSON.parse(text.trim().split('\n').pop());
}

const outPath = args.find((a) => !a.startsWith('--')) || join(here, '../build/bench/pages.json');
const work = mkdtempSync(join(tmpdir(), 'rlxkv-bench-pages-'));
const note = (x) => console.error(`  ${x}`);
const shapes = quick ? ['qwen2.5-0.5b'] : ['qwen2.5-0.5b', 'qwen2.5-7b'];
const REPS = quick ? 5 : 15;
const GATHER_REPS = quick ? 15 : 101;
const results = { config: { quick, node: process.version, tokens: TOKENS, steps: STEPS, reps: REPS, gather_reps: GATHER_REPS, shapes: Object.fromEntries(shapes.map((n) => [n, SHAPES[n]])) }, shapes: [] };
try {
  const rlx = await init();
  for (const shape of shapes) {
    const s = SHAPES[shape];
    const blocks = fullBlocks(s);
    const row = { shape, ...s, bytes_per_token: bytesPerToken(s), kv_bytes: bytesPerToken(s) * TOKENS };
    const dirs = {};
    for (const variant of ['paged', 'whole']) {
      const dir = dirs[variant] = join(work, shape, variant);
      const cache = await rlx.openCache({ capBytes: CAP, fingerprint: FP, storage: 'fs', path: dir, layout: layoutOf(s) });
      await build(cache, s, blocks, variant);
      await cache.close({ flush: false });
      const files = blobFiles(dir);
      if (files.length !== STEPS[variant].length) throw new Error(`${variant}: ${files.length} blobs, not ${STEPS[variant].length}`);
      row[`${variant}_files`] = files.length;
      row[`${variant}_file_bytes`] = files.reduce((n, f) => n + statSync(join(dir, f)).size, 0);
    }
    const raw = join(work, shape, 'raw.bin'); // the whole blob's bytes, as a plain file
    copyFileSync(join(dirs.whole, blobFiles(dirs.whole)[0]), raw);
    row.raw_bytes = statSync(raw).size;
    note(`${shape}: ${row.kv_bytes.toLocaleString('en-US')} bytes of KV; paged ${row.paged_files} files (${row.paged_file_bytes.toLocaleString('en-US')} bytes), whole 1 (${row.whole_file_bytes.toLocaleString('en-US')})`);

    // Hit-loads: every repetition a fresh process per (variant, view), the order rotating.
    const combos = [];
    for (const variant of ['paged', 'whole']) for (const view of [false, true]) combos.push({ variant, view });
    const runs = Object.fromEntries(combos.map(({ variant, view }) => [`${variant}_${view ? 'view' : 'copy'}`, []]));
    for (let r = 0; r < REPS; r++) {
      for (let i = 0; i < combos.length; i++) {
        const { variant, view } = combos[(i + r) % combos.length];
        runs[`${variant}_${view ? 'view' : 'copy'}`].push(inChild('hit', {
          shape, dir: dirs[variant], raw, view, rawFirst: (r + i) % 2 === 1, pageFiles: blobFiles(dirs[variant]),
        }));
      }
    }
    row.hit = {};
    for (const [k, rs] of Object.entries(runs)) {
      const h = { view: rs[0].view };
      for (const f of ['open_ms', 'match_ms', 'total_ms', 'readfile_ms', 'relookup_ms', 'readfile_pages_ms', 'match_grow_ms', 'match_grew_bytes']) h[f] = median(rs.map((x) => x[f]));
      h.over_readfile = pairRatio(rs.map((x) => x.total_ms), rs.map((x) => x.readfile_ms));
      h.match_over_readfile = pairRatio(rs.map((x) => x.match_ms), rs.map((x) => x.readfile_ms));
      h.reps = rs;
      row.hit[k] = h;
      note(`${shape} ${k}: openCache→match ${h.total_ms.toFixed(2)} ms (open ${h.open_ms.toFixed(2)}, match ${h.match_ms.toFixed(2)}; gather again ${h.relookup_ms.toFixed(2)}) vs readFile ${h.readfile_ms.toFixed(2)} ms: ${h.over_readfile.toFixed(2)}×`);
    }
    row.gather = inChild('gather', { shape, reps: GATHER_REPS });
    const g = row.gather;
    note(`${shape} gather of 7 pages ${g.gather_pages_ms.toFixed(2)} ms vs memcpy into new arrays ${g.memcpy_fresh_ms.toFixed(2)} ms (${g.gather_speed_vs_memcpy_fresh.toFixed(2)}× its speed), into ready ones ${g.memcpy_ready_ms.toFixed(2)} ms (${g.gather_speed_vs_memcpy_ready.toFixed(2)}×)`);
    results.shapes.push(row);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
mkdirSync(dirname(outPath), { recursive: true });
writeFileSync(outPath, JSON.stringify(results, null, 2) + '\n');
const { pagesTable } = await import('./report_pages.mjs');
console.log(pagesTable({ node: results }));
console.log(`wrote ${outPath}`);
