// Chromium: the hit-load of a 1,000-token prompt stored as 7 pages (issue
// #23), as an app sees it, from rlxkv's 'idb' and 'opfs' storage, in a
// window and in a worker, against a raw IndexedDB get of the same bytes as
// one record (a database of its own) in the same realm
// (bench/pages_page.js, bench/pages_workload.js). BENCHMARKS.md gets the
// figures through bench/report_pages.mjs.
//
//   node bench/bench_pages_browser.mjs [OUT.json] [--quick]   (default build/bench/pages_browser.json)
//
// The stores, made on a first visit: a 400-token system prompt then 6
// turns of 100 tokens, each inserted and flushed in turn (7 pages), and the
// same 1,000 tokens stored whole (1 blob); f16 KV, head-major, Qwen2.5-0.5B's
// shape (24 layers, 2 KV heads × 64: 12,288 bytes a token), without --quick
// also Qwen2.5-7B's (28 × 4 × 128). Each measurement is a fresh page load
// (and, for a worker, a fresh worker in it): openCache, then
// `await cache.match(query)` (copies, or view: true), timed from the call of
// openCache to the hit's arrays, beside one get of the raw record, which goes
// first alternating. The 16 (storage, window/worker, paged/whole,
// copy/view) measurements of a repetition run in an order that rotates.
// Persistent profile (on disk, as users have it). Medians; ratios are
// medians of each measurement's own ratio. Nothing asserts on time.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { chromium } from 'playwright-core';
import { serve } from '../scripts/serve.mjs';
import { median, pairRatio } from './stats.js';
import { SHAPES, STEPS, TOKENS, bytesPerToken } from './pages_workload.js';

const quick = process.argv.includes('--quick');
const out = process.argv.slice(2).find((a) => !a.startsWith('--')) || new URL('../build/bench/pages_browser.json', import.meta.url).pathname;
const REPS = quick ? 3 : 9;
const shapes = quick ? ['qwen2.5-0.5b'] : ['qwen2.5-0.5b', 'qwen2.5-7b'];
const EXECUTABLE = process.env.RLXKV_CHROMIUM || '/usr/bin/chromium';
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run'];
const entry = existsSync(new URL('../wasm/dist/rlxkv.browser.js', import.meta.url))
  ? '/wasm/dist/rlxkv.browser.js' : '/js/index.js';
const FIELDS = ['open_ms', 'match_ms', 'total_ms', 'get_ms', 'relookup_ms', 'get_pages_ms', 'match_grow_ms', 'match_grew_bytes'];

const { server, url } = await serve({ port: 0 });
const profile = mkdtempSync(join(tmpdir(), 'rlxkv-bench-pages-'));
const context = await chromium.launchPersistentContext(profile, { executablePath: EXECUTABLE, headless: true, args: ARGS, timeout: 60000 });
const results = { config: { quick, chromium: context.browser()?.version() ?? null, entry, reps: REPS, tokens: TOKENS, steps: STEPS, shapes: Object.fromEntries(shapes.map((n) => [n, SHAPES[n]])) }, shapes: [] };
try {
  const page = context.pages()[0] || await context.newPage();
  page.setDefaultTimeout(300000);
  const errors = [];
  page.on('pageerror', (e) => errors.push(String((e && e.stack) || e)));
  const at = `${url}/bench/pages_page.html`;
  const call = (fn, arg) => page.evaluate(async ([f, a]) => (await import('/bench/pages_page.js'))[f](a), [fn, arg]);
  const inWorker = (arg) => page.evaluate((a) => new Promise((resolve, reject) => {
    const w = new Worker('/bench/pages_worker.js', { type: 'module' });
    w.onmessage = ({ data }) => { w.terminate(); if (data.error) reject(new Error(data.error)); else resolve(data); };
    w.onerror = (e) => reject(new Error(e.message));
    w.postMessage(a);
  }), arg);

  for (const shape of shapes) {
    console.error(`pages bench (Chromium): ${shape}, ${REPS} repetitions of 16 page loads, module ${entry}`);
    await page.goto(at);
    const written = await call('setup', { entry, shape });
    for (const storage of ['idb', 'opfs']) {
      if (written[`${storage}_paged_blobs`] !== STEPS.paged.length || written[`${storage}_whole_blobs`] !== 1) {
        throw new Error(`${storage}: ${written[`${storage}_paged_blobs`]} paged and ${written[`${storage}_whole_blobs`]} whole blobs stored`);
      }
    }
    const combos = [];
    for (const storage of ['idb', 'opfs']) for (const where of ['window', 'worker']) for (const variant of ['paged', 'whole']) for (const view of [false, true]) combos.push({ storage, where, variant, view });
    const key = (c) => `${c.storage}_${c.where}_${c.variant}_${c.view ? 'view' : 'copy'}`;
    const runs = Object.fromEntries(combos.map((c) => [key(c), []]));
    for (let r = 0; r < REPS; r++) {
      for (let i = 0; i < combos.length; i++) {
        const c = combos[(i + 5 * r) % combos.length];
        await page.goto(at); // a fresh page: new realm, new wasm instance
        const arg = { entry, shape, storage: c.storage, variant: c.variant, view: c.view, rawFirst: (r + i) % 2 === 1, pages: written.raw_pages };
        runs[key(c)].push(c.where === 'worker' ? await inWorker(arg) : await call('hitPhase', arg));
      }
    }
    const s = SHAPES[shape];
    const row = { shape, ...s, bytes_per_token: bytesPerToken(s), kv_bytes: bytesPerToken(s) * TOKENS, ...written, hit: {} };
    for (const c of combos) {
      const rs = runs[key(c)];
      const h = { ...c, view_given: rs[0].view };
      for (const f of FIELDS) h[f] = median(rs.map((x) => x[f]));
      h.over_get = pairRatio(rs.map((x) => x.total_ms), rs.map((x) => x.get_ms));
      h.match_over_get = pairRatio(rs.map((x) => x.match_ms), rs.map((x) => x.get_ms));
      h.reps = rs;
      row.hit[key(c)] = h;
      console.error(`  ${key(c)}: openCache→match ${h.total_ms.toFixed(1)} ms (open ${h.open_ms.toFixed(1)}, match ${h.match_ms.toFixed(1)}; gather again ${h.relookup_ms.toFixed(1)}) vs get ${h.get_ms.toFixed(1)} ms: ${h.over_get.toFixed(2)}× (7 gets ${h.get_pages_ms.toFixed(1)} ms)`);
    }
    results.shapes.push(row);
  }
  if (errors.length) throw new Error(errors.join('\n'));
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
  server.close();
}
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, JSON.stringify(results, null, 2) + '\n');
const { pagesTable } = await import('./report_pages.mjs');
console.log(pagesTable({ browser: results }));
console.log(`wrote ${out}`);
