// rlxkv: a prompt KV-cache for in-browser and Node LLM apps.
//
//   import init from 'rlxkv';
//   const rlx = await init();
//   const cache = await rlx.openCache({ capBytes: 256 << 20, fingerprint, storage: 'auto' });
import { loadCore } from '../web/core.js';
import { RlxkvError } from '../web/errors.js';
import { Cache, autoStorage } from './cache.js';
import { Store } from './store.js';
import { Storage } from '../web/storage.js';
import { toTokens, toKv, toFingerprint, toByteCount, toBytes } from './args.js';

export { RlxkvError };

/**
 * Instantiates the wasm module (once; later calls share it).
 * @param {{wasmBinary?: ArrayBuffer|Uint8Array, locateFile?: (name: string, prefix: string) => string, newInstance?: boolean}} [opts]
 * @returns {Promise<Rlxkv>}
 */
export default async function init(opts = {}) {
  if (opts === null || typeof opts !== 'object') throw new TypeError('opts must be an object');
  return new Rlxkv(await loadCore(opts));
}
export { init };

function cacheOptions(opts) {
  if (opts === null || typeof opts !== 'object') throw new TypeError('options must be an object');
  return {
    capBytes: toByteCount(opts.capBytes, 'capBytes'),
    fingerprint: toFingerprint(opts.fingerprint),
  };
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
    return new Cache(this.#core, cacheOptions(opts));
  }

  /**
   * A cache restored from and flushed to storage: 'idb' (IndexedDB, mounted
   * at `path`), 'fs' (Node, directory `path`), 'auto' or 'none'.
   */
  async openCache(opts) {
    const base = cacheOptions(opts);
    const storage = opts.storage === undefined ? 'auto' : opts.storage;
    if (!['auto', 'idb', 'fs', 'none'].includes(storage)) {
      throw new RangeError(`storage must be 'auto', 'idb', 'fs' or 'none', got ${String(storage)}`);
    }
    const kind = storage === 'auto' ? autoStorage() : storage;
    const storageCap = opts.storageCapBytes === undefined
      ? Infinity : toByteCount(opts.storageCapBytes, 'storageCapBytes', { infinite: true });
    let path = opts.path;
    if (path === undefined) path = kind === 'fs' ? './rlxkv-cache' : '/rlxkv';
    if (typeof path !== 'string' || !path) throw new TypeError('path must be a non-empty string');
    const cache = new Cache(this.#core, base);
    if (kind === 'none') return cache;
    try {
      await cache.attach(kind, path, storageCap);
    } catch (err) {
      await cache.close({ flush: false });
      throw err;
    }
    return cache;
  }

  /**
   * A store directory (Node) or IndexedDB mount, without a cache: for tools
   * that list and prune blobs.
   * @param {string} path
   * @param {{storage?: 'fs'|'idb'|'auto'}} [opts]
   */
  async openStore(path, opts = {}) {
    if (typeof path !== 'string' || !path) throw new TypeError('path must be a non-empty string');
    const kind = !opts.storage || opts.storage === 'auto' ? autoStorage() : opts.storage;
    if (kind !== 'fs' && kind !== 'idb') throw new RangeError(`storage must be 'fs' or 'idb' here, got ${String(kind)}`);
    return new Store(await Storage.open(this.#core, kind, path));
  }

  /**
   * The RLXKV001 blob of one entry.
   * @returns {Uint8Array}
   */
  encodeEntry(entry, fingerprint) {
    if (!entry || typeof entry !== 'object') throw new TypeError('entry must be an object { tokens, k, v }');
    const tokens = toTokens(entry.tokens, 'entry.tokens');
    const { k, v } = toKv(entry, 'entry');
    const fp = toFingerprint(fingerprint);
    const core = this.#core;
    const e = core.newEntry(tokens, k, v);
    try {
      return core.encode(e, fp);
    } finally {
      core.M._rlxkv_entry_free(e);
    }
  }

  /**
   * Decodes a blob. With opts.fingerprint, returns null for a blob of
   * another fingerprint. Malformed bytes throw RlxkvError.
   */
  decodeEntry(bytes, opts = {}) {
    const b = toBytes(bytes);
    if (opts === null || typeof opts !== 'object') throw new TypeError('opts must be an object');
    const expect = opts.fingerprint === undefined ? undefined : toFingerprint(opts.fingerprint);
    const core = this.#core;
    const { status, entry, fingerprint } = core.decode(b, expect);
    if (status !== 0) return null;
    try {
      const n = core.M._rlxkv_entry_n_tokens(entry) >>> 0;
      const { tokens, k, v } = core.readEntry(entry, n, true);
      return { fingerprint, pastLen: n, tokens, k, v };
    } finally {
      core.M._rlxkv_entry_free(entry);
    }
  }

  /** Bytes of wasm memory in use by this module instance (it never shrinks). */
  get memoryBytes() {
    return this.#core.M.HEAPU8.buffer.byteLength;
  }

  /** A stable 64-bit hash of a string (UTF-8) or bytes, as a bigint. */
  fingerprintOf(input) {
    const bytes = typeof input === 'string' ? new TextEncoder().encode(input) : toBytes(input, 'input');
    return this.#core.hash64(bytes);
  }
}
