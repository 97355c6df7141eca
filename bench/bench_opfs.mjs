// Chromium: the hit-load of one stored entry (1, 10, 50, 200 MiB of KV)
// from rlxkv's 'opfs' storage, in a worker (sync access handles, read into
// the wasm heap) and in a window (a helper worker's reads, transferred and
// copied into the heap), against a raw IndexedDB get
// of the same blob, rlxkv's 'idb' storage, and a bare OPFS read of the
// same file (getFileHandle, createSyncAccessHandle, read(), close), all in
// the same page and run (bench/opfs_page.js). BENCHMARKS.md gets the
// figures through bench/report_opfs.mjs.
//
//   node bench/bench_opfs.mjs [OUT.json] [--quick]     (default build/bench/opfs.json)
//
// Then the open of a store of 1,000 small entries: 'opfs' in a window and
// in a fresh worker, 'idb' in the window, each on a fresh page load; and a
// flush of one entry of each size: 'opfs' from a window with its helper,
// from one without (a CSP against blob: workers) and from a worker, 'idb'
// from a window.
//
// Every repetition is a fresh page load and two fresh workers (the bare
// read in one, the hit-load in the other, which goes first alternating),
// on a persistent profile (on disk, as users have it: a non-persistent
// context keeps OPFS in memory). Medians; ratios are medians of each
// repetition's own ratio. Nothing asserts on time.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { chromium } from 'playwright-core';
import { serve } from '../scripts/serve.mjs';
import { opfsTable } from './report_opfs.mjs';
import { median } from './stats.js';

const quick = process.argv.includes('--quick');
const out = process.argv.slice(2).find((a) => !a.startsWith('--')) || new URL('../build/bench/opfs.json', import.meta.url).pathname;
const SIZES = quick ? [1, 10] : [1, 10, 50, 200];
const REPS = quick ? 3 : 5;
// Small entries take more: a hit of 1 MiB lasts a few ms, where the machine's noise weighs most.
const repsOf = (size) => (quick ? REPS : size <= 10 ? 9 : REPS);
const FLUSH_REPS = 3;
const EXECUTABLE = process.env.RLXKV_CHROMIUM || '/usr/bin/chromium';
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run'];

const entry = existsSync(new URL('../wasm/dist/rlxkv.browser.js', import.meta.url))
  ? '/wasm/dist/rlxkv.browser.js' : '/js/index.js';

/**
 * Each row's medians (field_ms), then ratios computed per repetition.
 * Worker: bare_read is the whole bare read into a new buffer (fresh pages,
 * as the cold hit's heap), bare_read_warm the same into a buffer touched
 * beforehand (as the warm hit's heap), read_call that read() alone,
 * worker_file_read the File API's getFile().arrayBuffer() copied once;
 * opfs_worker_hit_grow is the time of the cold hit's memory.grow() calls.
 */
const TIMES = ['idb_get', 'idb_hit', 'file_read', 'opfs_window_hit', 'bare_read', 'worker_file_read', 'bare_read_warm', 'read_call',
  'opfs_worker_hit', 'opfs_worker_hit_warm', 'opfs_worker_hit_grow'];
const RATIOS = {
  worker_over_idb_get: (r) => r.opfs_worker_hit / r.idb_get,
  worker_warm_over_idb_get: (r) => r.opfs_worker_hit_warm / r.idb_get,
  window_over_idb_get: (r) => r.opfs_window_hit / r.idb_get,
  bare_read_over_idb_get: (r) => r.bare_read / r.idb_get,
  file_read_over_idb_get: (r) => r.file_read / r.idb_get,
  worker_file_read_over_bare_read: (r) => r.worker_file_read / r.bare_read,
  worker_over_bare_read: (r) => r.opfs_worker_hit / r.bare_read,
  worker_warm_over_bare_read_warm: (r) => r.opfs_worker_hit_warm / r.bare_read_warm,
  window_over_file_read: (r) => r.opfs_window_hit / r.file_read,
  window_over_bare_read: (r) => r.opfs_window_hit / r.bare_read,
  idb_hit_over_idb_get: (r) => r.idb_hit / r.idb_get,
};

