// A direct read (a backend's readWith(): store/backend.js) of a blob into
// an entry's memory: the values straight into their rows, the block
// headers between them into a scratch buffer, in one scatter read (readv:
// one preadv in Node, a read each from an OPFS sync handle), and the
// checks made after it: store/hits.js's reads over a backend with
// readWith() (store/backend.js direct: Node's directory, OPFS in a worker).
// A chunk of its own in the browser bundle (only OPFS in a worker reads
// this way there): it takes what it uses of the main file as an array
// (store/hits.js), importing nothing.

const MISPREDICTED = new Error('a block header differs from the first block\'s');
const CHANGED = new Error('the file changed while it was read');
/** The answer of a guessed attempt (readInto) that leaves the blob to the general one. */
const RETRY = Symbol('retry');

/**
 * The two reads below, given what they use of the rest of rlxkv:
 * [RlxkvError, DTYPE, blobSpans, getU64, headBytes, isUniformHead,
 * u64Bytes, uniformBlockLength, checkShape, rowRuns, sameTokens].
 */
export function directReads([RlxkvError, DTYPE, blobSpans, getU64, headBytes, isUniformHead, u64Bytes, uniformBlockLength, checkShape, rowRuns, sameTokens]) {
  /** The n bytes from offset at of a readWith file (fewer at its end). */
  function readAt(f, at, n) {
    const b = new Uint8Array(n);
    return b.subarray(0, f.read(b, at));
  }

  /**
   * A hit's read (store/hits.js #loadDirect) of the blob of `tokens` from
   * file f into a new entry of store state `s` (store/state.js), put: { st }:
   * the put's status, 'resident' (inserted while the file opened), 'refused'
   * (with err, if the blob is bad) or 'changed'. Two attempts, the second
   * on any doubt: the blob's structure checked as decodeBlob checks it
   * (blobSpans) from its first bytes, the headers past them taken to repeat
   * the first block's (most blobs have every block of one length) and the
   * read showing whether they do; else the structure read header by header.
   */
  function readBlobInto(s, f, tokens) {
    if (s.native.get(tokens)?.resident) return { st: 'resident' };
    const head = readAt(f, 0, Math.min(f.size, headBytes(tokens.length, true)));
    const first = uniformBlockLength(head, f.size);
    const guessed = first >= 0 ? readInto(s, f, head, u64Bytes(first), tokens) : RETRY;
    return guessed === RETRY ? readInto(s, f, head, null, tokens) : guessed;
  }

  /**
   * A hit's read (store/hits.js #loadChain) of page (or blob) c from file f
   * (a direct backend's): head, values and block headers in one scatter read, the values into
   * their rows of entry `made` (which holds tokens start.., rows rows a
   * block), then the head and headers compared with the ones that page has
   * (isUniformHead: a valid page of these tokens and of the layout), and
   * the file's end found where that page's is. Whether it is the page.
   */
  function readPageInto(s, f, c, made, start, rows, scratch) {
    const { dtype, layers, block, size, page } = c.shape;
    const headLength = headBytes(c.tokens.length, !!page), need = headLength + 8 * (2 * layers - 1) + 1;
    if (scratch.bytes.length < need) scratch.bytes = new Uint8Array(Math.max(need, 2 * scratch.bytes.length));
    const head = scratch.bytes.subarray(0, headLength);
    const headers = scratch.bytes.subarray(headLength, need - 1);
    const values = s.native.valuesOf(made), at = (c.record.start ?? 0) - start, own = c.tokens.length - start - at;
    const bufs = [head];
    for (let b = 0; b < 2 * layers; b++) {
      if (b) bufs.push(headers.subarray(8 * (b - 1), 8 * b));
      bufs.push(...rowRuns(values, s.layout, dtype, rows, b, at, own));
    }
    bufs.push(scratch.bytes.subarray(need - 1, need)); // a byte read here: the file is longer than the page
    return f.readv(bufs, 0) === size && isUniformHead(head, c.tokens, s.fp, dtype, layers, block, page) &&
      repeats(headers, u64Bytes(block));
  }

  /**
   * One attempt of readBlobInto on file f (head: its first bytes): the
   * structure, with the block headers past the head taken to be `guess`
   * if given, then the values into a new entry. { st }: the put's status,
   * 'refused' (with err, if the blob is bad) or 'changed'; RETRY when a
   * guessed attempt fails in any way (the general one then decides).
   */
  function readInto(s, f, head, guess, tokens) {
    let plan;
    try {
      plan = blobSpans((at, n) => {
        if (at + n <= head.length) return head.subarray(at, at + n);
        if (guess && n === 8) return guess; // a block header, when the head holds the first
        return readAt(f, at, n);
      }, f.size, s.fp, head.length);
      if (plan && !sameTokens(plan.tokens, tokens)) plan = null;
      if (plan) {
        const lens = plan.spans.map(([, n]) => ({ length: n }));
        const layers = lens.length / 2;
        checkShape(plan.tokens.length - (plan.page?.start ?? 0), { k: lens.slice(0, layers), v: lens.slice(layers) }, s.layout, 'blob');
      }
    } catch (err) {
      if (!(err instanceof RlxkvError) && !(err instanceof RangeError)) throw err;
      return guess ? RETRY : { st: 'refused', err };
    }
    if (!plan) return guess ? RETRY : { st: 'refused' };
    try {
      return { st: s.native.putFilled(plan.tokens, plan.spans.map(([, n]) => n), DTYPE[plan.dtype], (values) => readValues(f, plan, values), true, plan.page?.start ?? 0) };
    } catch (err) {
      if (err === MISPREDICTED && guess) return RETRY;
      if (err === MISPREDICTED || err === CHANGED) return { st: 'changed' };
      throw err;
    }
  }

  /**
   * Reads the values of a blob (its structure: plan, from blobSpans) into
   * values (the new entry's bytes), its block headers after the first into a
   * scratch buffer, in one scatter read; throws MISPREDICTED if a header is
   * not the length the plan has for its block, CHANGED if the file ended
   * early (it shrank since it was opened).
   */
  function readValues(f, plan, values) {
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
  function scatterList(values, lengths, dtype, headers) {
    const esize = dtype === 'f16' ? 2 : 4, bufs = [];
    for (let b = 0, to = 0; b < lengths.length; to += esize * lengths[b++]) {
      if (b) bufs.push(headers.subarray(8 * (b - 1), 8 * b));
      bufs.push(values.subarray(to, to + esize * lengths[b]));
    }
    return bufs;
  }

  /** Whether bytes is `unit` (8 bytes) over and over. */
  function repeats(bytes, unit) {
    for (let i = 0; i < bytes.length; i++) if (bytes[i] !== unit[i & 7]) return false;
    return true;
  }

  return { readBlobInto, readPageInto };
}
