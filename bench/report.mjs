// Turns build/bench/*.json into the table (stdout), BENCHMARKS.md and the
// chart (SVG). Run by scripts/bench.sh:
//   node bench/report.mjs DIR BENCHMARKS.md bench/chart.svg [--quick]
import { readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { tiersMarkdown } from './report_tiers.mjs';
import { sig, time, us, ms, mbs, times as x, kb, mib, n0 } from './format.mjs';

const [dir, mdPath, svgPath] = process.argv.slice(2);
const quick = process.argv.includes('--quick');
if (!dir || !mdPath || !svgPath) {
  console.error('usage: node bench/report.mjs DIR BENCHMARKS.md chart.svg [--quick]');
  process.exit(2);
}
const load = (name) => {
  try { return JSON.parse(readFileSync(join(dir, name), 'utf8')); } catch { return null; }
};
const nat = load('native.json');
const nod = load('node.json');
const br = load('browser.json');
const sz = load('size.json');
const tjs = [['Node, onnxruntime-node', load('transformers-node.json')], ['Chromium, onnxruntime-web wasm', load('transformers-browser.json')]]
  .filter(([, r]) => r);
if (!nat) throw new Error(`no ${join(dir, 'native.json')}: run scripts/bench.sh`);

// ---- machine -----------------------------------------------------------------
function firstLine(cmd, args) {
  try { return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).split('\n')[0].trim(); } catch { return null; }
}
let cpuModel = os.cpus()[0] ? os.cpus()[0].model : 'unknown';
let memTotal = os.totalmem();
try {
  const ci = readFileSync('/proc/cpuinfo', 'utf8').match(/^model name\s*:\s*(.+)$/m);
  if (ci) cpuModel = ci[1].trim();
  const mi = readFileSync('/proc/meminfo', 'utf8').match(/^MemTotal:\s*(\d+) kB/m);
  if (mi) memTotal = Number(mi[1]) * 1024;
} catch { /* not Linux */ }
const nproc = Number(firstLine('nproc', [])) || os.cpus().length;
const machine = {
  date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
  nproc,
  cpu: cpuModel,
  memory: `${(memTotal / 2 ** 30).toFixed(1)} GiB`,
  kernel: `${os.type()} ${os.release()}`,
  load: os.loadavg().map((l) => l.toFixed(2)).join(', '),
  compiler: `gcc ${nat.config.compiler}, -O2`,
  emcc: (firstLine('emcc', ['--version']) || '').replace(/^emcc \(.*?\)\s*/, '').replace(/\s*\(\)$/, '') || 'unknown',
  node: nod ? nod.config.node : process.version,
  chromium: br ? `${br.config.chromium} (page imports ${br.config.entry || '/js/index.js'})` : 'not run',
  seconds: process.env.BENCH_SECONDS ? Number(process.env.BENCH_SECONDS) : null,
};

// ---- rows ----------------------------------------------------------------------
// Each row: section, workload, rlxkv, reference (what it is measured against),
// speed (rlxkv relative to the reference: > 1× = rlxkv faster), chart entry.
const rows = [];
const chart = []; // { group, label, ratio }
function row(section, workload, rlxkv, reference, speed, chartAs, { label, goal } = {}) {
  rows.push({ section, workload, rlxkv, reference, speed: speed === null ? '—' : x(speed) });
  if (chartAs && speed !== null) chart.push({ group: chartAs, label: label || workload, ratio: speed, goal });
}
const NAT = 'Native C (rlxkv vs the reference algorithm in C, one process)';
const VSB = 'Native C: speed vs the baseline (reference algorithm in C)';
const VSR = 'Speed vs a raw reference (memcpy, TypedArray, raw IndexedDB)';
const Ns = [100, 1000, 10000];
const set = (n) => nat[`set_${n}`];
// A per-repetition ratio from the JSON when the bench recorded one (both
// sides timed in the same repetition), else the ratio of the medians.
const pr = (obj, key, fallback) => (obj && typeof obj[key] === 'number' ? obj[key] : fallback);

// The rlxkv time shown next to the baseline's is rlxkv timed in the
// baseline's repetitions (what lookup_speedup pairs it with), not the
// steady state of the growth rows.
for (const n of Ns) {
  const s = set(n);
  const paired = typeof s.lookup_rlxkv_paired_us === 'number';
  row(NAT, `Lookup, N=${n0(n)} (per lookup${paired ? '; rlxkv timed in the baseline\'s repetitions' : ''})`,
    us(paired ? s.lookup_rlxkv_paired_us : s.lookup_rlxkv_us), `baseline ${us(s.lookup_baseline_us)}`,
    pr(s, 'lookup_speedup', s.lookup_baseline_us / s.lookup_rlxkv_us), VSB,
    { label: `Lookup, N=${n0(n)} (per lookup)`, goal: n === 1000 ? 100 : undefined });
}
const big = set(10000);
const growth = big.lookup_growth_from_100;
const blGrowth = big.lookup_baseline_us / set(100).lookup_baseline_us;
const warmPasses = big.lookup_warm_passes || 1;
rows.push({
  section: NAT, workload: `Lookup growth, N=100 → 10,000 (timed after ${warmPasses} warm-up passes)`, rlxkv: x(growth),
  reference: `baseline ${x(blGrowth)}`, speed: `same 100-entry working set: ${x(big.lookup_growth_narrow_from_100)}`,
});
if (typeof big.lookup_growth_cold_from_100 === 'number') {
  rows.push({
    section: NAT, workload: 'Lookup, first pass after the other sets ran, N=100 → 10,000',
    rlxkv: `${us(set(100).lookup_rlxkv_cold_us)} → ${us(big.lookup_rlxkv_cold_us)}`,
    reference: '—', speed: `growth ${x(big.lookup_growth_cold_from_100)}`,
  });
}
for (const n of Ns) {
  const s = set(n);
  row(NAT, `Insert, KV copy excluded, N=${n0(n)} (per entry)`, us(s.insert_rlxkv_us), `baseline ${us(s.insert_baseline_us)}`,
    pr(s, 'insert_speedup', s.insert_baseline_us / s.insert_rlxkv_us), VSB, { goal: 10 });
}
for (const n of Ns) {
  const s = set(n);
  row(NAT, `Insert, KV copy included (1 MB KV), N=${n0(n)}`, us(s.insert_copy_rlxkv_us), `baseline ${us(s.insert_copy_baseline_us)}`,
    pr(s, 'insert_copy_speedup', s.insert_copy_baseline_us / s.insert_copy_rlxkv_us), VSB);
}
const hit = nat.hit;
row(NAT, `View hit, ${mib(hit.kv_bytes)} entry (rlxkv_cache_lookup)`, time(hit.view_s), `baseline clone ${time(hit.baseline_clone_s)}`,
  pr(hit, 'view_over_clone_speedup', hit.baseline_clone_s / hit.view_s), VSB, { goal: 1000 });
