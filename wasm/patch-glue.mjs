// Copies Emscripten 3.1.6's ES-module glue to wasm/dist, patched for a
// fault of that version: with --node, under Node the glue calls require()
// and __dirname, which an ES module lacks (fixed upstream in 3.1.27). We
// define both from import.meta.url, only when running under Node, so
// browsers and workers never touch node: modules.
// (The browser build's glue is not Emscripten's: wasm/web-glue.mjs.)
// The glue also exports wasmUrls(), where its wasm is (wasm/core.js reads
// and checks it, then hands the glue its bytes): beside the glue, and the
// package's export of it, `rlxkv/rlxkv_core.wasm`. The second is for Vite 6
// and 7's dev server, which pre-bundles a dependency into its cache without
// the files that its new URL(..., import.meta.url) name: there the relative
// URL is a miss (an HTML page), but Vite resolves a package name from the
// cache as from anywhere. Bundlers copy the wasm once for both.
import { readFileSync, writeFileSync } from 'node:fs';

const args = process.argv.slice(2);
const node = args.includes('--node');
const [from, to] = args.filter((a) => a !== '--node');
if (!from || !to) {
  console.error('usage: node wasm/patch-glue.mjs [--node] GLUE_IN GLUE_OUT');
  process.exit(2);
}

function fail(what) {
  console.error(`patch-glue: ${what} not found: is this Emscripten 3.1.6 glue?`);
  process.exit(1);
}

let glue = readFileSync(from, 'utf8');

if (node) {
  for (const needle of ['require("fs")', '__dirname', 'import.meta.url']) {
    if (!glue.includes(needle)) fail(`"${needle}"`);
  }
  glue = `// Patched by wasm/patch-glue.mjs: Node's require/__dirname for ESM.
const require = (typeof process === 'object' && process.versions && process.versions.node && typeof window === 'undefined')
  ? (await import('node:module')).createRequire(import.meta.url) : undefined;
const __dirname = require ? require('node:path').dirname(require('node:url').fileURLToPath(import.meta.url)) : '';
` + glue;
}
{
  const name = from.split('/').pop().replace(/\.mjs$/, '.wasm');
  const own = `wasmBinaryFile=new URL(${JSON.stringify(name)},import.meta.url).toString()`;
  if (glue.split(own).length !== 2) fail(`exactly one "${own}"`);
  glue = glue.replace(own, 'wasmBinaryFile=wasmUrls()[0].href');
  glue = `// Patched by wasm/patch-glue.mjs: where the wasm is (see there).
export const wasmUrls = () => [new URL(${JSON.stringify(name)}, import.meta.url), new URL(${JSON.stringify(`rlxkv/${name}`)}, import.meta.url)];
` + glue;
}
writeFileSync(to, glue);
