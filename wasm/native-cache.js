// One C cache (rlxkv_cache, through wasm/boundary.c's wrapper) as JS sees it:
// tokens and KV go into the heap and hits come out of it here, and nowhere
// else. Arguments arrive checked by js/; this file only moves bytes and
// reads the result record whose layout wasm/boundary.c fixes.
import { RlxkvError, STATUS } from './errors.js';
import { toSize } from './core.js';

// The result record (wasm/boundary.c, enum REC_*), in u32 words.
export const REC = {
  MATCHED: 0, ENTRY: 1, LAYERS: 2, DTYPE: 3, TOKENS: 4, GENERATION: 5, DATA: 6, FLAGS: 7, SERIAL: 8, N_TOKENS: 9,
  PIECES: 10, START: 11, PARENT_N: 12, PARENT_TOKENS: 13, HEAD: 16,
};
/** REC.FLAGS bits (wasm/boundary.c) */
export const REC_FLAG = { RESIDENT: 1, DIRTY: 2, PINNED: 4 };
/** rlxkv_dtype (src/rlxkv.h) */
export const DTYPE = { f32: 0, f16: 1 };
/** A page name's dtype (rlxkv_page_key): rlxkv_dtype's, and 2 for a published q8 page (FORMATS.md), which no entry has. */
const NAME_DTYPE = { ...DTYPE, q8: 2 };
/** rlxkv_order (src/rlxkv.h) */
export const ORDER = { any: 0, 'token-major': 1, 'head-major': 2 };

/** Words of each entry's head in rlxkv_web_put_stored's scratch (wasm/boundary.c, STORED_HEAD). */
export const STORED_HEAD = 10;
/** Scratch words per rlxkv_web_put_stored call: 1 MiB. */
const STORED_BATCH = 1 << 18;

/** rlxkv_web_stats' doubles, in order (wasm/boundary.c, STATS_FIELDS). */
export const STATS = ['entries', 'bytes', 'capBytes', 'pinnedEntries', 'pinnedBytes', 'hits', 'misses', 'evictions',
  'tokensReused', 'storedEntries', 'storedBytes'];

const HAS_F16 = typeof globalThis.Float16Array === 'function';

/**
 * Every C function this file calls (wasm/exports.txt), bound once per
 * module instance, as sql.js binds its own: names as in C. Everything
 * below calls these, never the module's exports directly.
 */
const C_FUNCTIONS = [
  'rlxkv_blob_name',
  'rlxkv_cache_clear',
  'rlxkv_cache_get',
  'rlxkv_cache_is_dirty',
  'rlxkv_cache_is_pinned',
  'rlxkv_cache_next',
  'rlxkv_cache_next_stored',
  'rlxkv_cache_pin',
  'rlxkv_cache_remove',
  'rlxkv_cache_set_cap',
  'rlxkv_cache_set_stored_index',
  'rlxkv_cache_unpin',
  'rlxkv_entry_dtype',
  'rlxkv_entry_free',
  'rlxkv_entry_kv_bytes',
  'rlxkv_entry_n_tokens',
  'rlxkv_entry_tokens',
  'rlxkv_q8_dequant',
  'rlxkv_web_cache_free',
  'rlxkv_web_cache_new',
  'rlxkv_web_cache_of',
  'rlxkv_web_entry',
  'rlxkv_web_entry_new',
  'rlxkv_web_generation',
  'rlxkv_web_get',
  'rlxkv_web_held',
  'rlxkv_web_lookup',
  'rlxkv_web_mark',
  'rlxkv_web_match',
  'rlxkv_web_page_keys',
  'rlxkv_web_put',
  'rlxkv_web_put_index',
  'rlxkv_web_put_stored',
  'rlxkv_web_record',
  'rlxkv_web_scratch',
  'rlxkv_web_stats',
];
const BOUND = new WeakMap();
function bindings(core) {
  let c = BOUND.get(core);
  if (!c) {
    const M = core.M;
    c = Object.freeze(Object.fromEntries(C_FUNCTIONS.map((name) => [name, M[`_${name}`]])));
    BOUND.set(core, c);
  }
  return c;
}

export class NativeCache {
  #core;
  #C;       // the C functions, bound once (bindings)
  #w;       // web_cache *
  #c;       // its rlxkv_cache *
  #stats;   // STATS_FIELDS (wasm/boundary.c) doubles
  #f16;     // the array type f16 hits come back as
  #fp;
  #layout;  // null, or the layout whose rows cut blocks
  #paging;