row(NAT, `Copying hit, ${mib(hit.kv_bytes)} (lookup + rlxkv_hit_copy)`, time(hit.copy_s), `baseline clone ${time(hit.baseline_clone_s)}`,
  pr(hit, 'copy_over_clone_speedup', hit.baseline_clone_s / hit.copy_s), VSB);
row(NAT, 'Copying hit vs memcpy of the same bytes', time(hit.copy_s), `memcpy ${time(hit.memcpy_s)}`, pr(hit, 'copy_vs_memcpy', hit.memcpy_s / hit.copy_s), VSR,
  { label: 'Native copying hit vs memcpy' });
const cod = nat.codec;
const B = cod.blob_bytes;
row(NAT, `Encode, ${mib(B)} blob`, mbs(B, cod.encode_s), `memcpy ${mbs(B, cod.memcpy_s)}`, pr(cod, 'encode_vs_memcpy', cod.memcpy_s / cod.encode_s), VSR,
  { label: 'Native encode vs memcpy', goal: 0.5 });
row(NAT, 'Encode vs per-float writes', mbs(B, cod.encode_s), `baseline ${mbs(B, cod.baseline_encode_s)}`, pr(cod, 'encode_over_baseline_speedup', cod.baseline_encode_s / cod.encode_s), VSB);
row(NAT, `Decode, ${mib(B)} blob`, mbs(B, cod.decode_s), `memcpy ${mbs(B, cod.memcpy_s)}`, pr(cod, 'decode_vs_memcpy', cod.memcpy_s / cod.decode_s), VSR,
  { label: 'Native decode vs memcpy', goal: 0.5 });
row(NAT, 'Decode vs malloc + memcpy (fresh memory)', mbs(B, cod.decode_s), `malloc+memcpy ${mbs(B, cod.memcpy_fresh_s)}`, pr(cod, 'decode_vs_memcpy_fresh', cod.memcpy_fresh_s / cod.decode_s), null);
row(NAT, 'Decode vs per-float reads', mbs(B, cod.decode_s), `baseline ${mbs(B, cod.baseline_decode_s)}`, pr(cod, 'decode_over_baseline_speedup', cod.baseline_decode_s / cod.decode_s), VSB);
const rec = nat.recycled;
if (rec) {
  row(NAT, 'Decode, allocations recycled (diagnostic)', mbs(rec.blob_bytes, rec.decode_s), `memcpy ${mbs(rec.blob_bytes, rec.memcpy_s)}`,
    rec.memcpy_s / rec.decode_s, null);
}
rows.push({
  section: NAT, workload: 'Bookkeeping per entry beyond KV + tokens (N=10,000)',
  rlxkv: `${n0(Math.round(big.mem_rlxkv_overhead_per_entry))} B`, reference: `baseline ${n0(Math.round(big.mem_baseline_overhead_per_entry))} B`,
  speed: `payload ${n0(big.mem_payload_per_entry)} B/entry`,
});

const NODE = 'wasm under Node (public JS API)';
if (nod) {
  rows.push({ section: NODE, workload: 'init() of a new module instance', rlxkv: ms(nod.init.newInstance_ms), reference: '—', speed: '—' });
  for (const n of Ns) {
    const s = nod[`set_${n}`];
    row(NODE, `Lookup, N=${n0(n)}, view (per lookup)`, us(s.lookup_view_us), `native rlxkv ${us(set(n).lookup_rlxkv_us)}`,
      set(n).lookup_rlxkv_us / s.lookup_view_us, null);
  }
  const nb = nod.set_10000;
  rows.push({
    section: NODE, workload: 'Lookup growth, N=100 → 10,000', rlxkv: x(nb.lookup_growth_from_100), reference: '—',
    speed: `same 100-entry working set: ${x(nb.lookup_growth_narrow_from_100)}`,
  });
  for (const n of Ns) {
    const s = nod[`set_${n}`];
    row(NODE, `Insert, tiny KV, N=${n0(n)} (per entry)`, us(s.insert_us), `native rlxkv ${us(set(n).insert_rlxkv_us)}`,
      set(n).insert_rlxkv_us / s.insert_us, null);
  }
  for (const n of Ns) {
    const s = nod[`set_${n}`];
    row(NODE, `Insert, 1 MB KV, N=${n0(n)}`, us(s.insert_copy_us), `native rlxkv ${us(set(n).insert_copy_rlxkv_us)}`,
      set(n).insert_copy_rlxkv_us / s.insert_copy_us, null);
  }
  const h = nod.hit;
  row(NODE, `Hit, view, ${mib(h.kv_bytes)}`, time(h.view_s), `TypedArray slice ${time(h.typed_slice_s)}`, pr(h, 'view_vs_slice', h.typed_slice_s / h.view_s), null);
  row(NODE, `Hit, copy (fresh Float32Arrays), ${mib(h.kv_bytes)}`, time(h.copy_s), `TypedArray slice ${time(h.typed_slice_s)}`, pr(h, 'copy_vs_slice', h.typed_slice_s / h.copy_s), VSR,
    { label: 'wasm copying hit vs TypedArray slice' });
  row(NODE, 'Hit, copy vs set() into ready arrays', time(h.copy_s), `TypedArray set ${time(h.typed_set_s)}`, pr(h, 'copy_vs_set', h.typed_set_s / h.copy_s), null);
  const c = nod.codec;
  // Like with like: into ready memory against set(), into fresh memory against slice().
  row(NODE, `encodeEntry into a ready buffer (opts.out), ${mib(c.blob_bytes)}`, mbs(c.blob_bytes, c.encode_into_s), `TypedArray set ${mbs(c.blob_bytes, c.typed_set_s)}`, pr(c, 'encode_vs_set', c.typed_set_s / c.encode_into_s), VSR,
    { label: 'wasm encodeEntry (into a ready buffer) vs TypedArray set', goal: 0.5 });
  row(NODE, 'encodeEntry to a fresh Uint8Array vs slice()', mbs(c.blob_bytes, c.encode_s), `TypedArray slice ${mbs(c.blob_bytes, c.typed_slice_s)}`, pr(c, 'encode_vs_slice', c.typed_slice_s / c.encode_s), null);
  row(NODE, `decodeEntry to fresh copies, ${mib(c.blob_bytes)}`, mbs(c.blob_bytes, c.decode_s), `TypedArray slice ${mbs(c.blob_bytes, c.typed_slice_s)}`, pr(c, 'decode_vs_slice', c.typed_slice_s / c.decode_s), VSR,
    { label: 'wasm decodeEntry (copies) vs TypedArray slice', goal: 0.5 });
  row(NODE, 'decodeEntry to fresh copies vs set() into ready arrays', mbs(c.blob_bytes, c.decode_s), `TypedArray set ${mbs(c.blob_bytes, c.typed_set_s)}`, pr(c, 'decode_vs_set', c.typed_set_s / c.decode_s), null);
  row(NODE, 'decodeEntry to views (opts.view)', time(c.decode_view_s), `TypedArray set ${time(c.typed_set_s)}`, pr(c, 'decode_view_vs_set', c.typed_set_s / c.decode_view_s), null);
  const s = nod.store;
  row(NODE, `fs store: flush (storage 'fs'), ${mib(s.blob_bytes)}`, mbs(s.blob_bytes, s.flush_s), `write+fsync ${mbs(s.blob_bytes, s.raw_write_fsync_s)}`,
    pr(s, 'flush_vs_raw_write', s.raw_write_fsync_s / s.flush_s), null);
  row(NODE, 'fs store: restore (openCache with preload: true)', mbs(s.blob_bytes, s.load_s), `readFileSync ${mbs(s.blob_bytes, s.raw_read_s)}`, pr(s, 'load_vs_readfile', s.raw_read_s / s.load_s), null);
  row(NODE, 'fs store: restore vs readSync into a ready Buffer', mbs(s.blob_bytes, s.load_s), `readSync ${mbs(s.blob_bytes, s.raw_read_prealloc_s)}`,
    pr(s, 'load_vs_readsync', s.raw_read_prealloc_s / s.load_s), null);
}

