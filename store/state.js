// What one cache keeps of its store, shared by the store's jobs (each a
// module of store/, all tied to one cache by store/tiers.js): the records
// of the blobs it knows, the saves under way and the removals asked for,
// and the few operations every job uses on them: naming an entry's blob,
// taking in and forgetting records, giving a blob up, committing a change
// with its index update, and telling the other caches on the store.
import { KnownRecords, mergeIndex, parseIndex } from '../format/store-index.js';
import { NEWS_VERSION, newsOf, tellOnce } from './news.js';
import { ownName } from './records.js';

/**
 * What the store knows of one blob, its record: { name, bytes, lastUse,
 * fingerprint, status: 'ok' | 'stale' | 'corrupt' | 'foreign' | 'too-large'
 * | 'refused' (not of the cache's layout) | 'unreadable', dtype?, tokens?,
 * nValues?, rowMajor?, start?, parent?, parentN? (a page's), indexed?
 * (from an index), admitted? (a stored-only entry of this cache) }.
 */
export class StoreState {
  /**
   * @param native  wasm/native-cache.js NativeCache
   * @param blobs   the backend (store/backend.js)
   * @param {{fingerprint: bigint, layout: object|null, onEvent?: Function|null, tool?: boolean}} opts
   *   tool: a store without a cache (TieredStore.asToolStore)
   */
  constructor(native, blobs, { fingerprint, layout, onEvent = null, tool = false }) {
    this.native = native;
    this.blobs = blobs;
    this.fp = fingerprint;
    this.layout = layout;
    /** The cache's onEvent (Cache #emit), or null. */
    this.onEvent = onEvent;
    this.tool = tool;
    /** name -> record, every blob of the store. */
    this.known = new KnownRecords();
    /** Names whose lastUse changed since the index was last written. */
    this.used = new Set();
    /** name -> the step of the save of that name under way (encoded, not yet written). */
    this.saving = new Map();
    /**
     * name -> when its removal was asked for (a step): blobs to delete at
     * the next flush, kept apart from `known`, whose record a save
     * replaces. A removal that fails stays here and is tried again at each
     * flush (store/prune.js).
     */
    this.toRemove = new Map();
    /** Names in toRemove whose removal failed: tried again after the saves, briefly. */
    this.removalFailed = new Set();
    /** The first error of the last removal that failed, while any is pending. */
    this.removalError = null;
    /** A counter ordering removals and saves' encodings. */
    this.step = 0;
    /** The store's BroadcastChannel's name, and the channel itself while this cache watches (store/watch.js). */
    this.channelName = null;
    this.channel = null;
    /** What this cache heard from others, taken in one message at a time. */
    this.hearing = Promise.resolve();
    /** What the open found of saves' temporary files (Node): the files left, and how many it swept. */
    this.temporaryFiles = [];
    this.swept = 0;
  }

  /**
   * The name the store knows the entry of these tokens by: its page name
   * (of `dtype`, or of either), or in a store written before pages its
   * blob name; the page name of dtype (f32 if not given) when it knows
   * neither, as a new save names it.
   */
  nameOf(tokens, dtype) {
    const names = this.namesOf(tokens, dtype);
    return names.find((n) => this.known.has(n) || this.saving.has(n)) ?? names[0];
  }

  /** The names an entry of these tokens may be stored under: page names (of dtype, or both), then its blob name. */
  namesOf(tokens, dtype) {
    const n = this.native;
    return [...(dtype ? [dtype] : ['f32', 'f16']).map((d) => n.pageName(tokens, d)), n.blobName(tokens)];
  }

  ownName(r) { return ownName(this.native, r); }

