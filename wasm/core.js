// The wasm module: fetches and checks its bytes (in Node, reads them:
// node-wasm.js), instantiates it and gives the rest of wasm/ its heap
// helpers (allocation, C strings, statuses). With native-cache.js, the only
// JS that knows the C ABI; js/ calls those, never the module. Arguments
// arrive here already validated by js/.
import createRlxkvCore, { wasmUrls } from './dist/rlxkv_core.mjs';
import { RlxkvError, statusError } from './errors.js';
import { readWasm } from './node-wasm.js';

export const isNode =
  typeof process === 'object' && !!(process.versions && process.versions.node) &&
  typeof window === 'undefined';

/** Which storage openCache's 'auto' means here. */
export function autoStorage() {
  if (isNode && typeof globalThis.indexedDB === 'undefined') return 'fs';
  return typeof globalThis.indexedDB === 'object' ? 'idb' : 'none';
}

const UTF8 = new TextDecoder();

/** size_t's largest value in wasm32: "no limit" for byte counts. */
const SIZE_MAX = 0xffffffff;
/** A non-negative byte count as a wasm32 size_t (larger ones saturate). */
export const toSize = (n) => Math.min(n, SIZE_MAX);

/**
 * The import of a part of the library loaded when first used (a chunk of
 * the browser bundle), failing as an RlxkvError IO naming the part (e.g.
 * a chunk gone from the server after a deploy renamed it). It may be
 * asked for early and awaited later, or never: a failure no one awaits
 * is not reported as unhandled.
 */
export function loadPart(loading, part) {
  const loaded = loading.catch((err) => {
    throw new RlxkvError('IO', `loading rlxkv's ${part} code: ${err}`, { cause: err });
  });
  loaded.catch(() => {});
  return loaded;
}

let sharedCore = null;

/**
 * The core for these options. Without wasmBinary/locateFile/newInstance the
 * module is instantiated once and shared.
 */
export function loadCore(opts = {}) {
  const custom = opts.wasmBinary || opts.locateFile || opts.newInstance;
  if (custom) return instantiate(opts);
  if (!sharedCore) {
    sharedCore = instantiate(opts);
    sharedCore.catch(() => { sharedCore = null; });
  }
  return sharedCore;
}

async function instantiate(opts) {
  const args = { print: () => {}, printErr: (s) => console.warn('[rlxkv]', s) };
  let from = 'wasmBinary';
  if (opts.wasmBinary) {
    args.wasmBinary = opts.wasmBinary;
  } else if (isNode) {
    ({ bytes: args.wasmBinary, from } = await readWasm(wasmUrls()[0], opts.locateFile));
  } else {
    // wasmUrls(): beside the glue, then the package's export of the wasm
    // (wasm/patch-glue.mjs says why). A locateFile gets what the glue would
    // pass: the directory of its URL.
    const beside = wasmUrls()[0], name = beside.pathname.split('/').pop(); // the glue's own wasm
    const urls = opts.locateFile ? [opts.locateFile(name, String(new URL('.', beside)))] : wasmUrls();
    ({ bytes: args.wasmBinary, from } = await fetchWasm(urls, name));
  }
  let M;
  try {
    M = await createRlxkvCore(args);
  } catch (err) {
    throw new RlxkvError('WASM_LOAD', `cannot instantiate rlxkv's wasm from ${from}: ${err && err.message}`, { cause: err });
  }
  return new Core(M);
}

/**
 * The bytes of the first of urls that serves wasm, and that URL (from).
 * Each is checked before it is compiled, so that a miss says what came
 * instead (Emscripten would report a bad magic word and no URL): typically
 * a dev server's HTML page, its answer for a file it does not have.
 */
async function fetchWasm(urls, name) {
  const misses = [];
  for (const url of new Set(urls.map(String))) {
    try {
      const res = await fetch(url);
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const bytes = new Uint8Array(await res.arrayBuffer());
      if (bytes[0] === 0 && bytes[1] === 0x61 && bytes[2] === 0x73 && bytes[3] === 0x6d) return { bytes, from: url }; // "\0asm"
      misses.push(/html/.test(res.headers.get('content-type')) || bytes[0] === 0x3c
        ? `got an HTML page instead of wasm from ${url}` : `${url} is not wasm`);
    } catch (err) {
      misses.push(`cannot fetch ${url}: ${err.message}`);
    }
  }
  throw new RlxkvError('WASM_LOAD', `rlxkv: ${misses.join('; ')}. Serve ${name} there or pass init({ locateFile }) or ` +
    "init({ wasmBinary }); with Vite's dev server: optimizeDeps: { exclude: ['rlxkv'] } in vite.config");
}

/** One instantiated module and the helpers that use its heap. */
export class Core {
  constructor(M) {
    this.M = M;
    // Small scratch cells for out-parameters, allocated once.
    this.cell = this.alloc(64);
  }

  // Views are re-read on every use: memory growth detaches the old ones.
  get u8() { return this.M.HEAPU8; }
  get u32() { return this.M.HEAPU32; }
  /** Bytes of wasm memory (it never shrinks). */
  get memoryBytes() { return this.M.HEAPU8.buffer.byteLength; }
  /** Whether a typed array lies in wasm memory (which the cache reuses). */
  inHeap(view) { return view.buffer === this.M.HEAPU8.buffer; }

  alloc(bytes) {
    const p = this.M._malloc(Math.max(bytes, 1)) >>> 0;
    if (!p) throw new RlxkvError('NOMEM', `out of wasm memory allocating ${bytes} bytes`);
    return p;
  }
  free(p) { if (p) this.M._free(p); }

  strerror(status) {
    return this.cstringAt(this.M._rlxkv_strerror(status) >>> 0);
  }
  fail(status, what) { return statusError(status, what, this.strerror(status)); }

  cstringAt(p) {
    const u8 = this.u8;
    let end = p;
    while (u8[end]) end++;
    return UTF8.decode(u8.subarray(p, end));
  }
  hash64(bytes) {
    const p = this.alloc(bytes.length);
    this.u8.set(bytes, p);
    try { return BigInt.asUintN(64, this.M._rlxkv_hash64(p, bytes.length, 0n)); }
    finally { this.free(p); }
  }

  i32(p) { return this.u32[p >>> 2] | 0; }

}