const BR = 'Chromium + IndexedDB (same page)';
const idbSizes = br ? Object.keys(br).map((k) => /^idb_(\d+)$/.exec(k)).filter(Boolean).map((m) => Number(m[1])).sort((a, b) => a - b) : [];
if (br) {
  for (const m of idbSizes) {
    const r = br[`idb_${m}`];
    row(BR, `Restore ${m} MiB on page load (openCache 'idb')`, ms(r.restore_ms), `raw get ${ms(r.raw_get_ms)}`, 1 / r.restore_over_get, VSR,
      { label: `IndexedDB restore ${m} MiB vs raw get`, goal: 1 / 1.5 });
  }
  for (const m of idbSizes) {
    const r = br[`idb_${m}`];
    rows.push({ section: BR, workload: `Raw getAllKeys + getAll, ${m} MiB (diagnostic)`, rlxkv: '—', reference: ms(r.raw_getall_ms), speed: `get: ${ms(r.raw_get_ms)}` });
  }
  for (const m of idbSizes) {
    const r = br[`idb_${m}`];
    if (r.raw_get_known_keys_ms === undefined) continue;
    rows.push({ section: BR, workload: `Raw gets by keys known beforehand, ${m} MiB (diagnostic, no getAllKeys)`, rlxkv: ms(r.restore_ms), reference: ms(r.raw_get_known_keys_ms), speed: `restore ${x(r.restore_over_get_known_keys)} this` });
  }
  for (const m of idbSizes) {
    const r = br[`idb_${m}`];
    row(BR, `Flush ${m} MiB`, ms(r.flush_ms), `raw put ${ms(r.raw_put_ms)}`, 1 / r.flush_over_put, VSR,
      { label: `IndexedDB flush ${m} MiB vs raw put` });
  }
  rows.push({ section: BR, workload: 'init() on page load', rlxkv: ms(br.idb_1.init_ms), reference: '—', speed: '—' });
}

const TJS = `transformers.js through rlxkv/transformers (${tjs.length ? `${n0(tjs[0][1].rows[0].prompt_tokens)}-token prompt` : 'a chat prompt'}, the demo transformer as ONNX)`;
const pct = (f) => `${sig(f * 100, 2)}%`;
for (const [where, r] of tjs) {
  for (const w of r.rows) {
    const what = `${where}, ${w.label}`;
    row(TJS, `Time to first token, warm (${n0(w.restored_tokens)} of ${n0(w.prompt_tokens)} tokens restored) vs cold: ${what}`,
      ms(w.warm_ttft_ms), `cold ${ms(w.cold_ttft_ms)}`, w.cold_over_warm, null);
    row(TJS, `Warm restore (lookup + copy + tensorsFromHit${w.store === 'auto' ? '' : ' with a dtype change'}) vs a bare lookup + copy of the same ${mib(w.kv_bytes)}: ${what}`,
      ms(w.loop_restore_ms), `bare ${ms(w.loop_bare_lookup_ms)}`, 1 / w.loop_restore_over_bare, w.store === 'auto' ? 'rlxkv/transformers: warm restore vs a bare lookup + copy' : null,
      { label: `${where.split(',')[0]} ${w.label}: adapter restore vs bare lookup + copy`, goal: 1 / 1.2 });
    rows.push({
      section: TJS, workload: `The adapter's conversion, share of the restore (its own lookup + copy ${ms(w.loop_lookup_ms)}): ${what}`,
      rlxkv: ms(w.convert_only_ms), reference: `restore ${ms(w.loop_restore_ms)}`, speed: `${pct(w.loop_convert_share)} of it`,
    });
    rows.push({
      section: TJS, workload: `Inside cachedGenerate, warm: restore before generate, share of the TTFT: ${what}`,
      rlxkv: ms(w.restore_ms), reference: `lookup ${ms(w.lookup_ms)} + conversion ${ms(w.convert_ms)}`, speed: `${pct(w.restore_share_of_ttft)} of TTFT; ${x(w.restore_over_bare)} a bare lookup`,
    });
    rows.push({
      section: TJS, workload: `After generate: kvFromTensors${w.store === 'auto' ? '' : ' + dtype change'}, then insert: ${what}`,
      rlxkv: ms(w.from_tensors_ms), reference: `insert ${ms(w.insert_ms)}`, speed: '—',
    });
    rows.push({
      section: TJS, workload: `Restore after a restart (${where.startsWith('Node') ? "storage 'fs'" : "storage 'idb'"}: openCache, then the match that reads the blob): ${what}`,
      rlxkv: w.restore_at_open_ms === null ? 'failed' : ms(w.restore_at_open_ms), reference: w.restore_at_open_error || '—', speed: '—',
    });
  }
}

// float16 KV held as f16 entries against the same KV stored widened to f32.
for (const [where, r] of tjs) {
  const f16 = r.rows.find((w) => w.label === 'f16 KV' && w.store === 'auto'), wide = r.rows.find((w) => w.store === 'f32');
  if (!f16 || !wide) continue;
  rows.push({
    section: TJS, workload: `The f16 model's KV as f16 entries vs stored as f32: warm restore (lookup + copy + tensorsFromHit): ${where}`,
    rlxkv: ms(f16.loop_restore_ms), reference: `as f32 ${ms(wide.loop_restore_ms)}`, speed: x(f16.loop_restore_ms / wide.loop_restore_ms),
  });
  if (f16.restore_at_open_ms !== null && wide.restore_at_open_ms !== null) {
    rows.push({
      section: TJS, workload: `The f16 model's KV as f16 entries vs stored as f32: restore after a restart (open + match): ${where}`,
      rlxkv: ms(f16.restore_at_open_ms), reference: `as f32 ${ms(wide.restore_at_open_ms)}`, speed: x(f16.restore_at_open_ms / wide.restore_at_open_ms),
    });
  }
}

