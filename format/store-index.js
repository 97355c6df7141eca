// The store index (RLXKVIX4, FORMATS.md): what IndexedDB's record, OPFS's
// file and a Node directory's file hold, so that an open reads it instead
// of every blob. Its codec (encodeIndex, parseIndex, mergeIndex), its
// columns read for an open (indexColumns) and the records an open takes
// from them (KnownRecords); a cache's open reads it (store/open.js), and
// every commit of its store updates it (store/state.js).

const INDEX_MAGIC = 'RLXKVIX4';
const INDEX_MAGIC_V3 = 'RLXKVIX3'; // read: every record's whole path of tokens
const INDEX_MAGIC_V2 = 'RLXKVIX2'; // read as a store of blobs only (no page columns)

/**
 * A page's fields of a record: start (its first token of values of its
 * own), parentN and parent (its parent's token count and blob name); none
 * for a blob (start 0).
 */
export function pageOf(page) {
  return page ? { start: page.start, parentN: page.parentN, parent: nameOfKey(page.parent) } : {};
}
/**
 * The name a page's parent key gives, and back (FORMATS.md, Pages): a page
 * name's 32 hex digits as two u64s, or a blob's 16 (its 64-bit name) as 0
 * and that.
 */
const hex16 = (x) => x.toString(16).padStart(16, '0');
export const nameOfKey = ([a, b]) => `${a ? hex16(a) : ''}${hex16(b)}.rlxkv`;
export function keyOfName(name) {
  const hex = name.slice(0, name.length - '.rlxkv'.length);
  return hex.length === 32 ? [BigInt(`0x${hex.slice(0, 16)}`), BigInt(`0x${hex.slice(16)}`)] : [0n, BigInt(`0x${hex}`)];
}

// ---- the store index (IndexedDB's record, OPFS's and a directory's file) ----
// 'RLXKVIX4': a header of six u32 words (the magic's two, count, tokens:
// all blobs' own, high: how many of those are 0x10000 or more, names:
// bytes of the names), then columns, a value per blob, oldest use first:
//   f64 bytes, f64 nValues, f64 lastUse, u64 fingerprint, f64 start,
//   f64 parentN (a page's first own token and its parent's token count; 0
//   for a blob), u32 n (its own tokens: a page's from start, a blob's
//   all), u32 parent (a page's parent's place in this index, plus 1; 0
//   if the index lacks it, or for a blob),
//   u8 flags (1 corrupt, 2 f16, 4 rowMajor, 8 foreign: under a name not
//   its own, 16 too large), zero bytes to a multiple of 4,
//   u16 the low 16 bits of every own token (blob after blob, n each), zero
//   bytes to a multiple of 4, u32 each high token's place among them, u16
//   its high 16 bits, zero bytes to a multiple of 4,
//   the names in UTF-8, each followed by '/' (no name holds one).
// A page's path is its parent's first `start` tokens, then its own: read
// by following parents (pathsOf), so that a chain of pages costs its
// tokens once, not each page's whole path again.
// 'RLXKVIX3' (before: every blob's whole path, u64 parent keys instead of
// places) and 'RLXKVIX2' (stores before pages: no page columns) are read
// too. Tokens take 2 bytes, not 4 (most of any vocabulary's are below
// 0x10000), widened in one typed-array conversion. The columns and the
// names are read as whole arrays, not field by field. (An index of
// another magic is rebuilt from the blobs, as a damaged one is.)
const pad4 = (at) => (at + 3) & ~3;
export const FLAG_CORRUPT = 1, FLAG_F16 = 2, FLAG_ROW_MAJOR = 4, FLAG_FOREIGN = 8, FLAG_TOO_LARGE = 16;
export const FLAG_SKIP = 128; // never in an index: NativeCache.putIndex's 'do not place'
const STATUS_FLAGS = { corrupt: FLAG_CORRUPT, foreign: FLAG_FOREIGN, 'too-large': FLAG_TOO_LARGE };
const INDEX_VERSIONS = { [INDEX_MAGIC]: 4, [INDEX_MAGIC_V3]: 3, [INDEX_MAGIC_V2]: 2 };

