// Chat sessions in Chromium: the workload of bench/bench_chat.mjs
// (bench/chat_workload.js) on storage 'idb' (in a window), 'opfs' in a
// dedicated worker (sync access handles) and 'opfs' in a window (the
// library's helper worker), driven by bench/chat_page.js in a persistent
// (on-disk) profile, each run on a fresh page load and an emptied origin.
// Bytes written are counted in the page and its workers
// (bench/chat_counter.js): values put into IndexedDB, bytes given to OPFS
// writes. Stored: the records read back, or the OPFS files' sizes.
// The same sizes as the Node runs (--quick: smaller); the config is in the JSON.
//
//   node bench/bench_chat_browser.mjs [OUT.json] [--quick]   (default build/bench/chat_browser.json)
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serve } from '../scripts/serve.mjs';
import { BYTES_PER_TOKEN, LAYOUT, SYSTEM_TOKENS, TARGETS } from './chat_workload.js';
import { chatTable } from './report_chat.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const quick = args.includes('--quick');
const out = args.find((a) => !a.startsWith('--')) || join(here, '../build/bench/chat_browser.json');
const EXECUTABLE = process.env.RLXKV_CHROMIUM || '/usr/bin/chromium';
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run'];
const entry = existsSync(new URL('../wasm/dist/rlxkv.browser.js', import.meta.url)) ? '/wasm/dist/rlxkv.browser.js' : '/js/index.js';

// The workload (#23), as in Node: 20 chats x 10 turns x 100 tokens, 4 x 50 x 10.
const RUNS = {
  chats: { chats: quick ? 4 : 20, turns: quick ? 4 : 10, perTurn: 100 },
  small: { chats: quick ? 2 : 4, turns: quick ? 10 : 50, perTurn: 10 },
};
const STORES = {
  idb: { storage: 'idb', where: 'window', label: "storage 'idb', window" },
  opfs: { storage: 'opfs', where: 'worker', label: "storage 'opfs', dedicated worker" },
  'opfs-window': { storage: 'opfs', where: 'window', label: "storage 'opfs', window (the library's helper worker)" },
};
/** What a store holds at most if every turn is a whole entry: the room the origin needs. */
const worstStored = Math.max(...Object.values(RUNS).map((c) => c.chats * Array.from({ length: c.turns }, (_, t) => SYSTEM_TOKENS + (t + 1) * c.perTurn).reduce((a, b) => a + b, 0))) * BYTES_PER_TOKEN;

const profile = mkdtempSync(join(tmpdir(), 'rlxkv-bench-chat-chromium-'));
const { server, url } = await serve({ port: 0 });
const context = await chromium.launchPersistentContext(profile, { executablePath: EXECUTABLE, args: ARGS, headless: true, timeout: 60000 });
const results = {
  config: {
    quick, chromium: context.browser()?.version() ?? 'unknown', entry, layout: LAYOUT, dtype: 'f16', bytes_per_token: BYTES_PER_TOKEN,
    system_tokens: SYSTEM_TOKENS, runs: RUNS, targets: TARGETS,
    stored_how: "for 'idb', the binary bytes of every record of every IndexedDB database of the origin, read back after the run; for 'opfs', the sizes of every file under the origin's OPFS root",
  },
  stores: {},
};
const pageErrors = [];
try {
  const page = context.pages()[0] || await context.newPage();
  page.setDefaultTimeout(1800000);
  page.on('pageerror', (e) => pageErrors.push(String((e && e.stack) || e)));
  page.on('console', (m) => { if (m.type() === 'log') console.error(m.text()); });
  const at = `${url}/bench/chat_page.html`;
  await page.goto(at);
  const est = await page.evaluate(() => navigator.storage.estimate());
  const need = worstStored * 1.5 + (200 << 20);
  if (est.quota < need) {
    const cdp = await context.newCDPSession(page);
    await cdp.send('Storage.overrideQuotaForOrigin', { origin: url, quotaSize: need * 2 });
    results.config.quota_override = need * 2;
  }
  results.config.quota_before = est.quota;
  for (const [key, s] of Object.entries(STORES)) {
    results.stores[key] = { label: s.label, storage: s.storage, where: s.where };
    for (const [name, cfg] of Object.entries(RUNS)) {
      console.error(`chat, Chromium ${s.label}: ${name}, ${cfg.chats} chats x ${cfg.turns} turns x ${cfg.perTurn} tokens`);
      try {
        await page.goto(at); // a fresh page: new realm, new wasm instance
        results.stores[key][name] = await page.evaluate(async ([fn, a]) => (await import('/bench/chat_page.js'))[fn](a),
          [s.where === 'worker' ? 'runStoreInWorker' : 'runStore', { entry, storage: s.storage, cfg }]);
      } catch (err) {
        results.stores[key][name] = { error: String((err && err.message) || err).split('\n')[0] };
        console.error(`  failed: ${results.stores[key][name].error}`);
      }
    }
  }
} finally {
  await context.close();
  server.close();
  rmSync(profile, { recursive: true, force: true });
}
if (pageErrors.length) console.error(`page errors:\n${pageErrors.join('\n')}`);
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, JSON.stringify(results, null, 2) + '\n');
console.log(chatTable(null, results));
console.log(`wrote ${out}`);