const SIZE = 'Download size (what a browser loads)';
if (sz) {
  const b = sz.bundle;
  if (b) {
    rows.push({ section: SIZE, workload: 'Browser bundle: wasm/dist/rlxkv_core_web.wasm', rlxkv: `${kb(b.wasm_gz)} gz`, reference: `${kb(b.files[0].raw)} raw`, speed: '—' });
    rows.push({ section: SIZE, workload: `Browser bundle: wasm/dist/rlxkv.browser.js (minified) and the ${b.files.length - 2 === 1 ? 'chunk it imports' : `${b.files.length - 2} chunks it imports`}`, rlxkv: `${kb(b.js_gz)} gz`, reference: `${kb(b.files.slice(1).reduce((n, f) => n + f.raw, 0))} raw`, speed: '—' });
    for (const c of b.lazy_chunks ?? []) rows.push({ section: SIZE, workload: `Browser bundle, loaded only when first used: ${c.path}`, rlxkv: `${kb(c.gz)} gz`, reference: `${kb(c.raw)} raw`, speed: '—' });
    rows.push({ section: SIZE, workload: 'Browser bundle: .wasm + JS', rlxkv: `${kb(b.total_gz)} gz`, reference: 'budget 40 KB gz', speed: x(40000 / b.total_gz) });
  }
  rows.push({ section: SIZE, workload: 'Unbundled ESM: wasm/dist/rlxkv_core.wasm', rlxkv: `${kb(sz.wasm_gz)} gz`, reference: `${kb(sz.wasm_raw)} raw`, speed: '—' });
  rows.push({ section: SIZE, workload: `Unbundled ESM: JS (${sz.files.length - 1} files, js/index.js and its imports)`, rlxkv: `${kb(sz.js_gz)} gz`, reference: `${kb(sz.js_raw)} raw`, speed: '—' });
  rows.push({ section: SIZE, workload: 'Unbundled ESM: .wasm + JS', rlxkv: `${kb(sz.total_gz)} gz`, reference: 'budget 40 KB gz', speed: x(40000 / sz.total_gz) });
}

// ---- targets -----------------------------------------------------------------------
const targets = [];
let unbundledNote = null;
function target(name, met, measured, why, fix) {
  targets.push({ name, met, measured, why: met ? null : why, fix: met ? null : fix });
}
const lk1000 = pr(set(1000), 'lookup_speedup', set(1000).lookup_baseline_us / set(1000).lookup_rlxkv_us);
target('Lookup at N = 1,000 ≥ 100× faster than the baseline', lk1000 >= 100, x(lk1000));
{
  const lookupVsGet = `${us(big.lookup_rlxkv_us)} with the LRU relink vs ${us(big.lookup_rlxkv_get_us)} for an exact-key walk without it`;
  const cold = typeof big.lookup_growth_cold_from_100 === 'number'
    ? `; the first pass after the other sets ran, in caches they filled: ${x(big.lookup_growth_cold_from_100)}` : '';
  target('Lookup grows < 1.5× from N = 100 to 10,000', growth < 1.5,
    `${x(growth)} (median of per-repetition ratios, steady state after ${warmPasses} warm-up passes${cold}; baseline ${x(blGrowth)})`,
    `The work per lookup does not depend on N: one walk down the radix tree over the query's tokens, with one hash probe at the fork. Queried over the same ${n0(set(100).n)} entries, the ${n0(big.n)}-entry cache costs ${x(big.lookup_growth_narrow_from_100)} the ${n0(set(100).n)}-entry one. What grows is the memory the lookups touch: the ${n0(big.lookup_queries)} queries reach ${n0(Math.min(big.lookup_queries, big.n))} distinct entries, whose own tokens (which the edge labels point into) the comparison must read, where N = ${n0(set(100).n)} reads the same ${n0(set(100).n)} again (${lookupVsGet}, N = ${n0(big.n)}).`,
    'Nothing left in the walk: it reads the query and the hit entry\'s own tokens, and prefetches the next label while comparing the current one. A copy of each child\'s label pointer in the wide node\'s hash slots, to start that fetch before the child node arrives, was tried and measured no gain.');
}
{
  const ins = (n) => pr(set(n), 'insert_speedup', set(n).insert_baseline_us / set(n).insert_rlxkv_us);
  const all = Ns.map((n) => `N=${n0(n)}: ${x(ins(n))}`).join(', ');
  target('Insert (KV copy excluded) ≥ 10× faster than the baseline, at N = 1,000', ins(1000) >= 10, all,
    'see below', 'see below');
  if (ins(1000) >= 10 && ins(100) < 10) {
    targets[targets.length - 1].note = `At N = ${n0(set(100).n)} it is ${x(ins(100))}: the baseline's duplicate scan is then ${n0(set(100).n)} memcmp's through the shared prefix, all in cache (${us(set(100).insert_baseline_us)}), against one descent of the tokens and a node for rlxkv (${us(set(100).insert_rlxkv_us)}).`;
  }
}
const viewX = pr(hit, 'view_over_clone_speedup', hit.baseline_clone_s / hit.view_s);
target(`View hit on the ${mib(hit.kv_bytes)} entry ≥ 1,000× faster than the baseline's clone`, viewX >= 1000, x(viewX));
const encR = pr(cod, 'encode_vs_memcpy', cod.memcpy_s / cod.encode_s);
const decR = pr(cod, 'decode_vs_memcpy', cod.memcpy_s / cod.decode_s);
target('Encode ≥ half of memcpy (native)', encR >= 0.5, `${x(encR)} memcpy (${mbs(B, cod.encode_s)} vs ${mbs(B, cod.memcpy_s)})`,
  'encode writes into a caller-provided buffer with one memcpy per block; a miss here would be noise.', '—');
target('Decode ≥ half of memcpy (native)', decR >= 0.5, `${x(decR)} memcpy (${mbs(B, cod.decode_s)} vs ${mbs(B, cod.memcpy_s)})`,
  `rlxkv_decode returns a new entry, allocated as one ${mib(hit.kv_bytes)} block. glibc serves blocks above its mmap threshold (dynamic, at most 32 MiB) with a fresh mmap, so every decode first-touches its pages (entry.c asks for huge pages to cut the faults 512-fold, where the kernel grants them), which memcpy into a ready buffer does not; malloc + memcpy of the same bytes into fresh memory runs at ${mbs(B, cod.memcpy_fresh_s)}, and decode at ${x(pr(cod, 'decode_vs_memcpy_fresh', cod.memcpy_fresh_s / cod.decode_s))} that.${rec ? ` With allocations recycled (mallopt M_MMAP_MAX=0, same run) decode runs at ${mbs(rec.blob_bytes, rec.decode_s)}, ${x(rec.memcpy_s / rec.decode_s)} memcpy.` : ''} The baseline's per-float decode gets ${mbs(B, cod.baseline_decode_s)} here for the opposite reason: its 1 MiB per-layer vectors stay under the threshold and are recycled.`,
  'Let callers decode into memory they keep (e.g. an rlxkv_decode_into(buf, len, entry) that reuses an entry of the same shape, or a free list of evicted entries in the cache).');
