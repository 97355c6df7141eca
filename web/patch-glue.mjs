// Copies Emscripten 3.1.6's ES-module glue to web/dist, patched for
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
// With --no-fetch, the glue's own fetching goes (XMLHttpRequest, fetch,
// streaming compilation): web/core.js hands it the wasm's bytes, always,
// having checked them (the browser glue: about 1 KB less).
// Every glue also exports wasmUrls(), where its wasm is (web/core.js reads
// and checks it, then hands the glue its bytes): beside the glue, and the
// package's export of it, `rlxkv/rlxkv_core.wasm`. The second is for Vite 6
// and 7's dev server, which pre-bundles a dependency into its cache without
// the files that its new URL(..., import.meta.url) name: there the relative
// URL is a miss (an HTML page), but Vite resolves a package name from the
// cache as from anywhere. Bundlers copy the wasm once for both.
import { readFileSync, writeFileSync } from 'node:fs';

const args = process.argv.slice(2);
const node = args.includes('--node');
// --no-fs: a glue linked without Emscripten's file system (the browser one).
const noFs = args.includes('--no-fs');
const noFetch = args.includes('--no-fetch');
const wasmAt = args.indexOf('--wasm');
const wasm = wasmAt >= 0 ? args[wasmAt + 1] : null;
const [from, to] = args.filter((a, i) => !['--node', '--no-fs', '--no-fetch'].includes(a) && i !== wasmAt && i !== wasmAt + 1);
if (!from || !to || (wasmAt >= 0 && !wasm)) {
  console.error('usage: node web/patch-glue.mjs [--node] [--no-fs] [--no-fetch] [--wasm NAME] GLUE_IN GLUE_OUT');
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
if (noFetch) {
  // Each replaced exactly once: the XHR readers, getBinaryPromise's fetch,
  // instantiateAsync's streaming. What stays reads Module.wasmBinary.
  const XHR = '{read_=(url=>{var xhr=new XMLHttpRequest;xhr.open("GET",url,false);xhr.send(null);return xhr.responseText});' +
    'if(ENVIRONMENT_IS_WORKER){readBinary=(url=>{var xhr=new XMLHttpRequest;xhr.open("GET",url,false);xhr.responseType="arraybuffer";xhr.send(null);return new Uint8Array(xhr.response)})}' +
    'readAsync=((url,onload,onerror)=>{var xhr=new XMLHttpRequest;xhr.open("GET",url,true);xhr.responseType="arraybuffer";' +
    'xhr.onload=(()=>{if(xhr.status==200||xhr.status==0&&xhr.response){onload(xhr.response);return}onerror()});xhr.onerror=onerror;xhr.send(null)})}';
  const FETCH = 'if(!wasmBinary&&(ENVIRONMENT_IS_WEB||ENVIRONMENT_IS_WORKER)){if(typeof fetch=="function"){return fetch(wasmBinaryFile,{credentials:"same-origin"})' +
    '.then(function(response){if(!response["ok"]){throw"failed to load wasm binary file at \'"+wasmBinaryFile+"\'"}return response["arrayBuffer"]()})' +
    '.catch(function(){return getBinary(wasmBinaryFile)})}}';
  const STREAMING = 'if(!wasmBinary&&typeof WebAssembly.instantiateStreaming=="function"&&!isDataURI(wasmBinaryFile)&&typeof fetch=="function"){' +
    'return fetch(wasmBinaryFile,{credentials:"same-origin"}).then(function(response){var result=WebAssembly.instantiateStreaming(response,info);' +
    'return result.then(receiveInstantiationResult,function(reason){err("wasm streaming compile failed: "+reason);' +
    'err("falling back to ArrayBuffer instantiation");return instantiateArrayBuffer(receiveInstantiationResult)})})}' +
    'else{return instantiateArrayBuffer(receiveInstantiationResult)}';
  for (const [needle, by] of [[XHR, ''], [FETCH, ''], [STREAMING, 'return instantiateArrayBuffer(receiveInstantiationResult)']]) {
    if (glue.split(needle).length !== 2) fail(`exactly one "${needle.slice(0, 60)}…"`);
    glue = glue.replace(needle, by);
  }
}
{
  const name = wasm || from.split('/').pop().replace(/\.mjs$/, '.wasm');
  const own = `wasmBinaryFile=new URL(${JSON.stringify(name)},import.meta.url).toString()`;
  if (glue.split(own).length !== 2) fail(`exactly one "${own}"`);
  glue = glue.replace(own, 'wasmBinaryFile=wasmUrls()[0].href');
  glue = `// Patched by web/patch-glue.mjs: where the wasm is (see there).
export const wasmUrls = () => [new URL(${JSON.stringify(name)}, import.meta.url), new URL(${JSON.stringify(`rlxkv/${name}`)}, import.meta.url)];
` + glue;
}
writeFileSync(to, glue);
