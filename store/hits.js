// A cache's hits on its store: load() makes a stored-only entry resident,
// reading its blob (or its page and the parents memory lacks), checking it
// whole (format/blob.js) and putting it in memory, which may evict others:
// those that are stored stay known, stored-only. A hit on a page reads its
// parents first where memory lacks them. Three reads:
//   - a chain the index and the layout tell the shape of (#loadChain):
//     every page straight into its rows of one new entry, each checked
//     after;
//   - with a backend's readWith() (Node; OPFS in a worker, #loadDirect):
//     the values straight into the new entry's heap memory in one scatter
//     read, the structure checked from its first bytes;
//   - else the blob read whole into new memory and copied once into the
//     heap (#loadCopying).
import { RlxkvError, STATUS } from '../wasm/errors.js';
import { loadPart } from '../wasm/core.js';
import { DTYPE } from '../wasm/native-cache.js';
import { blobSpans, decodeBlob, getU64, headBytes, isUniformHead, MAX_LAYERS, u64Bytes, uniformBlobSize, uniformBlockLength } from '../format/blob.js';
import { LITTLE_ENDIAN } from '../format/f16.js';
import { checkShape } from '../format/layout.js';
import { keyOfName } from '../format/store-index.js';
import { copyPages, entryOfRows, rowRuns } from './chain.js';
import { putFailed, refuse, sameTokens } from './records.js';

/** store/direct-read.js's reads (a chunk of the browser bundle, loaded by a first direct read). */
const directReads = () => loadPart(import('./direct-read.js'), 'direct read')
  .then((m) => m.directReads([RlxkvError, DTYPE, blobSpans, getU64, headBytes, isUniformHead, u64Bytes, uniformBlockLength, checkShape, rowRuns, sameTokens]));

/** The answer of #loadChain that leaves the hit to the general reads. */
const RETRY = Symbol('retry');

/** Whether a decoded page's fields (decodeBlob's page) are the ones a record's shape has (#shapeOf's page), or both are none. */
function samePage(a, b) {
  if (!a || !b) return !a && !b;
  return a.start === b.start && a.parentN === b.parentN && a.parent[0] === b.parent[0] && a.parent[1] === b.parent[1];
}

export class HitLoader {
  /** The store's state (store/state.js). */
  #s;
  /** name -> promise of a load under way. */
  #loading = new Map();
  /** Names of blobs hit since the last #touchNow, and its timer. */
  #toTouch = new Set();
  #touchTimer = null;
  /** { bytes }: the buffer store/direct-read.js readPageInto reads what a hit reads besides values into. */
  #readScratch = { bytes: new Uint8Array(0) };

  constructor(state) {
    this.#s = state;
  }

  /** Writes the uses recorded on the side (#touchSoon) now. */
  close() {
    return this.#touchNow();
  }

