// Storage as a tier below memory: a cache's blobs in a backend (a Node
// directory, IndexedDB or the Origin Private File System, each keeping
// store/backend.js's contract), known to the cache as stored-only entries
// (src/rlxkv.h, Tiers) and read on a hit. Its parts live by job: the
// backends by kind and whole-store copies (store/backends.js), the records
// it keeps of blobs (store/records.js), direct reads (store/blob-reads.js),
// the news stores tell each other (store/news.js); here, what ties them
// to one cache:
//
//   open:  reads the index, never the KV, and checks it against the
//          store's names only when the backend cannot vouch for it
//          (#openIndex's steps). The index's records go into the C cache
//          in one call and are made in JS only when asked for
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
//   flush: each dirty entry encoded from the heap as the backend asks
//          for it and written with the index's update in one commit
//          (store/backend.js), then marked clean if it is still the entry
//          that was encoded.
//   prune: least recently used first: stored-only entries before resident
//          ones, pinned ones never; of other fingerprints, never unless asked.
import { RlxkvError, STATUS } from '../wasm/errors.js';
import { DTYPE } from '../wasm/native-cache.js';
import {
  blobHead, blobSize, blobSpans, decodeBlob, encodeBlob, encodePieces, bitsOf, headBytes, MAX_LAYERS, u64Bytes,
  isUniformHead, uniformBlobSize, uniformBlockLength,
} from '../format/blob.js';
import { LITTLE_ENDIAN } from '../format/f16.js';
import { checkShape } from '../format/layout.js';
import { copyPages, entryOfRows, rowRuns } from './chain.js';
import {
  FLAG_CORRUPT, FLAG_SKIP, KnownRecords, indexColumns, keyOfName, mergeIndex, newestOf, pageOf, parseIndex,
} from '../format/store-index.js';
import { BACKENDS } from './backends.js';
import { CHANGED, MISPREDICTED, RETRY, readAt, readValues, repeats, samePage } from './blob-reads.js';
import { NEWS_VERSION, channelOf, isBlobName, newsOf, tellOnce } from './news.js';
import { childCounts, infoOf, leavesFirst, ownName, putFailed, recordOf, refuse, sameTokens } from './records.js';

