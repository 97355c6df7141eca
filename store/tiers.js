// Storage as a tier below memory: a cache's blobs in a Node directory
// (store/fs-blobs.js), in IndexedDB (store/idb-blobs.js) or in the Origin
// Private File System (store/opfs-blobs.js), known to the cache as
// stored-only entries (src/rlxkv.h, Tiers) and read one at a time on a
// hit.
//
//   open:  reads the index, never the KV: in IndexedDB one index record,
//          checked against a census of the store (a count and the newest
//          timestamp) or, if they disagree, against every key, and the
//          blobs it does not describe read once to repair it (a store
//          written by 0.1.0 has no index at all); in OPFS one index file,
//          checked, when a writer died, against the directory's listing of
//          names; in a Node directory one index file, always checked
//          against the listing: the blobs either does not describe read
//          (their first bytes) to repair it. The index's records go into
//          the C cache in one call and are made in JS only when asked for
//          (format/store-index.js KnownRecords): an open costs a few passes
//          over its columns.
//   hit:   cache.match() finds a stored-only entry; load() reads that blob,
//          validates it whole (format/blob.js) and puts it in memory, which may
//          evict others: those that are stored stay known, stored-only.
//          A backend with readWith() (Node; OPFS in a worker) reads the
//          values straight into the new entry's heap memory, no copy in JS
//          memory: with a layout, whose shape the index then tells, the
//          whole blob in one scatter read, checked after; else its
//          structure first, then the values.
//   watch: stores on one store tell each other what they saved and
//          deleted (a BroadcastChannel); a watching one takes it in.
//   pages: an entry that extends another is written as a page of its own
//          tokens' values, after its parent (FORMATS.md, Pages); a hit on a
//          page reads its parents first where memory lacks them, and a
//          prune takes pages that others need only after them.
//   flush: each dirty entry encoded from the heap and written on its own
//          (a directory: temporary file + rename or move, then one update
//          of the index file; IndexedDB: batches of records and the index
//          in one transaction), then marked clean if it is still the entry
//          that was encoded.
//   prune: least recently used first: stored-only entries before resident
//          ones, pinned ones never; of other fingerprints, never unless asked.
import { RlxkvError, STATUS, statusError } from '../wasm/errors.js';
import { DTYPE } from '../wasm/native-cache.js';
import { FsBlobs } from './fs-blobs.js';
import { IdbBlobs } from './idb-blobs.js';
import {
  blobHead, blobSize, blobSpans, decodeBlob, encodeBlob, encodePieces, bitsOf, getU64, headBytes, MAX_LAYERS, u64Bytes,
  isUniformHead, uniformBlobSize, uniformBlockLength,
} from '../format/blob.js';
import { LITTLE_ENDIAN } from '../format/f16.js';
import { checkShape } from '../js/args.js';
import { copyPages, entryOfRows, rowRuns } from './chain.js';
import {
  FLAG_CORRUPT, FLAG_SKIP, KnownRecords, indexColumns, keyOfName, mergeIndex, newestOf, pageOf, parseIndex,
} from '../format/store-index.js';

/** The restore report's count of a blob left out of the tree, by its status. */
const ADMIT_COUNT = { corrupt: 'corrupt', 'too-large': 'tooLarge', stale: 'stale', foreign: 'foreign', unreadable: 'unreadable' };
const HEAD_READ = 64 << 10;         // first bytes read to index a blob (a 8,000-token prompt)
const HEAD_READS = 32;              // head reads at once: each holds a file open (ulimit -n)
const NEWS_NAMES = 4096;            // names taken from one message of another store; more is junk
const IDB_BATCH_BYTES = 64 << 20;   // blobs per IndexedDB transaction, by size

/**
 * What the store knows of one blob: { name, bytes, lastUse, fingerprint,
 * status: 'ok' | 'stale' | 'corrupt' | 'foreign' | 'too-large' | 'refused'
 * (not of the cache's layout), dtype?, tokens?, nValues?, rowMajor?,
 * indexed? (from the IndexedDB index record), admitted? (a stored-only
 * entry of this cache), removing? }.
 */

export class TieredStore {
  /**
   * @param native  wasm/native-cache.js NativeCache
   * @param {'fs'|'idb'|'opfs'} kind
   * @param {string} path
   * @param {{fingerprint: bigint, layout: object|null, watch?: boolean, tool?: boolean}} opts
   *   watch: learn at once of the blobs other caches on this store save
   *   and delete (other tabs, workers, threads), not only at the next open;
   *   tool: a store without a cache (asToolStore): its open sweeps no
   *   temporary file (its backend's toolStore lists and prunes them)
   */
  static async open(native, kind, path, opts) {
    if (opts.watch && typeof BroadcastChannel !== 'function') {
      throw new RlxkvError('IO', 'watch needs BroadcastChannel, which this environment lacks');
    }
    const blobs = await BACKENDS[kind].open(path);
    const store = new TieredStore(native, blobs, opts);
    // One channel per store: a directory by its resolved path.
    store.#channelName = channelOf(kind, blobs, path);
    try {
      await store.#index();
    } catch (err) {
      await blobs.close();
      throw err;
    }
    if (opts.watch) store.#watch();
    return store;
  }

  #native;
  #blobs;
  #fp;
  #layout;
  /** name -> blob record (see above), every blob of the store. */
  #known = new KnownRecords();
  /** names whose lastUse changed since the index was last written (IndexedDB, OPFS). */
  #used = new Set();
  /** name -> promise of a load under way. */
  #loading = new Map();
  /** names of blobs hit since the last #touchNow, and its timer. */
  #toTouch = new Set();
  #touchTimer = null;
  /** #readPageInto's buffers for what a hit reads besides values. */
  #readScratch = new Uint8Array(0);
  /** The store's BroadcastChannel's name, and the channel itself while this one watches. */
  #channel = null;
  #channelName = null;
  /** What this flush saved, told to the watchers at its end. */
  #savedRecords = [];
  /** What the open found of saves' temporary files (Node): counts, and the files left (FsBlobs list()'s). */
  #temporaries = { temporaries: 0, temporaryBytes: 0, swept: 0 };
  #temporaryFiles = [];
  /** A store without a cache (opts.tool). */
  #tool;
  /**
   * name -> when its removal was asked for (#step): blobs to delete at the
   * next flush, kept apart from #known, whose record a save replaces. A
   * removal that fails stays here and is tried again at each flush.
   */
  #toRemove = new Map();
  /** name -> the #step of the save of that name under way (encoded, not yet written). */
  #saving = new Map();
  /** A counter ordering removals and saves' encodings. */
  #step = 0;
  /** The first error of the last removal that failed, while any is pending. */
  #removalError = null;
  /** Names in #toRemove whose removal failed: tried again after the saves, briefly (OPFS: see remove()). */
  #removalFailed = new Set();
  /** What this store heard from others, taken in one message at a time (#heard). */
  #hearing = Promise.resolve();
  /** The cache's onEvent (Cache #emit), or null. */
  #onEvent;

  constructor(native, blobs, { fingerprint, layout, onEvent = null, tool = false }) {
    this.#native = native;
    this.#tool = tool;
    this.#blobs = blobs;
    this.#fp = fingerprint;
    this.#layout = layout;
    this.#onEvent = onEvent;
    this.kind = blobs.kind;
    /** What opening found: a RestoreReport (js/index.d.ts) but `resident` and `readOnly`. */
    this.report = null;
  }

  // ---- open ------------------------------------------------------------

  async #index() {
    if (this.#blobs.kind === 'idb') await this.#readIndex();
    else if (this.#blobs.kind === 'opfs') await this.#readIndexFile();
    else await this.#readDirIndex();
    /** Whether the store can be read but not written (a read-only directory). */
    this.readOnly = !!this.#blobs.readOnly;
    const report = { indexed: 0, stale: 0, corrupt: 0, skipped: 0, bytes: 0, foreign: 0, tooLarge: 0, unreadable: 0, ...this.#temporaries };
    // Records an index gave are counted from its columns, not made (KnownRecords).
    this.#known.tally(report, (admitted, nValues, dtype, status) => {
      if (admitted) {
        report.indexed++;
        report.bytes += nValues * (dtype === 'f16' ? 2 : 4);
      } else report[ADMIT_COUNT[status] ?? 'skipped']++;
    });
    this.report = report;
  }

