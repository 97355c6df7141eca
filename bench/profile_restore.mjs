// Diagnostic: node bench/profile_restore.mjs [COUNT] [LOADS] — prints the
// median time of each phase of an IndexedDB restore (bench/profile_page.js).
import { chromium } from 'playwright-core';
import { serve } from '../scripts/serve.mjs';

const count = Number(process.argv[2] || 1), loads = Number(process.argv[3] || 9);
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run'];
const { server, url } = await serve({ port: 0 });
const browser = await chromium.launch({ executablePath: process.env.RLXKV_CHROMIUM || '/usr/bin/chromium', args: ARGS });
try {
  const page = await (await browser.newContext()).newPage();
  page.on('pageerror', (e) => console.error(String(e)));
  const at = `${url}/bench/browser_page.html`;
  const call = (fn, arg) => page.evaluate(async ([f, a]) => (await import('/bench/profile_page.js'))[f](a), [fn, arg]);
  await page.goto(at);
  await call('write', { count });
  const runs = [];
  for (let i = 0; i < loads; i++) { await page.goto(at); runs.push(await call('restore', { count })); }
  const med = (a) => { const s = [...a].sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
  console.log(`${count} MiB, median of ${loads} loads (ms):`);
  for (const k of Object.keys(runs[0])) console.log(`  ${k.padEnd(48)} ${med(runs.map((r) => r[k] || 0)).toFixed(2)}`);
} finally {
  await browser.close();
  server.close();
}
