// The blob formats in JS: RLXKV001 (FORMATS.md, f32 values) and
// its f16 variant RLXKVF16 (FORMATS.md), for encodeEntry, decodeEntry and
// Cache.exportBlob: one copy per K/V block, straight between the caller's
// typed arrays and the blob. It knows the formats, not the C ABI. It
// validates exactly as src/codec.c does (same checks, same order, same
// error codes, the same RLXKV_MAX_LAYERS; a test compares the two on
// thousands of mutated blobs of each format). importBlob decodes here too,
// and so does every store's hit (store/hits.js) a blob it reads.
import { RlxkvError } from '../wasm/errors.js';
import { LITTLE_ENDIAN, widenF16 } from './f16.js';

const MAGICS = {
  RLXKV001: [82, 76, 88, 75, 86, 48, 48, 49], // f32 values
  RLXKVF16: [82, 76, 88, 75, 86, 70, 49, 54], // f16 values (binary16 bit patterns)
  // Pages (FORMATS.md): the values of tokens start..n-1 only; start in
  // past_len's place, the parent's token count and name hash after the tokens.
  RLXKVPG1: [82, 76, 88, 75, 86, 80, 71, 49], // f32 values
  RLXKVPH1: [82, 76, 88, 75, 86, 80, 72, 49], // f16 values
};
/** The format that holds each value type, and back. */
const FORMAT_OF = { f32: 'RLXKV001', f16: 'RLXKVF16' };
const PAGE_FORMAT_OF = { f32: 'RLXKVPG1', f16: 'RLXKVPH1' };
const DTYPE_OF = { RLXKV001: 'f32', RLXKVF16: 'f16', RLXKVPG1: 'f32', RLXKVPH1: 'f16' };
const isPage = (format) => format === 'RLXKVPG1' || format === 'RLXKVPH1';
/** Bytes a page has after its tokens before n_layers: the parent's token count and key (two u64s). */
const PARENT = 24;
const HEAD = 32; // magic, fingerprint, past_len, n_tokens
/** The most layers a blob may have (RLXKV_MAX_LAYERS in src/rlxkv.h): more are refused with LIMIT. */
export const MAX_LAYERS = 4096;

// Throws 'decoding blob: truncated' (or bad magic, corrupt) unless ok.
function need(ok, code = 'TRUNCATED') {
  if (!ok) throw new RlxkvError(code, `decoding blob: ${code.toLowerCase().replace('_', ' ')}`);
}
// u64 fields as numbers: exact below 2^53, and above that still larger than
// any length they are compared with.
export const getU64 = (dv, at) => dv.getUint32(at + 4, true) * 2 ** 32 + dv.getUint32(at, true);
export function setU64(dv, at, n) {
  dv.setUint32(at, n >>> 0, true);
  dv.setUint32(at + 4, n / 2 ** 32, true); // setUint32 truncates to the high word
}
/** n as the 8 bytes of a blob's u64 field. */
export function u64Bytes(n) {
  const b = new Uint8Array(8);
  setU64(new DataView(b.buffer), 0, n);
  return b;
}

/** 'f32' or 'f16' for blocks that are all Float32Array or all Uint16Array (none: f32). */
function dtypeOf(blocks) {
  const f16 = blocks.length > 0 && blocks[0] instanceof Uint16Array;
  for (const b of blocks) {
    if (f16 ? !(b instanceof Uint16Array) : !(b instanceof Float32Array)) {
      throw new TypeError('K/V blocks must be all Float32Array (f32) or all Uint16Array (f16 bits)');
    }
  }
  return f16 ? 'f16' : 'f32';
}

/** The format blocks are written in: their own, or opts.as. */
function formatFor(blocks, as) {
  const own = FORMAT_OF[dtypeOf(blocks)];
  if (as === undefined || as === own) return own;
  if (as === 'RLXKV001') return as; // f16 widened exactly
  throw new RangeError(`as must be 'RLXKV001' or the blocks' own format (${own}), got ${String(as)}`);
}

/** Bytes of the blob of nTokens tokens and these K and V blocks, in their format or as `as`; of a page with `page`. */
export function blobSize(nTokens, blocks, { as, page } = {}) {
  const size = formatFor(blocks, as) === 'RLXKV001' ? 4 : 2;
  return blocks.reduce((n, b) => n + 8 + size * b.length, HEAD + 8 + 8 * nTokens + (page ? PARENT : 0));
}