  /** Records blobs as known, and those of this cache as stored-only entries (admitted). */
  #admit(records) {
    // Oldest use first, so that the most recently used ends most recent;
    // of pages used together (a chain read as one), the longest.
    records.sort((a, b) => a.lastUse - b.lastUse || (a.tokens?.length ?? 0) - (b.tokens?.length ?? 0));
    this.#learn(records, { opening: true });
  }

  /**
   * Takes in an index (its bytes) as the open's first known records, those
   * of this cache as stored-only entries: an RLXKVIX4 one by its columns,
   * in one C call (NativeCache.putIndex), its records made only when asked
   * for (KnownRecords); an older one record by record. present: the names
   * the store holds (an array), or null to trust the index. null if there is
   * no index or it is damaged; else { dropped: names it has whose blob is
   * gone (left out), bad: name -> status of records corrupt or too large
   * (kept, to read again: a writer may have replaced them since),
   * unresolved: names of pages whose path breaks in it (left out, to read),
   * missing: with present, the names it lacks, newest: its most recently
   * used name, count: its records }.
   */
  #adoptIndex(bytes, present) {
    const dropped = [], bad = new Map(), unresolved = new Set();
    const cols = indexColumns(bytes);
    if (!cols) {
      const stored = parseIndex(bytes);
      if (!stored) return null;
      const listed = present;
      if (present) present = new Set(present);
      const kept = [];
      for (const [name, r] of stored) {
        if (present && !present.has(name)) dropped.push(name);
        else {
          kept.push(r);
          if (r.status === 'corrupt' || r.status === 'too-large') bad.set(name, r.status);
        }
      }
      this.#admit(kept);
      const missing = listed ? listed.filter((n) => !stored.has(n)) : null;
      return { dropped, bad, unresolved, missing, newest: newestOf(kept), count: stored.size };
    }
    const { count, names } = cols;
    const flags = cols.flags.slice();
    // Every name in, then those the store lacks out: one pass over each list.
    const known = this.#known;
    known.adopt(cols, this.#fp, flags);
    let missing = null;
    if (present) {
      const seen = new Uint8Array(count);
      missing = [];
      for (const n of present) {
        const i = known.placeOf(n);
        if (i >= 0) seen[i] = 1;
        else missing.push(n);
      }
      for (let i = 0; i < count; i++) {
        if (!seen[i]) {
          known.skip(i);
          dropped.push(names[i]);
        }
      }
    }
    const placed = this.#native.putIndex({ ...cols, flags });
    if (typeof placed === 'number') { // a column no index holds: damaged
      known.clear();
      return null;
    }
    // The few records to look at again, as C found them (no pass over all here).
    for (const i of placed.special) {
      if (placed.status[i] === STATUS.NOTFOUND) {
        known.skip(i);
        unresolved.add(names[i]);
      } else bad.set(names[i], flags[i] & FLAG_CORRUPT ? 'corrupt' : 'too-large');
    }
    known.admit(placed.status, placed.counts);
    let newest = null;
    for (let i = count - 1; i >= 0 && !newest; i--) if (!(flags[i] & FLAG_SKIP)) newest = names[i]; // oldest use first
    return { dropped, bad, unresolved, missing, newest, count };
  }

  /**
   * The index checked against the store's names and repaired: the records
   * #adoptIndex took (or none), those the index does not describe, or
   * describes as bad, read (their first bytes) and added. The records to
   * write back into the index: { news, dropped }.
   */
  async #repair(adopted, names) {
    const { dropped = [], bad = new Map(), unresolved = new Set() } = adopted ?? {};
    const missing = adopted?.missing ? [...adopted.missing, ...unresolved, ...bad.keys()] : names.filter((n) => !this.#known.has(n) || bad.has(n));
    const { blobs: files } = missing.length ? await this.#blobs.list(missing) : { blobs: [] };
    const repaired = await this.#headRecords(files);
    this.#admit(repaired);
    // A page whose path broke in the index is written back as it was (it breaks again: an orphan, for a prune).
    const news = repaired.filter((r) => !unresolved.has(r.name) && (!bad.has(r.name) || bad.get(r.name) !== r.status));
    return { news, dropped };
  }

  /**
   * A Node directory: its index file (store/fs-blobs.js), read against the
   * listing of names (one readdir, no stat of each file): the entries of
   * files gone leave; files it does not describe, or records corrupt or
   * too large (a writer may have replaced them since), are read (their
   * first bytes) and added, and the file is updated if either happened
   * (a store without one, written before it, gets one so). Writers of
   * other processes update it after their saves and removals, last one
   * winning: what one missed is found here the same way. A file rewritten
   * in place under its name is not seen here: the hit that reads it checks
   * it whole. Temporary files of dead writers are swept. An index that a
   * listing found right, and that the directory has not changed since
   * (FsBlobs indexState(): its mtime, stamped on the index), is taken
   * without the listing.
   */
  async #readDirIndex() {
    const [bytes, state] = await Promise.all([this.#blobs.readIndex(), this.#blobs.indexState()]);
    // Stamped: nothing added, removed or renamed since a listing agreed with it.
    // (A bad record needs no second look then: a blob mended by a save would have been renamed in.)
    const trusted = state.stamped ? this.#adoptIndex(bytes, null) : null;
    if (trusted) {
      // Pages whose path breaks in it (orphans) are read by name, as they always are.
      if (trusted.unresolved.size) await this.#repair({ ...trusted, bad: new Map(), missing: [] }, []);
      return;
    }
    const { blobs: names, temporaries } = await this.#blobs.names();
    const swept = this.#tool ? [] : await this.#blobs.sweep(temporaries);
    const left = temporaries.filter((t) => !swept.includes(t.name));
    this.#temporaryFiles = left;
    this.#temporaries = { temporaries: left.length, temporaryBytes: left.reduce((n, t) => n + t.bytes, 0), swept: swept.length };
    const adopted = this.#adoptIndex(bytes, names);
    const { news, dropped } = await this.#repair(adopted, names);
    if (!news.length && !dropped.length) {
      // The listing agrees with the index: the next opens need not list, until the directory changes.
      if (adopted && !left.length) await this.#blobs.stampIndex(state);
      return;
    }
    // Only a cache of the directory: one that cannot be written is found as it is at the next open.
    await this.#writeRepairs(news, dropped).catch(() => {});
  }

  /**
   * An index file (a directory's, OPFS's) updated with what an open
   * repaired: records read again (`news`) and names gone (`dropped`). A
   * record another writer put there since is kept, unless bad.
   */
  #writeRepairs(news, dropped) {
    const bad = (r) => r.status === 'corrupt' || r.status === 'too-large';
    return this.#blobs.updateIndex((cur, present) => mergeIndex(parseIndex(cur), { set: news, remove: dropped, keep: (was) => !bad(was), present }),
      [...news.map((r) => r.name), ...dropped]);
  }

  /** #headRecord of each file, HEAD_READS at a time (each holds a file open), those gone left out. */
  async #headRecords(files) {
    return (await mapBounded(files, HEAD_READS, (file) => this.#headRecord(file))).filter(Boolean);
  }

  /**
   * The record of a directory's blob { name, bytes, mtimeMs }, from its
   * first bytes; null if it is gone; status 'unreadable' if it cannot be
   * read (kept as it is: never judged, never pruned).
   */
  async #headRecord({ name, bytes, mtimeMs }) {
    try {
      const head = await this.#blobs.head(name, Math.min(bytes, HEAD_READ));
      if (!head) return null;
      let info = blobHead(head, bytes);
      if (!info) {
        // More tokens than the first read holds: read up to the first block's length.
        const nTokens = new DataView(head.buffer, head.byteOffset).getUint32(24, true);
        const more = await this.#blobs.head(name, Math.min(bytes, headBytes(nTokens, true)));
        if (!more) return null;
        info = blobHead(more, bytes);
      }
      return recordOf(name, bytes, mtimeMs, info);
    } catch (err) {
      if (!(err instanceof RlxkvError)) throw err;
      return { name, bytes, lastUse: mtimeMs, fingerprint: null, status: 'unreadable', error: err.message };
    }
  }

  /**
   * OPFS: the index file, trusted as it is unless a writer died between
   * a save or removal and its index update (a dead marker: see
   * store/opfs-blobs.js), or it is missing, damaged or empty. Then it is
   * checked against the directory's names: the entries of blobs gone
   * leave, blobs it does not describe are read (their first bytes) and
   * added, and the file is rewritten if either happened. A blob replaced
   * under its name by such a writer keeps its old record (a hit reads it
   * whole all the same), but for one recorded corrupt or too large: read
   * again, so that a prune does not take a good blob for a bad one.
   */
  async #readIndexFile() {
    const [bytes, dead] = await Promise.all([this.#blobs.readIndex(), this.#blobs.deadMarkers()]);
    // Every writer since it was written has updated it, or is at it now: trusted.
    const trusted = dead && !dead.length ? this.#adoptIndex(bytes, null) : null;
    if (trusted && trusted.count && !trusted.unresolved.size) {
      this.#blobs.ready(trusted.newest); // not waited for: the helper starts and warms up behind the open
      return;
    }
    const names = await this.#blobs.names();
    let adopted;
    if (trusted) {
      const present = new Set(names);
      const dropped = [...this.#known.keys()].filter((n) => !present.has(n));
      for (const n of dropped) this.#drop(n);
      adopted = { ...trusted, dropped };
    } else adopted = this.#adoptIndex(bytes, names);
    const { news, dropped } = await this.#repair(adopted, names);
    const ready = this.#blobs.ready(newestOf([...this.#known.values()]));
    // Only a hint: a store it cannot be written to (over quota) opens all
    // the same, and its dead writers' markers stay.
    const updated = !news.length && !dropped.length ? true : await this.#writeRepairs(news, dropped).then(() => true, () => false);
    if (updated) await this.#blobs.clearMarkers(dead ?? []);
    else await this.#blobs.markBehind(); // the next open lists again
    await ready;
  }

  /**
   * IndexedDB: the index record, checked against a census of the store
   * (store/idb-blobs.js list()): if its records count or timestamp disagree,
   * against every key, then repaired: the entries whose blob is gone leave
   * the tree, and blobs it does not describe are read once and added.
   */
  async #readIndex() {
    const listing = this.#blobs.list();
    const index = await listing.index;
    const adopted = this.#adoptIndex(index && index.bytes, null);
    const { records, newest } = await listing.census;
    const current = !!adopted && !adopted.unresolved.size && records === adopted.count + 1 && newest <= index.timestamp;
    if (current) return; // the index describes every key
    const present = new Set(await this.#blobs.names());
    const dropped = [...this.#known.keys()].filter((n) => !present.has(n));
    for (const name of dropped) this.#drop(name);
    const repaired = [];
    for (const name of present) {
      if (this.#known.has(name)) continue;
      const bytes = await this.#blobs.read(name);
      if (bytes) repaired.push(recordOf(name, bytes.length, Date.now(), blobHead(bytes, bytes.length)));
    }
    this.#admit(repaired);
    const news = repaired.filter((r) => !adopted?.unresolved.has(r.name));
    if (news.length || dropped.length) {
      await this.#blobs.write([], [], (cur) => mergeIndex(parseIndex(cur), { set: news, remove: dropped }));
    }
  }

  // ---- hits ------------------------------------------------------------

  /**
   * Makes the stored-only entry of these tokens resident: reads and checks
   * its blob and puts it. A blob that is gone, invalid, of other tokens or
   * not of the cache's layout leaves the store as it is, but the entry goes
   * from the index (so a lookup does not find it again). Resolves to
   * whether it is resident now. name: the blob's, if the caller has it
   * (a match gives it).
   */
  load(tokens, name = this.#nameOf(tokens)) {
    let p = this.#loading.get(name);
    if (!p) {
      p = this.#loadPage(name, tokens).finally(() => this.#loading.delete(name));
      this.#loading.set(name, p);
    }
    return p;
  }

  /**
   * The name the store knows the entry of these tokens by: its page name
   * (of `dtype`, or of either), or in a store written before pages its
   * blob name; the page name of dtype (f32 if not given) when it knows
   * neither, as a new save names it.
   */
  #nameOf(tokens, dtype) {
    const names = this.#namesOf(tokens, dtype);
    return names.find((n) => this.#known.has(n) || this.#saving.has(n)) ?? names[0];
  }

  /** The names an entry of these tokens may be stored under: page names (of dtype, or both), then its blob name. */
  #namesOf(tokens, dtype) {
    const n = this.#native;
    return [...(dtype ? [dtype] : ['f32', 'f16']).map((d) => n.pageName(tokens, d)), n.blobName(tokens)];
  }

  #ownName(r) { return ownName(this.#native, r); }

  /**
   * A page needs the tokens before its start held: read with the parents
   * memory lacks as one entry (#loadChain) where the index tells their
   * shapes; else its parent is loaded first (and so on up, until a page
   * whose first tokens memory holds, or a blob), the parent the page names
   * and whose tokens begin as its own. A page whose parent is gone or not
   * its own is an orphan: it never serves, and leaves the tree like a bad
   * blob.
   */
  async #loadPage(name, tokens) {
    if (this.#isResident(tokens)) return true;
    const chain = this.#chainOf(name, tokens);
    if (chain) {
      const got = await this.#loadChain(chain, tokens);
      if (got !== RETRY) return got;
    }
    const record = this.#known.get(name);
    if (record?.start && !this.#holdsStart(tokens, record)) {
      const parent = this.#known.get(record.parent);
      const own = parent && parent.status === 'ok' && parent.tokens?.length === record.parentN &&
        sameTokens(parent.tokens.subarray(0, record.start), tokens.subarray(0, record.start));
      if (!own || !(await this.load(parent.tokens, parent.name))) {
        this.#native.blobGone(tokens); // found again at the next open, if its parent is
        return false;
      }
    }
    return this.#load(name, tokens);
  }

  /**
   * The blob or pages a hit on `name` reads, parents first, when the index
   * and the layout tell each one's shape whole (#shapeOf) and they tile
   * the tokens past what memory holds (each page's parent ends where the
   * page starts): [{ name, record, tokens, shape }]; else null (no
   * layout, a parent cut partway, a record of another shape: the general
   * reads, which judge each blob from its bytes).
   */
  #chainOf(name, tokens) {
    const order = this.#layout?.order;
    if (order !== 'head-major' && order !== 'token-major') return null;
    const chain = [];
    for (let record = this.#known.get(name), t = tokens; ;) {
      const shape = this.#shapeOf(record, t);
      if (!shape || (chain.length && (shape.dtype !== chain[0].shape.dtype || shape.layers !== chain[0].shape.layers))) return null;
      chain.push({ name: record.name, record, tokens: t, shape });
      if (!record.start || this.#holdsStart(t, record)) break;
      const parent = this.#known.get(record.parent);
      if (parent?.status !== 'ok' || parent.tokens?.length !== record.start || !sameTokens(parent.tokens, t.subarray(0, record.start))) return null;
      record = parent;
      t = parent.tokens;
    }
    return chain.reverse();
  }

  /**
   * A hit whose shape the index tells (#chainOf): a blob, or a page and
   * the parents memory lacks, read as one entry. Every page goes straight
   * into its rows of one new entry, laid out as the hit is, so that each
   * byte is copied once and a hit over the chain lies in one entry (a view
   * needs no gather). The store keeps the pages: names follow from tokens,
   * so a page saved later over this entry names the chain's last page as
   * its parent. Pages read at once (IndexedDB: in one transaction), each
   * checked after (#readPageInto, #copyPagesInto). RETRY when one is not
   * what the index says, or the entry cannot be put (the general reads
   * then judge each blob and say why).
   */
  async #loadChain(chain, tokens) {
    const start = chain[0].record.start ?? 0, rows = tokens.length - start;
    const { dtype, layers } = chain[0].shape;
    const made = entryOfRows(this.#native, tokens, start, this.#layout, dtype, layers);
    if (typeof made === 'number') return RETRY;
    let filled = false, settled = false;
    try {
      if (this.#blobs.sync) {
        const reads = await Promise.allSettled(chain.map((c) => this.#blobs.readWith(c.name, (f) => this.#readPageInto(f, c, made, start, rows))));
        filled = reads.every((r) => r.status === 'fulfilled' && r.value === true);
      } else {
        filled = this.#copyPagesInto(await Promise.allSettled(chain.map((c) => this.#blobs.read(c.name))), chain, made, start, rows);
      }
      if (filled && this.#isResident(tokens)) filled = 'resident'; // inserted while the pages were read
      settled = true;
    } finally {
      if (!settled || filled !== true) this.#native.entryFree(made); // closed meanwhile (#isResident threw): still ours
    }
    if (filled === 'resident') return true;
    if (!filled) return RETRY;
    const st = this.#native.entryPut(made, true);
    if (st === STATUS.NOTFOUND) return this.#parentLost(tokens);
    if (st < 0) return RETRY;
    for (const c of chain) this.#loaded(c.name, c.tokens);
    return true;
  }

  /**
   * #loadChain's read of page (or blob) c from file f (a sync backend's):
   * head, values and block headers in one scatter read, the values into
   * their rows of entry `made` (which holds tokens start.., rows rows a
   * block), then the head and headers compared with the ones that page has
   * (isUniformHead: a valid page of these tokens and of the layout), and
   * the file's end found where that page's is. Whether it is the page.
   */
  #readPageInto(f, c, made, start, rows) {
    const { dtype, layers, block, size, page } = c.shape;
    const headLength = headBytes(c.tokens.length, !!page), need = headLength + 8 * (2 * layers - 1) + 1;
    if (this.#readScratch.length < need) this.#readScratch = new Uint8Array(Math.max(need, 2 * this.#readScratch.length));
    const head = this.#readScratch.subarray(0, headLength);
    const headers = this.#readScratch.subarray(headLength, need - 1);
    const values = this.#native.valuesOf(made), at = (c.record.start ?? 0) - start, own = c.tokens.length - start - at;
    const bufs = [head];
    for (let b = 0; b < 2 * layers; b++) {
      if (b) bufs.push(headers.subarray(8 * (b - 1), 8 * b));
      bufs.push(...rowRuns(values, this.#layout, dtype, rows, b, at, own));
    }
    bufs.push(this.#readScratch.subarray(need - 1, need)); // a byte read here: the file is longer than the page
    return f.readv(bufs, 0) === size && isUniformHead(head, c.tokens, this.#fp, dtype, layers, block, page) &&
      repeats(headers, u64Bytes(block));
  }

  /**
   * #loadChain's copy of the pages read whole (reads: Promise.allSettled's,
   * in chain order) into entry `made`, each checked first as a load checks
   * a blob (decodeBlob), and against its record. Whether every one was
   * the page its record says.
   */
  #copyPagesInto(reads, chain, made, start, rows) {
    const pages = [];
    for (let i = 0; i < chain.length; i++) {
      const { tokens, shape } = chain[i], read = reads[i];
      let p = null;
      try {
        p = read.status === 'fulfilled' && read.value && decodeBlob(read.value, this.#fp, true);
      } catch { /* judged again page by page */ }
      if (!p || p.dtype !== shape.dtype || p.k.length !== shape.layers || !sameTokens(p.tokens, tokens) ||
        !samePage(p.page, shape.page) || ![...p.k, ...p.v].every((b) => b.length === shape.block)) return false;
      pages.push(p);
    }
    copyPages(this.#native.valuesOf(made), this.#layout, rows, start,
      pages.map((p, i) => ({ from: chain[i].record.start ?? 0, to: chain[i].tokens.length, dtype: p.dtype, blocks: [...p.k, ...p.v] })));
    return true;
  }

  /**
   * Whether memory holds the first `upTo` tokens of the page `record`
   * describes (by default those before its own: a layout tells its rows;
   * else unknown: no).
   */
  #holdsStart(tokens, record, upTo = record.start) {
    const l = this.#layout;
    if (!l || record?.status !== 'ok') return false;
    const layers = record.nValues / (2 * (tokens.length - (record.start ?? 0)) * l.heads * l.headDim);
    if (!Number.isInteger(layers)) return false;
    return this.#native.held(tokens, DTYPE[record.dtype], new Array(2 * layers).fill(0)) >= upTo;
  }

  /**
   * Whether memory already holds every token's values of the stored entry
   * of these tokens, in a longer entry (a chain read with a page after
   * it): reading its page would add nothing.
   */
  covered(tokens) {
    return this.#holdsStart(tokens, this.#known.get(this.#nameOf(tokens)), tokens.length);
  }

  /** Reads and puts blob or page `name`, judging its bytes (the general reads). */
  #load(name, tokens) {
    return this.#blobs.sync ? this.#loadDirect(name, tokens) : this.#loadCopying(name, tokens);
  }

  /** load() over a backend's reads into new memory (read()): one copy, into the heap. */
  async #loadCopying(name, tokens) {
    const record = this.#known.get(name);
    let bytes;
    try {
      bytes = await this.#blobs.read(name);
    } catch (err) {
      if (!(err instanceof RangeError)) throw err;
      // Larger than this process can hold in one array: too large, kept.
      if (record) record.status = 'too-large';
      this.#native.blobGone(tokens);
      return false;
    }
    // Inserted while the blob was read: what is in memory is newer.
    if (this.#isResident(tokens)) return true;
    let entry = null;
    try {
      entry = bytes && decodeBlob(bytes, this.#fp, true);
      if (entry && !sameTokens(entry.tokens, tokens)) entry = null;
      if (entry) checkShape(entry.tokens.length - (entry.page?.start ?? 0), entry, this.#layout, 'blob');
    } catch (err) {
      refuse(record, err);
      entry = null;
    }
    if (!entry) {
      if (!bytes) this.#known.delete(name);
      this.#native.blobGone(tokens);
      return false;
    }
    const st = this.#native.put(entry.tokens, [...entry.k, ...entry.v], DTYPE[entry.dtype], true, entry.page?.start ?? 0);
    if (st === STATUS.NOTFOUND) return this.#parentLost(tokens);
    if (st < 0) throw putFailed(st, name);
    return this.#loaded(name, tokens);
  }

  /**
   * A page read whole whose first tokens memory no longer held when it was
   * put (its parent evicted meanwhile): this match goes on without it (a
   * shorter hit), and the next open finds it again.
   */
  #parentLost(tokens) {
    this.#native.blobGone(tokens);
    return false;
  }

  #isResident(tokens) {
    const e = this.#native.get(tokens);
    return !!e && e.resident;
  }

  #loaded(name, tokens) {
    const record = this.#known.get(name);
    // Deleted by another cache (heard) while it was read: in memory, not stored.
    if (!record) this.#native.blobGone(tokens);
    else record.lastUse = Date.now();
    // In their index (at the next flush); a Node directory in file times too, which an open that rebuilds its index reads.
    if (this.#blobs.kind === 'fs') this.#touchSoon(name);
    this.#used.add(name);
    return true;
  }

  /**
   * Records a use of blob `name` in a Node directory (its file time) on
   * the side, after the hit has returned: a hit does not
   * wait for its bookkeeping. One timer for every hit until it fires.
   */
  #touchSoon(name) {
    this.#toTouch.add(name);
    this.#touchTimer ??= setTimeout(() => this.#touchNow(), 0);
  }

  #touchNow() {
    clearTimeout(this.#touchTimer);
    this.#touchTimer = null;
    const names = [...this.#toTouch];
    this.#toTouch.clear();
    return Promise.all(names.map((name) => this.#blobs.touch(name).catch(() => {})));
  }

  /**
   * load() over a backend's synchronous reads (readWith): the values read
   * straight into the new entry's memory, the block headers between them
   * into a scratch buffer, in one scatter read (readv: one preadv in Node,
   * a read each from an OPFS sync handle), when the index and the layout
   * do not tell the blob's shape (else #loadChain read it) or it was not
   * what they said. Two attempts, the second on any doubt: the blob's
   * structure checked as decodeBlob checks it (blobSpans) from its first
   * bytes, the headers past them taken to repeat the first block's (most
   * blobs have every block of one length) and the read showing whether
   * they do; else the structure read header by header. Same outcomes as
   * the copying path; a file that changes while it is read (written in
   * place by some other program) is a miss that leaves it as it is.
   */
  async #loadDirect(name, tokens) {
    const { st, err } = await this.#blobs.readWith(name, (f) => {
      if (this.#isResident(tokens)) return { st: 'resident' }; // inserted while the file opened
      const head = readAt(f, 0, Math.min(f.size, headBytes(tokens.length, true)));
      const first = uniformBlockLength(head, f.size);
      const guessed = first >= 0 ? this.#readInto(f, head, u64Bytes(first), tokens) : RETRY;
      return guessed === RETRY ? this.#readInto(f, head, null, tokens) : guessed;
    }) ?? { st: null };
    if (st === 'resident') return true;
    const record = this.#known.get(name);
    if (st === null || st === 'refused' || st === 'changed') {
      if (st === null) this.#known.delete(name);
      else if (err) refuse(record, err);
      // Changed: the blob is left as it is, known; its entry leaves the
      // tree so that this match ends, and the next open finds it again.
      this.#native.blobGone(tokens);
      return false;
    }
    if (st === STATUS.NOTFOUND) return this.#parentLost(tokens);
    if (st < 0) throw putFailed(st, name);
    return this.#loaded(name, tokens);
  }

  /**
   * The blob or page the index and the layout describe, if they tell its
   * shape whole: { dtype, layers, block (values per block), size (bytes),
   * page (its start and parent, or null) }, for
   * #chainOf; else null (no layout, a record not of an ok blob, sizes
   * that do not agree).
   */
  #shapeOf(record, tokens) {
    const layout = this.#layout;
    if (!layout || !record || record.status !== 'ok' || !record.dtype || !LITTLE_ENDIAN) return null;
    const page = record.start ? { start: record.start, parentN: record.parentN, parent: keyOfName(record.parent) } : null;
    const block = layout.heads * layout.headDim * (tokens.length - (record.start ?? 0));
    const layers = layout.layers || record.nValues / (2 * block);
    if (!block || !Number.isInteger(layers) || layers < 1 || layers > MAX_LAYERS || 2 * layers * block !== record.nValues) return null;
    const size = uniformBlobSize(tokens.length, record.dtype, layers, block, !!page);
    return size === record.bytes ? { dtype: record.dtype, layers, block, size, page } : null;
  }

  /**
   * One attempt of #loadDirect on file f (head: its first bytes): the
   * structure, with the block headers past the head taken to be `guess`
   * if given, then the values into a new entry. { st }: the put's status,
   * 'refused' (with err, if the blob is bad) or 'changed'; RETRY when a
   * guessed attempt fails in any way (the general one then decides).
   */
  #readInto(f, head, guess, tokens) {
    let plan;
    try {
      plan = blobSpans((at, n) => {
        if (at + n <= head.length) return head.subarray(at, at + n);
        if (guess && n === 8) return guess; // a block header, when the head holds the first
        return readAt(f, at, n);
      }, f.size, this.#fp, head.length);
      if (plan && !sameTokens(plan.tokens, tokens)) plan = null;
      if (plan) {
        const lens = plan.spans.map(([, n]) => ({ length: n }));
        const layers = lens.length / 2;
        checkShape(plan.tokens.length - (plan.page?.start ?? 0), { k: lens.slice(0, layers), v: lens.slice(layers) }, this.#layout, 'blob');
      }
    } catch (err) {
      if (!(err instanceof RlxkvError) && !(err instanceof RangeError)) throw err;
      return guess ? RETRY : { st: 'refused', err };
    }
    if (!plan) return guess ? RETRY : { st: 'refused' };
    try {
      return { st: this.#native.putFilled(plan.tokens, plan.spans.map(([, n]) => n), DTYPE[plan.dtype], (values) => readValues(f, plan, values), true, plan.page?.start ?? 0) };
    } catch (err) {
      if (err === MISPREDICTED && guess) return RETRY;
      if (err === MISPREDICTED || err === CHANGED) return { st: 'changed' };
      throw err;
    }
  }

  // ---- flush -----------------------------------------------------------

  /** Writes every dirty entry; see the header. Rejects with QUOTA / IO, nothing flushed before lost. */
  async flush() {
    const t0 = performance.now();
    let failure = null;
    try {
      await this.#flush();
    } catch (err) {
      failure = err;
      throw err;
    } finally {
      // What was saved before a failure is saved all the same.
      const saved = this.#savedRecords;
      if (saved.length) this.#tell({ saved });
      this.#savedRecords = [];
      if (this.#onEvent && (saved.length || failure)) {
        this.#onEvent({
          type: 'flush', saved: saved.length, bytes: saved.reduce((n, r) => n + r.bytes, 0),
          pendingRemovals: this.#toRemove.size, ms: performance.now() - t0, error: failure,
        });
      }
    }
  }

  async #flush() {
    // Removals first (their room is free for the saves), then those asked
    // for while this flush saved (one of an entry being saved is deleted
    // once written) and those that failed before, tried again. One that
    // fails does not stop the saves: see #removePending.
    const failed = new Set(await this.#removePending(this.#removalFailed));
    // Least recently used first, so that file times follow use.
    const dirty = [];
    this.#native.forEachDirty(({ tokens, serial, start }) => dirty.push({ tokens, serial, start }));
    dirty.reverse();
    // A page after its parent: a page is never stored before the one it needs.
    dirty.sort((a, b) => a.start - b.start);
    let batch = [], batchBytes = 0;
    const idb = this.#blobs.kind === 'idb';
    let failure = null;
    try {
      for (const d of dirty) {
        const item = this.#encode(d, this.#blobs.kind === 'fs' && LITTLE_ENDIAN);
        if (!item) continue; // replaced or gone since
        if (!idb) {
          try {
            await this.#blobs.write([item], () => this.#saved(item));
          } catch (err) {
            // Replaced or evicted mid-save: the next flush saves what is there.
            if (!(err instanceof RlxkvError && err.code === 'CHANGED')) throw err;
          } finally {
            this.#saving.delete(item.name);
          }
          continue;
        }
        batch.push(item);
        batchBytes += item.bytes;
        if (batchBytes >= IDB_BATCH_BYTES) {
          await this.#writeIdb(batch);
          batch = [];
          batchBytes = 0;
        }
      }
      if (idb && (batch.length || this.#used.size)) await this.#writeIdb(batch);
    } catch (err) {
      failure = err;
    } finally {
      for (const it of batch) this.#saving.delete(it.name);
    }
    // OPFS, a directory: the index gets what was saved (this flush's records), even if a later save failed (whose error wins).
    if (this.#blobs.kind !== 'idb' && (this.#savedRecords.length || this.#used.size)) {
      failure = await firstError(failure, this.#updateIndexFile(this.#savedRecords));
    }
    await this.#removePending(failed);
    if (failure) throw failure;
  }

  /**
   * OPFS, a Node directory: the index file updated with saved records, last uses and removed
   * names, as their files are then (see mergeIndex). An index found gone
   * or damaged while this store knows of other blobs is written from all
   * it knows, and the store marked behind: its marker stays, so that the
   * next open lists the directory.
   */
  #updateIndexFile(records, removed = []) {
    const changed = new Set([...records.map((r) => r.name), ...removed]);
    return this.#withIndexUpdate((merge) => this.#blobs.updateIndex((cur, present) => {
      const index = parseIndex(cur);
      if (index || [...this.#known.keys()].every((n) => changed.has(n))) return merge(index, present);
      // A copy of each record: the merge raises last uses in the records it is given.
      return { bytes: merge(new Map([...this.#known].map(([n, r]) => [n, { ...r }])), present), behind: true };
    }, [...changed]), records, removed);
  }

  /**
   * write(merge) with an index update (IndexedDB's record, OPFS's file):
   * merge(the current index parsed, or null; present) gives the new index
   * bytes, with the last uses of hits so far, the saved records, removed
   * names gone. Uses recorded meanwhile wait for the next; those of a
   * write that fails too.
   */
  async #withIndexUpdate(write, records, removed = []) {
    const usedNames = [...this.#used];
    this.#used.clear();
    const used = usedNames.map((n) => this.#known.get(n)).filter(Boolean);
    try {
      await write((index, present) => mergeIndex(index, { set: records, remove: removed, uses: used, present }));
    } catch (err) {
      for (const n of usedNames) this.#used.add(n);
      throw err;
    }
  }

  /**
   * The blob of the dirty entry { tokens, serial } if it is still that
   * entry, else null: for a Node directory (pieces: true) its parts made
   * one block at a time as they are written, each from the entry as it is
   * then (a part asked for after the entry changed stops the save with
   * CHANGED), so no whole copy of it is made and no long task runs; for
   * IndexedDB, whose record is one value, and OPFS, encoded whole. A page
   * (an entry that extends another) is written as a page: its own values,
   * its parent's name; or, with `whole` (its parent is not stored), as a
   * blob of all its values, gathered.
   */
  #encode({ tokens, serial }, pieces = false, whole = false) {
    // A page: the values the entry holds itself, after its parent's name.
    const own = !whole;
    const e = this.#native.get(tokens, { own });
    if (!e || !e.dirty || e.serial !== serial) return null;
    const blocks = [...e.k, ...e.v];
    let page;
    if (own && e.start) {
      // A page needs its parent stored (or being stored, before it, in this
      // flush); else it goes whole, gathered, and needs none.
      const parentName = this.#nameOf(e.parent, e.dtype);
      if (this.#known.get(parentName)?.status === 'ok' || this.#saving.has(parentName)) {
        page = { start: e.start, parentN: e.parent.length, parent: keyOfName(parentName) };
      } else {
        return this.#encode({ tokens, serial }, pieces, true);
      }
    }
    // Pieces: each block taken from the entry as it is when it is written:
    // the same views while nothing was freed (the C generation) and the
    // heap did not grow (which detaches them), else the entry again.
    let gen = this.#native.generation(), bits = bitsOf(blocks);
    const blocksAt = () => {
      if (this.#native.generation() === gen && !(bits.length && bits[0].buffer.byteLength === 0)) return bits;
      const now = this.#native.get(tokens, { own });
      if (!now || !now.dirty || now.serial !== serial) throw new RlxkvError('CHANGED', 'the entry changed while it was saved');
      gen = this.#native.generation();
      bits = bitsOf([...now.k, ...now.v]);
      return bits;
    };
    const name = this.#native.pageName(tokens, e.dtype);
    // Whole: encoded from views of the heap into JS memory (nothing here
    // allocates in wasm, so the views hold).
    const parts = pieces ? encodePieces(tokens, blocksAt, this.#fp, page) : [encodeBlob(tokens, bits, this.#fp, undefined, { page })];
    const bytes = pieces ? blobSize(tokens.length, bits, { page }) : parts[0].length;
    const rows = tokens.length - (page ? e.start : 0);
    const record = {
      name, bytes, lastUse: Date.now(), fingerprint: this.#fp, status: 'ok', dtype: e.dtype, tokens,
      nValues: blocks.reduce((n, b) => n + b.length, 0),
      rowMajor: rows > 0 && blocks.every((b) => b.length % rows === 0), ...pageOf(page),
    };
    const step = ++this.#step;
    this.#saving.set(name, step);
    return { name, parts, bytes, tokens, serial, record, step };
  }

  /**
   * Item written: its record known, its entry clean if it still is the one
   * encoded. A removal asked for before the encoding is done with (this
   * blob is the entry inserted after it); one asked for after stays, so
   * the blob goes at the end of the flush.
   */
  #saved(item) {
    this.#known.set(item.name, item.record);
    // The same prefix stored under its other name (a store written before
    // pages, or the other dtype): superseded, deleted at the flush's end
    // (unless a page names it its parent). Counting children walks every
    // record: only when there is such a name.
    const others = this.#namesOf(item.tokens).filter((n) => n !== item.name && this.#known.get(n)?.status === 'ok');
    if (others.length) {
      const children = childCounts(this.#known.values());
      for (const other of others) if (!children.get(other)) this.#giveUp(other);
    }
    if (this.#toRemove.get(item.name) < item.step) {
      this.#toRemove.delete(item.name);
      this.#removalFailed.delete(item.name);
    }
    this.#native.mark(item.tokens, item.serial, 'clean');
    this.#savedRecords.push(item.record);
  }

  async #writeIdb(items) {
    try {
      await this.#withIndexUpdate((merge) => this.#blobs.write(items, [], (cur) => merge(parseIndex(cur))), items.map((it) => it.record));
      for (const it of items) this.#saved(it);
    } finally {
      for (const it of items) this.#saving.delete(it.name);
    }
  }

  // ---- prune, list -----------------------------------------------------

  /**
   * Removes blobs: corrupt ones, other fingerprints' when `stale`, then
   * this fingerprint's least recently used until they total at most
   * maxBytes. Blobs of pinned entries stay, and unless `resident` those of
   * resident entries too. A removed stored-only entry leaves the cache; a
   * resident one stays in memory, no longer stored. dryRun: report only.
   */
  async prune({ maxBytes = Infinity, stale = false, dryRun = false, resident = false, budget = false } = {}) {
    const native = this.#native;
    if (budget) await this.#rescan();
    const gone = [];
    let kept = 0, keptBytes = 0;
    const mine = [];
    for (const r of this.#known.values()) {
      if (r.status === 'corrupt' || (stale && r.status === 'stale') || this.#isOrphan(r)) gone.push(r);
      else if (r.status === 'ok') mine.push(r);
      else { kept++; keptBytes += r.bytes; }
    }
    // Least recently used first: stored-only entries (least recent first),
    // then resident ones (least recent first). Pinned ones are kept.
    const byName = new Map(mine.map((r) => [r.name, r]));
    let total = mine.reduce((n, r) => n + r.bytes, 0);
    // Within budget (every flush asks): no walk of the cache's entries.
    const order = [];
    const pinned = new Set();
    if (total > maxBytes) {
      const entries = native.entries();
      for (const e of entries) if (e.pinned) pinned.add(this.#nameOf(e.tokens, e.dtype));
      // Stored-only entries, then (if asked) resident ones, least recent first.
      for (const tier of resident ? [false, true] : [false]) {
        for (const e of entries.filter((x) => x.resident === tier).reverse()) order.push([this.#nameOf(e.tokens, e.dtype), e.tokens]);
      }
    }
    const drop = [];
    const picked = leavesFirst(order.map(([name, tokens]) => ({ r: byName.get(name), tokens })).filter((d) => d.r && !pinned.has(d.r.name)),
      total - maxBytes, childCounts(this.#known.values()));
    for (const d of picked) {
      drop.push(d);
      byName.delete(d.r.name);
      total -= d.r.bytes;
    }
    for (const r of byName.values()) { kept++; keptBytes += r.bytes; }
    const removing = [...gone, ...drop.map((d) => d.r)];
    const report = { removed: removing.length, removedBytes: removing.reduce((n, r) => n + r.bytes, 0), kept, keptBytes };
    if (dryRun || !removing.length) return report;
    const { gone: deleted, failure } = await this.#removeNames(removing.map((r) => r.name));
    const isGone = new Set(deleted);
    for (const { r, tokens } of drop) {
      if (budget || isGone.has(r.name)) native.blobGone(tokens);
    }
    this.#onEvent?.({ type: 'prune', reason: budget ? 'storageCapBytes' : 'prune', ...report, error: failure });
    if (failure) {
      // A budget's prune (at open, after a flush) goes on: what it could not
      // delete is given up all the same and tried again at each flush.
      if (!budget) throw failure;
      const left = removing.map((r) => r.name).filter((n) => !isGone.has(n));
      for (const n of left) this.#giveUp(n);
      this.#failedRemovals(left, failure);
    }
    return report;
  }

  /**
   * Gives up the blob of these tokens: it is deleted at the next flush.
   * Whether there was one not given up already.
   */
  forget(tokens) {
    let given = false;
    const children = childCounts(this.#known.values());
    for (const name of this.#namesOf(tokens)) {
      const r = this.#known.get(name);
      if ((!r || r.status !== 'ok') && !this.#saving.has(name)) continue;
      // A page others stored after it need stays, for them (as a hidden entry in memory).
      if (children.get(name)) continue;
      given = this.#giveUp(name) || given;
    }
    return given;
  }

  /** A page whose parent this store no longer holds (or holds as something else): it can never be served. */
  #isOrphan(r) {
    if (!r.start || r.status !== 'ok') return false;
    const p = this.#known.get(r.parent);
    return !p || (p.status !== 'ok' && p.status !== 'stale') || p.tokens?.length !== r.parentN;
  }

  /** Gives up blob `name` (deleted at the next flush), unless it is already: whether it was not. */
  #giveUp(name) {
    if (this.#toRemove.has(name)) return false;
    this.#toRemove.set(name, ++this.#step);
    return true;
  }

  /**
   * Gives up every blob of this cache's fingerprint, and those of saves
   * under way (for Cache.clear({ stored: true })): deleted by
   * wipe() or the next flush.
   */
  forgetAll() {
    for (const r of this.#known.values()) if (r.fingerprint === this.#fp) this.#giveUp(r.name);
    for (const name of this.#saving.keys()) this.#giveUp(name);
  }

  /**
   * Deletes every blob of this cache's fingerprint now, those saved by
   * others since the open included (the store is read again first):
   * Cache.clear({ stored: true }) after forgetAll(). Rejects with the
   * first failure (what failed stays given up, tried at each flush).
   */
  async wipe() {
    await this.#rescan();
    for (const r of this.#known.values()) {
      // An entry learnt just now leaves the cache too.
      if (r.fingerprint === this.#fp && this.#giveUp(r.name)) this.#native.blobGone(r.tokens);
    }
    await this.#removePending();
    if (this.#toRemove.size) throw this.#removalError;
  }

  /** Blobs given up whose deletion has not succeeded yet, and the last such failure. */
  get pendingRemovals() { return { count: this.#toRemove.size, error: this.#removalError }; }

  /**
   * Deletes the blobs given up (#toRemove), but those of `skip`. Never
   * rejects: what could not be deleted stays given up, tried again at the
   * next flush, so that a blob that cannot go (a file made immutable, one
   * another worker holds) does not stop saves. The names that failed.
   */
  async #removePending(skip = new Set()) {
    const names = [...this.#toRemove.keys()].filter((n) => !skip.has(n));
    if (!names.length) return [];
    const fresh = names.filter((n) => !this.#removalFailed.has(n)), retried = names.filter((n) => this.#removalFailed.has(n));
    let failure = null;
    for (const [batch, retry] of [[fresh, false], [retried, true]]) {
      if (!batch.length) continue;
      const done = await this.#removeNames(batch, { retry });
      for (const n of done.gone) this.#toRemove.delete(n);
      failure ??= done.failure;
    }
    const left = names.filter((n) => this.#toRemove.has(n));
    for (const n of names) if (!this.#toRemove.has(n)) this.#removalFailed.delete(n);
    this.#failedRemovals(left, failure);
    return left;
  }

  /** Given-up blobs whose deletion failed (with `failure`): tried again, briefly, after each flush's saves. */
  #failedRemovals(names, failure) {
    for (const n of names) this.#removalFailed.add(n);
    this.#removalError = this.#toRemove.size ? failure ?? this.#removalError : null;
  }

  /** Every blob as the API lists them (BlobInfo). */
  list() {
    return [...this.#known.values()].map((r) => infoOf(r, r.status === 'refused' ? 'ok' : r.status));
  }

  // ---- a store without a cache (rlx.openStore, the CLI) ------------------

  /** Every blob judged against fingerprint (any: every valid blob is ok): its record's status, then its name, then its fingerprint. */
  #judged(fingerprint, any) {
    return [...this.#known.values()].map((r) => {
      if (r.status === 'corrupt' || r.status === 'too-large' || r.status === 'unreadable') return [r, r.status];
      if (!this.#ownName(r)) return [r, 'foreign'];
      return [r, any || r.fingerprint === fingerprint ? 'ok' : 'stale'];
    });
  }

  listAll(fingerprint, any) { return this.#judged(fingerprint, any).map(([r, status]) => infoOf(r, status)); }

  /**
   * What js/store.js drives (listAll, pruneAll, close): this store, or in
   * a Node directory its backend's wrap of it, which adds the temporary
   * files the open found (FsBlobs toolStore).
   */
  asToolStore() { return this.#blobs.toolStore?.(this, this.#temporaryFiles) ?? this; }

  /**
   * Store.prune over these blobs: corrupt ones, stale ones when `stale`,
   * then the least recently used of those that count (the fingerprint's,
   * or with `any` every valid one) until they total at most maxBytes (a
   * number).
   */
  async pruneAll(fingerprint, { maxBytes = Infinity, stale = false, dryRun = false, any = false } = {}) {
    const gone = [], counted = [];
    let kept = 0, keptBytes = 0;
    for (const [r, status] of this.#judged(fingerprint, any)) {
      if (status === 'corrupt' || (stale && status === 'stale')) gone.push(r);
      else if (status === 'ok') counted.push(r);
      else { kept++; keptBytes += r.bytes; }
    }
    counted.sort((a, b) => a.lastUse - b.lastUse);
    const total = counted.reduce((n, r) => n + r.bytes, 0);
    const picked = new Set(leavesFirst(counted.map((r) => ({ r })), total - maxBytes, childCounts(this.#known.values())).map((d) => d.r));
    for (const r of counted) {
      if (picked.has(r)) gone.push(r);
      else {
        kept++;
        keptBytes += r.bytes;
      }
    }
    const report = { removed: gone.length, removedBytes: gone.reduce((n, r) => n + r.bytes, 0), kept, keptBytes };
    if (!dryRun && gone.length) {
      const { failure } = await this.#removeNames(gone.map((r) => r.name));
      if (failure) throw failure;
    }
    return report;
  }

  /**
   * Deletes these blobs and their index records (IndexedDB: in the same
   * transaction; OPFS: the index file after, with those removed before a
   * failure). Never rejects: { gone: the names deleted (or found gone),
   * failure: the first error, or null }.
   */
  async #removeNames(names, { retry = false } = {}) {
    let gone = names, failure = null;
    if (this.#blobs.kind === 'idb') {
      failure = await firstError(null, this.#withIndexUpdate((merge) => this.#blobs.write([], names, (cur) => merge(parseIndex(cur))), [], names));
      if (failure) gone = [];
    } else {
      gone = [];
      failure = await firstError(null, this.#blobs.remove(names, (n) => gone.push(n), { retry }));
      if (gone.length) failure = await firstError(failure, this.#updateIndexFile([], gone));
    }
    for (const n of gone) this.#known.delete(n);
    if (gone.length) this.#tell({ removed: gone });
    return { gone, failure };
  }

  // ---- watching --------------------------------------------------------

  #watch() {
    this.#channel = new BroadcastChannel(this.#channelName);
    this.#channel.onmessage = (ev) => {
      try {
        this.#heard(ev.data);
      } catch {
        // Only a hint, from anyone of the origin: what cannot be used is
        // dropped (the next open reads the store itself).
      }
    };
    // Node: a watching cache does not keep the process alive by itself.
    if (typeof this.#channel.unref === 'function') this.#channel.unref();
  }

  /**
   * Tells watching stores of the same store what this one saved
   * ({ saved: [record] }) or deleted ({ removed: [name] }). Only a hint:
   * a store that misses it finds the same at its next open.
   */
  #tell({ saved = [], removed = [] }) {
    const news = { rlxkv: NEWS_VERSION, saved: saved.map(newsOf), removed };
    try {
      if (this.#channel) return this.#channel.postMessage(news);
      tellOnce(this.#channelName, news);
    } catch {
      // Telling is best effort: a save or removal stands without it.
    }
  }

  /**
   * What another store says it saved or deleted: only a hint, from anyone
   * of the origin. The names it gives are looked up in the store itself
   * (#storeRecords: a Node blob's own first bytes, the IndexedDB or OPFS
   * index, which every writer updates before it tells): blobs found there
   * become known here (stored-only entries, if they are of this cache) as
   * the store describes them, and only those found gone are forgotten
   * (NativeCache.blobGone). Nothing a message says of a blob's size,
   * fingerprint or tokens is taken, so no message makes a prune delete.
   * Messages are taken one at a time, in the order heard.
   */
  #heard(news) {
    if (!this.#channel || !news || news.rlxkv !== NEWS_VERSION) return;
    const { saved, removed } = news;
    if (!Array.isArray(saved) || !Array.isArray(removed) || saved.length + removed.length > NEWS_NAMES) return;
    const said = new Set([...saved.map((r) => r && r.name), ...removed].filter(isBlobName));
    if (!said.size) return;
    this.#hearing = this.#hearing.then(async () => {
      const found = await this.#storeRecords([...said]);
      if (!this.#channel || this.#native.closed) return;
      const forgotten = [...found].filter(([name, r]) => !r && this.#known.has(name)).map(([name]) => name);
      for (const name of forgotten) this.#drop(name);
      const learnt = [...found.values()].filter((r) => r && this.#known.get(r.name) !== r);
      this.#learn(learnt);
      if (forgotten.length || learnt.length) this.#onEvent?.({ type: 'heard', saved: learnt.length, removed: forgotten.length });
    }).catch(() => {}); // unreadable now: the next open reads the store
  }

  /**
   * The store's own record of each name (null: it holds no such blob),
   * as a Map: a Node directory's from each file's first bytes, IndexedDB's
   * and OPFS's from their index (null for a name it does not describe).
   */
  async #storeRecords(names) {
    const out = new Map();
    if (this.#blobs.kind === 'fs') {
      const files = await mapBounded(names, HEAD_READS, (name) => this.#blobs.stat(name));
      names.forEach((name) => out.set(name, null));
      for (const r of await this.#headRecords(files.filter(Boolean))) out.set(r.name, r);
      return out;
    }
    const index = (await this.#indexRecords()) ?? new Map();
    for (const name of names) out.set(name, index.get(name) ?? null);
    return out;
  }

  /** IndexedDB's or OPFS's index as it is now, parsed (null: none, or damaged). */
  async #indexRecords() {
    if (this.#blobs.kind === 'idb') {
      const index = await this.#blobs.list().index;
      return parseIndex(index && index.bytes);
    }
    return parseIndex(await this.#blobs.readIndex());
  }

  /**
   * Makes what this store knows match what the store holds now, whoever
   * wrote it (other processes, tabs that do not watch): blobs it does not
   * know are added (stored-only entries, if of this cache) and blobs gone
   * are forgotten. A Node directory is listed, and only new or resized
   * files read; IndexedDB and OPFS read their index (none: unchanged). For
   * a budget's prune, which must count every blob.
   */
  async #rescan() {
    // What is known of a blob stands while its size does (a blob's name
    // fixes its tokens and fingerprint): only the others are read or learnt.
    const unchanged = (name, bytes) => {
      const r = this.#known.get(name);
      return r && r.bytes === bytes && r.status !== 'unreadable' ? r : null;
    };
    let now;
    if (this.#blobs.kind === 'fs') {
      const { blobs: files } = await this.#blobs.list();
      now = new Map();
      const unknown = [];
      for (const f of files) {
        const r = unchanged(f.name, f.bytes);
        if (r) now.set(f.name, r);
        else unknown.push(f);
      }
      for (const r of await this.#headRecords(unknown)) now.set(r.name, r);
    } else {
      now = await this.#indexRecords();
      if (!now) return;
      for (const [name, r] of now) now.set(name, unchanged(name, r.bytes) ?? r);
    }
    for (const name of [...this.#known.keys()]) if (!now.has(name)) this.#drop(name);
    this.#learn([...now.values()].filter((r) => this.#known.get(r.name) !== r));
  }

  /** Forgets blob `name`, found gone from the store: its entry, if only stored, leaves the cache. */
  #drop(name) {
    const r = this.#known.get(name);
    this.#known.delete(name);
    this.#toRemove.delete(name);
    this.#removalFailed.delete(name);
    if (r && r.status === 'ok' && r.tokens) this.#native.blobGone(r.tokens);
  }

  /**
   * Takes in records of blobs read from the store: at the open (#admit,
   * opening: the cache holds nothing yet), and after it (#heard, #rescan),
   * when a resident entry is left as it is (a clean one is its blob's now).
   * Names given up here are skipped (they are deleted at the next flush).
   */
  #learn(records, { opening = false } = {}) {
    const fresh = [];
    for (const record of records) {
      if (this.#toRemove.has(record.name)) continue;
      this.#known.set(record.name, record);
      if (record.status !== 'ok') continue;
      if (record.fingerprint !== this.#fp) { record.status = 'stale'; continue; }
      // A blob under a name not its own (copied in by hand) is left alone:
      // saves would write its entry under the right name beside it. (An
      // index records such a blob as foreign.)
      if (!record.indexed && !this.#ownName(record)) { record.status = 'foreign'; continue; }
      const e = opening ? null : this.#native.get(record.tokens);
      if (!e) fresh.push(record);
      else if (e.resident && !e.dirty) this.#native.mark(record.tokens, e.serial, 'clean'); // stored again
    }
    const status = this.#native.putStored(fresh);
    fresh.forEach((r, i) => { r.admitted = status[i] >= 0; });
  }

  async close() {
    if (this.#channel) this.#channel.close();
    this.#channel = null;
    await this.#touchNow();
    await this.#blobs.close();
  }
}

// OPFS is loaded when a store first uses it: an app on IndexedDB (and the
// browser bundle's main file) does without its code. While it loads, the
// store's directory and index file are asked for (opfsEarly; not by a
// caller that passes null).
const BACKENDS = { fs: FsBlobs, idb: IdbBlobs, opfs: { open: (path, early = opfsEarly(path)) => import('./opfs-blobs.js').then((m) => m.OpfsBlobs.open(path, early)) } };

/**
 * OpfsBlobs.open's head start: { dir, index }, promises of the OPFS
 * directory `path` (made if missing) and its index file's bytes (a File
 * read without the lock: across a replace it fails, and the open reads
 * again); none without OPFS. A rejection is for the open to meet again.
 */
function opfsEarly(path) {
  if (!globalThis.navigator?.storage?.getDirectory) return;
  const dir = path.split('/').filter(Boolean).reduce((d, seg) => d.then((x) => x.getDirectoryHandle(seg, { create: true })), navigator.storage.getDirectory());
  const index = dir.then((d) => d.getFileHandle('.rlxkv-index')).then((h) => h.getFile()).then((f) => f.arrayBuffer());
  dir.catch(() => {});
  index.catch(() => {});
  return { dir, index };
}

/**
 * Copies every blob of store `from` into store `to` ({ kind, path }, kinds
 * of BACKENDS), bytes unchanged, least recently used first (so that a
 * directory's file times keep their order). An IndexedDB destination gets
 * them in transactions of up to IDB_BATCH_BYTES, each with the index
 * records of its blobs (one index rewrite per transaction); an OPFS one
 * its index file once, at the end. isOwn(record) judges a valid blob's name
 * (ownName). Resolves to { copied, bytes }; rejects with QUOTA / IO, what was copied
 * before staying.
 */
export async function copyBlobs(from, to, isOwn) {
  const src = await BACKENDS[from.kind].open(from.path);
  let dst = null;
  try {
    dst = await BACKENDS[to.kind].open(to.path, null); // (null: its index is not read)
    let names;
    if (src.kind === 'idb') {
      const index = await src.list().index;
      const uses = parseIndex(index && index.bytes) ?? new Map();
      names = (await src.names()).map((name) => [name, uses.get(name)?.lastUse ?? 0]);
    } else {
      const uses = (src.kind === 'opfs' && parseIndex(await src.readIndex())) || new Map();
      names = (await src.list()).blobs.map(({ name, mtimeMs }) => [name, Math.max(mtimeMs, uses.get(name)?.lastUse ?? 0)]);
    }
    names.sort((a, b) => a[1] - b[1]);
    let copied = 0, bytes = 0;
    // Into IndexedDB, blobs go in transactions of up to IDB_BATCH_BYTES,
    // each with one rewrite of the index (not one per blob); into OPFS one
    // at a time, and the index file once at the end.
    let batch = [], batchBytes = 0, failure = null;
    const indexed = [];
    const writeBatch = async () => {
      const records = batch.map((it) => it.record);
      await dst.write(batch, [], (cur) => mergeIndex(parseIndex(cur), { set: records }));
      copied += batch.length;
      bytes += batchBytes;
      batch = [];
      batchBytes = 0;
    };
    try {
      for (const [name, lastUse] of names) {
        const blob = await src.read(name);
        if (!blob) continue; // gone meanwhile
        const item = { name, parts: [blob], bytes: blob.length };
        const record = dst.kind !== 'fs' && recordOf(name, blob.length, lastUse || Date.now(), blobHead(blob, blob.length));
        // A blob under a name not its own stays foreign in the copy's index (never counted, never served).
        if (record && record.status === 'ok' && !isOwn(record)) record.status = 'foreign';
        if (dst.kind !== 'idb') {
          await dst.write([item]);
          if (record) indexed.push(record);
          copied++;
          bytes += blob.length;
          continue;
        }
        item.record = record;
        batch.push(item);
        batchBytes += blob.length;
        if (batchBytes >= IDB_BATCH_BYTES) await writeBatch();
      }
      if (batch.length) await writeBatch();
    } catch (err) {
      failure = err;
    }
    if (indexed.length) {
      failure = await firstError(failure, dst.updateIndex((cur, present) => mergeIndex(parseIndex(cur), { set: indexed, present }), indexed.map((r) => r.name)));
    }
    if (failure) throw failure;
    return { copied, bytes };
  } finally {
    await src.close();
    if (dst) await dst.close();
  }
}

/**
 * Deletes store `place` ({ kind, path }, a kind of BACKENDS) and tells the
 * caches that watch it (they forget its blobs once they find them gone).
 * Resolves to { removed: the blobs it held }.
 */
export async function deleteBlobs(place) {
  const blobs = await BACKENDS[place.kind].open(place.path, null);
  let names;
  try {
    names = await blobs.destroy();
  } finally {
    await blobs.close();
  }
  tellOnce(channelOf(place.kind, blobs, place.path), { rlxkv: NEWS_VERSION, saved: [], removed: names });
  return { removed: names.length };
}

/** The BroadcastChannel name of a store (a directory by its resolved path). */
const channelOf = (kind, blobs, path) => `rlxkv:${kind}:${blobs.root ?? path}`;

/** Posts news on a channel of its own (best effort: where there is no BroadcastChannel, nobody watches). */
function tellOnce(channelName, news) {
  if (typeof BroadcastChannel !== 'function') return;
  const once = new BroadcastChannel(channelName);
  once.postMessage(news);
  once.close();
}

/** failure, or if none the error p rejects with (null if none): so that a cleanup's failure does not hide the first one. */
const firstError = (failure, p) => p.then(() => failure, (err) => failure ?? err);

/** Records why a blob cannot be loaded: too large (LIMIT), not of the layout (refused), else corrupt. */
function refuse(record, err) {
  if (!record) return;
  record.status = !(err instanceof RlxkvError) ? 'refused' : err.code === 'LIMIT' ? 'too-large' : 'corrupt';
}

/** The n bytes from offset at of a readWith file (fewer at its end). */
function readAt(f, at, n) {
  const b = new Uint8Array(n);
  return b.subarray(0, f.read(b, at));
}

const MISPREDICTED = new Error('a block header differs from the first block\'s');
const CHANGED = new Error('the file changed while it was read');
/** The answer of an attempt (#loadChain, a guessed #readInto) that leaves the blob to the next. */
const RETRY = Symbol('retry');

/**
 * Reads the values of a blob (its structure: plan, from blobSpans) into
 * values (the new entry's bytes), its block headers after the first into a
 * scratch buffer, in one scatter read; throws MISPREDICTED if a header is
 * not the length the plan has for its block, CHANGED if the file ended
 * early (it shrank since it was opened).
 */
function readValues(f, plan, values) {
  const headers = new Uint8Array(8 * Math.max(0, plan.spans.length - 1));
  const bufs = scatterList(values, plan.spans.map(([, n]) => n), plan.dtype, headers);
  if (f.readv(bufs, plan.spans.length ? plan.spans[0][0] : 0) !== values.length + headers.length) throw CHANGED;
  const dv = new DataView(headers.buffer);
  for (let b = 1; b < plan.spans.length; b++) {
    if (getU64(dv, 8 * b - 8) !== plan.spans[b][1]) throw MISPREDICTED;
  }
}

/**
 * The buffers a blob's values and block headers are read into, in file
 * order: each block's values in `values` (an entry's bytes, blocks of
 * `lengths` values of dtype one after another) and the header before each
 * block after the first in `headers` (8 bytes each).
 */
function scatterList(values, lengths, dtype, headers) {
  const esize = dtype === 'f16' ? 2 : 4, bufs = [];
  for (let b = 0, to = 0; b < lengths.length; to += esize * lengths[b++]) {
    if (b) bufs.push(headers.subarray(8 * (b - 1), 8 * b));
    bufs.push(values.subarray(to, to + esize * lengths[b]));
  }
  return bufs;
}

/** Whether a decoded page's fields (decodeBlob's page) are the ones a record's shape has (#shapeOf's page), or both are none. */
function samePage(a, b) {
  if (!a || !b) return !a && !b;
  return a.start === b.start && a.parentN === b.parentN && a.parent[0] === b.parent[0] && a.parent[1] === b.parent[1];
}

/** Whether bytes is `unit` (8 bytes) over and over. */
function repeats(bytes, unit) {
  for (let i = 0; i < bytes.length; i++) if (bytes[i] !== unit[i & 7]) return false;
  return true;
}

/** The shape of what stores tell each other (#tell); others are ignored. */
const NEWS_VERSION = 2;
/** A saved blob as told: its name (a listener reads the rest from the store). */
const newsOf = (r) => ({ name: r.name });
/** Whether a told name can be a blob's (a file name of the store: *.rlxkv, no separator). */
const isBlobName = (n) => typeof n === 'string' && n.length <= 255 && n.endsWith('.rlxkv') && !/[/\\\0]/.test(n) && n !== '.rlxkv';

/** fn of each item, at most `limit` running at once: their results, in order. */
async function mapBounded(items, limit, fn) {
  const out = new Array(items.length);
  let next = 0;
  const run = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, run));
  return out;
}

/** The error of a put that could not take a loaded entry (NOSPACE: capBytes; NOMEM: wasm memory). */
const putFailed = (st, name) => statusError(st, `loading ${name}`, st === STATUS.NOSPACE ? 'no room in memory (capBytes)' : undefined);

function sameTokens(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** A blob record as the API lists it (BlobInfo). */
function infoOf(r, status) {
  return {
    name: r.name,
    tokens: r.tokens ? r.tokens.length : 0,
    bytes: r.bytes,
    mtime: new Date(r.lastUse),
    fingerprint: r.fingerprint ?? 0n,
    status, // ok, stale, corrupt, foreign, too-large, unreadable
    error: status === 'corrupt' ? STATUS.CORRUPT : status === 'too-large' ? STATUS.LIMIT : status === 'unreadable' ? STATUS.IO : 0,
    dtype: r.dtype ?? null,
    kvBytes: r.nValues * (r.dtype === 'f16' ? 2 : 4) || 0,
    page: !!r.start,
  };
}

/**
 * Whether a valid record is under a name of its own: its page name or its
 * blob name (what a cache's store, or a store before pages, saves it
 * under), as `native` (a NativeCache) names them.
 */
export function ownName(native, r) {
  return r.name === native.pageName(r.tokens, r.dtype, r.fingerprint) || r.name === native.blobName(r.tokens, r.fingerprint);
}

/**
 * How many stored pages name each blob as their parent (name -> count): of
 * the store's fingerprint or another (a tool store's are all stale to it).
 */
function childCounts(records) {
  const out = new Map();
  for (const r of records) if (r.start && (r.status === 'ok' || r.status === 'stale')) out.set(r.parent, (out.get(r.parent) ?? 0) + 1);
  return out;
}

/**
 * Of `candidates` ({ r: record }, least recently used first), those a prune
 * removes to free `excess` bytes, leaves first: a page others still need
 * (children: childCounts) waits until they have gone, then goes in its
 * turn. Passes over the list until the bytes are freed or none can go.
 */
function leavesFirst(candidates, excess, children) {
  const picked = [], left = [...candidates];
  let freed = 0, progress = true;
  while (freed < excess && progress) {
    progress = false;
    for (let i = 0; i < left.length && freed < excess; i++) {
      const d = left[i];
      if (!d || children.get(d.r.name)) continue;
      picked.push(d);
      freed += d.r.bytes;
      left[i] = null;
      progress = true;
      if (d.r.start) children.set(d.r.parent, children.get(d.r.parent) - 1);
    }
  }
  return picked;
}

/** A blob record from what blobHead said of it. */
function recordOf(name, bytes, lastUse, info) {
  if (!info || !info.ok) return { name, bytes, lastUse, fingerprint: null, status: info?.tooLarge ? 'too-large' : 'corrupt' };
  return {
    name, bytes, lastUse, fingerprint: info.fingerprint, status: 'ok',
    dtype: info.dtype, tokens: info.tokens, nValues: info.nValues, rowMajor: info.rowMajor, ...pageOf(info.page),
  };
}