if (nod) {
  const c = nod.codec;
  const e = pr(c, 'encode_vs_set', c.typed_set_s / c.encode_into_s), d = pr(c, 'decode_vs_slice', c.typed_slice_s / c.decode_s);
  target('encodeEntry ≥ half of a TypedArray copy (wasm, Node; both into ready memory)', e >= 0.5,
    `${x(e)} TypedArray.set (${mbs(c.blob_bytes, c.encode_into_s)} vs ${mbs(c.blob_bytes, c.typed_set_s)}); to a fresh Uint8Array ${x(pr(c, 'encode_vs_slice', c.typed_slice_s / c.encode_s))} slice()`,
    `encodeEntry is JS (format/blob.js): the header and tokens through a DataView, then one Uint8Array.set per K/V block straight into the output; a miss here would be noise or an engine whose set() of a 1 MiB block costs more than one of ${mib(c.blob_bytes)}.`,
    'Profile encodeBlob on this engine; the copy itself cannot be avoided.');
  target('decodeEntry ≥ half of a TypedArray copy (wasm, Node; both into fresh memory)', d >= 0.5,
    `${x(d)} slice() (${mbs(c.blob_bytes, c.decode_s)} vs ${mbs(c.blob_bytes, c.typed_slice_s)}); with { view: true } ${time(c.decode_view_s)}, no copy`,
    `decodeEntry with copies gives each block a fresh ArrayBuffer (ArrayBuffer.slice), as slice() does; set() into ready arrays avoids the fresh memory's page faults, and against it decode runs at ${x(pr(c, 'decode_vs_set', c.typed_set_s / c.decode_s))}.`,
    'Decode with { view: true } (blocks share the blob\'s memory), or keep the copies\' memory between decodes.');
}
if (br) {
  for (const m of idbSizes) {
    const r = br[`idb_${m}`];
    target(`IndexedDB restore of ${m} MiB within 1.5× of the raw IndexedDB get`, r.restore_over_get <= 1.5,
      `${x(r.restore_over_get)} the raw get (${ms(r.restore_ms)} vs ${ms(r.raw_get_ms)})`,
      `Of the ${ms(r.restore_ms)} restore (openCache with preload: the index record and a census of the store (a count, the newest timestamp), then every record in one readonly transaction, all gets in flight, as the raw get does), the raw get alone takes ${ms(r.raw_get_ms)} (getAll ${ms(r.raw_getall_ms)}). The remaining ~${ms(Math.max(0, r.restore_ms - r.raw_get_ms))} is the index read and the wasm side: each record checked (format/blob.js) and copied once into its entry, the first touch of fresh wasm heap pages included.`,
      `Put each entry as its record arrives is already done; what is left is the copy into wasm memory and the index read, which a page that opens index-only (the default) does not pay up front: a hit reads its one record (see the storage-tier rows).`);
  }
} else {
  targets.push({ name: 'IndexedDB restore within 1.5× of the raw IndexedDB get', met: null, measured: 'not measured (the browser benchmark failed)' });
}
if (tjs.length) {
  const same = tjs.flatMap(([where, r]) => r.rows.filter((w) => w.store === 'auto').map((w) => ({ where, w })));
  const worst = Math.max(...same.map(({ w }) => w.loop_restore_over_bare));
  target('A warm start through rlxkv/transformers ≤ 1.2× a bare lookup + copy of the same KV (the model\'s own KV dtype)', worst <= 1.2,
    same.map(({ where, w }) => `${where.split(',')[0]} ${w.label}: ${x(w.loop_restore_over_bare)}`).join('; '),
    'The conversion itself is wrapping the hit\'s arrays in tensors (no copy when the dtypes agree); what is left is run-to-run noise of two ~MiB copies into fresh memory.',
    'Look up with { view: true } where the hit is contiguous and let ONNX Runtime read the views (the adapter copies a head-major partial hit anyway).');
} else {
  targets.push({ name: 'A warm start through rlxkv/transformers ≤ 1.2× a bare lookup + copy of the same KV', met: null, measured: 'not measured' });
}
for (const t of (await import('./report_open.mjs')).openTargets(load('open.json'))) targets.push(t);
for (const t of (await import('./report_state.mjs')).stateTargets(load('state.json'))) targets.push(t);
if (sz) {
  const glue = sz.files.find((f) => f.path.endsWith('rlxkv_core.mjs'));
  const own = sz.wasm_own_code ? Object.values(sz.wasm_own_code).reduce((n, v) => n + v, 0) : null;
  const code = (sz.wasm_sections.find((q) => q.section === 'code') || {}).bytes;
  const ownJsGz = sz.js_gz - glue.gz;
  const wasmNote = own && code ? ` In the universal wasm, rlxkv's own code is ${kb(own)} of ${kb(code)} of code; the rest is libc's (emmalloc); the printf family stays out, as src/codec.c formats blob names itself.` : '';
  const b = sz.bundle;
  const fixFs = `Neither glue has Emscripten's file system: every store, a Node directory's too, is reached from JS (store/); --closure 1 would minify what is left of the universal glue.`;
  if (b) {
    target('.wasm + JS ≤ 40 KB gzipped — the browser bundle (rlxkv.browser.js + rlxkv_core_web.wasm, package export "browser")',
      b.total_gz <= 40000, `${kb(b.total_gz)} (wasm ${kb(b.wasm_gz)} + JS ${kb(b.js_gz)}; margin ${n0(40000 - b.total_gz)} B)`,
      `The bundle's glue (wasm/dist/rlxkv_core_web.mjs, minified into the bundle${b.glue_gz ? `; ${kb(b.glue_gz)} gz alone` : ''}) is not Emscripten's but wasm/web-glue.mjs's small loader (instantiate, constructors, exports by name, heap views), the wasm is linked without Emscripten's file system, the C codec (no export calls it) or folds, and the bundle replaces the Node-only modules.${wasmNote}`,
      fixFs);
  }
  // Not a target: browsers are pointed at the bundle (the package's
  // "browser" export, which bundlers and import maps resolve); the
  // unbundled files are the Node entry, which a browser loads only when a
  // page imports js/index.js by path.
  unbundledNote = `Unbundled ESM (not the target; the package's browser export is the bundle above): ${kb(sz.total_gz)} (wasm ${kb(sz.wasm_gz)} + JS ${kb(sz.js_gz)}, ${sz.files.length - 1} files). It is the universal build for browsers, workers and Node: its glue (wasm/dist/rlxkv_core.mjs) is ${kb(glue.gz)} gz, with the Node loading paths inside, and the JS files go unminified, each compressed alone (rlxkv's own JS: ${kb(ownJsGz)} gz). ${fixFs}`;
}