/** The restore report's count of a blob left out of the tree, by its status. */
const ADMIT_COUNT = { corrupt: 'corrupt', 'too-large': 'tooLarge', stale: 'stale', foreign: 'foreign', unreadable: 'unreadable' };
const HEAD_READ = 64 << 10;         // first bytes read to index a blob (a 8,000-token prompt)
const NEWS_NAMES = 4096;            // names taken from one message of another store; more is junk

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
  #temporaryFiles = [];
  #swept = 0;
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
    await this.#openIndex();
    /** Whether the store can be read but not written (a read-only directory). */
    this.readOnly = !!this.#blobs.readOnly;
    const temporaries = this.#temporaryFiles;
    const report = {
      indexed: 0, stale: 0, corrupt: 0, skipped: 0, bytes: 0, foreign: 0, tooLarge: 0, unreadable: 0,
      temporaries: temporaries.length, temporaryBytes: temporaries.reduce((n, t) => n + t.bytes, 0), swept: this.#swept,
    };
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
   * for (KnownRecords); an older one record by record. null if there is
   * no index or it is damaged; else { bad: name -> status of records
   * corrupt or too large (kept, to read again: a writer may have replaced
   * them since), unresolved: names of pages whose path breaks in it (left
   * out, to read), newest: its most recently used name, count: its
   * records }.
   */
  #adoptIndex(bytes) {
    const bad = new Map(), unresolved = new Set();
    const cols = indexColumns(bytes);
    if (!cols) {
      const stored = parseIndex(bytes);
      if (!stored) return null;
      const kept = [...stored.values()];
      for (const r of kept) if (r.status === 'corrupt' || r.status === 'too-large') bad.set(r.name, r.status);
      this.#admit(kept);
      return { bad, unresolved, newest: newestOf(kept), count: stored.size };
    }
    const { count, names } = cols;
    const flags = cols.flags.slice();
    const known = this.#known;
    known.adopt(cols, this.#fp, flags);
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
    return { bad, unresolved, newest, count };
  }

  /**
   * The blobs `missing` (the index lacks them, describes them as bad, or
   * their path breaks in it: adopted's) read, their first bytes, and
   * added. The records to write back into the index.
   */
  async #repair(adopted, missing) {
    const { bad = new Map(), unresolved = new Set() } = adopted ?? {};
    const { blobs: files } = missing.length ? await this.#blobs.list(missing) : { blobs: [] };
    const repaired = await this.#headRecords(files);
    this.#admit(repaired);
    // A page whose path broke in the index is written back as it was (it breaks again: an orphan, for a prune).
    return repaired.filter((r) => !unresolved.has(r.name) && (!bad.has(r.name) || bad.get(r.name) !== r.status));
  }

  /**
   * The open, the same over every backend (store/backend.js):
   *   1. the index is read and adopted (#adoptIndex); if the backend
   *      vouches that it describes every blob (a directory's stamp,
   *      OPFS's writers' markers, IndexedDB's census), that is all but
   *      the pages whose path breaks in it, read by name;
   *   2. else the names are listed: the records of blobs gone leave, and
   *      the blobs it does not describe (or describes as corrupt or too
   *      large, or whose path breaks in it) are read, their first bytes,
   *      and added;
   *   3. what step 2 found is written back into the index (only a hint: a
   *      store that cannot be written opens all the same);
   *   4. the backend hears how it went (opened(): a directory stamps an
   *      index its listing agreed with, OPFS clears its dead writers'
   *      markers or marks itself behind).
   * A blob rewritten in place under its name is not seen here: the hit that
   * reads it checks it whole.
   */
  async #openIndex() {
    const blobs = this.#blobs;
    const { bytes, describes, state } = await blobs.openIndex();
    const adopted = this.#adoptIndex(bytes);
    if (adopted && describes(adopted.count)) {
      // Pages whose path breaks in it (orphans) are read by name, as they always are: nothing to list.
      if (adopted.unresolved.size) await this.#repair(adopted, [...adopted.unresolved]);
      blobs.opened({ listed: false, current: true, written: true, newest: () => adopted.newest, temporaries: 0, state }).catch(() => {}); // a head start, not waited for
      return;
    }
    const { blobs: names, temporaries, swept } = await blobs.names({ sweep: !this.#tool });
    this.#temporaryFiles = temporaries;
    this.#swept = swept;
    const present = new Set(names);
    const dropped = [...this.#known.keys()].filter((n) => !present.has(n));
    for (const name of dropped) this.#drop(name);
    const bad = adopted?.bad ?? new Map();
    const news = await this.#repair(adopted, names.filter((n) => !this.#known.has(n) || bad.has(n)));
    const current = !!adopted && !news.length && !dropped.length;
    const written = (!news.length && !dropped.length) || await this.#writeRepairs(news, dropped).then(() => true, () => false);
    // newest: every record is made to find it, so only for a backend that asks (OPFS).
    await blobs.opened({ listed: true, current, written, newest: () => newestOf([...this.#known.values()]), temporaries: temporaries.length, state });
  }

  /**
   * The index updated with what an open
   * repaired: records read again (`news`) and names gone (`dropped`). A
   * record another writer put there since is kept, unless bad.
   */
  #writeRepairs(news, dropped) {
    const bad = (r) => r.status === 'corrupt' || r.status === 'too-large';
    return this.#blobs.commit({
      update: (cur, present) => mergeIndex(parseIndex(cur), { set: news, remove: dropped, keep: (was) => !bad(was), present }),
      names: [...news.map((r) => r.name), ...dropped],
    });
  }

  /** #headRecord of each file, as many at a time as the backend bears (headReads), those gone left out. */
  async #headRecords(files) {
    return (await mapBounded(files, this.#blobs.headReads, (file) => this.#headRecord(file))).filter(Boolean);
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
      if (this.#blobs.direct) {
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
    return this.#blobs.direct ? this.#loadDirect(name, tokens) : this.#loadCopying(name, tokens);
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
    // In their index (at the next flush); a directory in file times too, which an open that rebuilds its index reads.
    if (this.#blobs.touch) this.#touchSoon(name);
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
    // Encoded one at a time as the backend asks for the next (a directory
    // writes each entry's parts as they are made; IndexedDB gathers a
    // batch per transaction), each saved (#saved) as soon as it is written.
    const handed = [];
    const items = function* (store) {
      for (const d of dirty) {
        const item = store.#encode(d, store.#blobs.pieces && LITTLE_ENDIAN);
        if (!item) continue; // replaced or gone since
        handed.push(item);
        yield item;
      }
    };
    let failure = null;
    if (dirty.length || this.#used.size) {
      try {
        // A skipped save (its entry changed while written) is no longer under
        // way: a page after it in this flush then goes whole (#encode).
        await this.#commit({ items: items(this) }, { onSaved: (item) => this.#saved(item), onSkipped: (item) => this.#saving.delete(item.name) });
      } catch (err) {
        failure = err;
      } finally {
        for (const it of handed) this.#saving.delete(it.name);
      }
    }
    await this.#removePending(failed);
    if (failure) throw failure;
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
  async #commit(changes, calls) {
    const usedNames = [...this.#used];
    this.#used.clear();
    const uses = usedNames.map((n) => this.#known.get(n)).filter(Boolean);
    const removed = changes.removes ?? [];
    const update = (cur, present, saved) => {
      const records = saved.map((it) => it.record);
      if (!records.length && !removed.length && !uses.length) return undefined;
      const merge = (index) => mergeIndex(index, { set: records, remove: removed, uses, present });
      const index = parseIndex(cur);
      const changed = new Set([...records.map((r) => r.name), ...removed]);
      if (index || [...this.#known.keys()].every((n) => changed.has(n))) return merge(index);
      // A copy of each record: the merge raises last uses in the records it is given.
      return { bytes: merge(new Map([...this.#known].map(([n, r]) => [n, { ...r }]))), behind: true };
    };
    try {
      await this.#blobs.commit({ ...changes, update }, calls);
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
    const gone = [];
    const failure = await firstError(null, this.#commit({ removes: names }, { onRemoved: (n) => gone.push(n), retry }));
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
   * as a Map: from the index where it is complete (store/backend.js
   * indexComplete; null for a name it does not describe), else from each
   * blob's first bytes.
   */
  async #storeRecords(names) {
    const out = new Map();
    if (!this.#blobs.indexComplete) {
      const { blobs: files } = await this.#blobs.list(names);
      names.forEach((name) => out.set(name, null));
      for (const r of await this.#headRecords(files.filter(Boolean))) out.set(r.name, r);
      return out;
    }
    const index = (await this.#indexRecords()) ?? new Map();
    for (const name of names) out.set(name, index.get(name) ?? null);
    return out;
  }

  /** The index as it is now, parsed (null: none, or damaged). */
  async #indexRecords() {
    return parseIndex(await this.#blobs.readIndex());
  }

  /**
   * Makes what this store knows match what the store holds now, whoever
   * wrote it (other processes, tabs that do not watch): blobs it does not
   * know are added (stored-only entries, if of this cache) and blobs gone
   * are forgotten. A complete index (store/backend.js indexComplete) is
   * read (none: unchanged); else the store is listed, and only new or
   * resized blobs read. For a budget's prune, which must count every blob.
   */
  async #rescan() {
    // What is known of a blob stands while its size does (a blob's name
    // fixes its tokens and fingerprint): only the others are read or learnt.
    const unchanged = (name, bytes) => {
      const r = this.#known.get(name);
      return r && r.bytes === bytes && r.status !== 'unreadable' ? r : null;
    };
    let now;
    if (!this.#blobs.indexComplete) {
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
/** failure, or if none the error p rejects with (null if none): so that a cleanup's failure does not hide the first one. */
const firstError = (failure, p) => p.then(() => failure, (err) => failure ?? err);

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