  /**
   * @param core  wasm/core.js Core
   * @param {{capBytes: number, fingerprint: bigint, layout: {order: string, heads: number, headDim: number, layers: number}|null, f16As: 'Float16Array'|'Uint16Array', paging?: boolean}} opts
   *   paging: entries that extend what the cache holds keep only their new
   *   tokens' values (src/rlxkv.h, Pages)
   */
  constructor(core, { capBytes, fingerprint, layout, f16As, paging = false }) {
    this.#core = core;
    this.#fp = fingerprint;
    const C = bindings(core);
    this.#C = C;
    const l = layout || { order: 'any', heads: 0, headDim: 0, layers: 0 };
    const w = C.rlxkv_web_cache_new(capBytes, fingerprint, ORDER[l.order], l.heads, l.headDim, l.layers, paging ? 1 : 0, core.cell) >>> 0;
    if (!w) throw core.fail(core.i32(core.cell), 'creating a cache');
    this.#w = w;
    try {
      this.#stats = core.alloc(STATS.length * 8);
    } catch (err) {
      C.rlxkv_web_cache_free(w);
      throw err;
    }
    this.#f16 = f16As === 'Float16Array' && HAS_F16 ? globalThis.Float16Array : Uint16Array;
    this.#c = C.rlxkv_web_cache_of(w) >>> 0; // the rlxkv_cache * within
    this.#layout = layout && layout.order !== 'any' ? layout : null;
    this.#paging = paging;
  }

