// The 8-bit page of a published tree, RLXKVPQ8 (FORMATS.md, "8-bit pages"):
// its writer (store/publish.js) and its reader (the remote tier,
// store/remote.js, which has C dequantize what it read: rlxkv_q8_dequant;
// `rlxkv verify`). Each row of head_dim values (one
// token of one head) is one f16 scale and head_dim int8s, as ggml's Q8_0
// block is one scale and 32 int8s. The reader: the remote tier's chunk of
// the browser bundle carries it, and it imports nothing, so that the
// chunk shares no module with the main file (a shared module becomes a
// chunk every page loads). Its writer, format/q8-write.js, is the
// publisher's (Node), and shares format/blob.js's.

export const MAGIC = [82, 76, 88, 75, 86, 80, 81, 56]; // 'RLXKVPQ8'
export const HEAD = 32; // magic, fingerprint, start, n_tokens
/** After the tokens: parent_n and the parent's key (two u64s), then dtype, group and n_layers. */
export const AFTER_TOKENS = 48;
export const MAX_LAYERS = 4096; // RLXKV_MAX_LAYERS, as every blob's
export const MAX_GROUP = 65536;
export const DTYPES = ['f32', 'f16'];
/** The largest finite binary16, and the first scale bits that are not a finite non-negative one (0x7c00: +Inf). */
export const F16_MAX = 65504, SCALE_LIMIT = 0x7c00;

/** A u64 field as a number (as format/blob.js reads them; here so that the reader imports no codec of the main bundle). */
const getU64 = (dv, at) => dv.getUint32(at + 4, true) * 2 ** 32 + dv.getUint32(at, true);

function fail(code, what) {
  throw Object.assign(new Error(`decoding q8 page: ${what ?? code.toLowerCase()}`), { code });
}
function need(ok, code = 'TRUNCATED', what) {
  if (!ok) fail(code, what);
}

/** A scale's binary16 bits (finite, non-negative) as its value: exact. */
export const scaleOf = (bits) => {
  const e = bits >>> 10, f = bits & 0x3ff;
  return e ? (1024 + f) * 2 ** (e - 25) : f * 2 ** -24;
};

// ---- reading ------------------------------------------------------------

/** Whether bytes start with the q8 page's magic (as far as they go). */
export const isQ8 = (bytes) => MAGIC.every((m, i) => i >= bytes.length || bytes[i] === m);

/**
 * An RLXKVPQ8 page checked whole (FORMATS.md, "8-bit pages"): null when
 * expectFp (a bigint) is given and the page's differs, else { fingerprint,
 * format, dtype (the values' to restore: 'f32' or 'f16'), tokens, page
 * (null for start 0, else { start, parentN, parent }), group, k, v, bytes }
 * where each of k and v is a block per layer, { length: its values, at:
 * the offset of its first row in bytes }. Throws an Error whose code is
 * BAD_MAGIC, TRUNCATED, CORRUPT or LIMIT, every length checked against the
 * bytes that remain before anything is sized from it, every scale read.
 */
export function decodeQ8(bytes, expectFp) {
  const len = bytes.length;
  need(isQ8(bytes.subarray(0, 8)), 'BAD_MAGIC', 'bad magic');
  need(len >= 16);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, len);
  const fingerprint = dv.getBigUint64(8, true);
  if (expectFp !== undefined && fingerprint !== expectFp) return null;
  need(len >= HEAD);
  const start = getU64(dv, 16), nTokens = getU64(dv, 24);
  need(start < nTokens, 'CORRUPT', `start ${start} is not before n_tokens ${nTokens}`);
  need(nTokens <= (len - HEAD) / 8);
  const tokens = new Uint32Array(nTokens);
  let at = HEAD;
  for (let i = 0; i < nTokens; i++, at += 8) {
    need(!dv.getUint32(at + 4, true), 'CORRUPT', 'a token of 2^32 or more');
    tokens[i] = dv.getUint32(at, true);
  }
  need(len - at >= AFTER_TOKENS);
  const parentN = getU64(dv, at), parent = [dv.getBigUint64(at + 8, true), dv.getBigUint64(at + 16, true)];
  if (start) need(parentN >= start, 'CORRUPT', `parent_n ${parentN} is less than start ${start}`);
  else need(!parentN && !parent[0] && !parent[1], 'CORRUPT', 'a first page (start 0) that names a parent');
  const dtype = DTYPES[getU64(dv, at + 24)], group = getU64(dv, at + 32), nLayers = getU64(dv, at + 40);
  need(dtype !== undefined, 'CORRUPT', `dtype ${getU64(dv, at + 24)} is neither 0 (f32) nor 1 (f16)`);
  need(group >= 1 && group <= MAX_GROUP, 'CORRUPT', `group ${group} is not in [1, ${MAX_GROUP}]`);
  at += AFTER_TOKENS;
  need(nLayers <= (len - at) / 16); // two 8-byte lengths per layer
  need(nLayers <= MAX_LAYERS, 'LIMIT', `${nLayers} layers, more than the ${MAX_LAYERS} this reader builds`);
  const blocks = [];
  for (let b = 0; b < 2 * nLayers; b++) {
    need(len - at >= 8);
    const n = getU64(dv, at);
    at += 8;
    need(n <= len - at);
    need(n % group === 0, 'CORRUPT', `block ${b} has ${n} values, not rows of ${group}`);
    const rows = n / group;
    need(rows * (group + 2) <= len - at);
    blocks.push({ length: n, at });
    for (let r = 0; r < rows; r++, at += group + 2) {
      if ((bytes[at] | (bytes[at + 1] << 8)) >= SCALE_LIMIT) fail('CORRUPT', `block ${b} row ${r}: a scale that is negative, infinite or NaN`);
    }
  }
  need(at === len, 'CORRUPT', 'bytes after the last block');
  return {
    fingerprint, format: 'RLXKVPQ8', dtype, tokens, page: start ? { start, parentN, parent } : null, group,
    k: blocks.slice(0, nLayers), v: blocks.slice(nLayers), bytes,
  };
}