// f16 -> f32, exactly: format/f16.js (the one table of it), re-exported here
// for the codec's callers.
export { widenF16 };

// ---- encoding ----------------------------------------------------------

/** KV blocks as the codec takes them: f16 ones as Uint16Array bits (a Float16Array viewed so). */
export const bitsOf = (blocks) => blocks.map((b) => (b instanceof Float32Array || b instanceof Uint16Array ? b
  : new Uint16Array(b.buffer, b.byteOffset, b.length)));

/**
 * Writes the blob of tokens (Uint32Array) and blocks (every K block, then
 * every V block; all Float32Array, or all Uint16Array of binary16 bits)
 * into out, or into a new Uint8Array without one; returns the bytes
 * written. f32 blocks make an RLXKV001 blob, f16 ones an RLXKVF16 blob, or
 * with as: 'RLXKV001' an RLXKV001 blob of their values widened exactly.
 * Arguments are validated by the caller; out must not overlap the inputs
 * (RangeError if shorter than the blob). More than MAX_LAYERS layers:
 * RlxkvError LIMIT. bytewise: the per-value path of big-endian hosts
 * (right on any host, so testable here).
 */
export function encodeBlob(tokens, blocks, fingerprint, out, { as, bytewise = !LITTLE_ENDIAN, page } = {}) {
  const format = page ? PAGE_FORMAT_OF[dtypeOf(blocks)] : formatFor(blocks, as);
  const widen = format === 'RLXKV001' && dtypeOf(blocks) === 'f16';
  const vsize = DTYPE_OF[format] === 'f32' ? 4 : 2;
  if (blocks.length / 2 > MAX_LAYERS) {
    throw new RlxkvError('LIMIT', `encoding blob: ${blocks.length / 2} layers, more than the ${MAX_LAYERS} a blob may have`);
  }
  const size = blobSize(tokens.length, blocks, { as, page });
  out ??= new Uint8Array(size); // too large: a RangeError
  if (out.length < size) throw new RangeError(`opts.out holds ${out.length} bytes, the blob needs ${size}`);
  const dv = new DataView(out.buffer, out.byteOffset, size);
  let at = writePreamble(out, dv, format, fingerprint, tokens, blocks.length / 2, page);
  for (const block of blocks) {
    setU64(dv, at, block.length);
    at += 8;
    const b = widen ? widenF16(block) : block;
    if (bytewise) {
      // Bits, not values: a float round trip could quiet a NaN.
      const bits = vsize === 4 ? new Uint32Array(b.buffer, b.byteOffset, b.length) : b;
      if (vsize === 4) for (let i = 0; i < bits.length; i++) dv.setUint32(at + 4 * i, bits[i], true);
      else for (let i = 0; i < bits.length; i++) dv.setUint16(at + 2 * i, bits[i], true);
    } else {
      out.set(new Uint8Array(b.buffer, b.byteOffset, b.byteLength), at);
    }
    at += vsize * b.length;
  }
  return out.subarray(0, size);
}

/**
 * What every blob and page begins with (FORMATS.md): `magic` (8 bytes),
 * fingerprint, past_len (a page's start), n_tokens and the tokens, at the
 * start of out (dv its DataView); the offset after. RLXKVPQ8 pages
 * (format/q8.js) begin so too.
 */
export function writeHead(out, dv, magic, fingerprint, pastLen, tokens) {
  out.set(magic);
  dv.setBigUint64(8, fingerprint, true);
  setU64(dv, 16, pastLen);
  setU64(dv, 24, tokens.length);
  let at = HEAD;
  for (let i = 0; i < tokens.length; i++, at += 8) setU64(dv, at, tokens[i]);
  return at;
}

/**
 * writeHead, (a page's parent: { start, parentN, parent }) and n_layers
 * at the start of out; the offset after.
 */
function writePreamble(out, dv, format, fingerprint, tokens, nLayers, page) {
  let at = writeHead(out, dv, MAGICS[format], fingerprint, page ? page.start : tokens.length, tokens); // past_len
  if (page) {
    setU64(dv, at, page.parentN);
    dv.setBigUint64(at + 8, page.parent[0], true);
    dv.setBigUint64(at + 16, page.parent[1], true);
    at += PARENT;
  }
  setU64(dv, at, nLayers);
  return at + 8;
}