/**
 * A blob record as an index describes it: flags as the index's; indexed
 * (its name is not checked against its tokens again: the index says
 * foreign). One shape for every valid one (start, parentN, parent
 * undefined for a blob), made ten thousand at a time.
 */
function indexedRecord(name, bytes, lastUse, fingerprint, flags, tokens, nValues, start, parentN, parent) {
  if (flags & (FLAG_CORRUPT | FLAG_TOO_LARGE)) {
    return { name, bytes, lastUse, fingerprint: null, status: flags & FLAG_CORRUPT ? 'corrupt' : 'too-large' };
  }
  return {
    name, bytes, lastUse, fingerprint, status: flags & FLAG_FOREIGN ? 'foreign' : 'ok', dtype: flags & FLAG_F16 ? 'f16' : 'f32',
    tokens, nValues, rowMajor: !!(flags & FLAG_ROW_MAJOR), indexed: true,
    start: start || undefined, parentN: start ? parentN : undefined, parent: start ? parent : undefined,
  };
}
const UTF8_ENCODER = new TextEncoder(), UTF8_DECODER = new TextDecoder();

/**
 * Where each part of an index of count blobs, total tokens, high of them
 * high, lies, by version (4: RLXKVIX4, 3, 2). Column offsets are from
 * cols, in bytes.
 */
function indexLayout(count, total, high, nameBytes, version = 4) {
  const pageCols = version === 4 ? 16 : version === 3 ? 32 : 0, cols = 24;
  const ns = (32 + pageCols) * count, parentAt = version === 4 ? ns + 4 * count : -1;
  const flags = ns + (version === 4 ? 8 : 4) * count;
  const tokensAt = pad4(cols + flags + count), highAt = pad4(tokensAt + 2 * total);
  const namesAt = pad4(highAt + 6 * high);
  return { cols, tokensAt, highAt, namesAt, size: namesAt + nameBytes, fps: 24 * count, pageAt: 32 * count, ns, parentAt, flags };
}

export function encodeIndex(map) {
  const records = [...map.values()].sort((a, b) => a.lastUse - b.lastUse);
  const count = records.length;
  const place = new Map(records.map((r, i) => [r.name, i]));
  let total = 0, high = 0;
  // A page's own tokens only, from its start.
  const own = records.map((r) => (r.tokens ? (r.start ? r.tokens.subarray(r.start) : r.tokens) : null));
  for (const t of own) {
    if (!t) continue;
    total += t.length;
    for (let i = 0; i < t.length; i++) if (t[i] > 0xffff) high++;
  }
  const names = UTF8_ENCODER.encode(records.map((r) => `${r.name}/`).join(''));
  const at = indexLayout(count, total, high, names.length);
  const out = new Uint8Array(at.size);
  // Little-endian hosts (all that run wasm): the columns are typed arrays.
  const head = new Uint32Array(out.buffer, 0, 6);
  for (let i = 0; i < 8; i++) out[i] = INDEX_MAGIC.charCodeAt(i);
  head.set([count, total, high, names.length], 2);
  const f64 = new Float64Array(out.buffer, at.cols, 3 * count);
  const fps = new BigUint64Array(out.buffer, at.cols + at.fps, count);
  const starts = new Float64Array(out.buffer, at.cols + at.pageAt, 2 * count);
  const ns = new Uint32Array(out.buffer, at.cols + at.ns, count), parents = new Uint32Array(out.buffer, at.cols + at.parentAt, count);
  const flags = new Uint8Array(out.buffer, at.cols + at.flags, count);
  const low = new Uint16Array(out.buffer, at.tokensAt, total);
  const places = new Uint32Array(out.buffer, at.highAt, high), highs = new Uint16Array(out.buffer, at.highAt + 4 * high, high);
  out.set(names, at.namesAt);
  let k = 0, h = 0;
  records.forEach((r, i) => {
    f64[i] = r.bytes;
    f64[count + i] = r.nValues ?? 0;
    f64[2 * count + i] = r.lastUse;
    fps[i] = r.fingerprint ?? 0n;
    starts[i] = r.start ?? 0;
    starts[count + i] = r.parentN ?? 0;
    parents[i] = r.start ? (place.get(r.parent) ?? -1) + 1 : 0;
    flags[i] = (STATUS_FLAGS[r.status] ?? 0) | (r.dtype === 'f16' ? FLAG_F16 : 0) | (r.rowMajor ? FLAG_ROW_MAJOR : 0);
    const t = own[i], n = t ? t.length : 0;
    ns[i] = n;
    for (let j = 0; j < n; j++, k++) {
      low[k] = t[j]; // the low 16 bits
      if (t[j] > 0xffff) { places[h] = k; highs[h++] = t[j] >>> 16; }
    }
  });
  return out;
}

