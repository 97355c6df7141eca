// Copies Emscripten 3.1.6's ES-module glue to web/dist, patched for two
// faults of that version:
//   - stat() reports mtimes in whole seconds (st_mtim.tv_nsec is always 0),
//     so the store could not tell the order of blobs saved within one
//     second: we fill in the milliseconds that MEMFS/IDBFS/NODEFS keep.
//   - with --node: under Node the glue calls require() and __dirname, which
//     an ES module lacks (fixed upstream in 3.1.27). We define both from
//     import.meta.url, only when running under Node, so browsers and workers
//     never touch node: modules.
//   - with --node: NODEFS refuses to make a node for anything but a file,
//     directory or link (EINVAL), so one fifo or socket beside the blobs
//     failed every readdir-and-stat of the store (rlxkv ls, openStore):
//     such a node is made (the store then skips it as no regular file).
// And with --wasm NAME, the glue loads NAME instead of the .wasm it was
// linked with: both glues share one wasm (the C is the same; only the JS
// environments differ), so the package ships it once.
import { readFileSync, writeFileSync } from 'node:fs';

const args = process.argv.slice(2);
const node = args.includes('--node');
// --no-fs: a glue linked without Emscripten's file system (the browser one).
const noFs = args.includes('--no-fs');
const wasmAt = args.indexOf('--wasm');
const wasm = wasmAt >= 0 ? args[wasmAt + 1] : null;
const [from, to] = args.filter((a, i) => a !== '--node' && a !== '--no-fs' && i !== wasmAt && i !== wasmAt + 1);
if (!from || !to || (wasmAt >= 0 && !wasm)) {
  console.error('usage: node web/patch-glue.mjs [--node] [--no-fs] [--wasm NAME] GLUE_IN GLUE_OUT');
  process.exit(2);
}

function fail(what) {
  console.error(`patch-glue: ${what} not found: is this Emscripten 3.1.6 glue?`);
  process.exit(1);
}

let glue = readFileSync(from, 'utf8');

// doStat writes tv_sec of st_mtim at buf+64 and a zero tv_nsec at buf+68.
const mtimeNsec = 'HEAP32[buf+68>>>2]=0';
if (!noFs) {
  if (glue.split(mtimeNsec).length !== 2) fail(`exactly one "${mtimeNsec}"`);
  glue = glue.replace(mtimeNsec, 'HEAP32[buf+68>>>2]=stat.mtime.getTime()%1e3*1e6|0');
} else if (glue.includes('FS.mount')) {
  fail('no file system (--no-fs), but the glue has one:');
}

if (node) {
  for (const needle of ['require("fs")', '__dirname', 'import.meta.url']) {
    if (!glue.includes(needle)) fail(`"${needle}"`);
  }
  glue = `// Patched by web/patch-glue.mjs: Node's require/__dirname for ESM.
const require = (typeof process === 'object' && process.versions && process.versions.node && typeof window === 'undefined')
  ? (await import('node:module')).createRequire(import.meta.url) : undefined;
const __dirname = require ? require('node:path').dirname(require('node:url').fileURLToPath(import.meta.url)) : '';
` + glue;
}
if (node) {
  const refuse = 'if(!FS.isDir(mode)&&!FS.isFile(mode)&&!FS.isLink(mode)){throw new FS.ErrnoError(28)}';
  if (glue.split(refuse).length !== 2) fail(`exactly one NODEFS createNode check "${refuse}"`);
  glue = glue.replace(refuse, '');
}
if (wasm) {
  // Named twice: for locateFile, and as a URL next to the glue.
  const own = `"${from.split('/').pop().replace(/\.mjs$/, '.wasm')}"`;
  if (glue.split(own).length !== 3) fail(`exactly two ${own}`);
  glue = glue.split(own).join(JSON.stringify(wasm));
}
writeFileSync(to, glue);
