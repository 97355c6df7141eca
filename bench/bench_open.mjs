// The open of a large store (issue #23, "Open": a store of ≥ 10,000 pages,
// 2 GB, opens in ≤ 20 ms): openCache on bench/open_workload.js's store of
// 10,401 pages (52 conversations of 200 turns over one system prompt,
// 2.04 GB of KV), timed from the call to the open cache, in Node (storage
// 'fs', each open in a fresh process) and in Chromium ('idb' and 'opfs',
// each open on a fresh page load: bench/open_page.js). Medians; nothing
// asserts on time. Each store is checked once after (a match of one whole
// conversation, every page's values in place) and deleted at the end.
//
//   node bench/bench_open.mjs [OUT.json] [--quick] [--only fs|idb|opfs] [--before DIR]
//   (default build/bench/open.json; --quick: 5 opens each, else 9;
//   --before DIR: also time the open of each store by the rlxkv checkout
//   at DIR (built: its wasm/dist), e.g. the main branch's worktree, its
//   opens taking turns with this checkout's (each first every other time):
//   in Node a fresh process each,
//   in Chromium a fresh page load each, DIR served on the same origin so
//   that it opens the same store)
//
// Node times the open of the directory unchanged since a listing stamped
// its index (the target's figure), the open after a change to the
// directory (it lists the directory: one readdir), and the open without
// its index file, as a store written before the index is (it reads every
// blob's first bytes once, and writes the index).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './stats.js';
import { CAP, CONVERSATIONS, FP, PAGES, build, bytesPerToken, check, layout, tokensOf } from './open_workload.js';

const self = fileURLToPath(import.meta.url);
const args = process.argv.slice(2);
const quick = args.includes('--quick');
const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : null;
const before = args.includes('--before') ? resolve(args[args.indexOf('--before') + 1]) : null;
const REPS = quick ? 5 : 9;
const note = (s) => console.error(`  ${s}`);
const INDEX_FILE = '.rlxkv-index'; // store/fs-blobs.js

// ---- a child: one open, in a fresh process -------------------------------------
if (args[0] === '--child') {
  const [, mode, path, root] = args;
  const init = (await import(join(root, 'js/index.js'))).default;
  const rlx = await init();
  const f0 = process.resourceUsage().minorPageFault;
  const t0 = performance.now();
  const cache = await rlx.openCache({ capBytes: CAP, fingerprint: FP, storage: 'fs', path, layout, f16As: 'Uint16Array' });
  const ms = performance.now() - t0;
  // Pages of memory the open touched first (minor faults: the process's, so the collector's and V8's too).
  const out = { ms, faults: process.resourceUsage().minorPageFault - f0, indexed: cache.restoreReport.indexed };
  if (mode === 'check') {
    const c = CONVERSATIONS - 2;
    check(await cache.match(tokensOf(c), { view: true }), c);
    out.checked = c;
  }
  await cache.close({ flush: false });
  process.stdout.write(JSON.stringify(out) + '\n');
  process.exit(0);
}

