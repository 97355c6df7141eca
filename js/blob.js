// RLXKV001 (../shared/FORMAT.md) in JS, for encodeEntry, decodeEntry and
// Cache.exportBlob: one copy per K/V block, straight between the caller's
// typed arrays and the blob, where the wasm path moved every byte three
// times. It knows the format, not the C ABI. It validates exactly as
// src/codec.c does (same checks, same order, same error codes; a test
// compares the two on thousands of mutated blobs). importBlob decodes here
// too; blobs restored from storage go through the C store's decoder.
import { RlxkvError } from '../web/errors.js';

const MAGIC = [82, 76, 88, 75, 86, 48, 48, 49]; // 'RLXKV001'
const HEAD = 32; // magic, fingerprint, past_len, n_tokens
/** Whether this host stores floats little-endian, as blobs do: then a block's bytes are its floats. */
const LITTLE_ENDIAN = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;

// Throws 'decoding blob: truncated' (or bad magic, corrupt) unless ok.
function need(ok, code = 'TRUNCATED') {
  if (!ok) throw new RlxkvError(code, `decoding blob: ${code.toLowerCase().replace('_', ' ')}`);
}
// u64 fields as numbers: exact below 2^53, and above that still larger than
// any length they are compared with.
const getU64 = (dv, at) => dv.getUint32(at + 4, true) * 2 ** 32 + dv.getUint32(at, true);
function setU64(dv, at, n) {
  dv.setUint32(at, n >>> 0, true);
  dv.setUint32(at + 4, n / 2 ** 32, true); // setUint32 truncates to the high word
}

/** Bytes of the blob of nTokens tokens and these K and V blocks. */
export const blobSize = (nTokens, blocks) => blocks.reduce((size, b) => size + 8 + b.byteLength, HEAD + 8 + 8 * nTokens);

/**
 * Writes the blob of tokens (Uint32Array) and blocks (every K block, then
 * every V block) into out, or into a new Uint8Array without one; returns
 * the bytes written. Arguments are validated by the caller; out must not
 * overlap the inputs (RangeError if shorter than the blob). bytewise: the
 * per-float path of big-endian hosts (right on any host, so testable here).
 */
export function encodeBlob(tokens, blocks, fingerprint, out, bytewise = !LITTLE_ENDIAN) {
  const size = blobSize(tokens.length, blocks);
  out ??= new Uint8Array(size); // too large: a RangeError
  if (out.length < size) throw new RangeError(`opts.out holds ${out.length} bytes, the blob needs ${size}`);
  const dv = new DataView(out.buffer, out.byteOffset, size);
  out.set(MAGIC);
  dv.setBigUint64(8, fingerprint, true);
  setU64(dv, 16, tokens.length); // past_len
  setU64(dv, 24, tokens.length);
  let at = HEAD;
  for (let i = 0; i < tokens.length; i++, at += 8) setU64(dv, at, tokens[i]);
  setU64(dv, at, blocks.length / 2);
  at += 8;
  for (const b of blocks) {
    setU64(dv, at, b.length);
    at += 8;
    out.set(new Uint8Array(b.buffer, b.byteOffset, b.byteLength), at);
    if (bytewise) {
      // Bits, not values: a float round trip could quiet a NaN.
      const bits = new Uint32Array(b.buffer, b.byteOffset, b.length);
      for (let i = 0; i < bits.length; i++) dv.setUint32(at + 4 * i, bits[i], true);
    }
    at += b.byteLength;
  }
  return out.subarray(0, size);
}

/** The fingerprint of a blob whose head decodeBlob has accepted (16+ bytes). */
export const blobFingerprint = (bytes) => new DataView(bytes.buffer, bytes.byteOffset + 8, 8).getBigUint64(0, true);

/**
 * Decodes bytes (Uint8Array) to { fingerprint, pastLen, tokens, k, v }, or
 * null when expectFp (a bigint) is given and the blob's differs. Throws
 * RlxkvError BAD_MAGIC / TRUNCATED / CORRUPT as src/codec.c does, every
 * length checked against the bytes that remain before it sizes anything.
 * view: K/V blocks are Float32Array views of bytes where it is 4-byte
 * aligned (every block offset in a blob is a multiple of 4), fresh copies
 * otherwise; tokens are always a fresh Uint32Array.
 */
export function decodeBlob(bytes, expectFp, view = false, bytewise = !LITTLE_ENDIAN) {
  const len = bytes.length;
  // A short input that agrees with the magic as far as it goes is truncated.
  need(MAGIC.every((m, i) => i >= len || bytes[i] === m), 'BAD_MAGIC');
  need(len >= 16);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, len);
  const fingerprint = blobFingerprint(bytes);
  // As the reference: another model's blob is stale whatever follows.
  if (expectFp !== undefined && fingerprint !== expectFp) return null;
  need(len >= HEAD);
  need(dv.getBigUint64(16, true) === dv.getBigUint64(24, true), 'CORRUPT'); // past_len
  const nTokens = getU64(dv, 24);
  need(nTokens <= (len - HEAD) / 8);
  const tokens = new Uint32Array(nTokens);
  let at = HEAD;
  for (let i = 0; i < nTokens; i++, at += 8) {
    need(!dv.getUint32(at + 4, true), 'CORRUPT'); // a token >= 2^32
    tokens[i] = dv.getUint32(at, true);
  }
  need(len - at >= 8);
  const nLayers = getU64(dv, at);
  at += 8;
  need(nLayers <= (len - at) / 16); // two 8-byte lengths per layer
  const spans = []; // [byte offset, float count] per block
  for (let b = 0; b < 2 * nLayers; b++) {
    need(len - at >= 8);
    const n = getU64(dv, at);
    at += 8;
    need(n <= (len - at) / 4);
    spans.push([at, n]);
    at += 4 * n;
  }
  need(at === len, 'CORRUPT'); // trailing bytes

  const zeroCopy = view && !bytewise && bytes.byteOffset % 4 === 0;
  const blocks = spans.map(([from, n]) => {
    const start = bytes.byteOffset + from;
    const f = new Float32Array(zeroCopy ? bytes.buffer : bytes.buffer.slice(start, start + 4 * n), zeroCopy ? start : 0, n);
    if (bytewise) {
      // In place, little-endian words to this host's order: bits, not values.
      const le = new DataView(f.buffer), bits = new Uint32Array(f.buffer);
      for (let i = 0; i < n; i++) bits[i] = le.getUint32(4 * i, true);
    }
    return f;
  });
  return { fingerprint, pastLen: nTokens, tokens, k: blocks.slice(0, nLayers), v: blocks.slice(nLayers) };
}