const isCount = (x) => Number.isSafeInteger(x) && x >= 0;

/** The name of the most recently used of records, or null. */
export const newestOf = (records) => records.reduce((a, r) => (!a || r.lastUse > a.lastUse ? r : a), null)?.name ?? null;

/**
 * An RLXKVIX4 index's columns, as views of its bytes (no record made), for
 * an open (NativeCache.putIndex, KnownRecords): { count, bytes, nValues,
 * lastUse, fps, starts (start, then parentN), ns, parents, flags, low,
 * places, highs (the own tokens' stream as stored), nameBytes (the names,
 * each followed by '/', not decoded: KnownRecords.nameOf), over(bytes):
 * the same views over a copy of the index, or over its bytes viewed anew
 * (a wasm heap that grew detached the views) }; null for none, another
 * magic, or sizes that disagree (the per-record checks, and the count of
 * the names, are putIndex's, in C).
 */
export function indexColumns(bytes) {
  if (!bytes || bytes.length < 24 || INDEX_VERSIONS[String.fromCharCode.apply(null, bytes.subarray(0, 8))] !== 4) return null;
  try {
    const b = bytes.byteOffset % 8 ? bytes.slice() : bytes; // the columns' views need it
    const [count, total, high, nameBytes] = new Uint32Array(b.buffer, b.byteOffset + 8, 4);
    const at = indexLayout(count, total, high, nameBytes, 4);
    if (at.size !== b.length) return null;
    const over = (b) => {
      const view = (Type, from, n) => new Type(b.buffer, b.byteOffset + from, n);
      return {
        bytes: view(Float64Array, at.cols, count), nValues: view(Float64Array, at.cols + 8 * count, count),
        lastUse: view(Float64Array, at.cols + 16 * count, count), fps: view(BigUint64Array, at.cols + at.fps, count),
        starts: view(Float64Array, at.cols + at.pageAt, 2 * count), ns: view(Uint32Array, at.cols + at.ns, count),
        parents: view(Uint32Array, at.cols + at.parentAt, count), flags: view(Uint8Array, at.cols + at.flags, count),
        low: view(Uint16Array, at.tokensAt, total), places: view(Uint32Array, at.highAt, high), highs: view(Uint16Array, at.highAt + 4 * high, high),
        nameBytes: view(Uint8Array, at.namesAt, nameBytes),
      };
    };
    return { count, over, ...over(b) };
  } catch {
    return null;
  }
}

/**
 * The store's records by name (store/state.js known): a Map whose values
 * that an index gave at the open (adopt()) stay places in its columns
 * until asked for. get() makes that one record, its path walked up its
 * parents; values(), entries() and iteration make them all, their paths
 * shared (pathsOf). So an open of ten thousand records makes none, and a
 * hit makes those of its path. tally() counts without making any.
 */
export class KnownRecords extends Map {
  #cols = null;
  #status = null;
  #halves = null;
  #fp = 0n;
  #tokens = null;
  #offs = null;
  #paths = null;
  /** The adopted records' names, decoded when first needed all (nameOf). */
  #names = null;
  /** The adopted records' flags, FLAG_SKIP on those left out; while #pending, their names are not in the map yet. */
  #skip = null;
  #pending = false;
  #counts = null;

