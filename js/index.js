// rlxkv: a prompt KV-cache for in-browser and Node LLM apps.
//
//   import init from 'rlxkv';
//   const rlx = await init();
//   const cache = await rlx.openCache({ capBytes: 256 << 20, fingerprint, storage: 'auto' });
import { loadCore, loadPart, autoStorage } from '../wasm/core.js';
import { RlxkvError } from '../wasm/errors.js';
import { Cache, lookupOptions } from './cache.js';
import { remoteOptions } from '../store/remote-options.js';
import { TieredStore } from '../store/tiers.js';
import { serialQueue } from '../store/queue.js';
import { BACKENDS, deleteBlobs } from '../store/backends.js';
import { ownName, recordOf } from '../store/records.js';
import { mergeIndex, parseIndex } from '../format/store-index.js';
import { NativeCache } from '../wasm/native-cache.js';
import { toTokens, toKv, toFingerprint, toByteCount, toBytes, toOptions, toLayout } from './args.js';
import { blobHead, blobSize, encodeBlob, decodeBlob, bitsOf } from '../format/blob.js';

export { RlxkvError };

/**
 * Instantiates the wasm module: once, and later calls share it, unless
 * opts gives newInstance, wasmBinary or locateFile (then a new instance).
 * @param {{wasmBinary?: ArrayBuffer|Uint8Array, locateFile?: (name: string, prefix: string) => string, newInstance?: boolean}} [opts]
 * @returns {Promise<Rlxkv>}
 */
export default async function init(opts = {}) {
  toOptions(opts);
  return new Rlxkv(await loadCore(opts));
}
export { init };

const F16_TYPES = ['Float16Array', 'Uint16Array'];
const HAS_F16 = typeof globalThis.Float16Array === 'function';

function cacheOptions(opts) {
  toOptions(opts, 'options');
  const f16As = opts.f16As === undefined ? (HAS_F16 ? 'Float16Array' : 'Uint16Array') : opts.f16As;
  if (!F16_TYPES.includes(f16As)) throw new RangeError(`f16As must be 'Float16Array' or 'Uint16Array', got ${String(f16As)}`);
  if (f16As === 'Float16Array' && !HAS_F16) throw new RangeError("f16As: this engine has no Float16Array; use 'Uint16Array'");
  if (opts.onEvent !== undefined && typeof opts.onEvent !== 'function') throw new TypeError('onEvent must be a function');
  const layout = toLayout(opts.layout);
  return {
    capBytes: toByteCount(opts.capBytes, 'capBytes'),
    fingerprint: toFingerprint(opts.fingerprint),
    layout,
    f16As,
    onEvent: opts.onEvent ?? null,
    remote: remoteOptions(opts.remote, layout && layout.order !== 'any' ? layout : null),
  };
}

/** tokens as a Uint32Array and blocks (K then V) of an entry { tokens, k, v }. */
function toEntry(entry) {
  if (!entry || typeof entry !== 'object') throw new TypeError('entry must be an object { tokens, k, v }');
  const tokens = toTokens(entry.tokens, 'entry.tokens');
  const { k, v } = toKv(entry, 'entry');
  return { tokens, blocks: [...k, ...v] };
}

/** Whether openCache's options are of a model with state (layout.state). */
const hasState = (opts) => !!opts.layout && opts.layout.state !== undefined;

const KINDS = ['auto', 'idb', 'opfs', 'fs', 'none'];

/** storage and path of openCache-like options, checked: { kind, path } ('auto' resolved). */
function storagePlace(opts, name = 'storage') {
  const storage = opts.storage === undefined ? 'auto' : opts.storage;
  if (!KINDS.includes(storage)) {
    throw new RangeError(`${name} must be 'auto', 'idb', 'opfs', 'fs' or 'none', got ${String(storage)}`);
  }
  const kind = storage === 'auto' ? autoStorage() : storage;
  let path = opts.path;
  if (path === undefined) path = kind === 'fs' ? './rlxkv-cache' : '/rlxkv';
  if (typeof path !== 'string' || !path) throw new TypeError('path must be a non-empty string');
  if (kind === 'idb' || kind === 'opfs') path = idbPath(path);
  return { kind, path };
}

/**
 * An IndexedDB mount path as IDBFS writes it (and an OPFS directory under
 * the root): '/' and one or more non-empty segments, no trailing slash (a
 * RangeError naming `path` otherwise).
 */
function idbPath(path) {
  const p = path.startsWith('/') ? path : `/${path}`;
  if (p === '/' || p.endsWith('/') || p.includes('//') || /\/\.\.?(\/|$)/.test(p)) {
    throw new RangeError(`path must name a directory such as '/rlxkv' (not the root, no empty, '.' or '..' segments), got ${JSON.stringify(path)}`);
  }
  return p;
}

/** A store's place { kind, path } from options { storage, path } naming one (not 'none'), checked. */
function placeOf(opts, name) {
  toOptions(opts, name);
  const p = storagePlace(opts, `${name}.storage`);
  if (p.kind === 'none') throw new RangeError(`${name}.storage must name a store, got 'none'`);
  return p;
}

