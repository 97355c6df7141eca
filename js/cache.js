// The Cache class: a prompt KV-cache living in wasm memory, optionally
// backed by a store (a directory in Node, IndexedDB or OPFS in browsers).
import { RlxkvError, STATUS } from '../wasm/errors.js';
import { isNode } from '../wasm/core.js';
import { readPath } from '../wasm/node-wasm.js';
import { NativeCache, DTYPE } from '../wasm/native-cache.js';
import { serialQueue } from '../store/queue.js';
import { TieredStore } from '../store/tiers.js';
import { remoteStats } from '../store/remote-options.js';
import { nameOfKey } from '../format/store-index.js';
import { copyPages, entryOfRows } from '../store/chain.js';
import { toTokens, toKv, toByteCount, toBytes, toOptions, checkShape } from './args.js';
import { encodeBlob, decodeBlob, blobFingerprint, bitsOf } from '../format/blob.js';

// Frees what a cache left open if it is garbage-collected unclosed.
const leaks = new FinalizationRegistry(({ native, storage }) => {
  if (storage) storage.close().catch(() => {});
  NativeCache.freeLeaked(native);
});

export class Cache {
  #core;
  #native;
  #fp;
  #layout;
  #storage = null;      // TieredStore
  #storageCap = Infinity;
  /** Runs fn after the cache's earlier storage work settled. */
  #serialize = serialQueue();
  #token = {};
  /** The app's onEvent, or null (then no event is made). */
  #onEvent;
  /** The remote option (store/remote-options.js), or null: nothing touches the network. */
  #remote = null;
  /** The remote tier (store/remote.js), loaded at the first match that asks it; and its counts. */
  #remoteTier = null;
  #remoteStats = null;

