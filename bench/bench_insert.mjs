// The public insert against the reference's: an empty cache filled with
// 1,000 entries of 2,000 tokens (the first 1,500 shared) and one K and one
// V block of 2,000 floats each, through cache.insert (js/index.js) and
// through the reference's insert (bench/baseline.c, compiled here with
// cc -O2 and driven over a pipe by bench/insert_baseline.c), the two run
// back to back in every repetition. Then the first fill of a fresh
// process: fresh children, each doing one fill and nothing else (node with
// no flags for rlxkv: init, one cache, the inserts; the reference's binary
// answering one "rep"), in pairs, back to back, and what a fresh page of
// memory costs here (a first write to each 4 KiB page of a new
// ArrayBuffer, against a second write to the same pages). Then where the
// public insert's time goes: the same fill in a child under node
// --cpu-prof, self time summed by where it runs.
//
//   node bench/bench_insert.mjs [OUT.json] [--quick]     (default build/bench/insert.json)
//
// Every figure is a median over repetitions; nothing asserts on time.
import { spawn, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import init from '../js/index.js';
import { median } from './stats.js';

const N = 1000, L = 2000, SHARED = 1500;
const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const args = process.argv.slice(2);
const quick = args.includes('--quick');
const child = args.includes('--child');
const firstFillChild = args.includes('--first-fill');
const out = args.find((a) => !a.startsWith('--')) || join(root, 'build/bench/insert.json');

function mix32(x) {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}
const shared = Uint32Array.from({ length: SHARED }, (_, j) => mix32(j + 1) % 32000);
const tokens = Array.from({ length: N }, (_, i) => {
  const t = new Uint32Array(L);
  t.set(shared);
  t[SHARED] = 32000 + i;
  for (let j = SHARED + 1; j < L; j++) t[j] = mix32(Math.imul(i, 1000003) + j) % 32000;
  return t;
});
const kv = { k: [Float32Array.from({ length: L }, (_, j) => j)], v: [Float32Array.from({ length: L }, (_, j) => -j)] };

const rlx = await init();
const minorFaults = () => process.resourceUsage().minorPageFault;
/** One fill of an empty cache: microseconds per entry, the cache's checksum (as the C driver's) and the page faults of the timed part. */
async function fill() {
  const cache = rlx.createCache({ capBytes: 2 ** 31, fingerprint: 1n });
  const f0 = minorFaults();
  const t0 = performance.now();
  for (let i = 0; i < N; i++) cache.insert(tokens[i], kv);
  const us = ((performance.now() - t0) * 1000) / N;
  const faults = minorFaults() - f0;
  let sum = cache.size;
  for (let i = 0; i < N; i++) sum += cache.lookup(tokens[i], { view: true }).tokens[SHARED];
  await cache.close();
  return { us, sum, faults };
}

if (firstFillChild) {
  // A fresh process's first fill, as an app's first inserts: nothing of the
  // insert path has run before it.
  process.stdout.write(JSON.stringify(await fill()) + '\n');
  process.exit(0);
}
if (child) {
  // Profiled in a child: only the fills, so the profile holds nothing else.
  for (let r = 0; r < Number(args[args.indexOf('--child') + 1]); r++) await fill();
  process.exit(0);
}

// ---- the reference, a child process answering one fill per line ----------
const binDir = join(root, 'build/bench');
mkdirSync(binDir, { recursive: true });
const bin = join(binDir, 'insert_baseline');
execFileSync(process.env.CC || 'cc', ['-O2', '-std=c11', '-Wall', '-Wextra', `-I${here}`,
  join(here, 'baseline.c'), join(here, 'insert_baseline.c'), '-o', bin], { stdio: 'inherit' });
const ref = spawn(bin, [String(N), String(L), String(SHARED)], { stdio: ['pipe', 'pipe', 'inherit'] });
const lines = createInterface({ input: ref.stdout })[Symbol.asyncIterator]();
/** One line of insert_baseline: "us sum faults". */
function refLine(line) {
  const [us, sum, faults] = line.trim().split(' ');
  return { us: Number(us), sum: Number(sum), faults: Number(faults) };
}
async function refFill() {
  ref.stdin.write('rep\n');
  const { value } = await lines.next();
  return refLine(value);
}

const R = quick ? 5 : 21;
const js = [], bl = [], ratios = [];
let first = null;
for (let r = 0; r <= R; r++) {
  // Alternate which side goes first; repetition 0 warms both up (timed apart).
  let jsR, refR;
  if (r % 2) { refR = await refFill(); jsR = await fill(); } else { jsR = await fill(); refR = await refFill(); }
  if (refR.sum !== jsR.sum) throw new Error(`the caches differ: checksum ${jsR.sum} (rlxkv) vs ${refR.sum} (reference)`);
  if (r === 0) { first = { rlxkv_us: jsR.us, baseline_us: refR.us }; continue; }
  js.push(jsR.us);
  bl.push(refR.us);
  ratios.push(refR.us / jsR.us);
}
ref.stdin.end();

// ---- the first fill of a fresh process ---------------------------------------
// Each side in its own new process, one fill each, the two back to back
// (which goes first alternates); the ratio is the median of the pairs'.
const FIRST = quick ? 5 : 21;
const freshJs = () => JSON.parse(execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--first-fill'], { encoding: 'utf8' }).trim().split('\n').pop());
const freshRef = () => refLine(execFileSync(bin, [String(N), String(L), String(SHARED)], { input: 'rep\n', encoding: 'utf8' }));
const ff = { js: [], ref: [], ratios: [], jsFaults: [], refFaults: [] };
for (let r = 0; r < FIRST; r++) {
  let jsR, refR;
  if (r % 2) { refR = freshRef(); jsR = freshJs(); } else { jsR = freshJs(); refR = freshRef(); }
  if (refR.sum !== jsR.sum) throw new Error(`first fill: the caches differ: checksum ${jsR.sum} (rlxkv) vs ${refR.sum} (reference)`);
  ff.js.push(jsR.us);
  ff.ref.push(refR.us);
  ff.ratios.push(refR.us / jsR.us);
  ff.jsFaults.push(jsR.faults / N);
  ff.refFaults.push(refR.faults / N);
}

// What a page of fresh memory costs on this machine: the first write to each
// 4 KiB page of a new 32 MiB ArrayBuffer (mapped on that write: one fault
// a page) against a second write to the same pages.
const pageCost = { fresh: [], mapped: [], faults: [] };
for (let r = 0; r < 5; r++) {
  const bytes = 32 << 20, pages = bytes / 4096;
  const u8 = new Uint8Array(bytes);
  const f0 = minorFaults();
  const t0 = performance.now();
  for (let i = 0; i < bytes; i += 4096) u8[i] = 1;
  const t1 = performance.now();
  const f1 = minorFaults();
  for (let i = 0; i < bytes; i += 4096) u8[i] = 2;
  const t2 = performance.now();
  pageCost.fresh.push(((t1 - t0) * 1000) / pages);
  pageCost.mapped.push(((t2 - t1) * 1000) / pages);
  pageCost.faults.push((f1 - f0) / pages);
}

// ---- where the time goes -----------------------------------------------------
const profDir = mkdtempSync(join(tmpdir(), 'rlxkv-insert-prof-'));
const PROF_REPS = quick ? 5 : 30;
execFileSync(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${profDir}`, fileURLToPath(import.meta.url), '--child', String(PROF_REPS)], { stdio: 'inherit' });
const prof = JSON.parse(readFileSync(join(profDir, readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'))), 'utf8'));
rmSync(profDir, { recursive: true, force: true });
// Self time by where the code is: a table of (name, test), first match wins.
const places = [
  ['argument checks (js/args.js)', (f) => f.url.endsWith('js/args.js')],
  ['Cache.insert (js/cache.js)', (f) => f.url.endsWith('js/cache.js')],
  ['NativeCache.put and the token/KV copies into the heap (wasm/native-cache.js)', (f) => f.url.endsWith('wasm/native-cache.js')],
  ['wasm: entry allocation, token copy, tree walk and insert (rlxkv_web_entry_new, rlxkv_web_put)', (f) => f.url.startsWith('wasm') || /^wasm-function|^js-to-wasm|^\$?rlxkv|^dl/.test(f.functionName)],
  ['garbage collector', (f) => f.functionName === '(garbage collector)'],
];
const selfUs = new Map(prof.nodes.map((n) => [n.id, 0]));
prof.samples.forEach((id, i) => selfUs.set(id, selfUs.get(id) + (prof.timeDeltas[i] || 0)));
const inFill = new Set();
// Only samples under fill() count (module loading and setup are not inserts).
const kids = new Map(prof.nodes.map((n) => [n.id, n.children || []]));
const mark = (id) => { inFill.add(id); for (const c of kids.get(id)) mark(c); };
for (const n of prof.nodes) if (n.callFrame.functionName === 'fill' && n.callFrame.url.endsWith('bench_insert.mjs')) mark(n.id);
const buckets = new Map(places.map(([name]) => [name, 0]));
let other = 0, total = 0, lookups = 0;
const lookupIds = new Set();
for (const n of prof.nodes) if (inFill.has(n.id) && /^(lookup|close)$/.test(n.callFrame.functionName)) (function m(id) { lookupIds.add(id); for (const c of kids.get(id)) m(c); })(n.id);
for (const n of prof.nodes) {
  if (!inFill.has(n.id)) continue;
  const t = selfUs.get(n.id);
  if (lookupIds.has(n.id)) { lookups += t; continue; } // the checksum after the timed part
  total += t;
  const p = places.find(([, test]) => test(n.callFrame));
  if (p) buckets.set(p[0], buckets.get(p[0]) + t);
  else other += t;
}
const perEntry = (t) => t / (PROF_REPS * N);
const profile = [...buckets].map(([where, t]) => ({ where, us_per_entry: perEntry(t), share: t / total }));
profile.push({ where: 'other (the fill loop, typed-array builtins not attributed above)', us_per_entry: perEntry(other), share: other / total });

const results = {
  config: { quick, node: process.version, n: N, tokens: L, shared: SHARED, kv_floats: 2 * L, reps: R, compiler: 'cc -O2 (reference)' },
  rlxkv_us: median(js),
  baseline_us: median(bl),
  speedup: median(ratios),
  first_rep: first,
  // The first fill of a fresh process (each side its own), medians over the runs.
  first_fill: {
    runs: FIRST,
    rlxkv_us: median(ff.js),
    baseline_us: median(ff.ref),
    speedup: median(ff.ratios),
    rlxkv_faults_per_entry: median(ff.jsFaults),
    baseline_faults_per_entry: median(ff.refFaults),
  },
  fresh_page: { us_first_write: median(pageCost.fresh), us_written_again: median(pageCost.mapped), faults_per_page: median(pageCost.faults) },
  profile: { reps: PROF_REPS, sampled_us_per_entry: perEntry(total), rows: profile },
};
writeFileSync(out, JSON.stringify(results, null, 2) + '\n');

const pad = (s, n) => String(s).padEnd(n);
console.log(`\nPublic insert: ${N} entries of ${L} tokens (${SHARED} shared), KV 2 × ${L} floats, into an empty cache (medians of ${R} repetitions)`);
console.log(`  ${pad('cache.insert (rlxkv, wasm, JS API)', 44)} ${results.rlxkv_us.toFixed(2)} µs/entry`);
console.log(`  ${pad('reference insert (bench/baseline.c, cc -O2)', 44)} ${results.baseline_us.toFixed(1)} µs/entry`);
console.log(`  ${pad('speed vs reference (per-repetition ratio)', 44)} ${results.speedup.toFixed(1)}×   (target ≥ 10×)`);
console.log(`  ${pad('first repetition (cold JIT, heap growing)', 44)} ${first.rlxkv_us.toFixed(1)} µs vs ${first.baseline_us.toFixed(1)} µs`);
const f = results.first_fill, pg = results.fresh_page;
console.log(`\nFirst fill of a fresh process (each side its own process, medians of ${f.runs} pairs)`);
console.log(`  ${pad('cache.insert (rlxkv)', 44)} ${f.rlxkv_us.toFixed(1)} µs/entry, ${f.rlxkv_faults_per_entry.toFixed(1)} page faults/entry`);
console.log(`  ${pad('reference insert', 44)} ${f.baseline_us.toFixed(1)} µs/entry, ${f.baseline_faults_per_entry.toFixed(1)} page faults/entry`);
console.log(`  ${pad('speed vs reference (per-pair ratio)', 44)} ${f.speedup.toFixed(2)}×   (target ≥ 10×)`);
console.log(`  ${pad('a fresh 4 KiB page, first write', 44)} ${pg.us_first_write.toFixed(2)} µs (${pg.faults_per_page.toFixed(2)} faults/page; written again ${pg.us_written_again.toFixed(3)} µs)`);
console.log(`\nWhere the public insert's time goes (node --cpu-prof, ${PROF_REPS} fills, self time)`);
for (const p of profile) console.log(`  ${pad(p.where, 96)} ${p.us_per_entry.toFixed(2).padStart(6)} µs  ${(100 * p.share).toFixed(0).padStart(3)}%`);
console.log(`wrote ${out}`);