  /**
   * Makes the stored-only entry of these tokens resident: reads and checks
   * its blob and puts it. A blob that is gone, invalid, of other tokens or
   * not of the cache's layout leaves the store as it is, but the entry goes
   * from the index (so a lookup does not find it again). Resolves to
   * whether it is resident now. name: the blob's, if the caller has it
   * (a match gives it).
   */
  load(tokens, name = this.#s.nameOf(tokens)) {
    let p = this.#loading.get(name);
    if (!p) {
      p = this.#loadPage(name, tokens).finally(() => this.#loading.delete(name));
      this.#loading.set(name, p);
    }
    return p;
  }

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
    const record = this.#s.known.get(name);
    if (record?.start && !this.#holdsStart(tokens, record)) {
      const parent = this.#s.known.get(record.parent);
      const own = parent && parent.status === 'ok' && parent.tokens?.length === record.parentN &&
        sameTokens(parent.tokens.subarray(0, record.start), tokens.subarray(0, record.start));
      if (!own || !(await this.load(parent.tokens, parent.name))) {
        this.#s.native.blobGone(tokens); // found again at the next open, if its parent is
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
    const order = this.#s.layout?.order;
    if (order !== 'head-major' && order !== 'token-major') return null;
    const chain = [];
    for (let record = this.#s.known.get(name), t = tokens; ;) {
      const shape = this.#shapeOf(record, t);
      if (!shape || (chain.length && (shape.dtype !== chain[0].shape.dtype || shape.layers !== chain[0].shape.layers))) return null;
      chain.push({ name: record.name, record, tokens: t, shape });
      if (!record.start || this.#holdsStart(t, record)) break;
      const parent = this.#s.known.get(record.parent);
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
   * checked after (store/direct-read.js readPageInto, #copyPagesInto). RETRY when one is not
   * what the index says, or the entry cannot be put (the general reads
   * then judge each blob and say why).
   */
  async #loadChain(chain, tokens) {
    const start = chain[0].record.start ?? 0, rows = tokens.length - start;
    const { dtype, layers } = chain[0].shape;
    const made = entryOfRows(this.#s.native, tokens, start, this.#s.layout, dtype, layers);
    if (typeof made === 'number') return RETRY;
    let filled = false, settled = false;
    try {
      if (this.#s.blobs.direct) {
        const { readPageInto } = await directReads();
        const reads = await Promise.allSettled(chain.map((c) => this.#s.blobs.readWith(c.name, (f) => readPageInto(this.#s, f, c, made, start, rows, this.#readScratch))));
        filled = reads.every((r) => r.status === 'fulfilled' && r.value === true);
      } else {
        filled = this.#copyPagesInto(await Promise.allSettled(chain.map((c) => this.#s.blobs.read(c.name))), chain, made, start, rows);
      }
      if (filled && this.#isResident(tokens)) filled = 'resident'; // inserted while the pages were read
      settled = true;
    } finally {
      if (!settled || filled !== true) this.#s.native.entryFree(made); // closed meanwhile (#isResident threw): still ours
    }
    if (filled === 'resident') return true;
    if (!filled) return RETRY;
    const st = this.#s.native.entryPut(made, true);
    if (st === STATUS.NOTFOUND) return this.#parentLost(tokens);
    if (st < 0) return RETRY;
    for (const c of chain) this.#loaded(c.name, c.tokens);
    return true;
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
        p = read.status === 'fulfilled' && read.value && decodeBlob(read.value, this.#s.fp, true);
      } catch { /* judged again page by page */ }
      if (!p || p.dtype !== shape.dtype || p.k.length !== shape.layers || !sameTokens(p.tokens, tokens) ||
        !samePage(p.page, shape.page) || ![...p.k, ...p.v].every((b) => b.length === shape.block)) return false;
      pages.push(p);
    }
    copyPages(this.#s.native.valuesOf(made), this.#s.layout, rows, start,
      pages.map((p, i) => ({ from: chain[i].record.start ?? 0, to: chain[i].tokens.length, dtype: p.dtype, blocks: [...p.k, ...p.v] })));
    return true;
  }

  /**
   * Whether memory holds the first `upTo` tokens of the page `record`
   * describes (by default those before its own: a layout tells its rows;
   * else unknown: no).
   */
  #holdsStart(tokens, record, upTo = record.start) {
    const l = this.#s.layout;
    if (!l || record?.status !== 'ok') return false;
    const layers = record.nValues / (2 * (tokens.length - (record.start ?? 0)) * l.heads * l.headDim);
    if (!Number.isInteger(layers)) return false;
    return this.#s.native.held(tokens, DTYPE[record.dtype], new Array(2 * layers).fill(0)) >= upTo;
  }

  /**
   * Whether memory already holds every token's values of the stored entry
   * of these tokens, in a longer entry (a chain read with a page after
   * it): reading its page would add nothing.
   */
  covered(tokens) {
    return this.#holdsStart(tokens, this.#s.known.get(this.#s.nameOf(tokens)), tokens.length);
  }

  /** Reads and puts blob or page `name`, judging its bytes (the general reads). */
  #load(name, tokens) {
    return this.#s.blobs.direct ? this.#loadDirect(name, tokens) : this.#loadCopying(name, tokens);
  }

  /** load() over a backend's reads into new memory (read()): one copy, into the heap. */
  async #loadCopying(name, tokens) {
    const record = this.#s.known.get(name);
    let bytes;
    try {
      bytes = await this.#s.blobs.read(name);
    } catch (err) {
      if (!(err instanceof RangeError)) throw err;
      // Larger than this process can hold in one array: too large, kept.
      if (record) record.status = 'too-large';
      this.#s.native.blobGone(tokens);
      return false;
    }
    // Inserted while the blob was read: what is in memory is newer.
    if (this.#isResident(tokens)) return true;
    let entry = null;
    try {
      entry = bytes && decodeBlob(bytes, this.#s.fp, true);
      if (entry && !sameTokens(entry.tokens, tokens)) entry = null;
      if (entry) checkShape(entry.tokens.length - (entry.page?.start ?? 0), entry, this.#s.layout, 'blob');
    } catch (err) {
      refuse(record, err);
      entry = null;
    }
    if (!entry) {
      if (!bytes) this.#s.known.delete(name);
      this.#s.native.blobGone(tokens);
      return false;
    }
    const st = this.#s.native.put(entry.tokens, [...entry.k, ...entry.v], DTYPE[entry.dtype], true, entry.page?.start ?? 0);
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
    this.#s.native.blobGone(tokens);
    return false;
  }

  #isResident(tokens) {
    const e = this.#s.native.get(tokens);
    return !!e && e.resident;
  }

  #loaded(name, tokens) {
    const record = this.#s.known.get(name);
    // Deleted by another cache (heard) while it was read: in memory, not stored.
    if (!record) this.#s.native.blobGone(tokens);
    else record.lastUse = Date.now();
    // In their index (at the next flush); a directory in file times too, which an open that rebuilds its index reads.
    if (this.#s.blobs.touch) this.#touchSoon(name);
    this.#s.used.add(name);
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
    return Promise.all(names.map((name) => this.#s.blobs.touch(name).catch(() => {})));
  }

  /**
   * load() over a backend's synchronous reads (readWith), when the index
   * and the layout do not tell the blob's shape (else #loadChain read it)
   * or it was not what they said: the values read straight into the new
   * entry's memory (store/direct-read.js readBlobInto). Same outcomes as
   * the copying path; a file that changes while it is read (written in
   * place by some other program) is a miss that leaves it as it is.
   */
  async #loadDirect(name, tokens) {
    const s = this.#s;
    const { readBlobInto } = await directReads();
    const { st, err } = await s.blobs.readWith(name, (f) => readBlobInto(s, f, tokens)) ?? { st: null };
    if (st === 'resident') return true;
    const record = this.#s.known.get(name);
    if (st === null || st === 'refused' || st === 'changed') {
      if (st === null) this.#s.known.delete(name);
      else if (err) refuse(record, err);
      // Changed: the blob is left as it is, known; its entry leaves the
      // tree so that this match ends, and the next open finds it again.
      this.#s.native.blobGone(tokens);
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
    const layout = this.#s.layout;
    if (!layout || !record || record.status !== 'ok' || !record.dtype || !LITTLE_ENDIAN) return null;
    const page = record.start ? { start: record.start, parentN: record.parentN, parent: keyOfName(record.parent) } : null;
    const block = layout.heads * layout.headDim * (tokens.length - (record.start ?? 0));
    const layers = layout.layers || record.nValues / (2 * block);
    if (!block || !Number.isInteger(layers) || layers < 1 || layers > MAX_LAYERS || 2 * layers * block !== record.nValues) return null;
    const size = uniformBlobSize(tokens.length, record.dtype, layers, block, !!page);
    return size === record.bytes ? { dtype: record.dtype, layers, block, size, page } : null;
  }

}