  /**
   * Takes in records of blobs read from the store: at the open (opening:
   * the cache holds nothing yet), and after it (heard, read again), when a
   * resident entry is left as it is (a clean one is its blob's now).
   * Names given up are skipped (they are deleted at the next flush).
   */
  learn(records, { opening = false } = {}) {
    const fresh = [];
    for (const record of records) {
      if (this.toRemove.has(record.name)) continue;
      this.known.set(record.name, record);
      if (record.status !== 'ok') continue;
      if (record.fingerprint !== this.fp) { record.status = 'stale'; continue; }
      // A blob under a name not its own (copied in by hand) is left alone:
      // saves would write its entry under the right name beside it. (An
      // index records such a blob as foreign.)
      if (!record.indexed && !this.ownName(record)) { record.status = 'foreign'; continue; }
      const e = opening ? null : this.native.get(record.tokens);
      if (!e) fresh.push(record);
      else if (e.resident && !e.dirty) this.native.mark(record.tokens, e.serial, 'clean'); // stored again
    }
    const status = this.native.putStored(fresh);
    fresh.forEach((r, i) => { r.admitted = status[i] >= 0; });
  }

  /** Forgets blob `name`, found gone from the store: its entry, if only stored, leaves the cache. */
  drop(name) {
    const r = this.known.get(name);
    this.known.delete(name);
    this.toRemove.delete(name);
    this.removalFailed.delete(name);
    if (r && r.status === 'ok' && r.tokens) this.native.blobGone(r.tokens);
  }

  /** Gives up blob `name` (deleted at the next flush), unless it is already: whether it was not. */
  giveUp(name) {
    if (this.toRemove.has(name)) return false;
    this.toRemove.set(name, ++this.step);
    return true;
  }

  /**
   * The backend's commit (store/backend.js) of these changes, with the
   * index update every change makes: the records of the items saved put
   * in, the names removed taken out, the last uses of hits so far raised.
   * An index found gone or damaged while this store knows of other blobs
   * is written from all it knows, and the store marked behind (OPFS: its
   * marker stays, so that the next open lists the directory). Uses
   * recorded meanwhile wait for the next commit; those of a commit that
   * fails too.
   */
  async commit(changes, calls) {
    const usedNames = [...this.used];
    this.used.clear();
    const uses = usedNames.map((n) => this.known.get(n)).filter(Boolean);
    const removed = changes.removes ?? [];
    const update = (cur, present, saved) => {
      const records = saved.map((it) => it.record);
      if (!records.length && !removed.length && !uses.length) return undefined;
      const merge = (index) => mergeIndex(index, { set: records, remove: removed, uses, present });
      const index = parseIndex(cur);
      const changed = new Set([...records.map((r) => r.name), ...removed]);
      if (index || [...this.known.keys()].every((n) => changed.has(n))) return merge(index);
      // A copy of each record: the merge raises last uses in the records it is given.
      return { bytes: merge(new Map([...this.known].map(([n, r]) => [n, { ...r }]))), behind: true };
    };
    try {
      await this.blobs.commit({ ...changes, update }, calls);
    } catch (err) {
      for (const n of usedNames) this.used.add(n);
      throw err;
    }
  }

  /**
   * Deletes these blobs and their index records (IndexedDB: in the same
   * transaction; OPFS: the index file after, with those removed before a
   * failure). Never rejects: { gone: the names deleted (or found gone),
   * failure: the first error, or null }.
   */
  async removeNames(names, { retry = false } = {}) {
    const gone = [];
    let failure = null;
    await this.commit({ removes: names }, { onRemoved: (n) => gone.push(n), retry }).catch((err) => { failure = err; });
    for (const n of gone) this.known.delete(n);
    if (gone.length) this.tell({ removed: gone });
    return { gone, failure };
  }

  /**
   * Tells watching caches of the same store what this one saved
   * ({ saved: [record] }) or deleted ({ removed: [name] }). Only a hint:
   * a cache that misses it finds the same at its next open.
   */
  tell({ saved = [], removed = [] }) {
    const news = { rlxkv: NEWS_VERSION, saved: saved.map(newsOf), removed };
    try {
      if (this.channel) return this.channel.postMessage(news);
      tellOnce(this.channelName, news);
    } catch {
      // Telling is best effort: a save or removal stands without it.
    }
  }
}
