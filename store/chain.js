// Rows of KV blocks by token, for a layout that cuts them per token
// ('head-major': each block is heads runs of rows × headDim values;
// 'token-major': one run of rows × heads × headDim): where a page's rows
// go in an entry that holds a whole chain of pages, and the rows of a
// range cut out of blocks. Used by a hit read from stored pages
// (store/tiers.js), a hit fetched from a remote tier (store/remote.js) and the
// publisher that cuts entries into pages (store/publish.js).

import { DTYPE } from '../wasm/native-cache.js';

const SIZE = { f32: 4, f16: 2 };

/**
 * A new entry (NativeCache.entryNew: the caller's until put or freed) of
 * `layers` layers for the values of tokens start..n-1 in `layout`, or the
 * C status (< 0) if none could be made.
 */
export function entryOfRows(native, tokens, start, layout, dtype, layers) {
  const block = (tokens.length - start) * layout.heads * layout.headDim;
  return native.entryNew(tokens, new Array(2 * layers).fill(block), DTYPE[dtype], start);
}

/**
 * Where rows at..at+own-1 of block b lie in an entry's values (`values`, a
 * Uint8Array over blocks of `rows` rows of `layout` one after another, of
 * dtype): one run, or one a head for a head-major layout.
 */
export function rowRuns(values, layout, dtype, rows, b, at, own) {
  const row = SIZE[dtype] * layout.headDim, heads = layout.heads, base = b * rows * heads * row;
  if (layout.order !== 'head-major') return [values.subarray(base + at * heads * row, base + (at + own) * heads * row)];
  const runs = [];
  for (let h = 0; h < heads; h++) {
    const from = base + (h * rows + at) * row;
    runs.push(values.subarray(from, from + own * row));
  }
  return runs;
}

/**
 * Copies a page's blocks (typed arrays of `own` rows each, every K block
 * then every V block) into rows at.. of an entry's values (see rowRuns).
 */
export function copyRows(values, layout, dtype, rows, at, own, blocks) {
  blocks.forEach((src, b) => {
    const bytes = new Uint8Array(src.buffer, src.byteOffset, src.byteLength);
    let from = 0;
    for (const run of rowRuns(values, layout, dtype, rows, b, at, own)) {
      run.set(bytes.subarray(from, from + run.length));
      from += run.length;
    }
  });
}

/**
 * Copies pages { from, to, dtype, blocks } (a chain's tokens from..to-1
 * each) into the values of an entry of `rows` rows that holds the chain
 * from token `start` on (see entryOfRows).
 */
export function copyPages(values, layout, rows, start, pages) {
  for (const { from, to, dtype, blocks } of pages) copyRows(values, layout, dtype, rows, from - start, to - from, blocks);
}

/** Rows from..to-1 of blocks of `rows` rows each: new arrays of the same type. */
export function cutRows(blocks, layout, rows, from, to) {
  return blocks.map((src) => {
    const dtype = src.BYTES_PER_ELEMENT === 2 ? 'f16' : 'f32';
    const out = new src.constructor((to - from) * layout.heads * layout.headDim);
    const values = new Uint8Array(src.buffer, src.byteOffset, src.byteLength);
    const runs = rowRuns(values, layout, dtype, rows, 0, from, to - from);
    const dst = new Uint8Array(out.buffer);
    let at = 0;
    for (const run of runs) {
      dst.set(run, at);
      at += run.length;
    }
    return out;
  });
}