/**
 * The bytes encodeBlob writes for these tokens and blocks (in their own
 * format), in pieces, for writing a blob without the whole of it in memory:
 * the preamble, then each block after its length, each piece made when
 * the iteration asks for it, in one buffer reused from block to block: a
 * piece holds until the next is asked for (a flush of 200 MB in fresh
 * arrays made V8 collect for their external memory, up to 10 ms at a
 * time). blocksAt() gives the blocks at that moment (views that may have
 * moved, e.g. of the wasm heap across awaits; it may throw to stop).
 * Little-endian hosts only (others: encodeBlob).
 */
export function* encodePieces(tokens, blocksAt, fingerprint, page) {
  const first = blocksAt();
  const format = page ? PAGE_FORMAT_OF[dtypeOf(first)] : formatFor(first);
  if (first.length / 2 > MAX_LAYERS) {
    throw new RlxkvError('LIMIT', `encoding blob: ${first.length / 2} layers, more than the ${MAX_LAYERS} a blob may have`);
  }
  if (!LITTLE_ENDIAN) throw new RangeError('encodePieces: little-endian hosts only');
  const pre = new Uint8Array(HEAD + 8 * tokens.length + 8 + (page ? PARENT : 0));
  writePreamble(pre, new DataView(pre.buffer), format, fingerprint, tokens, first.length / 2, page);
  yield pre;
  let buf = null, dv = null;
  for (let i = 0; i < first.length; i++) {
    const b = blocksAt()[i];
    if (!buf || buf.length < 8 + b.byteLength) {
      buf = new Uint8Array(8 + b.byteLength);
      dv = new DataView(buf.buffer);
    }
    const piece = buf.subarray(0, 8 + b.byteLength);
    setU64(dv, 0, b.length);
    piece.set(new Uint8Array(b.buffer, b.byteOffset, b.byteLength), 8);
    yield piece;
  }
}

// ---- decoding ----------------------------------------------------------

/** The fingerprint of a blob whose head decodeBlob has accepted (16+ bytes). */
export const blobFingerprint = (bytes) => new DataView(bytes.buffer, bytes.byteOffset + 8, 8).getBigUint64(0, true);

/** The format a buffer's magic names, as far as it goes: 'RLXKV001', 'RLXKVF16', a page's ('RLXKVPG1', 'RLXKVPH1') or null. */
export function blobFormat(bytes) {
  for (const [name, magic] of Object.entries(MAGICS)) {
    if (magic.every((m, i) => i >= bytes.length || bytes[i] === m)) return name;
  }
  return null;
}

/**
 * Decodes bytes (Uint8Array) to { fingerprint, pastLen, tokens, k, v,
 * dtype, format, page }, or null when expectFp (a bigint) is given and the
 * blob's differs; page: null, or for a page { start, parentN, parent: its
 * parent's key, two bigints }
 * (its blocks then hold the values of tokens start..n-1). Else as when the
 * blob's differs. dtype 'f32' (RLXKV001: K/V blocks are Float32Array) or
 * 'f16' (RLXKVF16: Uint16Array of binary16 bits). Throws RlxkvError
 * BAD_MAGIC / TRUNCATED / CORRUPT / LIMIT as src/codec.c does, every
 * length checked against the bytes that remain before it sizes anything.
 * view: K/V blocks are views of bytes where it is aligned for the value
 * type (every block offset in a blob is), fresh copies otherwise; tokens
 * are always a fresh Uint32Array.
 */