const { server, url } = await serve({ port: 0 });
const profile = mkdtempSync(join(tmpdir(), 'rlxkv-bench-opfs-'));
const context = await chromium.launchPersistentContext(profile, { executablePath: EXECUTABLE, headless: true, args: ARGS, timeout: 60000 });
const results = { config: { quick, chromium: context.browser()?.version() ?? null, entry, reps: REPS, reps_by_size: Object.fromEntries(SIZES.map((m) => [m, repsOf(m)])), sizes_mib: SIZES }, rows: [] };
try {
  const page = context.pages()[0] || await context.newPage();
  page.setDefaultTimeout(300000);
  const errors = [];
  page.on('pageerror', (e) => errors.push(String((e && e.stack) || e)));
  const at = `${url}/bench/opfs_page.html`;
  const callOn = (p, fn, arg) => p.evaluate(async ([f, a]) => (await import('/bench/opfs_page.js'))[f](a), [fn, arg]);
  const call = (fn, arg) => callOn(page, fn, arg);
  const inWorker = (arg) => page.evaluate((a) => new Promise((resolve, reject) => {
    const w = new Worker('/bench/opfs_worker.js', { type: 'module' });
    w.onmessage = ({ data }) => { w.terminate(); if (data.error) reject(new Error(data.error)); else resolve(data); };
    w.onerror = (e) => reject(new Error(e.message));
    w.postMessage(a);
  }), arg);

  for (const size of SIZES) {
    console.error(`OPFS bench: ${size} MiB, ${repsOf(size)} page loads, module ${entry}`);
    await page.goto(at);
    const written = await call('setup', { size, entry });
    const reps = [];
    for (let r = 0; r < repsOf(size); r++) {
      await page.goto(at); // a fresh page: new realm, new wasm instance
      const rep = await call('windowPhase', { size, entry });
      for (const phase of r % 2 ? ['hit', 'bare'] : ['bare', 'hit']) Object.assign(rep, await inWorker({ size, entry, phase }));
      reps.push(rep);
    }
    const row = { mib: size, kv_bytes: size * 1048576, ...written };
    for (const k of TIMES) row[`${k}_ms`] = median(reps.map((x) => x[k]));
    row.opfs_worker_hit_grew_bytes = median(reps.map((x) => x.opfs_worker_hit_grew));
    for (const [k, f] of Object.entries(RATIOS)) row[k] = median(reps.map(f));
    row.reps = reps;
    results.rows.push(row);
  }
  // The open of OPEN_ENTRIES entries: 'opfs' in a window and in a worker, 'idb' in a window.
  console.error(`OPFS bench: open of a store of many entries, ${REPS} page loads`);
  await page.goto(at);
  await inWorker({ phase: 'setupOpen', entry, storage: 'opfs' });
  await call('setupOpen', { entry, storage: 'idb' });
  const opens = [];
  for (let r = 0; r < REPS; r++) {
    await page.goto(at);
    const rep = {};
    rep.opfs_window = (await call('openPhase', { entry, storage: 'opfs' })).open_ms;
    rep.idb_window = (await call('openPhase', { entry, storage: 'idb' })).open_ms;
    rep.opfs_worker = (await inWorker({ phase: 'open', entry, storage: 'opfs' })).open_ms;
    opens.push(rep);
  }
  results.open = { entries: await page.evaluate(async () => (await import('/bench/opfs_page.js')).OPEN_ENTRIES), reps: opens };
  for (const k of ['opfs_window', 'idb_window', 'opfs_worker']) results.open[`${k}_ms`] = median(opens.map((x) => x[k]));
  // A flush of one new entry per size: 'opfs' from a window (its helper's
  // sync handles), from a window whose CSP forbids blob: workers (no helper:
  // createWritable streams) and from a worker; 'idb' from a window.
  console.error(`OPFS bench: flushes, ${FLUSH_REPS} of each size`);
  const strict = await context.newPage();
  strict.setDefaultTimeout(300000);
  strict.on('pageerror', (e) => errors.push(String((e && e.stack) || e)));
  await strict.route('**/opfs_page.html*', async (route) => {
    const response = await route.fetch();
    await route.fulfill({ response, headers: { ...response.headers(), 'content-security-policy': "worker-src 'self'" } });
  });
  const FLUSHES = {
    opfs_window: (arg) => callOn(page, 'flushPhase', { ...arg, storage: 'opfs' }),
    opfs_window_streams: (arg) => callOn(strict, 'flushPhase', { ...arg, storage: 'opfs' }),
    opfs_worker: (arg) => inWorker({ ...arg, phase: 'flush', storage: 'opfs' }),
    idb_window: (arg) => callOn(page, 'flushPhase', { ...arg, storage: 'idb' }),
  };
  results.flush = [];
  for (const size of SIZES) {
    const reps = [];
    for (let r = 0; r < FLUSH_REPS; r++) {
      await Promise.all([page.goto(at), strict.goto(at)]);
      const names = Object.keys(FLUSHES);
      const rep = {};
      for (let i = 0; i < names.length; i++) {
        const name = names[(i + r) % names.length]; // the order rotates
        rep[name] = (await FLUSHES[name]({ size, entry, salt: r })).flush_ms;
      }
      reps.push(rep);
    }
    const row = { mib: size, reps };
    for (const k of Object.keys(FLUSHES)) row[`${k}_ms`] = median(reps.map((x) => x[k]));
    results.flush.push(row);
  }
  if (strict.workers().some((w) => w.url().startsWith('blob:'))) throw new Error('the page under a CSP against blob: workers has a helper');
  await strict.close();
  if (errors.length) throw new Error(errors.join('\n'));
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
  server.close();
}
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, JSON.stringify(results, null, 2) + '\n');

console.log(opfsTable(results));
console.log(`wrote ${out}`);
