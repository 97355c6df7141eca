// Storage as a tier below memory: a cache's blobs in a backend (a Node
// directory, IndexedDB or the Origin Private File System, each keeping
// store/backend.js's contract), known to the cache as stored-only entries
// (src/rlxkv.h, Tiers) and read on a hit. This file ties one cache to one
// store; each job is a module of its own, over the state they share
// (store/state.js):
//
//   open:  store/open.js   the index read, never the KV, and checked
//                          against the store's names only when the
//                          backend cannot vouch for it;
//   hit:   store/hits.js   a stored-only entry made resident: its blob, or
//                          its page and the parents memory lacks, read,
//                          checked whole and put;
//   flush: store/flush.js  each dirty entry written, a page after its
//                          parent, with the index's update in one commit;
//   prune: store/prune.js  least recently used first, leaves first; the
//                          blobs given up deleted;
//   watch: store/watch.js  what other writers saved and deleted, told
//                          (read again: store/rescan.js).
//
// The backends by kind are in store/backends.js (whole-store copies in
// store/copy.js), the records of blobs in store/records.js.
import { RlxkvError } from '../wasm/errors.js';
import { loadPart } from '../wasm/core.js';
import { BACKENDS } from './backends.js';
import { flush } from './flush.js';
import { HitLoader } from './hits.js';
import { NEWS_VERSION, channelOf, isBlobName } from './news.js';
import { openStore } from './open.js';
import { forget, forgetAll, listAll, prune, pruneAll, wipe } from './prune.js';
import { infoOf } from './records.js';
import { storeRecords } from './rescan.js';
import { StoreState } from './state.js';

export class TieredStore {
  /**
   * @param native  wasm/native-cache.js NativeCache
   * @param {'fs'|'idb'|'opfs'} kind
   * @param {string} path
   * @param {{fingerprint: bigint, layout: object|null, watch?: boolean, tool?: boolean, onEvent?: Function}} opts
   *   watch: learn at once of the blobs other caches on this store save
   *   and delete (other tabs, workers, threads), not only at the next open;
   *   tool: a store without a cache (asToolStore): its open sweeps no
   *   temporary file (its backend's toolStore lists and prunes them)
   */
  static async open(native, kind, path, opts) {
    if (opts.watch && typeof BroadcastChannel !== 'function') {
      throw new RlxkvError('IO', 'watch needs BroadcastChannel, which this environment lacks');
    }
    // Watching is a chunk of its own in the browser bundle, loaded by the
    // caches that watch: asked for beside the open, awaited after it.
    const watching = opts.watch ? loadPart(import('./watch.js'), 'watch') : null;
    const blobs = await BACKENDS[kind].open(path);
    const store = new TieredStore(native, blobs, opts);
    const s = store.#s;
    // One channel per store: a directory by its resolved path.
    s.channelName = channelOf(kind, blobs, path);
    try {
      store.report = await openStore(s);
      if (watching) (await watching).watch(s, [storeRecords, NEWS_VERSION, isBlobName]);
    } catch (err) {
      await blobs.close();
      throw err;
    }
    return store;
  }

  /** What this cache keeps of its store (store/state.js). */
  #s;
  #hits;

  constructor(native, blobs, opts) {
    this.#s = new StoreState(native, blobs, opts);
    this.#hits = new HitLoader(this.#s);
    this.kind = blobs.kind;
    /** Whether the store can be read but not written (a read-only directory). */
    this.readOnly = !!blobs.readOnly;
    /** What opening found: a RestoreReport (js/index.d.ts) but `resident` and `readOnly`. */
    this.report = null;
  }

  /**
   * Makes the stored-only entry of these tokens resident (store/hits.js).
   * Resolves to whether it is resident now. name: the blob's, if the
   * caller has it (a match gives it).
   */
  load(tokens, name) { return this.#hits.load(tokens, name); }

  /** Whether memory already holds every token's values of the stored entry of these tokens. */
  covered(tokens) { return this.#hits.covered(tokens); }

  /** Writes every dirty entry (store/flush.js). Rejects with QUOTA / IO, nothing flushed before lost. */
  flush() { return flush(this.#s); }

  /** Removes blobs, least recently used first (store/prune.js prune). */
  prune(opts) { return prune(this.#s, opts); }

  /** Gives up the blob of these tokens (deleted at the next flush): whether there was one. */
  forget(tokens) { return forget(this.#s, tokens); }

  /** Gives up every blob of this cache's fingerprint (Cache.clear({ stored: true })). */
  forgetAll() { forgetAll(this.#s); }

  /** Deletes every blob of this cache's fingerprint now. */
  wipe() { return wipe(this.#s); }

  /** Blobs given up whose deletion has not succeeded yet, and the last such failure. */
  get pendingRemovals() { return { count: this.#s.toRemove.size, error: this.#s.removalError }; }

  /** Every blob as the API lists them (BlobInfo). */
  list() {
    return [...this.#s.known.values()].map((r) => infoOf(r, r.status === 'refused' ? 'ok' : r.status));
  }

  // ---- a store without a cache (rlx.openStore, the CLI) ------------------

  listAll(fingerprint, any) { return listAll(this.#s, fingerprint, any); }

  pruneAll(fingerprint, opts) { return pruneAll(this.#s, fingerprint, opts); }

  /**
   * What js/store.js drives (listAll, pruneAll, close): this store, or in
   * a Node directory its backend's wrap of it, which adds the temporary
   * files the open found (FsBlobs toolStore).
   */
  asToolStore() { return this.#s.blobs.toolStore?.(this, this.#s.temporaryFiles) ?? this; }

  async close() {
    this.#s.channel?.close(); // stops watching
    this.#s.channel = null;
    await this.#hits.close();
    await this.#s.blobs.close();
  }
}
