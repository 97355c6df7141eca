// Time to first token through rlxkv/transformers in Chromium: transformers.js
// 4.x on onnxruntime-web's wasm backend (one thread: the page is not
// cross-origin isolated) running the demo transformer's ONNX export, cold vs
// warm, and the adapter's share of a warm start (bench/transformers_page.js
// runs bench/transformers_workload.js in the page).
//
//   node bench/bench_transformers_browser.mjs OUT.json [--quick]
import { writeFileSync } from 'node:fs';
import { openBenchPage } from './chromium_page.mjs';
import { WORKLOADS } from './transformers_workload.js';

const out = process.argv[2];
const quick = process.argv.includes('--quick');
if (!out) {
  console.error('usage: node bench/bench_transformers_browser.mjs OUT.json [--quick]');
  process.exit(2);
}
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run', '--js-flags=--expose-gc'];

const { page, browser, check, close } = await openBenchPage('/bench/transformers_page.html', { args: ARGS });
const results = { config: { quick, runtime: 'onnxruntime-web (wasm, 1 thread)', chromium: browser.version() }, rows: [] };
try {
  const call = (fn, ...args) => page.evaluate(async ([f, a]) => (await import('/bench/transformers_page.js'))[f](...a), [fn, args]);
  results.config.transformers = await call('version');
  for (const w of WORKLOADS) {
    const s = await call('run', w, { coldReps: quick ? 2 : 5, warmReps: quick ? 3 : 15 });
    results.rows.push(s);
    console.error(`  chromium ${w.label}: TTFT cold ${s.cold_ttft_ms.toFixed(1)} ms, warm ${s.warm_ttft_ms.toFixed(1)} ms; restore ${s.loop_restore_ms.toFixed(2)} ms = lookup + copy ${s.loop_lookup_ms.toFixed(2)} ms x${s.loop_restore_over_lookup.toFixed(3)}; vs a bare lookup + copy ${s.loop_bare_lookup_ms.toFixed(2)} ms x${s.loop_restore_over_bare.toFixed(2)} (in the run x${s.restore_over_bare.toFixed(2)})`);
  }
  check();
} finally {
  await close();
}
writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