export function decodeBlob(bytes, expectFp, view = false, bytewise = !LITTLE_ENDIAN) {
  const st = readStructure((at, n) => bytes.subarray(at, at + n), bytes.length, expectFp, bytes.length);
  if (!st) return null;
  const { fingerprint, format, dtype, tokens, spans, page } = st;
  const nLayers = spans.length / 2, vsize = dtype === 'f16' ? 2 : 4;
  const Type = dtype === 'f16' ? Uint16Array : Float32Array;
  const zeroCopy = view && !bytewise && bytes.byteOffset % vsize === 0;
  const blocks = spans.map(([from, n]) => {
    const start = bytes.byteOffset + from;
    const a = new Type(zeroCopy ? bytes.buffer : bytes.buffer.slice(start, start + vsize * n), zeroCopy ? start : 0, n);
    if (bytewise) {
      // In place, little-endian words to this host's order: bits, not values.
      const le = new DataView(a.buffer);
      if (vsize === 4) {
        const bits = new Uint32Array(a.buffer);
        for (let i = 0; i < n; i++) bits[i] = le.getUint32(4 * i, true);
      } else {
        for (let i = 0; i < n; i++) a[i] = le.getUint16(2 * i, true);
      }
    }
    return a;
  });
  return { fingerprint, pastLen: tokens.length, tokens, k: blocks.slice(0, nLayers), v: blocks.slice(nLayers), dtype, format, page };
}

/**
 * The one validation of a blob's structure, behind decodeBlob and
 * blobSpans: the checks of src/codec.c in its order, every length against
 * the bytes that remain before anything is sized from it. bytesAt(at, n)
 * gives the n bytes from offset at of a blob of len bytes (fewer at its
 * end); the first call asks for the first firstRead bytes. Returns null for
 * another fingerprint than expectFp (if given, after only the magic and
 * the fingerprint, as the reference does), else { fingerprint, format,
 * dtype, tokens, spans: [[byte offset, value count]] per block }. Throws
 * RlxkvError BAD_MAGIC / TRUNCATED / CORRUPT / LIMIT.
 */
function readStructure(bytesAt, len, expectFp, firstRead) {
  const head = bytesAt(0, Math.min(len, Math.max(firstRead, HEAD)));
  const at0 = (at, n) => (at + n <= head.length ? head.subarray(at, at + n) : bytesAt(at, n));
  const hdv = new DataView(head.buffer, head.byteOffset, head.length);
  const u32Of = (b, i) => (b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24)) >>> 0;
  const u64At = (at) => {
    if (at + 8 <= head.length) return getU64(hdv, at);
    const b = bytesAt(at, 8);
    need(b.length === 8);
    return u32Of(b, 4) * 2 ** 32 + u32Of(b, 0);
  };
  // A short input that agrees with a magic as far as it goes is truncated.
  const format = blobFormat(head.subarray(0, Math.min(8, len)));
  need(format !== null, 'BAD_MAGIC');
  need(len >= 16);
  const fingerprint = blobFingerprint(head);
  // As the reference: another model's blob is stale whatever follows.
  if (expectFp !== undefined && fingerprint !== expectFp) return null;
  need(len >= HEAD);
  const dv = new DataView(head.buffer, head.byteOffset, HEAD);
  const paged = isPage(format), nTokens = getU64(dv, 24);
  if (!paged) need(dv.getBigUint64(16, true) === dv.getBigUint64(24, true), 'CORRUPT'); // past_len
  // A page's start, in past_len's place: past its first token, before its last.
  const start = paged ? getU64(dv, 16) : 0;
  if (paged) need(start > 0 && start < nTokens, 'CORRUPT');
  need(nTokens <= (len - HEAD) / 8);
  const tb = at0(HEAD, 8 * nTokens);
  need(tb.length === 8 * nTokens);
  const tokens = new Uint32Array(nTokens);
  if (LITTLE_ENDIAN && tb.byteOffset % 4 === 0) {
    const words = new Uint32Array(tb.buffer, tb.byteOffset, 2 * nTokens);
    let high = 0;
    for (let i = 0; i < nTokens; i++) {
      tokens[i] = words[2 * i];
      high |= words[2 * i + 1];
    }
    need(!high, 'CORRUPT'); // a token >= 2^32
  } else {
    const tdv = new DataView(tb.buffer, tb.byteOffset, tb.length);
    for (let i = 0; i < nTokens; i++) {
      need(!tdv.getUint32(8 * i + 4, true), 'CORRUPT'); // a token >= 2^32
      tokens[i] = tdv.getUint32(8 * i, true);
    }
  }
  let at = HEAD + 8 * nTokens;
  let page = null;
  if (paged) {
    need(len - at >= PARENT);
    const parentN = u64At(at), pb = at + PARENT <= head.length ? head.subarray(at + 8, at + PARENT) : bytesAt(at + 8, 16);
    need(pb.length === 16);
    need(parentN >= start, 'CORRUPT');
    const pdv = new DataView(pb.buffer, pb.byteOffset, 16);
    page = { start, parentN, parent: [pdv.getBigUint64(0, true), pdv.getBigUint64(8, true)] };
    at += PARENT;
  }
  need(len - at >= 8);
  const nLayers = u64At(at);
  at += 8;
  need(nLayers <= (len - at) / 16); // two 8-byte lengths per layer
  if (nLayers > MAX_LAYERS) {
    throw new RlxkvError('LIMIT', `decoding blob: ${nLayers} layers, more than the ${MAX_LAYERS} this reader builds`);
  }
  const dtype = DTYPE_OF[format], vsize = dtype === 'f16' ? 2 : 4;
  const spans = []; // at most 2 * MAX_LAYERS
  for (let b = 0; b < 2 * nLayers; b++) {
    need(len - at >= 8);
    const n = u64At(at);
    at += 8;
    need(n <= (len - at) / vsize);
    spans.push([at, n]);
    at += vsize * n;
  }
  need(at === len, 'CORRUPT'); // trailing bytes
  return { fingerprint, format, dtype, tokens, spans, page };
}

