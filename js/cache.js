// The Cache class: a prompt KV-cache living in wasm memory, optionally
// backed by a store (a directory in Node, IndexedDB in browsers).
import { RlxkvError } from '../web/errors.js';
import { isNode, toSize } from '../web/core.js';
import { Storage } from '../web/storage.js';
import { serialQueue } from '../web/queue.js';
import { toTokens, toKv, toByteCount, toBytes, toOptions } from './args.js';
import { encodeBlob, decodeBlob, blobFingerprint } from './blob.js';

// Frees what a cache left open if it is garbage-collected unclosed.
const leaks = new FinalizationRegistry(({ core, ptr, hit, storage }) => {
  if (storage) storage.close().catch(() => {});
  core.M._rlxkv_cache_free(ptr);
  core.free(hit);
});

export class Cache {
  #core;
  #ptr;
  #fp;
  #storage = null;
  #storageCap = Infinity;
  #hit;
  /** Runs fn after the cache's earlier storage work settled. */
  #serialize = serialQueue();
  #token = {};

  /** @internal use rlx.createCache / rlx.openCache */
  constructor(core, { capBytes, fingerprint }) {
    this.#core = core;
    this.#fp = fingerprint;
    this.#ptr = core.M._rlxkv_cache_new(toSize(capBytes), fingerprint) >>> 0;
    if (!this.#ptr) throw new RlxkvError('NOMEM', 'out of wasm memory creating a cache');
    this.#hit = core.alloc(8);
    /** What restoring from storage found: { loaded, stale, corrupt, skipped, bytes } */
    this.restoreReport = null;
    leaks.register(this, { core, ptr: this.#ptr, hit: this.#hit, storage: null }, this.#token);
  }

  /** @internal */
  async attach(kind, path, storageCapBytes) {
    this.#storage = await Storage.open(this.#core, kind, path);
    this.#storageCap = storageCapBytes;
    leaks.unregister(this.#token);
    leaks.register(this, { core: this.#core, ptr: this.#ptr, hit: this.#hit, storage: this.#storage }, this.#token);
    this.restoreReport = this.#storage.load(this.#ptr);
    if (this.#storageCap !== Infinity) this.#pruneToCap();
  }

  #live() {
    if (!this.#ptr) throw new TypeError('cache is closed');
    return this.#core;
  }

  /** The fingerprint (u64) this cache's KV belongs to. */
  get fingerprint() { return this.#fp; }
  /** Where entries persist: 'fs', 'idb' or 'none'. */
  get storage() { return this.#storage ? this.#storage.kind : 'none'; }
  get closed() { return !this.#ptr; }

  /**
   * Stores the KV of a token prefix; an entry with the same tokens is
   * replaced. May evict least-recently-used entries.
   * @param {Uint32Array|number[]} tokens
   * @param {{k: Float32Array[], v: Float32Array[]}} kv one K and one V block per layer
   */
  insert(tokens, kv) {
    const core = this.#live();
    const t = toTokens(tokens);
    const { k, v } = toKv(kv);
    const e = core.newEntry(t, k, v);
    const st = core.M._rlxkv_cache_put(this.#ptr, e); // takes e in every case
    if (st < 0) throw core.fail(st, 'inserting');
  }

  /**
   * The longest cached prefix of `tokens`, or null.
   * @param {Uint32Array|number[]} tokens
   * @param {{view?: boolean, partial?: boolean, maxMatched?: number}} [opts]
   *   view: arrays over wasm memory, valid until the next call that changes
   *   the cache (default: copies). partial: may reuse a longer row-major
   *   entry trimmed to the common prefix, at most maxMatched tokens.
   */
  lookup(tokens, opts = {}) {
    const core = this.#live();
    const t = toTokens(tokens);
    toOptions(opts);
    const { view = false, partial = false } = opts;
    let maxMatched = t.length;
    if (opts.maxMatched !== undefined) maxMatched = Math.min(toByteCount(opts.maxMatched, 'opts.maxMatched'), t.length);
    const M = core.M;
    const hit = this.#hit;
    const found = core.withTokens(t, (p, n) => (partial
      ? M._rlxkv_cache_lookup_partial(this.#ptr, p, n, maxMatched, hit)
      : M._rlxkv_cache_lookup(this.#ptr, p, n, hit)));
    if (found !== 2) return null; // RLXKV_HIT
    const u32 = core.u32;
    return core.readEntry(u32[hit >>> 2], u32[(hit >>> 2) + 1], !view);
  }

  /** Marks the entry with exactly these tokens as never evicted. */
  pin(tokens) { this.#pinOp(tokens, '_rlxkv_cache_pin', 'pinning'); }
  unpin(tokens) { this.#pinOp(tokens, '_rlxkv_cache_unpin', 'unpinning'); }

  #pinOp(tokens, fn, what) {
    const core = this.#live();
    const t = toTokens(tokens);
    const st = core.withTokens(t, (p, n) => core.M[fn](this.#ptr, p, n));
    if (st < 0) throw core.fail(st, what);
  }

  /**
   * Drops the entry with exactly these tokens, and its stored blob (made
   * durable by the next flush); true if there was either.
   */
  remove(tokens) {
    const core = this.#live();
    const t = toTokens(tokens);
    return core.withTokens(t, (p, n) => {
      const inMemory = core.M._rlxkv_cache_remove(this.#ptr, p, n) === 0;
      const stored = this.#storage ? this.#storage.removeBlob(this.#fp, p, n) : false;
      return inMemory || stored;
    });
  }

  /** Whether an entry with exactly these tokens is cached (no LRU touch). */
  has(tokens) {
    const core = this.#live();
    const t = toTokens(tokens);
    return core.withTokens(t, (p, n) => core.M._rlxkv_cache_get(this.#ptr, p, n)) !== 0;
  }

  /** Drops every entry from memory (stored blobs stay until pruned). */
  clear() { this.#live().M._rlxkv_cache_clear(this.#ptr); }

  /** Entries, pinned first then most recent first: { tokens, bytes, pinned }. */
  entries() {
    const core = this.#live();
    const M = core.M;
    const out = [];
    for (let e = M._rlxkv_cache_next(this.#ptr, 0) >>> 0; e; e = M._rlxkv_cache_next(this.#ptr, e) >>> 0) {
      out.push({
        tokens: core.entryTokens(e),
        bytes: (M._rlxkv_entry_n_values(e) >>> 0) * 4,
        pinned: M._rlxkv_cache_is_pinned(this.#ptr, e) === 1,
      });
    }
    return out;
  }

  get size() { return this.stats.entries; }
  get bytes() { return this.stats.bytes; }
  get capBytes() { return this.stats.capBytes; }
  set capBytes(n) {
    const core = this.#live();
    core.M._rlxkv_cache_set_cap(this.#ptr, toSize(toByteCount(n, 'capBytes')));
  }
  /** { entries, bytes, capBytes, pinnedEntries, pinnedBytes, hits, misses, evictions, tokensReused } */
  get stats() { return this.#live().statsOf(this.#ptr); }

  /**
   * The RLXKV001 blob of the entry with exactly these tokens, or null.
   * @returns {Uint8Array|null}
   */
  exportBlob(tokens) {
    const core = this.#live();
    const t = toTokens(tokens);
    const e = core.withTokens(t, (p, n) => core.M._rlxkv_cache_get(this.#ptr, p, n)) >>> 0;
    if (!e) return null;
    // Encoded in JS from views of the entry: one copy. Allocating the output
    // is JS memory, so the views stay valid while encodeBlob reads them.
    const { tokens: et, k, v } = core.readEntry(e, t.length, false);
    return encodeBlob(et, [...k, ...v], this.#fp);
  }

  /**
   * Inserts the entry of an RLXKV001 blob: bytes, a fetch Response, or a URL
   * (a file path or file: URL too, under Node). A blob of another fingerprint
   * is refused with RlxkvError code 'STALE'.
   * @returns {Promise<{tokens: number, bytes: number}>}
   */
  async importBlob(source, { pin = false } = {}) {
    this.#live();
    const bytes = await readSource(source);
    const core = this.#live();
    // K/V as views of the bytes where they are aligned (never of wasm
    // memory, which inserting reuses): insert's copy into wasm is the only one.
    const entry = decodeBlob(bytes, this.#fp, !core.inHeap(bytes));
    if (!entry) {
      const fp = blobFingerprint(bytes);
      throw new RlxkvError('STALE', `blob is for fingerprint 0x${fp.toString(16)}, this cache is 0x${this.#fp.toString(16)}`);
    }
    this.insert(entry.tokens, entry);
    if (pin) this.pin(entry.tokens);
    return { tokens: entry.tokens.length, bytes: [...entry.k, ...entry.v].reduce((n, b) => n + b.byteLength, 0) };
  }

  /**
   * Makes every inserted entry durable. Rejects with RlxkvError ('QUOTA',
   * 'IO') on failure; the in-memory cache and earlier blobs stay intact.
   */
  async flush() {
    this.#live();
    if (!this.#storage) return;
    return this.#serialize(async () => {
      if (!this.#ptr) return;
      this.#storage.save(this.#ptr);
      // Pruned before the sync, so that blobs the budget drops are never
      // written to IndexedDB: one transaction with what stays.
      try {
        if (this.#storageCap !== Infinity) this.#pruneToCap();
      } finally {
        await this.#storage.sync();
      }
    });
  }

  /** storageCapBytes is a real budget: only pinned entries' blobs are safe. */
  #pruneToCap() {
    return this.#storage.prune(this.#fp, { maxBytes: this.#storageCap, pinnedOnly: true }, this.#ptr);
  }

  /** Blobs in storage: [{ name, tokens, bytes, mtime, fingerprint, status }]. */
  listBlobs() {
    this.#live();
    return this.#storage ? this.#storage.list(this.#fp) : [];
  }

  /**
   * Removes stored blobs: corrupt ones, other fingerprints' if `stale`, then
   * the oldest of this fingerprint until they total at most maxBytes. Blobs
   * of entries in memory are kept.
   */
  async prune({ maxBytes = Infinity, stale = false, dryRun = false } = {}) {
    this.#live();
    toByteCount(maxBytes, 'maxBytes', { infinite: true });
    if (!this.#storage) return { removed: 0, removedBytes: 0, kept: 0, keptBytes: 0 };
    return this.#serialize(async () => {
      const report = this.#storage.prune(this.#fp, { maxBytes, stale, dryRun }, this.#ptr);
      if (!dryRun) await this.#storage.sync();
      return report;
    });
  }

  /**
   * Flushes, then frees the wasm memory. If the flush fails the cache stays
   * open (nothing is lost); close({ flush: false }) drops unsaved entries.
   */
  async close({ flush = true } = {}) {
    if (!this.#ptr) return;
    if (flush) await this.flush();
    await this.#serialize(async () => {
      if (!this.#ptr) return;
      const core = this.#core;
      leaks.unregister(this.#token);
      if (this.#storage) await this.#storage.close();
      core.M._rlxkv_cache_free(this.#ptr);
      core.free(this.#hit);
      this.#ptr = 0;
    });
  }
}

async function readSource(source) {
  if (typeof source === 'string' || source instanceof URL) {
    const url = String(source);
    if (isNode && !/^https?:/i.test(url)) {
      const { readFile } = await import('node:fs/promises');
      try {
        return new Uint8Array(await readFile(url.startsWith('file:') ? new URL(url) : url));
      } catch (err) {
        throw new RlxkvError('IO', `cannot read ${url}: ${err.message}`, { cause: err });
      }
    }
    let res;
    try {
      res = await fetch(url);
    } catch (err) {
      throw new RlxkvError('IO', `cannot fetch ${url}: ${err.message}`, { cause: err });
    }
    return readSource(res);
  }
  if (typeof Response !== 'undefined' && source instanceof Response) {
    if (!source.ok) throw new RlxkvError('IO', `fetching ${source.url || 'blob'}: HTTP ${source.status}`);
    return new Uint8Array(await source.arrayBuffer());
  }
  return toBytes(source, 'source');
}

