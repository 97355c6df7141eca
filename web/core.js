// The wasm module: instantiates it and gives the rest of web/ its heap
// helpers (allocation, C strings, statuses). With native-cache.js and
// storage.js, the only JS that knows the C ABI; js/ calls those, never the
// module. Arguments arrive here already validated by js/.
import createRlxkvCore from './dist/rlxkv_core.mjs';
import { RlxkvError, statusError } from './errors.js';

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
  if (opts.wasmBinary) args.wasmBinary = opts.wasmBinary;
  if (opts.locateFile) args.locateFile = opts.locateFile;
  if (!args.wasmBinary && !args.locateFile && isNode) {
    // 3.1.6's glue would fetch() a file: URL under Node, which fails.
    const { readFile } = await import('node:fs/promises');
    args.wasmBinary = await readFile(new URL('./dist/rlxkv_core.wasm', import.meta.url));
  }
  return new Core(await createRlxkvCore(args));
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
  /** An errno from C (rlxkv_store_errno) by its name, 'EACCES'. */
  errnoName(err) {
    const name = this.M._rlxkv_web_errno_name(err) >>> 0;
    return name ? this.cstringAt(name) : `errno ${err} (as Emscripten numbers them)`;
  }

  cstringAt(p) {
    const u8 = this.u8;
    let end = p;
    while (u8[end]) end++;
    return UTF8.decode(u8.subarray(p, end));
  }
  /** A NUL-terminated copy of a JS string in the heap; free it. */
  cstring(s) {
    const bytes = new TextEncoder().encode(s);
    const p = this.alloc(bytes.length + 1);
    this.u8.set(bytes, p);
    this.u8[p + bytes.length] = 0;
    return p;
  }
  hash64(bytes) {
    const p = this.alloc(bytes.length);
    this.u8.set(bytes, p);
    try { return BigInt.asUintN(64, this.M._rlxkv_hash64(p, bytes.length, 0n)); }
    finally { this.free(p); }
  }

  i32(p) { return this.u32[p >>> 2] | 0; }

}