  get paging() { return this.#paging; }

  /** The store index's block of wasm memory (holdIndex): its address (malloc's: 16-aligned, as its f64 columns need) and length. */
  #index = [0, 0];

  /**
   * A block of n bytes of wasm memory for a store's index, held until
   * free() (its columns serve putIndex in place, and the records made
   * later from them: format/store-index.js KnownRecords), in place of the
   * one held before (n 0: none). Returns a view of it now (or null);
   * indexBytes() views it again after the heap grows (which detaches
   * every view of it).
   */
  holdIndex(n) {
    this.#core.free(this.#index[0]);
    this.#index = [n && this.#core.alloc(n), n];
    return this.indexBytes();
  }

  /** The held index's bytes (holdIndex), viewed now; null if none is held. */
  indexBytes() {
    const [at, n] = this.#index;
    return at ? this.#core.u8.subarray(at, at + n) : null;
  }

  /** Frees the C cache and everything it holds. */
  free() {
    if (!this.#w) return;
    this.#C.rlxkv_web_cache_free(this.#w);
    this.#core.free(this.#stats);
    this.holdIndex(0);
    this.#w = 0;
  }

  /** What a FinalizationRegistry needs to free this cache without it. */
  get leakRecord() { return { core: this.#core, w: this.#w, stats: this.#stats }; }
  static freeLeaked({ core, w, stats }) {
    bindings(core).rlxkv_web_cache_free(w);
    core.free(stats);
  }

  #rec() { return this.#C.rlxkv_web_record(this.#web) >>> 2; }

  get closed() { return !this.#w; }

  /**
   * The web_cache * and the rlxkv_cache *, checked: once freed, every call
   * throws instead of handing C a freed (or NULL) cache, whatever awaited
   * across the close.
   */
  get #web() {
    if (!this.#w) throw new TypeError('cache is closed');
    return this.#w;
  }
  get #cache() {
    if (!this.#w) throw new TypeError('cache is closed');
    return this.#c;
  }

  /** Copies tokens (and room for `extra` u32s after them) into the scratch area; returns its address. */
  #scratch(tokens, extra = 0) {
    const core = this.#core;
    const p = this.#C.rlxkv_web_scratch(this.#web, tokens.length + extra) >>> 0;
    if (!p) throw new RlxkvError('NOMEM', `out of wasm memory for ${tokens.length} tokens`);
    core.u32.set(tokens, p >>> 2);
    return p;
  }

  /** Runs C function fn (one of this.#C) of (cache, tokens, n) over the tokens: what it returns. */
  #withTokens(fn, tokens) {
    const p = this.#scratch(tokens);
    return fn(this.#cache, p, tokens.length);
  }

  /**
   * A new entry from tokens and blocks (every K block, then every V block,
   * all Float32Array, or all 16-bit arrays for f16), put in the cache.
   * The blocks hold the values of tokens start..n-1; of those, only the
   * ones the cache does not already hold (rlxkv_cache_held: with paging,
   * the tokens a held prefix covers are skipped) are copied, once, into
   * the entry's own memory. Returns the C status of the put (RLXKV_OK,
   * NOSPACE, SHAPE, NOMEM; NOTFOUND when the cache holds fewer than
   * `start` of the first tokens); nothing leaks on failure.
   * loaded: the entry was read from its blob (or page), so clean, not dirty.
   */
  put(tokens, blocks, dtype, loaded = false, start = 0) {
    const core = this.#core;
    const rows = tokens.length - start;
    const units = rows ? blocks.map((b) => b.length / rows) : blocks.map(() => 0);
    const from = start + this.#skip(tokens, dtype, units, start);
    if (from < start) return STATUS.NOTFOUND;
    // Blocks that are views of the heap (a view hit fed back in) are found
    // again by address after allocating, which may grow the heap and
    // detach them: the bytes themselves stay where they were.
    const heap = core.u8.buffer;
    const spans = blocks.map((b) => [b.buffer === heap ? b.byteOffset : -1, b.byteLength]);
    const cut = from - start, keep = tokens.length - from;
    const heads = this.#layout?.order === 'head-major' ? this.#layout.heads : 1;
    return this.putFilled(tokens, blocks.map((b, i) => (cut ? units[i] * keep : b.length)), dtype, (dst) => {
      const u8 = core.u8;
      let to = dst.byteOffset;
      for (let i = 0; i < blocks.length; i++) {
        const [at, len] = spans[i];
        const size = blocks[i].BYTES_PER_ELEMENT, unit = units[i] / heads;
        // `heads` runs (1 unless head-major), each of rows rows: keep the last `keep`.
        const run = cut ? keep * unit * size : len / heads, stride = len / heads, skip = cut * unit * size;
        for (let h = 0; h < heads; h++) {
          const from0 = h * stride + (cut ? skip : 0);
          if (at >= 0) u8.copyWithin(to, at + from0, at + from0 + run);
          else u8.set(new Uint8Array(blocks[i].buffer, blocks[i].byteOffset + from0, run), to);
          to += run;
        }
      }
    }, loaded, from);
  }

  /**
   * How many of the tokens from `start` on a put of blocks of `units`
   * values per token need not bring: 0 without paging; -1 when the cache
   * holds fewer than `start` tokens of them (the put cannot chain).
   */
  #skip(tokens, dtype, units, start) {
    if (!this.#paging) return start ? -1 : 0;
    const rowMajor = units.every((u) => Number.isInteger(u));
    if (!rowMajor) return start ? -1 : 0;
    const layers = units.length / 2;
    const at = (this.#scratch(tokens, this.#layout ? 0 : units.length) >>> 2) + tokens.length;
    if (!this.#layout) this.#core.u32.set(units, at);
    const held = this.#C.rlxkv_web_held(this.#web, tokens.length, dtype, layers, this.#layout ? 0 : 1) >>> 0;
    // SIZE_MAX: what is held cannot stay beside these tokens (capBytes): every value is brought, and the put decides.
    return held === 0xffffffff ? 0 : held - start;
  }

  /**
   * A new entry of these tokens and block lengths (values; every K block,
   * then every V block), whose values fill(dst) writes: dst is a Uint8Array
   * over the entry's values in the heap, the blocks one after another. Then
   * put in the cache: what a blob read straight into the heap uses. fill
   * must not allocate in wasm. Returns the C status of the put; if fill throws, the
   * entry is freed and the error goes on. loaded: as put's. start: the
   * lengths are of the values of tokens start..n-1 (a page).
   */
  putFilled(tokens, lengths, dtype, fill, loaded = false, start = 0) {
    const made = this.entryNew(tokens, lengths, dtype, start);
    if (typeof made === 'number') return made;
    try {
      fill(this.valuesOf(made));
    } catch (err) {
      this.entryFree(made);
      throw err;
    }
    return this.entryPut(made, loaded);
  }

  /**
   * putFilled in steps, for values that arrive across awaits (a hit read
   * from several pages): a new entry, not yet in the cache, of these
   * tokens and block lengths (as putFilled's), or the C status (< 0) if
   * none could be made. The caller owns it until entryPut takes it, or
   * frees it with entryFree; valuesOf(made) views its values (made again
   * after every await: the heap may have grown).
   */
  entryNew(tokens, lengths, dtype, start = 0) {
    const core = this.#core, C = this.#C;
    const layers = lengths.length / 2;
    const at = (this.#scratch(tokens, 2 * layers) >>> 2) + tokens.length;
    const u32 = core.u32;
    for (let i = 0; i < lengths.length; i++) u32[at + i] = lengths[i];
    const e = C.rlxkv_web_entry_new(this.#web, tokens.length, start, layers, dtype, core.cell) >>> 0;
    if (!e) return core.i32(core.cell);
    return { e, data: core.u32[this.#rec() + REC.DATA], bytes: C.rlxkv_entry_kv_bytes(e) >>> 0 };
  }
  valuesOf({ data, bytes }) { return this.#core.u8.subarray(data, data + bytes); }
  /**
   * Fills entryNew's entry (values `dtype`, 'f32' or 'f16') from an 8-bit
   * page (format/q8.js decodeQ8's, its blocks of the entry's rows):
   * dequantized in C (rlxkv_q8_dequant), the page's blocks copied into
   * wasm memory for it, which may grow the heap: views made before are
   * stale. False if that memory cannot be had, or a block is not of the
   * entry's rows.
   */
  dequantInto({ data }, { bytes, group, k, v }, dtype) {
    if (!k.length) return true; // no layers: no values
    const core = this.#core, from = k[0].at - 8; // the first block's length: the blocks follow one another to the end
    let src;
    try {
      src = core.alloc(bytes.length - from);
    } catch {
      return false;
    }
    core.u8.set(bytes.subarray(from), src);
    const read = this.#C.rlxkv_q8_dequant(data, DTYPE[dtype], src, bytes.length - from, k.length + v.length, k[0].length / group, group);
    core.free(src);
    return read > 0;
  }
  entryFree({ e }) { this.#C.rlxkv_entry_free(e); }
  /** Puts entryNew's entry (taken in every case): the C status of the put. loaded: as put's. */
  entryPut({ e }, loaded = false) {
    if (!this.#w) this.#C.rlxkv_entry_free(e); // closed while it was filled: #web throws
    return this.#C.rlxkv_web_put(this.#web, e, loaded ? 1 : 0);
  }

  /**
   * The hit for tokens: null on a miss, else { matched, dtype, tokens, k, v,
   * view, valid }. view: arrays over the heap where the hit's values are
   * contiguous in each block (else copies, and view is false).
   */
  lookup(tokens, { partial = false, maxMatched = tokens.length, view = false } = {}) {
    const core = this.#core;
    this.#scratch(tokens);
    const st = this.#C.rlxkv_web_lookup(this.#web, tokens.length, partial ? 1 : 0, maxMatched);
    if (st < 0) throw core.fail(st, 'looking up');
    return st === STATUS.HIT ? this.#readHit(view) : null;
  }

  /**
   * The longest cached prefix over memory and storage (rlxkv_cache_match):
   * null on a miss, a hit as lookup gives for a resident entry, or, for a
   * stored-only one, { stored: true, entryTokens, dtype } (load its blob or
   * page, put it, and look up again).
   */
  match(tokens, { partial = false, maxMatched = tokens.length, view = false } = {}) {
    const core = this.#core;
    this.#scratch(tokens);
    const st = this.#C.rlxkv_web_match(this.#web, tokens.length, partial ? 1 : 0, maxMatched);
    if (st < 0) throw core.fail(st, 'matching');
    if (st !== STATUS.HIT) return null;
    const u32 = core.u32, r = this.#rec();
    if (u32[r + REC.FLAGS] & REC_FLAG.RESIDENT) return this.#readHit(view);
    const at = u32[r + REC.TOKENS] >>> 2;
    return { stored: true, entryTokens: u32.slice(at, at + u32[r + REC.N_TOKENS]), dtype: u32[r + REC.DTYPE] === DTYPE.f16 ? 'f16' : 'f32' };
  }

  /**
   * Stored-only entries (src/rlxkv.h, Tiers) for records { tokens, dtype,
   * nValues, rowMajor }, in order, a few C calls for them all (an index's
   * thousands at open): each one's C status, in an Int32Array. Tokens are
   * copied in by the buffer they are views of, each buffer's span once;
   * records whose tokens begin at the same place of one buffer (a chain
   * of pages sharing its path: format/store-index.js pathsOf) are placed each from
   * the one before (rlxkv_cache_put_stored_many), not from the root.
   */
  putStored(records) {
    const core = this.#core, C = this.#C;
    const status = new Int32Array(records.length);
    for (let i = 0; i < records.length;) {
      // A batch: as many as fit STORED_BATCH words of scratch (at least
      // one), with the span of each buffer their tokens lie in.
      const spans = new Map();
      let end = i, words = 0;
      for (; end < records.length; end++) {
        const t = records[end].tokens, lo = t.byteOffset, hi = lo + t.byteLength, s = spans.get(t.buffer);
        const more = s ? ((Math.max(hi, s.hi) - Math.min(lo, s.lo)) - (s.hi - s.lo)) >> 2 : (hi - lo) >> 2;
        if (end > i && STORED_HEAD * (end - i + 1) + words + more > STORED_BATCH) break;
        if (s) { s.lo = Math.min(lo, s.lo); s.hi = Math.max(hi, s.hi); } else spans.set(t.buffer, { lo, hi });
        words += more;
      }
      const count = end - i;
      const p = C.rlxkv_web_scratch(this.#web, STORED_HEAD * count + words) >>> 2;
      if (!p) throw new RlxkvError('NOMEM', `out of wasm memory for ${count} stored entries`);
      const u32 = core.u32, area = p + STORED_HEAD * count;
      let at = 0;
      for (const [buffer, s] of spans) {
        s.at = at;
        const n = (s.hi - s.lo) >> 2;
        if (n) u32.set(new Uint32Array(buffer, s.lo, n), area + at);
        at += n;
      }
      const last = new Map(); // tokens_at -> 1 + the index of the last record there
      for (let k = i, head = p; k < end; k++, head += STORED_HEAD) {
        const r = records[k], t = r.tokens;
        const fits = r.nValues >= 0 && r.nValues === toSize(r.nValues); // else INVALID
        const tokensAt = spans.get(t.buffer).at + ((t.byteOffset - spans.get(t.buffer).lo) >> 2);
        // rlxkv_stored: tokens_at, n_tokens, n_values, like, parent, start, parent_n, dtype, row_major, status
        u32[head] = tokensAt;
        u32[head + 1] = t.length;
        u32[head + 2] = fits ? r.nValues : 0;
        u32[head + 3] = last.get(tokensAt) ?? 0;
        u32[head + 4] = u32[head + 5] = u32[head + 6] = 0;
        u32[head + 7] = fits ? DTYPE[r.dtype] : 0xff;
        u32[head + 8] = r.rowMajor ? 1 : 0;
        u32[head + 9] = 0;
        last.set(tokensAt, k - i + 1);
      }
      const st = C.rlxkv_web_put_stored(this.#web, count, words);
      const out = core.u32; // read after the call: the heap may have grown
      for (let k = i, head = p + 9; k < end; k++, head += STORED_HEAD) status[k] = st < 0 ? st : out[head] | 0;
      i = end;
    }
    return status;
  }

  /**
   * Stored-only entries for the records of a store index as its columns
   * give them (format/store-index.js, RLXKVIX4), in one C call
   * (rlxkv_web_put_index) that reads them in place: views of the index
   * block (holdIndex) { count, nValues, starts (start, then parentN: 2 × count), bytes,
   * lastUse, fps, ns (own token counts), parents (place + 1, or 0), flags
   * (the index's, 128: skip), low, places, highs (the own tokens as the
   * index stores them: low 16 bits, and the places and high halves of
   * those of 0x10000 or more), nameBytes (the names, each followed by
   * '/': only counted here) }. Resolves to { status: each record's C
   * status, an Int32Array (NOTFOUND: its path breaks; INVALID: not
   * placed), counts: the open's report of the records not skipped whose
   * path holds ({ indexed, bytes, stale, corrupt, foreign, tooLarge,
   * skipped }), special: the places of those not skipped that are corrupt,
   * too large or whose path breaks }, or a status < 0 for them all
   * (CORRUPT: a column no index holds, or names of another count).
   */
  putIndex({ count, nValues, starts, bytes, lastUse, fps, ns, parents, flags, low, places, highs, nameBytes }) {
    const core = this.#core, C = this.#C;
    // (Taken before the scratch area may grow the heap, which detaches the views: offsets and lengths read 0 after.)
    const addresses = [nValues, bytes, lastUse, starts, fps, ns, parents, flags, low, places, highs, nameBytes].map((c) => c.byteOffset);
    const nTokens = low.length, high = places.length, nNames = nameBytes.length;
    // The addresses in; 16 words of sums, then the special places and each record's status, out.
    const p = C.rlxkv_web_scratch(this.#web, 16 + 2 * count) >>> 2;
    if (!p) throw new RlxkvError('NOMEM', `out of wasm memory for ${count} stored entries`);
    core.u32.set(addresses, p);
    const st = C.rlxkv_web_put_index(this.#web, count, nTokens, high, nNames);
    if (st < 0) return st;
    const out = core.u32.buffer, at = 4 * p, sums = new Float64Array(out, at, 7), n = core.u32[p + 14];
    return {
      status: new Int32Array(out, at + 4 * (16 + count), count).slice(),
      counts: { indexed: sums[0], bytes: sums[1], stale: sums[2], corrupt: sums[3], foreign: sums[4], tooLarge: sums[5], skipped: sums[6] },
      special: new Uint32Array(out, at + 64, n).slice(),
    };
  }

  /** Stored-only entries keep standing for their blobs after eviction (see src/rlxkv.h, Tiers). */
  setStoredIndex(on) { this.#C.rlxkv_cache_set_stored_index(this.#cache, on ? 1 : 0); }

  /**
   * Calls fn({ tokens, serial, start, dtype, k, v }) for every resident
   * entry that is dirty (not yet stored): tokens a copy, k/v views of the
   * heap of the values it holds itself (of tokens start..n-1), valid only
   * during the call (fn must not change the cache).
   */
  forEachDirty(fn) {
    const core = this.#core, C = this.#C, c = this.#cache;
    for (let e = C.rlxkv_cache_next(c, 0) >>> 0; e; e = C.rlxkv_cache_next(c, e) >>> 0) {
      if (!C.rlxkv_cache_is_dirty(c, e)) continue;
      C.rlxkv_web_entry(this.#web, e, 1);
      const hit = this.#readHit(true);
      const r = this.#rec();
      fn({ tokens: hit.tokens.slice(), serial: core.u32[r + REC.SERIAL], start: core.u32[r + REC.START], dtype: hit.dtype, k: hit.k, v: hit.v });
    }
  }

  /** Tokens of every entry of one tier: 'resident' (pinned, then most recent first) or 'stored' (most recent first). */
  tokensOf(tier) {
    const core = this.#core, C = this.#C, c = this.#cache;
    const next = tier === 'stored' ? C.rlxkv_cache_next_stored : C.rlxkv_cache_next;
    const out = [];
    for (let e = next(c, 0) >>> 0; e; e = next(c, e) >>> 0) {
      const at = C.rlxkv_entry_tokens(e) >>> 2;
      out.push(core.u32.slice(at, at + (C.rlxkv_entry_n_tokens(e) >>> 0)));
    }
    return out;
  }

  /**
   * Marks the resident entry of these tokens clean (stored) or unstored (its
   * blob removed), if it is still the one of `serial`. Whether it was.
   */
  mark(tokens, serial, how) {
    this.#scratch(tokens);
    return this.#C.rlxkv_web_mark(this.#web, tokens.length, serial, how === 'clean' ? 1 : 2) === 1;
  }

  /**
   * The page name (src/rlxkv.h, rlxkv_page_name) of an entry of these
   * tokens and dtype ('f32' or 'f16') under this cache's fingerprint (or
   * another): what a cache's store names what it saves.
   */
  pageName(tokens, dtype, fingerprint = this.#fp) {
    return this.pageNames(tokens, dtype, [tokens.length], fingerprint)[0];
  }

  /**
   * The page names of the prefixes of `tokens` that end at each of `ends`
   * (ascending, none past the tokens: the caller checks), of dtype ('f32',
   * 'f16' or 'q8'), in one pass over the tokens (wasm/boundary.c,
   * rlxkv_web_page_keys).
   */
  pageNames(tokens, dtype, ends, fingerprint = this.#fp) {
    const n = tokens.length, m = ends.length;
    const p = this.#scratch(tokens, 5 * m) >>> 2; // the ends, then four words of key each
    this.#core.u32.set(ends, p + n);
    this.#C.rlxkv_web_page_keys(fingerprint, NAME_DTYPE[dtype], 4 * p, 4 * (p + n), m, 4 * (p + n + m));
    const u32 = this.#core.u32, hex = (i) => u32[i].toString(16).padStart(8, '0');
    return ends.map((_, i) => {
      const at = p + n + m + 4 * i;
      return `${hex(at)}${hex(at + 1)}${hex(at + 2)}${hex(at + 3)}.rlxkv`;
    });
  }

  /** The 64-bit blob name (rlxkv_blob_name) of an entry of these tokens under this cache's fingerprint (or another): what stores before pages named blobs. */
  blobName(tokens, fingerprint = this.#fp) {
    const core = this.#core;
    const p = this.#scratch(tokens, 8); // 32 bytes for the name after the tokens
    const name = p + 4 * tokens.length;
    this.#C.rlxkv_blob_name(fingerprint, p, tokens.length, name);
    return core.cstringAt(name);
  }

  /**
   * The entry with exactly these tokens, whole, as views (no LRU touch), or
   * null; with { serial, dirty, resident, pinned } (a stored-only entry has
   * no k/v values: empty arrays). With own: the values it holds itself (its
   * page: of tokens start..n-1), and { start, parent: its parent's tokens
   * (a copy), or null }.
   */
  get(tokens, { own = false } = {}) {
    const core = this.#core;
    this.#scratch(tokens);
    const st = this.#C.rlxkv_web_get(this.#web, tokens.length, own ? 1 : 0);
    if (st < 0) throw core.fail(st, 'reading an entry');
    if (st !== STATUS.HIT) return null;
    const u32 = core.u32, r = this.#rec(), flags = u32[r + REC.FLAGS];
    const start = u32[r + REC.START], parentN = u32[r + REC.PARENT_N], parentAt = u32[r + REC.PARENT_TOKENS] >>> 2;
    const parent = own && parentN ? u32.slice(parentAt, parentAt + parentN) : null;
    const hit = this.#readHit(true);
    return Object.assign(hit, {
      serial: u32[r + REC.SERIAL],
      dirty: (flags & REC_FLAG.DIRTY) !== 0,
      resident: (flags & REC_FLAG.RESIDENT) !== 0,
      pinned: (flags & REC_FLAG.PINNED) !== 0,
      start,
      parent,
    });
  }

  /**
   * How many leading tokens of these the cache holds for a put of blocks
   * of dtype with `units` values per token each (see #skip): a page of
   * start s can be put once this is at least s.
   */
  held(tokens, dtype, units) {
    return this.#skip(tokens, dtype, units, 0);
  }

  /**
   * The blob of the entry of these tokens is gone (deleted, or bad): a
   * stored-only entry goes; a resident one stays in memory, no longer
   * stored, unless it is dirty (changed since it was saved: saved again).
   */
  blobGone(tokens) {
    const e = this.get(tokens);
    if (!e) return;
    if (!e.resident) this.remove(tokens);
    else if (!e.dirty) this.mark(tokens, e.serial, 'unstored');
  }

  /**
   * Reads the record of a hit: arrays of the values it covers. One piece
   * whose blocks are one run each can be viewed in place (with view); else
   * each block is gathered from its pieces into one new array (one copy,
   * view false).
   */
  #readHit(view) {
    const core = this.#core;
    const u32 = core.u32, r = this.#rec();
    const matched = u32[r + REC.MATCHED], layers = u32[r + REC.LAYERS], count = u32[r + REC.PIECES];
    const dtype = u32[r + REC.DTYPE] === DTYPE.f16 ? 'f16' : 'f32';
    const tokensAt = u32[r + REC.TOKENS];
    const blocks = 2 * layers, words = 2 + 4 * blocks;
    const pieces = [];
    let contiguous = count === 1;
    for (let k = 0, at = r + REC.HEAD; k < count; k++, at += words) {
      const runs = [];
      for (let b = 0, s = at + 2; b < blocks; b++, s += 4) {
        runs.push([u32[s], u32[s + 1], u32[s + 2], u32[s + 3]]); // address, run, stride, count
        if (u32[s + 3] > 1) contiguous = false;
      }
      pieces.push({ from: u32[at], to: u32[at + 1], runs });
    }
    const Type = dtype === 'f16' ? this.#f16 : Float32Array;
    if (view && contiguous) {
      return new HeapHit(this, core, matched, dtype, [tokensAt, matched], pieces[0].runs, layers, Type, u32[r + REC.GENERATION]);
    }
    const buf = core.u8.buffer;
    const out = [];
    for (let b = 0; b < blocks; b++) out.push(gather(buf, Type, pieces, b, pieces.length === 1 ? 0 : matched));
    return {
      matched,
      dtype,
      view: false,
      valid: true,
      tokens: new Uint32Array(buf.slice(tokensAt, tokensAt + 4 * matched)),
      k: out.slice(0, layers),
      v: out.slice(layers),
    };
  }

  /** The low 32 bits of the C generation: a view taken at g is valid while it is g. */
  generation() { return this.#C.rlxkv_web_generation(this.#web) >>> 0; }

  /** C statuses: OK, NOTFOUND. */
  remove(tokens) { return this.#withTokens(this.#C.rlxkv_cache_remove, tokens); }
  pin(tokens) { return this.#withTokens(this.#C.rlxkv_cache_pin, tokens); }
  unpin(tokens) { return this.#withTokens(this.#C.rlxkv_cache_unpin, tokens); }
  has(tokens) { return this.#withTokens(this.#C.rlxkv_cache_get, tokens) !== 0; }
  isPinned(tokens) {
    const e = this.#withTokens(this.#C.rlxkv_cache_get, tokens) >>> 0;
    return e !== 0 && this.#C.rlxkv_cache_is_pinned(this.#cache, e) === 1;
  }
  clear() { this.#C.rlxkv_cache_clear(this.#cache); }
  setCap(bytes) { this.#C.rlxkv_cache_set_cap(this.#cache, toSize(bytes)); }

  /**
   * Entries: resident ones (pinned first, then most recent first), then
   * stored-only ones (most recent first): { tokens, bytes, pinned, dtype, resident }.
   */
  entries() {
    const core = this.#core, C = this.#C, c = this.#cache;
    const out = [];
    for (const [next, resident] of [[C.rlxkv_cache_next, true], [C.rlxkv_cache_next_stored, false]]) {
      for (let e = next(c, 0) >>> 0; e; e = next(c, e) >>> 0) {
        const at = C.rlxkv_entry_tokens(e) >>> 2;
        out.push({
          tokens: core.u32.slice(at, at + (C.rlxkv_entry_n_tokens(e) >>> 0)),
          bytes: C.rlxkv_entry_kv_bytes(e) >>> 0,
          pinned: C.rlxkv_cache_is_pinned(c, e) === 1,
          dtype: C.rlxkv_entry_dtype(e) === DTYPE.f16 ? 'f16' : 'f32',
          resident,
        });
      }
    }
    return out;
  }

  stats() {
    const core = this.#core;
    this.#C.rlxkv_web_stats(this.#cache, this.#stats);
    const d = new Float64Array(core.u8.buffer, this.#stats, STATS.length);
    return Object.fromEntries(STATS.map((name, i) => [name, d[i]]));
  }
}

/**
 * Block b of a hit, from its pieces, into one new array laid out as one
 * whole entry cut to `matched` tokens: run r of a piece of tokens from..to-1
 * lands at (r * matched + from) * unit values, unit being its values per
 * token. One piece (matched 0 here) is its runs back to back.
 */
function gather(buf, Type, pieces, b, matched) {
  const size = Type.BYTES_PER_ELEMENT;
  if (pieces.length === 1) {
    const [addr, run, stride, count] = pieces[0].runs[b];
    if (count === 1) return new Type(buf.slice(addr, addr + run * size));
    const out = new Type(run * count), src = new Type(buf);
    for (let i = 0, from = addr / size; i < count; i++, from += stride) out.set(src.subarray(from, from + run), i * run);
    return out;
  }
  let total = 0;
  for (const p of pieces) total += p.runs[b][1] * p.runs[b][3];
  const out = new Type(total), src = new Type(buf);
  for (const { from: first, to, runs } of pieces) {
    const [addr, run, stride, count] = runs[b];
    const unit = run / (to - first);
    for (let i = 0, at = addr / size; i < count; i++, at += stride) out.set(src.subarray(at, at + run), (i * matched + first) * unit);
  }
  return out;
}

/**
 * A zero-copy hit: typed arrays over the wasm heap (an entry's own
 * values), valid until the cache frees an entry (the C generation moves
 * on). Memory growth detaches views,
 * so the getters re-derive them from the current buffer; once the entry may
 * be gone they throw RlxkvError 'STALE_VIEW' instead of reading what now
 * lies there.
 */
class HeapHit {
  #s;
  constructor(cache, core, matched, dtype, tokSpan, runs, layers, Type, generation) {
    this.matched = matched;
    this.dtype = dtype;
    this.view = true;
    this.#s = { cache, core, tokSpan, runs, layers, Type, generation, buf: null };
  }
  /** False once the cache has freed an entry since this hit (or was closed). */
  get valid() {
    const s = this.#s;
    return !s.cache.closed && s.cache.generation() === s.generation;
  }
  #derive() {
    const s = this.#s;
    if (!this.valid) throw new RlxkvError('STALE_VIEW', 'this view hit is stale: the cache freed entries since (take copies, or look up again)');
    const buf = s.core.u8.buffer;
    if (s.buf !== buf) {
      s.tokens = new Uint32Array(buf, s.tokSpan[0], s.tokSpan[1]);
      const blocks = s.runs.map(([addr, run]) => new s.Type(buf, addr, run));
      s.k = blocks.slice(0, s.layers);
      s.v = blocks.slice(s.layers);
      s.buf = buf;
    }
    return s;
  }
  get tokens() { return this.#derive().tokens; }
  get k() { return this.#derive().k; }
  get v() { return this.#derive().v; }
}