/** An instantiated rlxkv module. */
class Rlxkv {
  #core;
  constructor(core) {
    this.#core = core;
    this.RlxkvError = RlxkvError;
  }

  /** A memory-only cache. */
  createCache(opts) {
    const base = cacheOptions(opts);
    if (hasState(opts)) throw new TypeError("layout.state: use openCache (storage: 'none')");
    return new Cache(this.#core, base);
  }

  /**
   * A cache over storage: 'idb' (IndexedDB, the database of mount path
   * `path`), 'opfs' (the Origin Private File System, directory `path` under
   * its root), 'fs' (Node, directory `path`), 'auto' or 'none'. Opening reads
   * the store's index, not its KV: stored entries are found by
   * `await cache.match()` and read on a hit; `preload: true` also loads
   * them now, most recent first, while they fit capBytes. `watch: true`
   * learns at once what other caches on the same store (other tabs and
   * workers; in Node, other threads) save and delete, through a
   * BroadcastChannel; without it, at the next open.
   */
  async openCache(opts) {
    const base = cacheOptions(opts);
    const { kind, path } = storagePlace(opts);
    if (kind !== 'none' && opts.fingerprint === undefined) {
      throw new TypeError(`fingerprint is required with storage '${kind}': stored KV outlives this page, and a cache opened later for another model would be served this one's KV. Pass the model's, e.g. rlx.fingerprintOf('org/model-id q4 f16'), or 0n to keep one model's KV knowingly`);
    }
    const storageCap = opts.storageCapBytes === undefined
      ? Infinity : toByteCount(opts.storageCapBytes, 'storageCapBytes', { infinite: true });
    const flag = (name) => {
      const v = opts[name] === undefined ? false : opts[name];
      if (typeof v !== 'boolean') throw new TypeError(`${name} must be a boolean`);
      return v;
    };
    const preload = flag('preload'), watch = flag('watch');
    const cache = hasState(opts) ? await this.#stateCache(base, opts) : new Cache(this.#core, base);
    if (kind === 'none') return cache;
    try {
      await cache.attach(kind, path, storageCap, { preload, watch });
    } catch (err) {
      await cache.close({ flush: false });
      throw err;
    }
    return cache;
  }

  /**
   * A store directory (Node), IndexedDB mount or OPFS directory, without a
   * cache: for tools that list and prune blobs. Takes { storage, path } as
   * openCache does (openStore(path, { storage }) is the deprecated form).
   * @param {{storage?: 'fs'|'idb'|'opfs'|'auto', path?: string}} opts
   */
  async openStore(opts, legacy = {}) {
    const { kind, path: where } = placeOf(typeof opts === 'string' ? { ...toOptions(legacy), path: opts } : opts, 'openStore');
    // The tiered store over a cache that holds nothing (its C naming judges
    // each blob's name), as a cache's open reads the store.
    const native = new NativeCache(this.#core, { capBytes: 0, fingerprint: 0n, layout: null, f16As: 'Uint16Array' });
    try {
      // The Store class is a chunk of its own in the browser bundle: asked for beside the open.
      const tools = loadPart(import('./store.js'), 'openStore');
      const tier = await TieredStore.open(native, kind, where, { fingerprint: 0n, layout: null, tool: true });
      let Store;
      try {
        ({ Store } = await tools);
      } catch (err) {
        await tier.close();
        throw err;
      }
      return new Store(tier.asToolStore(), () => native.free(), [toFingerprint, toByteCount, serialQueue]);
    } catch (err) {
      native.free();
      throw err;
    }
  }

  /**
   * Copies every blob of one store into another, byte for byte (all
   * fingerprints, any status), one blob in memory at a time, least
   * recently used first; a blob of the same name in `to` is replaced. From
   * and to are { storage: 'idb'|'opfs'|'fs', path } as openCache takes
   * them (not 'none'). A cache open on `to` sees the blobs once reopened.
   * Rejects with QUOTA or IO; the blobs copied before stay copied.
   * @returns {Promise<{copied: number, bytes: number}>}
   */
  async copyStore(from, to) {
    const places = [placeOf(from, 'from'), placeOf(to, 'to')];
    if (places[0].kind === places[1].kind && places[0].path === places[1].path) {
      throw new RangeError('from and to are the same store');
    }
    // The C naming rules, from a cache that holds nothing, to judge each blob's name.
    const namer = new NativeCache(this.#core, { capBytes: 0, fingerprint: 0n, layout: null, f16As: 'Uint16Array' });
    try {
      const { copyBlobs } = await loadPart(import('../store/copy.js'), 'copyStore');
      return await copyBlobs(places[0], places[1], (record) => ownName(namer, record), [BACKENDS, parseIndex, mergeIndex, recordOf, blobHead]);
    } finally {
      namer.free();
    }
  }

  /**
   * Deletes a whole store: every blob of every fingerprint, and the
   * IndexedDB database, OPFS directory or (if nothing else is in it) Node
   * directory. Caches that watch it forget its blobs; caches open on it
   * keep what they hold in memory and save into a new, empty store.
   * @param {{storage?: 'fs'|'idb'|'opfs'|'auto', path?: string}} opts (path: openCache's default if omitted)
   * @returns {Promise<{removed: number}>} the blobs it held
   */
  async deleteStore(opts) {
    const place = placeOf(opts, 'deleteStore');
    // First the checkpoints a model with state keeps in PATH/state (js/state-cache.js).
    const state = await deleteBlobs({ ...place, path: `${place.path}/state` });
    return { removed: (await deleteBlobs(place)).removed + state.removed };
  }

  /**
   * The blob of one entry (RLXKV001 for f32 blocks, RLXKVF16 for f16 ones,
   * or with opts.as 'RLXKV001' f16 widened exactly): a new Uint8Array, or,
   * with opts.out, written at the start of out (which must hold
   * encodedSize(entry, opts) bytes and not overlap the entry's arrays) and
   * returned as that subarray.
   * @returns {Uint8Array}
   */
  encodeEntry(entry, fingerprint, opts = {}) {
    const { tokens, blocks } = toEntry(entry);
    const fp = toFingerprint(fingerprint);
    toOptions(opts);
    const out = opts.out === undefined ? undefined : toBytes(opts.out, 'opts.out');
    return encodeBlob(tokens, bitsOf(blocks), fp, out, { as: opts.as });
  }

  /** The byte length of encodeEntry(entry, fp, opts): to encode into memory the caller keeps. */
  encodedSize(entry, opts = {}) {
    const { tokens, blocks } = toEntry(entry);
    toOptions(opts);
    return blobSize(tokens.length, bitsOf(blocks), { as: opts.as });
  }

  /**
   * Decodes a blob. With opts.fingerprint, returns null for a blob of
   * another fingerprint. Malformed bytes throw RlxkvError. K/V blocks are
   * fresh copies, or with opts.view views of `bytes` (sharing its memory)
   * where it is 4-byte aligned; tokens are always a fresh Uint32Array.
   */
  decodeEntry(bytes, opts = {}) {
    const b = toBytes(bytes);
    toOptions(opts);
    const expect = opts.fingerprint === undefined ? undefined : toFingerprint(opts.fingerprint);
    // Never hand out views of wasm memory: the cache reuses it.
    const view = !!opts.view && !this.#core.inHeap(b);
    return decodeBlob(b, expect, view);
  }

  /** Bytes of wasm memory in use by this module instance (it never shrinks). */
  get memoryBytes() {
    return this.#core.memoryBytes;
  }

  /**
   * The name a store and a remote tier give the page (or blob) that ends
   * after these tokens, of this fingerprint and dtype ('f32', 'f16', or
   * 'q8': a published 8-bit page's): a 128-bit key chained over the
   * tokens, as 32 hex digits and '.rlxkv' (FORMATS.md, Names). The same in
   * every tab, process and server.
   */
  pageName(tokens, fingerprint, dtype = 'f32') {
    const t = toTokens(tokens);
    return this.pageNames(t, [t.length], fingerprint, dtype)[0];
  }

  /** pageName of each prefix of `tokens` that ends at one of `ends` (ascending), in one pass over the tokens. */
  pageNames(tokens, ends, fingerprint, dtype = 'f32') {
    if (!['f32', 'f16', 'q8'].includes(dtype)) throw new RangeError(`dtype must be 'f32', 'f16' or 'q8', got ${String(dtype)}`);
    const t = toTokens(tokens);
    if (!Array.isArray(ends) || ends.some((e, i) => !Number.isSafeInteger(e) || e < (ends[i - 1] ?? 0) || e > t.length)) {
      throw new RangeError(`ends must be an array of ascending integers from 0 to the ${t.length} tokens`);
    }
    this.#namer ??= new NativeCache(this.#core, { capBytes: 0, fingerprint: 0n, layout: null, f16As: 'Uint16Array' });
    return this.#namer.pageNames(t, dtype, ends, toFingerprint(fingerprint));
  }

  #namer = null;

  /** The cache of a model with state (js/state-cache.js, loaded on first use). */
  async #stateCache(base, opts) {
    const { stateCacheClass, toStateLayout, stateFingerprintText } = await loadPart(import('./state-cache.js'), 'state cache');
    const StateCache = stateCacheClass(Cache, { toKv, toByteCount, toTokens, lookupOptions });
    const layout = { ...opts.layout, ...base.layout };
    const { stateCapBytes: cap } = opts;
    return new StateCache(this.#core, { ...base, layout }, {
      stateFingerprint: this.fingerprintOf(stateFingerprintText(base.fingerprint, toStateLayout(layout))),
      stateCapBytes: cap === undefined ? cap : toByteCount(cap, 'stateCapBytes'),
    });
  }

  /** A stable 64-bit hash of a string (UTF-8) or bytes, as a bigint. */
  fingerprintOf(input) {
    const bytes = typeof input === 'string' ? new TextEncoder().encode(input) : toBytes(input, 'input');
    return this.#core.hash64(bytes);
  }
}