const MAGIC_F16 = [82, 76, 88, 75, 86, 70, 49, 54]; // 'RLXKVF16'

/**
 * What the start of a blob says, for indexing it without reading its
 * values: null when `head` (the first bytes of a blob of `size` bytes) is
 * too short to tell, else { ok: false } for a blob that cannot be valid, or
 * { ok: true, fingerprint, dtype, tokens, nLayers, nValues, rowMajor } where
 * nValues follows from the size (exact if the blob is valid, which only a
 * full decode shows) and rowMajor from the first block's length (a hint).
 */
export function blobHead(head, size) {
  const len = head.length;
  if (len < HEAD) return size < HEAD ? { ok: false } : null;
  const f16 = MAGIC_F16.every((m, i) => head[i] === m);
  if (!f16 && !MAGIC.every((m, i) => head[i] === m)) return { ok: false };
  const dv = new DataView(head.buffer, head.byteOffset, len);
  if (dv.getBigUint64(16, true) !== dv.getBigUint64(24, true)) return { ok: false };
  const nTokens = getU64(dv, 24);
  if (nTokens > (size - HEAD - 8) / 8) return { ok: false };
  const afterTokens = HEAD + 8 * nTokens;
  if (len < afterTokens + 16 && size >= afterTokens + 16) return null;
  const tokens = new Uint32Array(nTokens);
  for (let i = 0, at = HEAD; i < nTokens; i++, at += 8) {
    if (dv.getUint32(at + 4, true)) return { ok: false };
    tokens[i] = dv.getUint32(at, true);
  }
  if (size < afterTokens + 8) return { ok: false };
  const nLayers = getU64(dv, afterTokens);
  const valueBytes = size - afterTokens - 8 - 16 * nLayers;
  const esize = f16 ? 2 : 4;
  if (valueBytes < 0 || valueBytes % esize) return { ok: false };
  const first = nLayers && len >= afterTokens + 16 ? getU64(dv, afterTokens + 8) : 0;
  return {
    ok: true,
    fingerprint: blobFingerprint(head),
    dtype: f16 ? 'f16' : 'f32',
    tokens,
    nLayers,
    nValues: valueBytes / esize,
    rowMajor: nTokens > 0 && first % nTokens === 0,
  };
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
export function blobSpans(readAt, size, expectFp, headBytes = 64 << 10) {
  const head = readAt(0, Math.min(size, Math.max(headBytes, HEAD)));
  // The bytes [at, at + n), from the first read when it holds them.
  const bytesAt = (at, n) => (at + n <= head.length ? head.subarray(at, at + n) : readAt(at, n));
  const len = size;
  const f16 = MAGIC_F16.every((m, i) => i >= len || head[i] === m);
  need(f16 || MAGIC.every((m, i) => i >= len || head[i] === m), 'BAD_MAGIC');
  need(len >= 16 && head.length >= Math.min(len, HEAD));
  const fingerprint = blobFingerprint(head);
  if (expectFp !== undefined && fingerprint !== expectFp) return null;
  need(len >= HEAD);
  const dv = new DataView(head.buffer, head.byteOffset, head.length);
  need(dv.getBigUint64(16, true) === dv.getBigUint64(24, true), 'CORRUPT');
  const nTokens = getU64(dv, 24);
  need(nTokens <= (len - HEAD) / 8);
  const tb = bytesAt(HEAD, 8 * nTokens);
  need(tb.length === 8 * nTokens);
  const tdv = new DataView(tb.buffer, tb.byteOffset, tb.length);
  const tokens = new Uint32Array(nTokens);
  for (let i = 0; i < nTokens; i++) {
    need(!tdv.getUint32(8 * i + 4, true), 'CORRUPT');
    tokens[i] = tdv.getUint32(8 * i, true);
  }
  let at = HEAD + 8 * nTokens;
  const u64At = (p) => {
    const b = bytesAt(p, 8);
    need(b.length === 8);
    return getU64(new DataView(b.buffer, b.byteOffset, 8), 0);
  };
  need(len - at >= 8);
  const nLayers = u64At(at);
  at += 8;
  need(nLayers <= (len - at) / 16);
  const esize = f16 ? 2 : 4;
  const spans = [];
  for (let b = 0; b < 2 * nLayers; b++) {
    need(len - at >= 8);
    const n = u64At(at);
    at += 8;
    need(n <= (len - at) / esize);
    spans.push([at, n]);
    at += esize * n;
  }
  need(at === len, 'CORRUPT');
  return { fingerprint, dtype: f16 ? 'f16' : 'f32', tokens, spans };
}