/**
 * What the start of a blob says, for indexing it without reading its
 * values: null when `head` (the first bytes of a blob of `size` bytes) is
 * too short to tell, else { ok: false } for a blob that cannot be valid
 * ({ ok: false, tooLarge: true }: valid maybe, but past MAX_LAYERS), or
 * { ok: true, fingerprint, dtype, tokens, nLayers, nValues, rowMajor, page } (page:
 * null, or a page's { start, parentN, parent }) where
 * nValues follows from the size (exact if the blob is valid, which only a
 * full decode shows) and rowMajor from the first block's length (a hint).
 */
export function blobHead(head, size) {
  const len = head.length;
  if (len < HEAD) return size < HEAD ? { ok: false } : null;
  const format = blobFormat(head.subarray(0, 8));
  if (!format) return { ok: false };
  const f16 = DTYPE_OF[format] === 'f16', paged = isPage(format);
  const dv = new DataView(head.buffer, head.byteOffset, len);
  const nTokens = getU64(dv, 24), start = paged ? getU64(dv, 16) : 0;
  if (paged ? !(start > 0 && start < nTokens) : dv.getBigUint64(16, true) !== dv.getBigUint64(24, true)) return { ok: false };
  const extra = paged ? PARENT : 0;
  if (nTokens > (size - HEAD - 8 - extra) / 8) return { ok: false };
  const afterTokens = HEAD + 8 * nTokens + extra;
  if (len < afterTokens + 16 && size >= afterTokens + 16) return null;
  const tokens = new Uint32Array(nTokens);
  for (let i = 0, at = HEAD; i < nTokens; i++, at += 8) {
    if (dv.getUint32(at + 4, true)) return { ok: false };
    tokens[i] = dv.getUint32(at, true);
  }
  if (size < afterTokens + 8) return { ok: false };
  const page = paged ? {
    start, parentN: getU64(dv, afterTokens - PARENT), parent: [dv.getBigUint64(afterTokens - 16, true), dv.getBigUint64(afterTokens - 8, true)],
  } : null;
  if (page && page.parentN < start) return { ok: false };
  const nLayers = getU64(dv, afterTokens);
  if (nLayers > MAX_LAYERS && 16 * nLayers <= size - afterTokens - 8) return { ok: false, tooLarge: true };
  const valueBytes = size - afterTokens - 8 - 16 * nLayers;
  const esize = f16 ? 2 : 4;
  if (valueBytes < 0 || valueBytes % esize) return { ok: false };
  const first = nLayers && len >= afterTokens + 16 ? getU64(dv, afterTokens + 8) : 0;
  const rows = nTokens - start;
  return {
    ok: true,
    fingerprint: blobFingerprint(head),
    dtype: f16 ? 'f16' : 'f32',
    tokens,
    nLayers,
    nValues: valueBytes / esize,
    rowMajor: rows > 0 && first % rows === 0,
    page,
  };
}

