// The wasm boundary: instantiates the Emscripten module and moves tokens and
// KV between JS typed arrays and the wasm heap. The only JS (with
// idb-sync.js and storage.js) that knows the C ABI. Arguments arrive here
// already validated by js/.
import createRlxkvCore from './dist/rlxkv_core.mjs';
import { RlxkvError, statusError } from './errors.js';

export const isNode =
  typeof process === 'object' && !!(process.versions && process.versions.node) &&
  typeof window === 'undefined';

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
    this.stats = this.alloc(9 * 8);
    this.blobInfoSize = M._rlxkv_web_blob_info_size();
    this.scratch = 0;
    this.scratchBytes = 0;
  }

  // Views are re-read on every use: memory growth detaches the old ones.
  get u8() { return this.M.HEAPU8; }
  get u32() { return this.M.HEAPU32; }
  get f32() { return this.M.HEAPF32; }
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
    return new TextDecoder().decode(u8.subarray(p, end));
  }
  /** A NUL-terminated copy of a JS string in the heap; free it. */
  cstring(s) {
    const bytes = new TextEncoder().encode(s);
    const p = this.alloc(bytes.length + 1);
    this.u8.set(bytes, p);
    this.u8[p + bytes.length] = 0;
    return p;
  }
  /**
   * Runs fn(ptr, n) with the tokens in the heap, in a scratch area kept
   * between calls (a lookup is then one copy, no malloc/free). fn must not
   * call withTokens again.
   */
  withTokens(tokens, fn) {
    const bytes = tokens.length * 4;
    if (bytes > this.scratchBytes) {
      const size = Math.max(bytes, 2 * this.scratchBytes, 4096);
      this.free(this.scratch);
      this.scratch = this.scratchBytes = 0; // consistent if alloc throws
      this.scratch = this.alloc(size);
      this.scratchBytes = size;
    }
    this.u32.set(tokens, this.scratch >>> 2);
    return fn(this.scratch, tokens.length);
  }

  hash64(bytes) {
    const p = this.alloc(bytes.length);
    this.u8.set(bytes, p);
    try { return BigInt.asUintN(64, this.M._rlxkv_hash64(p, bytes.length, 0n)); }
    finally { this.free(p); }
  }

  /**
   * A new C entry holding copies of tokens, k[], v[]: each array is copied
   * once, straight into the entry's own allocation. The caller owns it.
   */
  newEntry(tokens, k, v) {
    const M = this.M;
    const layers = k.length;
    const lens = this.alloc(2 * layers * 4);
    let e;
    try {
      const u32 = this.u32;
      for (let i = 0; i < layers; i++) {
        u32[(lens >>> 2) + i] = k[i].length;
        u32[(lens >>> 2) + layers + i] = v[i].length;
      }
      e = M._rlxkv_entry_new(tokens.length, layers, lens, 0, this.cell) >>> 0;
      if (!e) throw this.fail(this.i32(this.cell), 'allocating an entry');
    } finally {
      this.free(lens);
    }
    this.u32.set(tokens, M._rlxkv_entry_tokens(e) >>> 2);
    const f32 = this.f32;
    let at = M._rlxkv_entry_data(e) >>> 2;
    for (const block of [...k, ...v]) {
      f32.set(block, at);
      at += block.length;
    }
    return e;
  }

  i32(p) { return this.u32[p >>> 2] | 0; }

  /** A copy of entry e's tokens. */
  entryTokens(e) {
    const at = this.M._rlxkv_entry_tokens(e) >>> 2;
    return this.u32.slice(at, at + (this.M._rlxkv_entry_n_tokens(e) >>> 0));
  }

  /**
   * The tokens and K/V blocks of entry e, trimmed to `matched` rows when
   * matched < n_tokens (row-major entries only). copy: fresh arrays the
   * caller owns; else views into the heap, re-derived if memory grows.
   */
  readEntry(e, matched, copy) {
    const M = this.M;
    const n = M._rlxkv_entry_n_tokens(e) >>> 0;
    const layers = M._rlxkv_entry_n_layers(e) >>> 0;
    const tokPtr = M._rlxkv_entry_tokens(e) >>> 0;
    const base = M._rlxkv_entry_data(e) >>> 2;
    const spans = []; // [start, length] per block, in floats
    let at = base;
    for (let i = 0; i < 2 * layers; i++) {
      const len = M._rlxkv_entry_block_len(e, i) >>> 0;
      const used = matched < n ? (len / n) * matched : len;
      spans.push([at, used]);
      at += len;
    }
    const tokSpan = [tokPtr >>> 2, matched];
    if (copy) {
      const f32 = this.f32;
      const blocks = spans.map(([s, l]) => f32.slice(s, s + l));
      return {
        matched,
        tokens: this.u32.slice(tokSpan[0], tokSpan[0] + matched),
        k: blocks.slice(0, layers),
        v: blocks.slice(layers),
      };
    }
    return new HeapView(this, matched, tokSpan, spans, layers);
  }

  statsOf(cache) {
    this.M._rlxkv_web_stats(cache, this.stats);
    const d = new Float64Array(this.u8.buffer, this.stats, 9);
    return {
      entries: d[0], bytes: d[1], capBytes: d[2], pinnedEntries: d[3], pinnedBytes: d[4],
      hits: d[5], misses: d[6], evictions: d[7], tokensReused: d[8],
    };
  }

  /** Reads a C rlxkv_blob_info array (web/boundary.c pins the layout). */
  blobInfos(p, n) {
    const out = [];
    const u32 = this.u32;
    for (let i = 0; i < n; i++) {
      const r = p + i * this.blobInfoSize;
      const w = r >>> 2;
      out.push({
        name: this.cstringAt(r),
        tokens: u32[w + 8],
        bytes: u32[w + 9],
        mtime: new Date(Number(new BigInt64Array(this.u8.buffer, r + 40, 1)[0]) * 1000),
        fingerprint: new BigUint64Array(this.u8.buffer, r + 48, 1)[0],
        status: ['ok', 'stale', 'corrupt'][u32[w + 14]] || 'corrupt',
        error: u32[w + 15] | 0,
      });
    }
    return out;
  }
}

/**
 * Zero-copy hit: typed arrays over the wasm heap. Memory growth detaches
 * views, so each getter re-derives them from the current buffer.
 */
class HeapView {
  #c;
  constructor(core, matched, tokSpan, spans, layers) {
    this.matched = matched;
    this.#c = { core, tokSpan, spans, layers, buf: null };
  }
  #derive() {
    const c = this.#c;
    const buf = c.core.M.HEAPU8.buffer;
    if (c.buf !== buf) {
      const f32 = c.core.f32, u32 = c.core.u32;
      c.tokens = u32.subarray(c.tokSpan[0], c.tokSpan[0] + c.tokSpan[1]);
      const blocks = c.spans.map(([s, l]) => f32.subarray(s, s + l));
      c.k = blocks.slice(0, c.layers);
      c.v = blocks.slice(c.layers);
      c.buf = buf;
    }
    return c;
  }
  get tokens() { return this.#derive().tokens; }
  get k() { return this.#derive().k; }
  get v() { return this.#derive().v; }
}
