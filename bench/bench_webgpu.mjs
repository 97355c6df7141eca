// transformers.js on WebGPU in Chromium: the KV's download after generate
// and its upload on a restore, for the demo's ~1,100-token prompt
// (bench/webgpu_page.js). The adapter is SwiftShader's (WebGPU on the CPU:
// what a machine without a GPU has); RLXKV_WEBGPU_ADAPTER=default lets
// Chromium pick its own (a real GPU, where it has one). Prints the figures
// as JSON; OUT.json, if given, gets them with every repetition's times.
//
//   node bench/bench_webgpu.mjs [OUT.json] [--reps=N] [--micro-reps=N]
import { writeFileSync } from 'node:fs';
import { openBenchPage } from './chromium_page.mjs';

const args = process.argv.slice(2);
const out = args.find((a) => !a.startsWith('--'));
const reps = Number(args.find((a) => a.startsWith('--reps='))?.slice(7) ?? 7);
const microReps = Number(args.find((a) => a.startsWith('--micro-reps='))?.slice(13) ?? 40);
const swiftshader = process.env.RLXKV_WEBGPU_ADAPTER !== 'default';
const ARGS = ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--no-first-run', '--js-flags=--expose-gc', '--enable-unsafe-webgpu',
  ...(swiftshader ? ['--disable-gpu', '--use-webgpu-adapter=swiftshader'] : [])];

const { page, browser, check, close } = await openBenchPage('/bench/webgpu_page.html', { args: ARGS, timeoutMs: 600000 });
let result;
try {
  if (!(await page.evaluate(() => !!navigator.gpu && navigator.gpu.requestAdapter().then((a) => !!a)))) {
    throw new Error(`no WebGPU adapter in this Chromium (${ARGS.filter((a) => a.includes('webgpu')).join(' ')})`);
  }
  result = await page.evaluate(async (r) => (await import('/bench/webgpu_page.js')).run(r), { reps, microReps });
  result.config = { chromium: browser.version(), args: ARGS.filter((a) => a.includes('webgpu')) };
  check();
} finally {
  await close();
}
// The file gets every repetition's times (raw); stdout the figures.
if (out) writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
const { raw, ...figures } = result;
process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
