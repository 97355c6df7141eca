// Chromium + IndexedDB: the tiered store (storage 'idb') at the size a
// headless profile's quota allows, driven by bench/tiers_page.js in one
// page of a persistent (on-disk) profile:
//   - openCache on a fresh page load, for ~1,000 entries (many small ones
//     for the count, a few of 24.6 MB for the bytes): the index only;
//   - one large entry's hit-load (await cache.match of a stored-only
//     entry) vs a raw IndexedDB get of the same record, back to back;
//   - float16 KV as an f16 entry and widened to f32: record bytes, hit-loads;
//   - every large entry reachable through match.
//
//   node bench/bench_tiers_browser.mjs [OUT.json] [--quick]   (default build/bench/tiers_browser.json)
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serve } from '../scripts/serve.mjs';
import { median, pairRatio } from './stats.js';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const quick = args.includes('--quick');
const out = args.find((a) => !a.startsWith('--')) || join(here, '../build/bench/tiers_browser.json');
const note = (s) => console.error(`  ${s}`);
const EXECUTABLE = process.env.RLXKV_CHROMIUM || '/usr/bin/chromium';
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run'];
const LARGE_BYTES = 24576000;
const TOTAL = 1000;
const LARGE = quick ? 4 : 21; // 21 x 24.6 MB = 516 MB
const entry = existsSync(new URL('../wasm/dist/rlxkv.browser.js', import.meta.url)) ? '/wasm/dist/rlxkv.browser.js' : '/js/index.js';

const profile = mkdtempSync(join(tmpdir(), 'rlxkv-bench-tiers-chromium-'));
const { server, url } = await serve({ port: 0 });
const context = await chromium.launchPersistentContext(profile, { executablePath: EXECUTABLE, args: ARGS, headless: true, timeout: 60000 });
const results = { config: { quick, chromium: context.browser()?.version() ?? 'unknown', entry, total_entries: TOTAL, large_entries: LARGE, large_bytes: LARGE_BYTES } };
const pageErrors = [];
try {
  const page = context.pages()[0] || await context.newPage();
  page.setDefaultTimeout(600000);
  page.on('pageerror', (e) => pageErrors.push(String((e && e.stack) || e)));
  const at = `${url}/bench/tiers_page.html`;
  const call = (fn, arg) => page.evaluate(async ([f, a]) => (await import('/bench/tiers_page.js'))[f](a), [fn, arg]);
  await page.goto(at);
  // Make room if the profile's quota is short of the store (Storage.overrideQuotaForOrigin).
  const est = await page.evaluate(() => navigator.storage.estimate());
  const need = LARGE * LARGE_BYTES * 1.3 + (100 << 20);
  if (est.quota < need) {
    const cdp = await context.newCDPSession(page);
    await cdp.send('Storage.overrideQuotaForOrigin', { origin: url, quotaSize: need * 2 });
    results.config.quota_override = need * 2;
  }
  results.config.quota_before = est.quota;
  console.error(`IndexedDB tiers: ${TOTAL - LARGE} small + ${LARGE} large entries, module ${entry}`);
  results.build = await call('build', { entry, small: TOTAL - LARGE, large: LARGE });
  note(`store: ${results.build.entries} entries, ${(results.build.bytes / 1e6).toFixed(0)} MB (origin usage ${(results.build.usage / 1e6).toFixed(0)} MB of quota ${(results.build.quota / 1e6).toFixed(0)} MB)`);
  const opens = [];
  for (let r = 0; r < (quick ? 3 : 9); r++) {
    await page.goto(at); // a fresh page: new realm, new wasm instance
    opens.push(await call('open', { entry }));
  }
  if (opens.some((o) => o.loaded !== TOTAL)) throw new Error(`open found ${opens.map((o) => o.loaded)} of ${TOTAL}`);
  results.open = { ms: median(opens.map((o) => o.ms)), runs: opens.map((o) => o.ms), entries: TOTAL, resident: opens[0].resident };
  note(`open (index only): ${results.open.ms.toFixed(1)} ms for ${TOTAL} entries`);
  await page.goto(at);
  const h = await call('hit', { entry, i: LARGE >> 1, reps: quick ? 5 : 31 });
  results.hit = {
    load_ms: median(h.load), get_ms: median(h.get), load_over_get: pairRatio(h.load, h.get), record_bytes: h.record_bytes, reps: h.load.length,
  };
  note(`hit-load ${results.hit.load_ms.toFixed(1)} ms vs raw get ${results.hit.get_ms.toFixed(1)} ms: ${results.hit.load_over_get.toFixed(2)}×`);
  await page.goto(at);
  const f = await call('f16', { entry, reps: quick ? 5 : 31 });
  results.f16 = {
    f16: { load_ms: median(f.f16.load_ms), record_bytes: f.f16.record_bytes },
    f32: { load_ms: median(f.f32.load_ms), record_bytes: f.f32.record_bytes },
    ratio: { record_bytes: f.f16.record_bytes / f.f32.record_bytes, hit_load: pairRatio(f.f16.load_ms, f.f32.load_ms) },
    reps: f.f16.load_ms.length,
  };
  note(`f16/f32 in IndexedDB: bytes ${results.f16.ratio.record_bytes.toFixed(3)}×, hit-load ${results.f16.ratio.hit_load.toFixed(3)}×`);
  await page.goto(at);
  results.check = await call('check', { entry, large: LARGE });
  note(`check: ${results.check.reachable} of ${LARGE} large entries reachable through match; a small one: ${results.check.small_hit}`);
} finally {
  await context.close();
  server.close();
  rmSync(profile, { recursive: true, force: true });
}
if (pageErrors.length) console.error(`page errors:\n${pageErrors.join('\n')}`);
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, JSON.stringify(results, null, 2) + '\n');
console.log(`wrote ${out}`);
