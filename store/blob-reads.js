// A direct read (a backend's readWith(): store/backend.js) of a blob into
// an entry's memory: the values straight into their rows, the block
// headers between them into a scratch buffer, in one scatter read, and the
// checks made after it. Used by the tiered store's hits (store/tiers.js).
import { getU64 } from '../format/blob.js';

/** The n bytes from offset at of a readWith file (fewer at its end). */
export function readAt(f, at, n) {
  const b = new Uint8Array(n);
  return b.subarray(0, f.read(b, at));
}

export const MISPREDICTED = new Error('a block header differs from the first block\'s');
export const CHANGED = new Error('the file changed while it was read');
/** The answer of an attempt (#loadChain, a guessed #readInto) that leaves the blob to the next. */
export const RETRY = Symbol('retry');

/**
 * Reads the values of a blob (its structure: plan, from blobSpans) into
 * values (the new entry's bytes), its block headers after the first into a
 * scratch buffer, in one scatter read; throws MISPREDICTED if a header is
 * not the length the plan has for its block, CHANGED if the file ended
 * early (it shrank since it was opened).
 */
export function readValues(f, plan, values) {
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
export function scatterList(values, lengths, dtype, headers) {
  const esize = dtype === 'f16' ? 2 : 4, bufs = [];
  for (let b = 0, to = 0; b < lengths.length; to += esize * lengths[b++]) {
    if (b) bufs.push(headers.subarray(8 * (b - 1), 8 * b));
    bufs.push(values.subarray(to, to + esize * lengths[b]));
  }
  return bufs;
}

/** Whether a decoded page's fields (decodeBlob's page) are the ones a record's shape has (#shapeOf's page), or both are none. */
export function samePage(a, b) {
  if (!a || !b) return !a && !b;
  return a.start === b.start && a.parentN === b.parentN && a.parent[0] === b.parent[0] && a.parent[1] === b.parent[1];
}

/** Whether bytes is `unit` (8 bytes) over and over. */
export function repeats(bytes, unit) {
  for (let i = 0; i < bytes.length; i++) if (bytes[i] !== unit[i & 7]) return false;
  return true;
}
