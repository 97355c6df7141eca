// The writer of RLXKVPQ8 pages (FORMATS.md, "8-bit pages"; the reader is
// format/q8.js): what `rlxkv publish --dtype q8` (store/publish.js) writes.
// A page begins as every blob and page does (format/blob.js writeHead).
import { setU64, writeHead } from './blob.js';
import { AFTER_TOKENS, DTYPES, F16_MAX, HEAD, MAGIC, MAX_GROUP, MAX_LAYERS, SCALE_LIMIT, scaleOf } from './q8.js';

/** The bits of the smallest binary16 at least t (t >= 0 and finite); 0x7c00 (+Inf) past the largest. */
function f16Up(t) {
  if (t <= 0) return 0;
  if (t < 2 ** -14) return Math.ceil(t * 2 ** 24); // subnormal (1024: the smallest normal's bits, right too)
  let e = Math.floor(Math.log2(t));
  if (2 ** e > t) e--;
  else if (2 ** (e + 1) <= t) e++;
  let f = Math.ceil((t / 2 ** e - 1) * 1024); // exact: t / 2^e is in [1, 2)
  if (f === 1024) {
    e++;
    f = 0;
  }
  return e > 15 ? SCALE_LIMIT : ((e + 15) << 10) | f;
}

/** Bytes of the page of nTokens tokens whose blocks hold these many values each, `group` a scale. */
export const q8Size = (nTokens, lengths, group) => lengths.reduce((n, len) => n + 8 + len + 2 * (len / group), HEAD + 8 * nTokens + AFTER_TOKENS);

/**
 * The RLXKVPQ8 page of tokens (Uint32Array: all of them, the parent's
 * first) whose own values are `blocks` (every K block, then every V block:
 * Float32Array, an f16 entry's widened), under `fingerprint`: each run of
 * `group` values (a row: one token of one head) quantized with one scale,
 * its largest magnitude over 127 rounded up to a binary16, so that every
 * value comes back within half a scale. dtype: the entry's ('f32' or
 * 'f16'), which a reader restores. page: null for a first page (start 0),
 * else { start, parentN, parent: its key, two bigints }. RangeError for a
 * block that is not whole rows, or a row with a value that is not finite
 * or past 127 × 65504.
 */
export function encodeQ8(tokens, blocks, fingerprint, { dtype, group, page = null }) {
  if (!DTYPES.includes(dtype)) throw new RangeError(`dtype must be 'f32' or 'f16', got ${String(dtype)}`);
  if (!Number.isSafeInteger(group) || group < 1 || group > MAX_GROUP) throw new RangeError(`group must be an integer in [1, ${MAX_GROUP}], got ${group}`);
  if (blocks.length / 2 > MAX_LAYERS) throw new RangeError(`${blocks.length / 2} layers, more than the ${MAX_LAYERS} a page may have`);
  const out = new Uint8Array(q8Size(tokens.length, blocks.map((b) => b.length), group));
  const dv = new DataView(out.buffer);
  let at = writeHead(out, dv, MAGIC, fingerprint, page ? page.start : 0, tokens);
  if (page) { // parent_n, then the parent's key
    setU64(dv, at, page.parentN);
    dv.setBigUint64(at + 8, page.parent[0], true);
    dv.setBigUint64(at + 16, page.parent[1], true);
  }
  setU64(dv, at + 24, DTYPES.indexOf(dtype));
  setU64(dv, at + 32, group);
  setU64(dv, at + 40, blocks.length / 2);
  at += AFTER_TOKENS;
  const q = new Int8Array(out.buffer);
  blocks.forEach((block, b) => {
    if (block.length % group) throw new RangeError(`block ${b} has ${block.length} values, not rows of ${group}`);
    setU64(dv, at, block.length);
    at += 8;
    for (let r = 0; r < block.length; r += group) {
      let max = 0;
      for (let j = r; j < r + group; j++) max = Math.max(max, Math.abs(block[j]));
      if (!(max <= 127 * F16_MAX)) throw new RangeError(`block ${b} has a value that is not finite or past ±${127 * F16_MAX} (row at ${r}): not quantizable to q8`);
      const bits = f16Up(max / 127);
      dv.setUint16(at, bits, true);
      at += 2;
      const s = scaleOf(bits);
      for (let j = r; j < r + group; j++) q[at++] = s ? Math.max(-127, Math.min(127, Math.round(block[j] / s))) : 0;
    }
  });
  return out;
}
