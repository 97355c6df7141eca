// Chromium + IndexedDB: rlxkv's 'idb' storage against raw IndexedDB in the
// same page (bench/browser_page.js does the in-page work).
//
//   node bench/bench_browser.mjs OUT.json [--quick]
//
// For 1, 10 and 50 MiB of entries (1 MiB of KV each): flush (rlxkv) vs one
// readwrite transaction putting the same blobs (raw), then, on fresh page
// loads, restore (openCache with storage 'idb') vs opening the raw database
// and getting every record back. Medians; nothing asserts on time.
import { existsSync, writeFileSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { serve } from '../scripts/serve.mjs';
import { median, pairRatio } from './stats.js';

const out = process.argv[2];
const quick = process.argv.includes('--quick');
if (!out) {
  console.error('usage: node bench/bench_browser.mjs OUT.json [--quick]');
  process.exit(2);
}
const note = (s) => console.error(`  ${s}`);

const SIZES = [
  { count: 1, writeReps: 9, loads: 12 },
  { count: 10, writeReps: 7, loads: 12 },
  { count: 50, writeReps: 5, loads: 8 },
];
const EXECUTABLE = process.env.RLXKV_CHROMIUM || '/usr/bin/chromium';
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run'];

// What browsers load: the minified bundle when the build made one, else the
// unbundled ESM entry.
const entry = existsSync(new URL('../wasm/dist/rlxkv.browser.js', import.meta.url))
  ? '/wasm/dist/rlxkv.browser.js' : '/js/index.js';
const { server, url } = await serve({ port: 0 });
const browser = await chromium.launch({ executablePath: EXECUTABLE, args: ARGS, headless: true, timeout: 60000 });
const results = { config: { quick, chromium: browser.version(), entry } };
const pageErrors = [];
try {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(120000);
  page.on('pageerror', (e) => pageErrors.push(String((e && e.stack) || e)));
  page.on('console', (m) => { if (m.type() === 'error') pageErrors.push(m.text()); });
  const at = `${url}/bench/browser_page.html`;
  const call = (fn, arg) => page.evaluate(
    async ([f, a]) => (await import('/bench/browser_page.js'))[f](a), [fn, arg]);

  for (const { count, writeReps, loads } of SIZES) {
    console.error(`IndexedDB: ${count} MiB (${count} entries of 1 MiB), module ${entry}`);
    await page.goto(at);
    const w = await call('writePhase', { count, reps: quick ? 2 : writeReps, entry });
    const reloads = [];
    for (let r = 0; r < (quick ? 3 : loads); r++) {
      await page.goto(at); // a fresh page load: new JS realm, new wasm instance
      reloads.push(await call('restorePhase', { count, order: r % 4, entry }));
    }
    const row = {
      count,
      kv_bytes: w.kv_bytes,
      blob_bytes: w.blob_bytes,
      flush_ms: median(w.flush),
      raw_put_ms: median(w.put),
      restore_ms: median(reloads.map((x) => x.restore)),
      raw_get_ms: median(reloads.map((x) => x.get)),
      raw_getall_ms: median(reloads.map((x) => x.getAll)),
      raw_get_known_keys_ms: median(reloads.map((x) => x.getKnown)),
      restore_over_get_known_keys: median(reloads.map((x) => x.restore / x.getKnown)),
      // Each load's own ratio (the two reads are adjacent in time), then the median.
      restore_over_get: median(reloads.map((x) => x.restore / x.get)),
      flush_over_put: pairRatio(w.flush, w.put),
      init_ms: median(reloads.map((x) => x.init)),
      loads: reloads.length,
      write_reps: w.flush.length,
    };
    if (reloads.some((x) => x.raw_bytes !== w.blob_bytes || x.restored_bytes !== w.kv_bytes)) {
      throw new Error('restored or read back a different number of bytes');
    }
    results[`idb_${count}`] = row;
    note(`flush ${row.flush_ms.toFixed(1)} ms vs raw put ${row.raw_put_ms.toFixed(1)} ms (x${row.flush_over_put.toFixed(2)}); ` +
      `restore ${row.restore_ms.toFixed(1)} ms vs raw get ${row.raw_get_ms.toFixed(1)} ms (x${row.restore_over_get.toFixed(2)}), raw getAll ${row.raw_getall_ms.toFixed(1)} ms, known-keys get ${row.raw_get_known_keys_ms.toFixed(1)} ms (x${row.restore_over_get_known_keys.toFixed(2)}); init ${row.init_ms.toFixed(1)} ms`);
  }
} finally {
  await browser.close();
  server.close();
}
if (pageErrors.length) console.error(`page errors:\n${pageErrors.join('\n')}`);
writeFileSync(out, JSON.stringify(results, null, 2) + '\n');