/** The bytes of a blob of nTokens tokens before its first value: header, tokens, layer count, first block's length (a page's: its parent's too). */
export const headBytes = (nTokens, page = false) => HEAD + 8 * nTokens + 16 + (page ? PARENT : 0);

/** Bytes of a blob (or with `page` a page) of nTokens tokens whose 2 × nLayers blocks hold `block` values of dtype each. */
export const uniformBlobSize = (nTokens, dtype, nLayers, block, page = false) =>
  HEAD + 8 * nTokens + 8 + (page ? PARENT : 0) + 2 * nLayers * (8 + (dtype === 'f16' ? 2 : 4) * block);

/**
 * Whether `head` (a Uint8Array of the first headBytes(tokens.length, page)
 * bytes of a file) starts the blob (with `page` { start, parentN, parent },
 * the page) of these tokens, fingerprint (bigint) and dtype ('f32' or
 * 'f16') whose nLayers layers have blocks of `block` values each: its
 * magic, fingerprint, past_len (start), tokens, (parent,) layer count and
 * first block length. A file of uniformBlobSize bytes that starts so, and
 * whose every later block header is u64Bytes(block), is that blob, valid
 * if nLayers <= MAX_LAYERS: what a load that knows a blob's shape checks.
 * Little-endian hosts.
 */
export function isUniformHead(head, tokens, fingerprint, dtype, nLayers, block, page = null) {
  const n = tokens.length;
  if (head.length !== headBytes(n, !!page) || head.byteOffset % 4) return false;
  const w = new Uint32Array(head.buffer, head.byteOffset, head.length >> 2);
  const magic = MAGICS[(page ? PAGE_FORMAT_OF : FORMAT_OF)[dtype]];
  for (let i = 0; i < 8; i++) if (head[i] !== magic[i]) return false;
  const hi = (x) => Math.floor(x / 2 ** 32);
  const u64Is = (i, x) => w[i] === x >>> 0 && w[i + 1] === hi(x);
  const bigIs = (i, x) => w[i] === Number(x & 0xffffffffn) && w[i + 1] === Number(x >> 32n);
  if (!bigIs(2, fingerprint) || !u64Is(4, page ? page.start : n) || !u64Is(6, n)) return false;
  for (let i = 0; i < n; i++) if (w[8 + 2 * i] !== tokens[i] || w[9 + 2 * i] !== 0) return false;
  let at = 8 + 2 * n;
  if (page) {
    if (!u64Is(at, page.parentN) || !bigIs(at + 2, page.parent[0]) || !bigIs(at + 4, page.parent[1])) return false;
    at += 6;
  }
  return u64Is(at, nLayers) && u64Is(at + 2, block);
}

/**
 * The first block's length (values) if `head`, the first bytes of a blob
 * of `size` bytes, holds it and the size is what it would be were every
 * block that long; else -1. A guess to check, not a validation.
 */
export function uniformBlockLength(head, size) {
  const format = head.length >= HEAD ? blobFormat(head.subarray(0, 8)) : null;
  if (!format || isPage(format)) return -1; // a page: read by its structure
  const dv = new DataView(head.buffer, head.byteOffset, head.length);
  const nTokens = getU64(dv, 24), afterTokens = HEAD + 8 * nTokens;
  if (head.length < afterTokens + 16) return -1; // headBytes(n_tokens)
  const nLayers = getU64(dv, afterTokens), first = getU64(dv, afterTokens + 8);
  return nLayers && size === uniformBlobSize(nTokens, DTYPE_OF[format], nLayers, first) ? first : -1;
}

/**
 * Where the values of a blob lie, for reading them straight into memory
 * the caller chose (the wasm heap): the structure validated exactly as
 * decodeBlob does, every length against `size`, without reading a value.
 * readAt(at, n) returns the n bytes (fewer at the end) from offset `at`.
 * Returns null for a blob of another fingerprint than expectFp, else
 * { fingerprint, dtype: 'f32'|'f16', tokens, spans: [[offset, count]] }
 * (a span per block, K blocks then V blocks, offset in bytes, count in
 * values). Throws RlxkvError BAD_MAGIC / TRUNCATED / CORRUPT.
 */
export function blobSpans(readAt, size, expectFp, firstRead = 64 << 10) {
  return readStructure(readAt, size, expectFp, firstRead);
}