  /** @internal use rlx.createCache / rlx.openCache */
  constructor(core, { capBytes, fingerprint, layout, f16As, onEvent = null, paging = true, remote = null }) {
    this.#core = core;
    this.#fp = fingerprint;
    this.#layout = layout;
    this.#onEvent = onEvent;
    this.#native = new NativeCache(core, { capBytes, fingerprint, layout, f16As, paging });
    if (remote) {
      this.#remote = remote;
      this.#remoteStats = remoteStats();
    }
    /** What opening storage found (RestoreReport in js/index.d.ts), or null without storage. */
    this.restoreReport = null;
    leaks.register(this, { native: this.#native.leakRecord, storage: null }, this.#token);
  }

  /** @internal */
  async attach(kind, path, storageCapBytes, { preload, watch }) {
    const t0 = now();
    this.#native.setStoredIndex(true);
    const onEvent = this.#onEvent && ((event) => this.#emit(event));
    this.#storage = await TieredStore.open(this.#native, kind, path, { fingerprint: this.#fp, layout: this.#layout, watch, onEvent });
    this.#storageCap = storageCapBytes;
    leaks.unregister(this.#token);
    leaks.register(this, { native: this.#native.leakRecord, storage: this.#storage }, this.#token);
    this.restoreReport = { ...this.#storage.report, resident: 0, readOnly: this.#storage.readOnly };
    // 0.1's name for `indexed` (it counted entries found, not loaded): kept, deprecated, not listed.
    Object.defineProperty(this.restoreReport, 'loaded', { get() { return this.indexed; }, enumerable: false });
    // A read-only store opens all the same: its budget is kept by others.
    if (this.#storageCap !== Infinity && !this.#storage.readOnly) await this.#pruneToCap();
    if (preload) this.restoreReport.resident = await this.#preload();
    this.#emit({ type: 'open', storage: kind, path, indexed: this.restoreReport.indexed, resident: this.restoreReport.resident, ms: now() - t0 });
  }

  /**
   * Tells the app's onEvent what happened (see CacheEvent in index.d.ts).
   * An observer cannot break the cache: what it throws is dropped.
   */
  #emit(event) {
    if (!this.#onEvent) return;
    try {
      this.#onEvent(event);
    } catch {
      // the app's own bug; the cache goes on
    }
  }

  /** The eviction count, for #tellEvicted (null when nobody listens: nothing is counted). */
  #evictionsNow() { return this.#onEvent ? this.#native.stats().evictions : null; }

  /** Tells onEvent of the entries evicted since #evictionsNow() said `before`. */
  #tellEvicted(before) {
    if (before === null || this.#native.closed) return;
    const evicted = this.#native.stats().evictions - before;
    if (evicted > 0) this.#emit({ type: 'evict', entries: evicted });
  }

  /**
   * Loads stored entries, most recently used first, while they fit
   * capBytes and wasm memory (one that memory cannot hold, with the
   * pages it extends, ends it; it stays stored). One at a time: a page's read brings the parents memory
   * lacks in the same read (their pages in flight at once), and those are
   * then passed over.
   */
  async #preload() {
    const cap = this.#native.stats().capBytes;
    let room = cap - this.#native.stats().bytes, loaded = 0;
    for (const { tokens, bytes } of this.#native.entries().filter((e) => !e.resident)) {
      if (bytes > room) break;
      room -= bytes;
      if (this.#storage.covered(tokens)) continue;
      try {
        if (await this.#storage.load(tokens)) loaded++;
      } catch (err) {
        // NOSPACE: a page whose chain does not fit beside what is loaded.
        if (err instanceof RlxkvError && (err.code === 'NOMEM' || err.code === 'NOSPACE')) break;
        throw err;
      }
    }
    return loaded;
  }

  #live() {
    if (this.#native.closed) throw new TypeError('cache is closed');
    return this.#native;
  }

  /** The fingerprint (u64) this cache's KV belongs to. */
  get fingerprint() { return this.#fp; }
  /** The KV layout every entry has ({ order, heads, headDim, layers }), or null. */
  get layout() { return this.#layout; }
  /** Where entries persist: 'fs', 'idb', 'opfs' or 'none'. */
  get storage() { return this.#storage ? this.#storage.kind : 'none'; }
  get closed() { return this.#native.closed; }

  /**
   * Whether entries share the KV of their common prefixes (pages): an
   * insert that extends a held prefix keeps only the new tokens' KV.
   */
  get paging() { return this.#native.paging; }

  /**
   * Stores the KV of a token prefix; an entry with the same tokens is
   * replaced. May evict least-recently-used entries. A cache keeps each
   * token's KV once: of a prefix that extends one it holds, only the new
   * tokens' values are copied (see Pages in README.md).
   * @param {Uint32Array|number[]} tokens
   * @param {{k: (Float32Array|Uint16Array)[], v: (Float32Array|Uint16Array)[]}} kv
   *   one K and one V block per layer: all f32, or all f16 (bits, or Float16Array)
   * @param {{start?: number}} [opts] start: kv holds the values of
   *   tokens[start..] only (an app that has just the new tokens' KV); the
   *   cache must hold the first `start` tokens (else RlxkvError 'NOTFOUND')
   */
  insert(tokens, kv, opts = {}) {
    const native = this.#live();
    const t = toTokens(tokens);
    if (!t.length) throw new RangeError('tokens must not be empty: an entry is the KV of at least one token');
    toOptions(opts);
    const start = opts.start ?? 0;
    if (!Number.isSafeInteger(start) || start < 0 || start > t.length) {
      throw new RangeError(`opts.start must be an integer in [0, ${t.length}], got ${String(opts.start)}`);
    }
    const checked = toKv(kv);
    checkShape(t.length - start, checked, this.#layout);
    const before = this.#evictionsNow();
    const st = native.put(t, [...checked.k, ...checked.v], DTYPE[checked.dtype], false, start);
    this.#tellEvicted(before);
    if (st === STATUS.NOTFOUND) {
      throw new RlxkvError('NOTFOUND', `kv starts at token ${start}, but this cache does not hold the KV of the ${start} tokens before it (look up first: insert from hit.matched)`);
    }
    if (st < 0) throw this.#core.fail(st, 'inserting');
  }

  /**
   * The longest cached prefix of `tokens`, or null.
   * @param {Uint32Array|number[]} tokens
   * @param {{view?: boolean, partial?: boolean, maxMatched?: number}} [opts]
   *   view: arrays over wasm memory, valid until the cache frees an entry
   *   (default: copies). partial: may reuse a longer entry cut to the
   *   common prefix, at most maxMatched tokens.
   */
  lookup(tokens, opts = {}) {
    const native = this.#live();
    const t = toTokens(tokens);
    const t0 = this.#onEvent && now();
    const hit = native.lookup(t, lookupOptions(opts, t));
    if (this.#onEvent) {
      if (hit) this.#emit(hitEvent(hit, 'memory', t0));
      else this.#emit({ type: 'miss', tokens: t.length, stored: this.#storedPrefix(t) });
    }
    return hit;
  }

  /**
   * For onEvent's miss of a lookup: the tokens of the longest entry that is
   * stored, not resident, and a prefix of t (0 if none), which match()
   * would have read. A walk of every stored-only entry: only when observed.
   */
  #storedPrefix(t) {
    let best = 0;
    for (const e of this.#native.tokensOf('stored')) {
      if (e.length > best && e.length <= t.length && e.every((x, i) => x === t[i])) best = e.length;
    }
    return best;
  }

  /** Marks the entry with exactly these tokens as never evicted. */
  pin(tokens) { this.#pinOp(tokens, true); }
  unpin(tokens) { this.#pinOp(tokens, false); }

  #pinOp(tokens, pin) {
    const native = this.#live();
    const t = toTokens(tokens);
    const st = pin ? native.pin(t) : native.unpin(t);
    if (st < 0) throw this.#core.fail(st, pin ? 'pinning' : 'unpinning');
  }

  /**
   * The longest cached prefix of `tokens` in memory or in storage, as
   * lookup() gives it: a hit on an entry that is only stored reads its blob
   * first (evicting least recently used entries from memory, which stay
   * stored). Options and result as lookup's.
   * @returns {Promise<import('./index.js').Hit|null>}
   */
  async match(tokens, opts = {}) {
    const native = this.#live();
    const t = toTokens(tokens);
    const how = lookupOptions(opts, t);
    const signal = toSignal(opts.signal);
    const t0 = now();
    let source = 'memory', remoteAsked = false;
    // Each round either returns or makes one stored-only entry resident
    // (or drops it, if its blob is gone or bad), or asks the remote tier
    // once. An entry read once in this match and evicted since (by a later
    // read: capBytes cannot hold what the hit needs) ends it, with what
    // memory holds, as NOSPACE does: so it ends. (Without this, the
    // randomized chat workload, tests/node/random-workload.test.js, hangs.)
    const read = new Set();
    for (;;) {
      signal?.throwIfAborted();
      const hit = this.#live().match(t, how);
      if (!hit || !hit.stored || !this.#storage) {
        const found = hit && !hit.stored ? hit : null;
        if (!this.#remote || remoteAsked || (found ? found.matched : 0) + this.#remote.pageTokens > how.maxMatched) {
          return this.#matched(found, t, source, t0);
        }
        // Looked up again after it, whatever it found: the heap may have moved under this hit's views.
        remoteAsked = true;
        if (await this.#fromRemote(t, how.maxMatched, found ? found.matched : 0, signal)) source = 'remote';
        continue;
      }
      const key = hit.entryTokens.join();
      if (read.has(key)) return this.#noSpace(hit, t, how, source, t0);
      read.add(key);
      const before = this.#evictionsNow();
      try {
        await this.#storage.load(hit.entryTokens);
        this.#tellEvicted(before);
      } catch (err) {
        // Closed while the blob was read: whatever the read met after.
        if (native.closed) throw new TypeError('cache is closed');
        // The stored entry cannot fit in memory beside the pinned ones, or
        // beside the pages it extends (capBytes): the longest hit memory
        // holds, rather than none.
        if (!(err instanceof RlxkvError && err.code === 'NOSPACE')) throw err;
        return this.#noSpace(hit, t, how, source, t0);
      }
      if (native.closed) throw new TypeError('cache is closed');
      source = 'storage';
    }
  }

  /**
   * The remote tier's pages of t past the `held` tokens memory holds, up to
   * maxMatched, put in memory as they arrive (dirty: the next flush keeps
   * them in storage), each page an entry over the one before it. Whether
   * any was put. Never rejects for the network or the server (stats.remote
   * counts those); the match's signal does.
   */
  async #fromRemote(t, maxMatched, held, signal) {
    this.#remoteTier ??= import('../store/remote.js').then(({ RemoteTier }) => new RemoteTier(this.#remote, this.#native, this.#fp, this.#layout, this.#remoteStats, [decodeBlob, checkShape, nameOfKey, copyPages, entryOfRows]));
    let tier;
    try {
      tier = await this.#remoteTier;
    } catch (err) { // the tier's own code could not be loaded (a chunk gone from the server): as a failed request, tried again next time
      this.#remoteTier = null;
      this.#remoteStats.failed++;
      this.#remoteStats.lastError = `loading the remote tier: ${err?.message ?? String(err)}`;
      return false;
    }
    const taken = await tier.fetchRun(t, held, maxMatched, signal);
    this.#live(); // closed meanwhile: TypeError, as every call on a closed cache
    return taken > 0;
  }

  /** match()'s answer when the stored entry of `hit` cannot be held in memory with what it needs: the longest hit memory holds. */
  #noSpace(hit, t, how, source, t0) {
    this.#emit({ type: 'nospace', entryTokens: hit.entryTokens.length });
    return this.#matched(this.#live().lookup(t, how), t, source, t0);
  }

  /** match()'s answer, told to onEvent. */
  #matched(hit, t, source, t0) {
    if (this.#onEvent) this.#emit(hit ? hitEvent(hit, source, t0) : { type: 'miss', tokens: t.length, stored: 0 });
    return hit;
  }

  /**
   * Drops the entry with exactly these tokens from memory and storage; true
   * if there was one. The blob is deleted by the next flush (until then a
   * reopened cache would find it again).
   */
  remove(tokens) {
    const native = this.#live();
    const t = toTokens(tokens);
    const stored = !!this.#storage && this.#storage.forget(t);
    return native.remove(t) === STATUS.OK || stored;
  }

  /** Whether an entry with exactly these tokens is cached, in memory or only stored (no LRU touch). */
  has(tokens) { return this.#live().has(toTokens(tokens)); }
  /** Whether the entry with exactly these tokens is cached and pinned. */
  isPinned(tokens) { return this.#live().isPinned(toTokens(tokens)); }

  /**
   * Drops every entry from memory; stored blobs stay, known (stored-only,
   * pinned ones still pinned). With { stored: true }, forgets everything
   * of this cache: every entry, pinned ones included, and every blob of
   * its fingerprint in storage, deleted now (watching caches hear of it).
   * Blobs of other fingerprints stay (prune({ stale: true }) or
   * rlx.deleteStore remove those). Resolves once the blobs are deleted;
   * rejects as flush() does if one cannot be (it is tried again at each
   * flush: stats.pendingRemovals).
   * @returns {Promise<void>}
   */
  clear(opts = {}) {
    const native = this.#live();
    toOptions(opts);
    if (!opts.stored) {
      native.clear();
      return Promise.resolve();
    }
    if (this.#storage) this.#storage.forgetAll();
    // Memory and the stored index both emptied: the tree itself, pins and all.
    native.setStoredIndex(false);
    native.clear();
    if (this.#storage) native.setStoredIndex(true);
    if (!this.#storage) return Promise.resolve();
    return this.#serialize(async () => {
      if (this.#native.closed) return;
      await this.#storage.wipe();
    });
  }

  /** Entries, pinned first then most recent first: { tokens, bytes, pinned, dtype, resident }. */
  entries() { return this.#live().entries(); }

  get size() { return this.stats.entries; }
  get bytes() { return this.stats.bytes; }
  get capBytes() { return this.stats.capBytes; }
  set capBytes(n) { this.#live().setCap(toByteCount(n, 'capBytes')); }
  /**
   * { entries, bytes, capBytes, pinnedEntries, pinnedBytes, hits, misses,
   * evictions, tokensReused, storedEntries, storedBytes, pendingRemovals,
   * removalError }: pendingRemovals counts the blobs given up (remove(), a
   * budget's prune) that are not deleted yet, removalError is why the last
   * try failed (null while none is pending).
   */
  get stats() {
    const stats = this.#live().stats();
    const pending = this.#storage ? this.#storage.pendingRemovals : { count: 0, error: null };
    return { ...stats, pendingRemovals: pending.count, removalError: pending.error, ...(this.#remote ? { remote: { ...this.#remoteStats } } : {}) };
  }

  /**
   * The blob of the resident entry with exactly these tokens, or null (also
   * for an entry only stored: `await match()` it first): RLXKV001 for f32
   * entries, RLXKVF16 for f16 ones, or with { as: 'RLXKV001' } f16 values
   * widened exactly, for tools that read only RLXKV001.
   * @returns {Uint8Array|null}
   */
  exportBlob(tokens, opts = {}) {
    const native = this.#live();
    toOptions(opts);
    if (opts.as !== undefined && opts.as !== 'RLXKV001' && opts.as !== 'RLXKVF16') {
      throw new RangeError(`opts.as must be 'RLXKV001' or 'RLXKVF16', got ${String(opts.as)}`);
    }
    const hit = native.get(toTokens(tokens));
    if (!hit || !hit.resident) return null;
    if (opts.as === 'RLXKVF16' && hit.dtype !== 'f16') throw new RangeError("opts.as 'RLXKVF16' holds f16 entries only");
    // Encoded in JS from views of the entry: one copy. Allocating the output
    // is JS memory, so the views stay valid while encodeBlob reads them.
    return encodeBlob(hit.tokens, bitsOf([...hit.k, ...hit.v]), this.#fp, undefined, { as: opts.as });
  }

  /**
   * Inserts the entry of a blob: bytes, a fetch Response, or a URL (a file
   * path or file: URL too, under Node). A blob of another fingerprint is
   * refused with RlxkvError code 'STALE', one that does not fit the cache's
   * layout with 'SHAPE'. `cached` is false when the cache is off (capBytes 0).
   * @returns {Promise<{tokens: number, bytes: number, cached: boolean}>}
   */
  async importBlob(source, opts = {}) {
    this.#live();
    const { pin = false, onProgress } = toOptions(opts);
    const signal = toSignal(opts.signal);
    if (onProgress !== undefined && typeof onProgress !== 'function') throw new TypeError('opts.onProgress must be a function');
    signal?.throwIfAborted();
    const bytes = await readSource(source, { signal, onProgress });
    signal?.throwIfAborted();
    const native = this.#live();
    // K/V as views of the bytes where they are aligned (never of wasm
    // memory, which inserting reuses): insert's copy into wasm is the only one.
    const entry = decodeBlob(bytes, this.#fp, !this.#core.inHeap(bytes));
    if (!entry) {
      const fp = blobFingerprint(bytes);
      throw new RlxkvError('STALE', `blob is for fingerprint 0x${fp.toString(16)}, this cache is 0x${this.#fp.toString(16)}`);
    }
    try {
      checkShape(entry.tokens.length, entry, this.#layout, 'blob');
    } catch (err) {
      throw new RlxkvError('SHAPE', err.message);
    }
    this.insert(entry.tokens, entry);
    const cached = native.has(entry.tokens);
    if (pin && cached) this.pin(entry.tokens);
    return { tokens: entry.tokens.length, bytes: [...entry.k, ...entry.v].reduce((n, b) => n + b.byteLength, 0), cached };
  }

  /**
   * Makes every inserted entry durable. Rejects with RlxkvError ('QUOTA',
   * 'IO') on failure; the in-memory cache and earlier blobs stay intact.
   */
  async flush() {
    this.#live();
    if (!this.#storage) return;
    return this.#serialize(async () => {
      if (this.#native.closed) return;
      await this.#storage.flush();
      if (this.#storageCap !== Infinity) await this.#pruneToCap();
    });
  }

  /**
   * storageCapBytes is a real budget of the store, whoever wrote it (the
   * prune first reads what the store holds now): only pinned entries'
   * blobs are safe. What it cannot delete is tried again at each flush.
   */
  #pruneToCap() {
    return this.#storage.prune({ maxBytes: this.#storageCap, resident: true, budget: true });
  }

  /** Blobs in storage: [{ name, tokens, bytes, mtime, fingerprint, status, error, dtype }] (BlobInfo in js/index.d.ts). */
  listBlobs() {
    this.#live();
    return this.#storage ? this.#storage.list() : [];
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
    return this.#serialize(() => this.#storage.prune({ maxBytes, stale, dryRun }));
  }

  /**
   * Flushes, then frees the wasm memory. If the flush fails the cache stays
   * open (nothing is lost); close({ flush: false }) drops unsaved entries.
   */
  async close({ flush = true } = {}) {
    if (this.#native.closed) return;
    if (flush) await this.flush();
    await this.#serialize(async () => {
      if (this.#native.closed) return;
      leaks.unregister(this.#token);
      if (this.#storage) await this.#storage.close();
      this.#native.free();
    });
  }
}

const now = () => performance.now();

/** onEvent's record of a hit from `source` ('memory' or 'storage'). */
function hitEvent(hit, source, t0) {
  return {
    type: 'hit', source, tokens: hit.matched, entryTokens: hit.entryTokens ? hit.entryTokens.length : hit.matched,
    bytes: [...hit.k, ...hit.v].reduce((n, b) => n + b.byteLength, 0), ms: now() - t0,
  };
}

/** An AbortSignal option, checked (undefined: none). */
function toSignal(signal) {
  if (signal === undefined) return undefined;
  if (!signal || typeof signal.throwIfAborted !== 'function') throw new TypeError('opts.signal must be an AbortSignal');
  return signal;
}

/**
 * The bytes of importBlob's source: bytes as they are, a Response's body,
 * a URL fetched (in Node, a path or file: URL read). signal aborts the
 * read (AbortError); onProgress({ loaded, total }) hears a body as it
 * arrives (total: its Content-Length, or null when unknown or encoded).
 */
async function readSource(source, { signal, onProgress } = {}) {
  if (typeof source === 'string' || source instanceof URL) {
    const url = String(source);
    if (isNode && !/^https?:/i.test(url)) {
      const bytes = await readPath(url, signal);
      onProgress?.({ loaded: bytes.length, total: bytes.length });
      return bytes;
    }
    let res;
    try {
      res = await fetch(url, { signal });
    } catch (err) {
      if (err.name === 'AbortError') throw err;
      throw new RlxkvError('IO', `cannot fetch ${url}: ${err.message}`, { cause: err });
    }
    return readSource(res, { signal, onProgress });
  }
  if (typeof Response !== 'undefined' && source instanceof Response) {
    if (!source.ok) throw new RlxkvError('IO', `fetching ${source.url || 'blob'}: HTTP ${source.status}`);
    if (!onProgress || !source.body) return new Uint8Array(await source.arrayBuffer());
    return readBody(source, signal, onProgress);
  }
  return toBytes(source, 'source');
}

/** A Response's body read chunk by chunk, told to onProgress: into one buffer when its length is known. */
async function readBody(res, signal, onProgress) {
  const declared = Number(res.headers.get('content-length'));
  const total = !res.headers.get('content-encoding') && Number.isSafeInteger(declared) && declared >= 0 ? declared : null;
  const reader = res.body.getReader();
  const chunks = [];
  let loaded = 0;
  onProgress({ loaded, total });
  try {
    for (;;) {
      signal?.throwIfAborted();
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      loaded += value.length;
      onProgress({ loaded, total });
    }
  } finally {
    reader.releaseLock();
  }
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(loaded);
  let at = 0;
  for (const c of chunks) { out.set(c, at); at += c.length; }
  return out;
}

/** lookup()'s and match()'s options, checked: { partial, maxMatched, view } for tokens t. */
export function lookupOptions(opts, t) {
  toOptions(opts);
  const maxMatched = opts.maxMatched === undefined ? t.length : Math.min(toByteCount(opts.maxMatched, 'opts.maxMatched'), t.length);
  return { partial: !!opts.partial, maxMatched, view: !!opts.view };
}