  /** () => the index's bytes now, where the columns' views are made again when the memory under them moved; or null. */
  #bytesNow = null;

  /**
   * The records of index columns `cols` (fp: the cache's), but those
   * `flags` (a copy of the index's, kept) marks FLAG_SKIP. Their names go
   * into the map only when a name is first asked for (an open that asks
   * none makes no map of ten thousand names). bytesNow: for columns in
   * a wasm heap, () => the index's bytes viewed now (the heap's growth
   * detaches views).
   */
  adopt(cols, fp, flags, bytesNow = null) {
    this.#cols = cols;
    this.#names = null;
    this.#bytesNow = bytesNow;
    this.#fp = fp;
    this.#skip = flags;
    this.#pending = true;
  }

  /** Whether adopted record i is of the cache's fingerprint (compared as two u32 halves, no BigInt each). */
  #isMine(i) {
    const c = this.#columns(), fp = this.#fp;
    this.#halves ??= new Uint32Array(c.fps.buffer, c.fps.byteOffset, 2 * c.count);
    return this.#halves[2 * i] === Number(fp & 0xffffffffn) && this.#halves[2 * i + 1] === Number(fp >> 32n);
  }

  /**
   * Which records are stored-only entries: their NativeCache.putIndex
   * status (>= 0); and what it counted of them (its `counts`: the report
   * of the adopted records while none was made or left out since).
   */
  admit(status, counts) {
    this.#status = status;
    this.#counts = counts;
  }

  /** Leaves adopted record i out (its blob is gone, or its path broke). */
  skip(i) {
    if (this.#status) this.#counts = null; // after putIndex counted: counted again, record by record
    this.#skip[i] |= FLAG_SKIP;
    if (!this.#pending && super.get(this.nameOf(i)) === i) super.delete(this.nameOf(i));
  }

  /** The adopted columns, their views made again if the heap they lie in grew since. */
  #columns() {
    const c = this.#cols;
    if (!this.#bytesNow || !c.count || c.nValues.buffer.byteLength) return c;
    Object.assign(c, c.over(this.#bytesNow()));
    this.#halves = null;
    return c;
  }

  /**
   * Adopted record i's name. One of the last few is read alone (an open
   * asks for the newest); else every name is decoded, once.
   */
  nameOf(i) {
    if (this.#names || i < this.#cols.count - 4) return this.#allNames()[i];
    const b = this.#columns().nameBytes;
    let end = b.length - 1; // the '/' after the last name
    for (let k = this.#cols.count; --k > i;) end = b.lastIndexOf(47, end - 1);
    return UTF8_DECODER.decode(b.subarray(b.lastIndexOf(47, end - 1) + 1, end));
  }

  /** Every adopted name (decoded once). */
  #allNames() {
    this.#names ??= UTF8_DECODER.decode(this.#columns().nameBytes).split('/');
    return this.#names;
  }

  /** The adopted names in the map, once. */
  #ensure() {
    if (!this.#pending) return;
    this.#pending = false;
    const { count } = this.#cols, skip = this.#skip, names = this.#allNames();
    for (let i = 0; i < count; i++) if (!(skip[i] & FLAG_SKIP)) super.set(names[i], i);
  }

  /** Record `name`'s place in the adopted columns, if it is still one of them unmade; else -1. */
  placeOf(name) {
    this.#ensure();
    const v = super.get(name);
    return typeof v === 'number' ? v : -1;
  }

  get(name) {
    this.#ensure();
    const v = super.get(name);
    return typeof v === 'number' ? this.#make(name, v) : v;
  }

  has(name) { this.#ensure(); return super.has(name); }
  set(name, r) { this.#ensure(); return super.set(name, r); }
  delete(name) { this.#ensure(); return super.delete(name); }
  clear() { this.#pending = false; super.clear(); }
  get size() { this.#ensure(); return super.size; }
  keys() { this.#ensure(); return super.keys(); }
  values() { this.#makeAll(); return super.values(); }
  entries() { this.#makeAll(); return super.entries(); }
  [Symbol.iterator]() { return this.entries(); }
  forEach(fn, self) { this.#makeAll(); super.forEach(fn, self); }

  /**
   * The open's report of every record, none made: from putIndex's counts
   * while the map holds nothing else (no name asked for), else fn(admitted,
   * nValues, dtype, status) of each record. report: the counts to add to.
   */
  tally(report, fn) {
    const c = this.#columns();
    if (this.#pending && this.#counts) {
      for (const k of Object.keys(this.#counts)) report[k] += this.#counts[k];
      return;
    }
    const lazy = (v) => {
      const f = c.flags[v];
      const status = f & FLAG_CORRUPT ? 'corrupt' : f & FLAG_TOO_LARGE ? 'too-large' : f & FLAG_FOREIGN ? 'foreign' : !this.#isMine(v) ? 'stale' : 'ok';
      fn(status === 'ok' && this.#status[v] >= 0, c.nValues[v], f & FLAG_F16 ? 'f16' : 'f32', status);
    };
    if (this.#pending) { // no name asked for yet: the adopted records alone, by their columns
      for (let i = 0; i < c.count; i++) if (!(this.#skip[i] & FLAG_SKIP)) lazy(i);
      return;
    }
    for (const v of super.values()) {
      if (typeof v === 'number') lazy(v);
      else fn(!!v.admitted, v.nValues, v.dtype, v.status);
    }
  }

  /** Record i of the columns, as indexedRecord and StoreState learn() make it. */
  #make(name, i) {
    const c = this.#columns(), f = c.flags[i], start = c.starts[i];
    const tokens = f & (FLAG_CORRUPT | FLAG_TOO_LARGE) ? null : this.#pathOf(i);
    const r = indexedRecord(name, c.bytes[i], c.lastUse[i], c.fps[i], f, tokens, c.nValues[i], start, c.starts[c.count + i], start ? this.nameOf(c.parents[i] - 1) : undefined);
    if (r.status === 'ok') {
      if (r.fingerprint !== this.#fp) r.status = 'stale';
      else r.admitted = this.#status[i] >= 0;
    }
    super.set(name, r);
    return r;
  }

  #makeAll() {
    this.#ensure();
    let lazy = false;
    for (const v of super.values()) if (typeof v === 'number') { lazy = true; break; }
    if (!lazy) return;
    const c = this.#columns();
    this.#paths ??= pathsOf((i) => (c.parents[i] ? c.parents[i] - 1 : -1), c.starts, this.#offsets(), this.#own(), c.flags, c.count);
    for (const [name, v] of super.entries()) if (typeof v === 'number') this.#make(name, v);
  }

  /** The own tokens, widened (once). */
  #own() {
    if (!this.#tokens) {
      const c = this.#columns(), t = new Uint32Array(c.low);
      for (let h = 0; h < c.places.length; h++) t[c.places[h]] += c.highs[h] * 0x10000;
      this.#tokens = t;
    }
    return this.#tokens;
  }

  /** Where each record's own tokens begin (count + 1 of them). */
  #offsets() {
    if (!this.#offs) {
      const { ns, count } = this.#columns(), o = new Float64Array(count + 1);
      for (let i = 0; i < count; i++) o[i + 1] = o[i] + ns[i];
      this.#offs = o;
    }
    return this.#offs;
  }

  /** Record i's path: its own tokens after its parents' (putIndex found it whole), or the shared paths once made. */
  #pathOf(i) {
    if (this.#paths) return this.#paths[i];
    const c = this.#columns(), own = this.#own(), offs = this.#offsets();
    const len = (k) => c.starts[k] + c.ns[k];
    const out = new Uint32Array(len(i));
    let cur = i, end = out.length;
    for (let steps = 0; end > 0 && steps <= c.count; steps++) {
      const made = cur !== i ? super.get(this.nameOf(cur)) : null;
      if (made && typeof made === 'object' && made.tokens && made.tokens.length >= end) {
        out.set(made.tokens.subarray(0, end));
        break;
      }
      const start = c.starts[cur];
      if (end > start) out.set(own.subarray(offs[cur], offs[cur] + end - start), start);
      if (!start) break;
      if (start < end) end = start;
      cur = c.parents[cur] - 1;
    }
    return out;
  }
}

/**
 * The index's blobs by name; null for none or a damaged one (then rebuilt
 * from the blobs). A page of RLXKVIX4 whose path cannot be followed to a
 * blob through the index (a parent it lacks, bad or of another length) is
 * left out, as a blob the index does not describe: the open reads that
 * page's own first bytes instead.
 */
export function parseIndex(bytes) {
  if (!bytes || bytes.length < 12) return null;
  const version = INDEX_VERSIONS[String.fromCharCode.apply(null, bytes.subarray(0, 8))];
  try {
    if (!version || bytes.length < 24) return null;
    const b = bytes.byteOffset % 8 ? bytes.slice() : bytes; // the columns' views need it
    const [count, total, high, nameBytes] = new Uint32Array(b.buffer, b.byteOffset + 8, 4);
    const at = indexLayout(count, total, high, nameBytes, version);
    if (at.size !== b.length) return null;
    const view = (Type, from, n) => new Type(b.buffer, b.byteOffset + from, n);
    const f64 = view(Float64Array, at.cols, 3 * count), fps = view(BigUint64Array, at.cols + at.fps, count);
    const ns = view(Uint32Array, at.cols + at.ns, count), flags = view(Uint8Array, at.cols + at.flags, count);
    const starts = version > 2 ? view(Float64Array, at.cols + at.pageAt, 2 * count) : null;
    // One conversion widens the stream; the few high halves go in after.
    const tokens = new Uint32Array(view(Uint16Array, at.tokensAt, total));
    const places = view(Uint32Array, at.highAt, high), highs = view(Uint16Array, at.highAt + 4 * high, high);
    for (let h = 0; h < high; h++) {
      if (places[h] >= total) return null;
      tokens[places[h]] += highs[h] * 0x10000;
    }
    const names = UTF8_DECODER.decode(view(Uint8Array, at.namesAt, nameBytes)).split('/');
    if (names.length !== count + 1) return null;
    const offs = new Float64Array(count + 1);
    for (let i = 0; i < count; i++) {
      const n = ns[i];
      offs[i + 1] = offs[i] + n;
      if (offs[i + 1] > total) return null;
      // Sizes and times a blob can have (a budget sums them): else damaged.
      if (!isCount(f64[i]) || !isCount(f64[count + i]) || !Number.isFinite(f64[2 * count + i])) return null;
      // A page's start past its first token and before its last, its parent at least that long.
      const start = starts ? starts[i] : 0, parentN = starts ? starts[count + i] : 0;
      if (!isCount(start) || !isCount(parentN) || (start && ((version === 4 ? !n : start >= n) || parentN < start))) return null;
    }
    let paths = null, parentOf;
    if (version === 4) {
      const parents = view(Uint32Array, at.cols + at.parentAt, count);
      parentOf = (i) => (parents[i] && parents[i] <= count ? parents[i] - 1 : -1);
      paths = pathsOf(parentOf, starts, offs, tokens, flags, count);
    } else if (version === 3) {
      const keys = view(BigUint64Array, at.cols + at.pageAt + 16 * count, 2 * count);
      const parentNames = names.map((_, i) => (i < count && starts[i] ? nameOfKey([keys[i], keys[count + i]]) : null));
      parentOf = (i) => parentNames[i];
    }
    const map = new Map();
    for (let i = 0; i < count; i++) {
      const t = paths ? paths[i] : tokens.subarray(offs[i], offs[i + 1]);
      if (!t) continue; // a path that breaks: see above
      const start = starts ? starts[i] : 0;
      const parent = !start ? undefined : version === 4 ? names[parentOf(i)] : parentOf(i);
      map.set(names[i], indexedRecord(names[i], f64[i], f64[2 * count + i], fps[i], flags[i], t, f64[count + i], start, starts?.[count + i], parent));
    }
    return map;
  } catch {
    return null; // a RangeError past the end: damaged
  }
}

/**
 * RLXKVIX4's paths, by record: a page's tokens are its parent's
 * (parentOf(i): its place, or -1) first `start`, then its own (offs[i] to
 * offs[i + 1] of `tokens`); a blob's are its own. The ends of chains first
 * (records no page extends from their last token): each gets one array,
 * and every record up its chain whose path ends where the walk is takes a
 * view of it, so that a chain of pages shares one array, linear in its
 * tokens, and NativeCache.putStored places each page from the one before.
 * null for a record whose path breaks (a parent missing, bad or of
 * another length; a loop), and for a bad one (it has no tokens).
 */
function pathsOf(parentOf, starts, offs, tokens, flags, count) {
  const bad = (i) => (flags[i] & (FLAG_CORRUPT | FLAG_TOO_LARGE)) !== 0;
  const len = (i) => starts[i] + offs[i + 1] - offs[i];
  const parent = new Int32Array(count).fill(-1), extended = new Uint8Array(count);
  for (let i = 0; i < count; i++) {
    if (!starts[i] || bad(i)) continue;
    const p = parentOf(i);
    if (p < 0 || bad(p) || len(p) !== starts[count + i]) continue;
    parent[i] = p;
    if (starts[i] === len(p)) extended[p] = 1;
  }
  const paths = new Array(count).fill(null), broken = new Uint8Array(count);
  const chain = [];
  for (const ends of [1, 0]) {
    for (let r = 0; r < count; r++) {
      if (paths[r] || broken[r] || bad(r) || (ends && extended[r])) continue;
      if (!starts[r]) { paths[r] = new Uint32Array(tokens.buffer, 4 * offs[r], offs[r + 1] - offs[r]); continue; }
      const path = new Uint32Array(len(r));
      let cur = r, end = path.length, ok = true;
      chain.length = 0;
      for (let steps = 0; end > 0; steps++) {
        if (paths[cur]) { path.set(paths[cur].subarray(0, end)); break; }
        const start = starts[cur], o = offs[cur];
        if (end > start) path.set(tokens.subarray(o, o + end - start), start);
        if (end === len(cur)) chain.push(cur);
        if (!start) break;
        const p = parent[cur];
        if (p < 0 || broken[p] || steps > count) { ok = false; break; }
        if (start < end) end = start;
        cur = p;
      }
      for (const c of chain) {
        if (ok) paths[c] = new Uint32Array(path.buffer, 0, len(c));
        else broken[c] = 1;
      }
    }
  }
  return paths;
}

/**
 * The index `index` (parseIndex's: a map, changed here, or null: none)
 * with the records `set` put in (over those of their names, unless
 * keep(the record there) says to keep it), the names `remove` taken out,
 * and the last uses of the records `uses` raised to theirs: new index
 * bytes. With `present` (the names of `set` and `remove` whose files exist
 * as the index is written), a record goes in only if its file is there
 * and a name out only if it is not: the last writer of a name, whichever
 * it was, leaves it right.
 */
export function mergeIndex(index, { set = [], remove = [], uses = [], keep = () => false, present = null }) {
  index ??= new Map();
  for (const r of uses) {
    const was = index.get(r.name);
    if (was) was.lastUse = Math.max(was.lastUse, r.lastUse);
  }
  for (const r of set) {
    if (r.status === 'unreadable' || (present && !present.has(r.name))) continue; // an unreadable one is read again at the next open
    if (!index.has(r.name) || !keep(index.get(r.name))) index.set(r.name, r);
  }
  for (const n of remove) if (!present || !present.has(n)) index.delete(n);
  return encodeIndex(index);
}