// ---- chart (SVG) -------------------------------------------------------------------
function svgChart(items) {
  const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const groups = [...new Set(items.map((i) => i.group))];
  const W = 980, LABEL = 360, RIGHT = 70, ROW = 20, HEAD = 26;
  const lo = -2, hi = Math.max(5, Math.ceil(Math.log10(Math.max(...items.map((i) => i.ratio))) + 0.2));
  const px = (r) => LABEL + ((Math.log10(Math.min(Math.max(r, 10 ** lo), 10 ** hi)) - lo) / (hi - lo)) * (W - LABEL - RIGHT);
  let y = 78;
  const parts = [];
  const top = y;
  for (const g of groups) {
    parts.push(`<text x="8" y="${y + 16}" class="g">${esc(g)}</text>`);
    y += HEAD;
    for (const it of items.filter((i) => i.group === g)) {
      const x0 = px(1), x1 = px(it.ratio);
      const left = Math.min(x0, x1), w = Math.max(1, Math.abs(x1 - x0));
      parts.push(`<text x="${LABEL - 8}" y="${y + 14}" class="l" text-anchor="end">${esc(it.label)}</text>`);
      parts.push(`<rect x="${left.toFixed(1)}" y="${y + 3}" width="${w.toFixed(1)}" height="${ROW - 6}" class="${it.ratio >= 1 ? 'up' : 'down'}"/>`);
      const tx = it.ratio >= 1 ? x1 + 4 : x1 - 4;
      parts.push(`<text x="${tx.toFixed(1)}" y="${y + 14}" class="v" text-anchor="${it.ratio >= 1 ? 'start' : 'end'}">${esc(x(it.ratio))}</text>`);
      if (it.goal) {
        const gx = px(it.goal).toFixed(1);
        parts.push(`<line x1="${gx}" y1="${y + 1}" x2="${gx}" y2="${y + ROW - 1}" class="goal"/>`);
      }
      y += ROW;
    }
    y += 6;
  }
  const grid = [];
  for (let e = lo; e <= hi; e++) {
    const gx = px(10 ** e);
    grid.push(`<line x1="${gx.toFixed(1)}" y1="${top - 6}" x2="${gx.toFixed(1)}" y2="${y}" class="${e === 0 ? 'one' : 'grid'}"/>`);
    grid.push(`<text x="${gx.toFixed(1)}" y="${top - 10}" class="t" text-anchor="middle">${10 ** e >= 1 ? (10 ** e).toLocaleString('en-US') : 10 ** e}×</text>`);
  }
  const H = y + 30;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif">
<style>
.g{font-size:13px;font-weight:bold;fill:#222}.l{font-size:11.5px;fill:#333}.v{font-size:11px;fill:#111}.t{font-size:10.5px;fill:#666}
.goal{stroke:#c00;stroke-width:2.5}.up{fill:#3b7dd8}.down{fill:#e08a2c}.grid{stroke:#ddd;stroke-width:1}.one{stroke:#444;stroke-width:1.2}
</style>
<rect width="100%" height="100%" fill="#fff"/>
<text x="8" y="20" font-size="15" font-weight="bold">rlxkv: speed relative to the reference, log scale (right of 1× = rlxkv faster)</text>
<text x="8" y="38" font-size="11.5" fill="#555">${esc(machine.date)} · ${esc(machine.cpu)}, ${machine.nproc} cores · medians; blue: faster, orange: slower; red tick: the target</text>
${grid.join('\n')}
${parts.join('\n')}
<text x="8" y="${H - 10}" font-size="10.5" fill="#666">Generated by bench/report.mjs (npm run bench). Figures in BENCHMARKS.md.</text>
</svg>
`;
}

// ---- output ------------------------------------------------------------------------
const sections = [...new Set(rows.map((r) => r.section))];
function mdTable() {
  const out = [];
  for (const s of sections) {
    out.push(`\n### ${s}\n`);
    out.push('| Workload | rlxkv | Reference | Speed vs reference |');
    out.push('|---|---:|---:|---:|');
    for (const r of rows.filter((q) => q.section === s)) out.push(`| ${r.workload} | ${r.rlxkv} | ${r.reference} | ${r.speed} |`);
  }
  return out.join('\n');
}
function textTable() {
  const cols = ['workload', 'rlxkv', 'reference', 'speed'];
  const w = cols.map((c) => Math.max(...rows.map((r) => String(r[c]).length)));
  const out = [];
  for (const s of sections) {
    out.push(`\n${s}`);
    for (const r of rows.filter((q) => q.section === s)) {
      out.push('  ' + cols.map((c, i) => (i === 0 ? String(r[c]).padEnd(w[i]) : String(r[c]).padStart(w[i]))).join('  '));
    }
  }
  return out.join('\n');
}
const status = (t) => (t.met === null ? 'not measured' : t.met ? '**met**' : '**missed**');

const svg = svgChart(chart);
writeFileSync(svgPath, svg);

const md = [];
md.push('# rlxkv benchmarks');
md.push('');
md.push('Generated by `npm run bench` (scripts/bench.sh → bench/): each section\'s figures from one run of its benchmark, medians of repetitions, and ratios of things measured side by side in that run. The machine is shared, so absolute times move between runs; read the ratios. How each workload is measured, and what each ratio compares: the last section.');
if (quick) md.push('\n> **Quick run** (`--quick`): fewer repetitions; not for publishing.');
md.push('');
md.push('## Targets');
md.push('');
md.push('| Target | Status | Measured |');
md.push('|---|---|---|');
for (const t of targets) md.push(`| ${t.name} | ${status(t)} | ${t.measured} |`);
md.push('');
const missed = targets.filter((t) => t.met === false);
if (missed.length) {
  md.push('### Why the missed ones miss, and what would fix them');
  md.push('');
  for (const t of missed) {
    md.push(`- **${t.name}** (${t.measured}). ${t.why}`);
    md.push(`  *Fix:* ${t.fix}`);
  }
  md.push('');
}
const notes = targets.filter((t) => t.note);
for (const t of notes) md.push(`Note on "${t.name}": ${t.note}\n`);
if (unbundledNote) md.push(`${unbundledNote}\n`);
/** A report section under one of the questions below: its headings one level down, no issue numbers. */
const under = (text) => text.replace(/^(#+) /gm, '#$1 ').replace(/ \(issues? #[\d, #]+\)/g, '');
md.push('## How much faster is a warm start?');
md.push('');
md.push(under((await import('./report_ttft.mjs')).ttftMarkdown(dir)));
md.push(under((await import('./report_state.mjs')).stateMarkdown(dir)));
md.push('## What does a chat app write, store and hold?');
md.push('');
md.push(under((await import('./report_chat.mjs')).chatMarkdown(dir)));
md.push('## How fast is storage: opening, reading a hit, saving?');
md.push('');
md.push(under((await import('./report_open.mjs')).openMarkdown(dir)));
md.push(under((await import('./report_pages.mjs')).pagesMarkdown(dir)));
md.push(under(tiersMarkdown(dir)));
md.push(under((await import('./report_opfs.mjs')).opfsMarkdown(dir)));
md.push('## The core against the reference implementation, and the download size');
md.push('');
md.push('### Chart');
md.push('');
md.push(`![speed relative to the reference, log scale](${relative(dirname(resolve(mdPath)), resolve(svgPath))})`);
md.push('');
md.push('### Results');
md.push(mdTable());
md.push('');
if (sz && sz.glue_breakdown) {
  const b = sz.bundle;
  md.push('#### Inside the Emscripten glue');
  md.push('');
  md.push(`Top-level statements of the module factory, grouped; "gzip" is marginal: the glue\'s gzip size minus its size without the group. Universal glue: wasm/dist/rlxkv_core.mjs (unbundled ESM). Web glue: wasm/dist/rlxkv_core_web.mjs, the one minified into the browser bundle${b && !b.glue_breakdown && b.glue_gz ? ` (wasm/web-glue.mjs's loader, not Emscripten's glue: ${n0(b.glue_raw)} B, ${n0(b.glue_gz)} B gz, no breakdown)` : ''}.`);
  md.push('');
  md.push('| Part | Universal glue, raw | gzip (marginal) | Web glue, raw | gzip (marginal) |');
  md.push('|---|---:|---:|---:|---:|');
  const web = new Map(((b && b.glue_breakdown) || []).map((g) => [g.group, g]));
  for (const g of sz.glue_breakdown) {
    const w = web.get(g.group);
    md.push(`| ${g.group} | ${kb(g.raw)} | ${kb(g.gz_marginal)} | ${w ? kb(w.raw) : '—'} | ${w ? kb(w.gz_marginal) : '—'} |`);
  }
  md.push('');
  md.push('| File | Raw | gzip -9 |');
  md.push('|---|---:|---:|');
  for (const f of [...(b ? b.files : []), ...sz.files]) md.push(`| ${f.path} | ${n0(f.raw)} B | ${n0(f.gz)} B |`);
  if (sz.wasm_own_code) {
    md.push('');
    const code = (sz.wasm_sections.find((q) => q.section === 'code') || {}).bytes;
    md.push(`wasm code section: ${n0(code)} B, of which rlxkv's own objects (build/wasm, CODE sections): ${Object.entries(sz.wasm_own_code).map(([k, v]) => `${k.replace(/\.c\.o$/, '.c')} ${n0(v)} B`).join(', ')}.`);
  }
  md.push('');
}
md.push('## Machine');
md.push('');
md.push(`- Date: ${machine.date}${machine.seconds ? ` (the whole run took ${machine.seconds} s)` : ''}`);
md.push(`- CPU: ${machine.cpu}, nproc = ${machine.nproc}`);
md.push(`- Memory: ${machine.memory}`);
md.push(`- ${machine.kernel}; load average (1, 5, 15 min) ${process.env.BENCH_LOAD_START ? `at the start of the run: ${process.env.BENCH_LOAD_START.split(' ').join(', ')}; ` : ''}at the end: ${machine.load}`);
md.push(`- Native: ${machine.compiler} for both rlxkv (src/*.c) and the baseline; wasm: emcc ${machine.emcc}; Node ${machine.node}; Chromium ${machine.chromium}`);
md.push('');
md.push('## How each workload is measured');
md.push('');
md.push(`Every time is the median of several repetitions. Ratios compare things measured side by side in the same run: the native baseline in the same process as rlxkv, raw IndexedDB in the same page, and within each repetition the two sides run back to back. In most rows the "speed vs reference" column is the median over repetitions of each repetition's own ratio (so it can differ slightly from the ratio of the two medians shown). These rows are ratios of the two medians instead: under Node, encodeEntry to a fresh Uint8Array vs slice() and decodeEntry to fresh copies vs slice() and vs set() (${nod ? `a fresh copy of the ${mib(nod.codec.blob_bytes)} blob took ${time(nod.codec.typed_slice_s)} in this run against ${time(nod.codec.typed_set_s)} into ready memory; fresh memory's cost` : 'the cost of fresh memory'} depends on whether the pages come back from the last block freed, which pairs badly within a repetition); the native "allocations recycled" diagnostic (a separate pass, run last); and the Node lookup and insert rows against native rlxkv (another process). The size rows give the budget over the size. The machine (${machine.nproc} cores) is shared with other work, so absolute times move between runs; read the ratios. No benchmark asserts on time.`);
md.push('');
md.push(`- **Baseline** (bench/baseline.c): the reference \`PromptCache\` and \`save_entry\`/\`load_entry\` ported line by line to C: entries in a vector with a parallel vector of ticks; lookup scans every entry computing the common prefix and returns a full clone (malloc + copy of tokens and every K/V vector); insert scans for equal tokens (length + memcmp), pushes, evicts by a min-tick scan; the codec writes/reads one u64 or f32 at a time through an 8 KiB buffer (BufWriter/BufReader), decoding into vectors by push. Both sides are compiled with the same flags and run in one process; each workload checks that both return the same data (and that both encoders produce identical bytes) before timing.`);
const lookupWarm = big.lookup_warm_passes
  ? `In each repetition a set's first pass over the queries runs in caches the other sets have just filled: it is timed apart (the "first pass" row); ${big.lookup_warm_passes - 1} more untimed passes follow, then the timed pass (steady state, after ${big.lookup_warm_passes} warm-up passes in all, the first of them that cold one), then a pass of rlxkv_cache_get`
  : 'Each timed pass follows warm-up passes over the same queries';
const pairedNote = typeof set(100).lookup_rlxkv_paired_us === 'number'
  ? 'the lookup rows show the rlxkv time of those passes next to the baseline\'s, so the two times agree with the ratio; the steady-state times feed the growth rows and the Node comparison'
  : 'the lookup rows show the steady-state rlxkv time';
const Q = big.lookup_queries;
md.push(`- **Lookup**: N entries (${Ns.map(n0).join(', ')}) of 2,000 tokens sharing their first 1,500, KV of one float each for K and V; ${n0(Q)} queries, each an entry plus 3 tokens (hit length 2,000). rlxkv runs all ${n0(Q)} queries per pass, the ${Ns.length} sets interleaved repetition by repetition, ${big.lookup_reps} repetitions. ${lookupWarm}. The baseline runs the first ${Ns.map((n) => set(n).lookup_baseline_queries).join('/')} queries per repetition at N = ${Ns.map(n0).join('/')} (its cost per lookup is what counts; all ${n0(Q)} would take ${time(big.lookup_baseline_us * 1e-6 * Q)} per repetition at N = ${n0(big.n)}); its clones are freed after timing. In each of the baseline's repetitions rlxkv then runs one untimed and one timed pass over the ${n0(Q)} queries on the same set: "speed vs reference" is the median of those per-repetition ratios, and ${pairedNote}. Growth is the median over repetitions of (steady-state time at ${n0(big.n)} / time at ${n0(set(100).n)}); the baseline's growth is the ratio of its medians (its sets are timed one after the other). Diagnostics: the ${n0(big.n)}-entry set queried over only ${n0(set(100).n)} entries (the working set of N = ${n0(set(100).n)}, timed after as many warm-up passes), and rlxkv_cache_get (an exact-key walk with no LRU update).`);
md.push(`- **Insert**: on the same sets, K = ${Ns.map((n) => n0(set(n).insert_k)).join('/')} new entries (N = ${Ns.map(n0).join('/')}) per repetition, undone after it (untimed). "KV copy excluded": entries made beforehand (rlxkv_cache_put / bl_insert take ownership). "KV copy included": each entry carries ${n0(set(100).insert_copy_kv_bytes)} bytes of KV (4 layers × 2,000 rows × 16 floats, K and V) that the caller keeps: rlxkv_cache_insert copies it, the baseline builds a CacheEntry from clones. The baseline set is built by push (tokens distinct, under the cap: the state its insert would reach, minus the quadratic cost of getting there).`);
md.push(`- **Hit**: one entry of 1,024 tokens × 24 layers × 256 floats per row for K and V (${mib(hit.kv_bytes)}). View hit: rlxkv_cache_lookup (returns a pointer), averaged over 20,000 calls. Copying hit: lookup + rlxkv_hit_copy into a preallocated, pre-touched buffer; memcpy of the same bytes into that buffer; the baseline's longest_prefix with its clone.`);
md.push(`- **Codec**: rlxkv_encode into a preallocated buffer; rlxkv_decode into a new entry (its allocation is part of decoding); memcpy of the blob's bytes into a ready buffer, and malloc + memcpy into fresh memory. Baseline: per-value writes/reads through an 8 KiB buffer from/to memory (output vector pre-reserved). The "recycled" diagnostic runs last, after mallopt(M_MMAP_MAX, 0) so freed blocks are reused.`);
md.push(`- **Memory**: heap in use (mallinfo2: uordblks + hblkhd) before and after building each set, minus ${n0(big.mem_payload_per_entry)} bytes per entry (its tokens and 2 floats).`);
md.push(`- **wasm under Node** (bench/bench_node.mjs): the same sets and entry through js/index.js (createCache, insert, lookup with view: true and with copies, encodeEntry, decodeEntry, openCache with storage 'fs' and preload: true, and flush). References: TypedArray.set into ready arrays and slice() (a fresh copy) of the same bytes; fs writeSync + fsyncSync, readFileSync and readSync into a ready Buffer. Lookup: the sets interleaved as natively, each timed pass after ${nod && nod.set_10000.lookup_warm_passes ? `${nod.set_10000.lookup_warm_passes} untimed` : 'untimed'} warm-up passes (no first pass timed apart). Run with --expose-gc, collecting before each large timed operation. The "native rlxkv" column is from the native run of the same \`npm run bench\` (another process, minutes apart: indicative).`);
md.push(`- **Chromium + IndexedDB** (bench/bench_browser.mjs, bench/browser_page.js): headless Chromium through playwright-core, pages served by scripts/serve.mjs. For ${idbSizes.length ? idbSizes.map(n0).join(', ').replace(/, ([^,]*)$/, ' and $1') : 'several'} entries of 1 MiB KV (pseudo-random floats): flush of the cache (openCache storage 'idb') vs one readwrite transaction putting the same blobs (exportBlob) into a separate database, one record per entry, alternating which goes first; then, on fresh page loads, restore (openCache timed from call to resolve, after init) vs opening the raw database and, in one readonly transaction, listing its keys (getAllKeys) and getting every record (a page that reloads does not know which keys its database holds: this is the least a restore must do), with getAllKeys + getAll and gets by keys known beforehand as diagnostics, the order rotated per load. The ratio is the median of each load's own ratio. Restore is openCache with preload: true (every entry read at open, as 0.1.0 did); without it a cache opens by its index only. IndexedDB is the noisiest part on this shared ${machine.nproc}-core machine, so one run's met or missed on the 1.5× target is not conclusive.`);
if (tjs.length) {
  const cfg = tjs.map(([where, r]) => `${where}: transformers.js ${r.config.transformers}`).join('; ');
  const w0 = tjs[0][1].rows[0];
  md.push(`- **transformers.js** (bench/bench_transformers.mjs in Node, bench/bench_transformers_browser.mjs with bench/transformers_page.js in headless Chromium; both run bench/transformers_workload.js; ${cfg}): the demo transformer exported to ONNX (build/models/rlxkv-demo, f32 KV; rlxkv-demo-f16kv, f16 KV), the demo's default system prompt and one user turn (${n0(w0.prompt_tokens)} byte-level tokens), greedy, one new token. Cold: cachedGenerate into an emptied cache (${w0.cold_reps} times); warm: the same prompt with all but its last token cached (${w0.warm_reps} times), each next to a bare cache.lookup of the same tokens (partial, maxMatched = n − 1: the adapter's own lookup, which copies the KV out of wasm memory), the order alternating. TTFT: from the call to the streamer's first generated token. Inside cachedGenerate the cache's lookup and the model's generate are wrapped (Proxies) to split the time before generate into the lookup and the conversion (tensorsFromHit + DynamicCache). The restore rows repeat lookup + conversion outside generate ${w0.loop_reps} times, each beside a bare lookup + copy, the order alternating; ratios are medians of each pair's ratio. "Stored as f32": the f16 model's KV kept as f32 entries (opts.store 'f32'), so each restore narrows to float16. Restore after a restart: the entry flushed, then a new cache opened on that store and the match that reads its blob, timed together. Chromium's performance.now() is coarsened to 0.1 ms (the page is not cross-origin isolated) and onnxruntime-web runs one thread there; Node runs with --expose-gc, collecting before each timed generate and bare lookup.`);
}
md.push(`- **Size**: two ways a browser can load rlxkv. The browser bundle: wasm/dist/rlxkv.browser.js (esbuild-minified, the browser-only glue inside) and wasm/dist/rlxkv_core_web.wasm (its own wasm: without folds). Unbundled ESM: wasm/dist/rlxkv_core.wasm and every file js/index.js imports, transitively (static imports; the node:* modules are imported dynamically on Node-only paths). Each file is gzipped alone at level 9 (zlib), as a server would send it; KB = 1,000 bytes.`);
md.push('');
md.push('Raw figures: build/bench/*.json after a run.');
md.push('');
writeFileSync(mdPath, md.join('\n'));

console.log(textTable());
console.log('\nTargets');
for (const t of targets) console.log(`  [${t.met === null ? 'n/a' : t.met ? 'met' : 'MISSED'}] ${t.name}: ${t.measured}`);
console.log(`\nwrote ${mdPath} and ${svgPath}`);