const repo = resolve(dirname(self), '..');
const child = (mode, path, root = repo) => JSON.parse(execFileSync(process.execPath, [self, '--child', mode, path, root],
  { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim().split('\n').pop());
const opens = (n, path, root) => Array.from({ length: n }, () => child('open', path, root));
const row = (runs) => ({ open_ms: median(runs.map((r) => r.ms)), faults: median(runs.map((r) => r.faults)), indexed: runs[0].indexed, runs: runs.map((r) => r.ms) });

/**
 * What a first touch of a page of fresh memory costs here (the kernel's
 * fault and zeroing; on some virtual machines far more than the copy of
 * the page): 64 MiB of a new array written a byte a page, in a fresh
 * process, over the same done again. Median of 3, in µs a page.
 */
function faultPrice() {
  const code = `const n = 64 << 20, b = new Uint8Array(n); let t = performance.now();
for (let i = 0; i < n; i += 4096) b[i] = 1; const fresh = performance.now() - t; t = performance.now();
for (let i = 0; i < n; i += 4096) b[i] = 2; console.log(JSON.stringify({ us: 1000 * (fresh - (performance.now() - t)) / (n / 4096) }));`;
  return median(Array.from({ length: 3 }, () => JSON.parse(execFileSync(process.execPath, ['-e', code], { encoding: 'utf8' })).us));
}
const secs = (t0) => ((performance.now() - t0) / 1000).toFixed(0);

/** Node: the store built in a directory, opened REPS times from its index; without it; by --before's checkout. */
async function nodeOpen() {
  const init = (await import('../js/index.js')).default;
  const rlx = await init();
  const work = mkdtempSync(join(tmpdir(), 'rlxkv-bench-open-'));
  const path = join(work, 'store');
  try {
    let t0 = performance.now();
    const cache = await rlx.openCache({ capBytes: CAP, fingerprint: FP, storage: 'fs', path, layout, f16As: 'Uint16Array' });
    await build(cache, (c) => { if (c % 13 === 12) note(`fs: ${c + 1} of ${CONVERSATIONS} conversations written (${secs(t0)} s)`); });
    const blobs = cache.listBlobs();
    await cache.close();
    const out = { pages: blobs.length, store_bytes: blobs.reduce((n, b) => n + b.bytes, 0), build_s: Number(secs(t0)) };
    note(`fs: ${out.pages} pages, ${(out.store_bytes / 1e9).toFixed(2)} GB written in ${out.build_s} s`);
    // Opened later, as a store is: the first open lists the directory, finds
    // the index right and stamps it (store/fs-blobs.js: the directory must be
    // 2 s old as the listing begins); the opens after take it unlisted.
    await new Promise((res) => setTimeout(res, 2500));
    out.first_open = child('open', path);
    note(`fs: first open ${out.first_open.ms.toFixed(1)} ms (the directory listed, the index stamped)`);
    // With --before, that checkout's opens take turns with these, each first every other time.
    const pairs = Array.from({ length: REPS }, (_, i) => {
      if (!before) return [child('open', path)];
      if (i % 2) {
        const other = child('open', path, before);
        return [child('open', path), other];
      }
      return [child('open', path), child('open', path, before)];
    });
    Object.assign(out, row(pairs.map(([r]) => r)));
    note(`fs: open ${out.open_ms.toFixed(1)} ms (median of ${REPS}), ${out.indexed} entries`);
    if (before) {
      out.before = row(pairs.map(([, r]) => r));
      note(`fs: open by ${before}: ${out.before.open_ms.toFixed(1)} ms (median of ${REPS}), ${out.before.indexed} entries`);
    }
    // The directory changed since (a file added and removed before each): each open lists it.
    out.listed = row(Array.from({ length: REPS }, () => {
      writeFileSync(join(path, 'notes.txt'), 'x');
      rmSync(join(path, 'notes.txt'));
      return child('open', path);
    }));
    note(`fs: open after a change to the directory ${out.listed.open_ms.toFixed(1)} ms (median of ${REPS}: listed each time)`);
    out.check = child('check', path);
    out.fault_us = faultPrice();
    note(`fs: ${out.faults} minor page faults an open (median), a first touch ${out.fault_us.toFixed(2)} µs a page here`);
    // A store written before the index: read whole once, the index written.
    renameSync(join(path, INDEX_FILE), join(work, 'index'));
    t0 = performance.now();
    out.without_index = child('open', path);
    note(`fs: open without the index ${out.without_index.ms.toFixed(1)} ms (its first bytes of every blob read, the index written), then ${row(opens(1, path)).open_ms.toFixed(1)} ms`);
    return out;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Chromium: each storage's store built on a first visit, then opened on REPS fresh page loads. */
async function browserOpen(kinds) {
  const { chromium } = await import('playwright-core');
  const { serve, MODEL_DIR_PATH } = await import('../scripts/serve.mjs');
  const entry = existsSync(new URL('../wasm/dist/rlxkv.browser.js', import.meta.url)) ? '/wasm/dist/rlxkv.browser.js' : '/js/index.js';
  // --before's checkout is served beside this one (at serve()'s MODEL_DIR_PATH), on the same origin: the same stores.
  const { server, url } = await serve({ port: 0, modelDir: before });
  const beforeEntry = before && `${MODEL_DIR_PATH}wasm/dist/rlxkv.browser.js`;
  const profile = mkdtempSync(join(tmpdir(), 'rlxkv-bench-open-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.RLXKV_CHROMIUM || '/usr/bin/chromium', headless: true, timeout: 60000,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  const out = { chromium: context.browser()?.version() ?? null, entry };
  try {
    const page = context.pages()[0] || await context.newPage();
    page.setDefaultTimeout(1800000);
    const errors = [];
    page.on('pageerror', (e) => errors.push(String((e && e.stack) || e)));
    page.on('console', (m) => { if (m.type() === 'info') note(m.text()); });
    const at = `${url}/bench/open_page.html`;
    const call = (fn, arg) => page.evaluate(async ([f, a]) => (await import('/bench/open_page.js'))[f](a), [fn, arg]);
    for (const storage of kinds) {
      await page.goto(at);
      const t0 = performance.now();
      const built = await call('setup', { entry, storage });
      const r = { pages: built.pages, store_bytes: built.bytes, build_s: Number(secs(t0)) };
      note(`${storage}: ${r.pages} pages, ${(r.store_bytes / 1e9).toFixed(2)} GB written in ${r.build_s} s`);
      await page.goto(at);
      await call('openPhase', { entry, storage }); // a first open after the build, untimed
      const runs = [], beforeRuns = [];
      for (let i = 0; i < REPS; i++) {
        // (With --before, each checkout first every other time.)
        for (const which of before && i % 2 ? [beforeRuns, runs] : before ? [runs, beforeRuns] : [runs]) {
          await page.goto(at); // a fresh page: new realm, new wasm instance
          which.push(await call('openPhase', { entry: which === runs ? entry : beforeEntry, storage }));
        }
      }
      Object.assign(r, row(runs));
      note(`${storage}: open ${r.open_ms.toFixed(1)} ms (median of ${REPS}), ${r.indexed} entries`);
      if (before) {
        r.before = row(beforeRuns);
        note(`${storage}: open by ${before}: ${r.before.open_ms.toFixed(1)} ms (median of ${REPS}), ${r.before.indexed} entries`);
      }
      await page.goto(at);
      r.check = await call('openPhase', { entry, storage, check: true });
      await page.goto(at);
      await call('remove', { entry, storage });
      out[storage] = r;
    }
    if (errors.length) throw new Error(errors.join('\n'));
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
    server.close();
  }
  return out;
}

const outPath = args.find((a, i) => !a.startsWith('--') && !['--only', '--before'].includes(args[i - 1])) || join(repo, 'build/bench/open.json');
const results = { config: { quick, reps: REPS, node: process.version, pages: PAGES, conversations: CONVERSATIONS, bytes_per_token: bytesPerToken, cores: cpus().length, load_start: loadavg() } };
if (before) results.config.before = before;
if (!only || only === 'fs') results.node = await nodeOpen();
const kinds = only ? [only].filter((k) => k !== 'fs') : ['idb', 'opfs'];
if (kinds.length) {
  const b = await browserOpen(kinds);
  results.config.chromium = b.chromium;
  results.config.entry = b.entry;
  for (const k of kinds) results[k] = b[k];
}
results.config.load_end = loadavg();
mkdirSync(dirname(outPath), { recursive: true });
// --only one storage: the others' figures of an earlier run are kept (read now: another run may have written since).
if (only && existsSync(outPath)) {
  const was = JSON.parse(readFileSync(outPath, 'utf8'));
  for (const k of ['node', 'idb', 'opfs']) if (!results[k] && was[k]) results[k] = was[k];
  results.config = { ...was.config, ...results.config };
}
writeFileSync(outPath, JSON.stringify(results, null, 2) + '\n');
const { openTable } = await import('./report_open.mjs');
console.log(openTable({ open: results }));
console.log(`wrote ${outPath}`);
