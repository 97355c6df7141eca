// What the store knows of one blob, its record (store/state.js): made from
// a blob's first bytes, listed as the API lists blobs, judged by its name,
// and ordered for a prune (leaves first).
import { RlxkvError, STATUS, statusError } from '../wasm/errors.js';
import { blobHead, headBytes } from '../format/blob.js';
import { pageOf } from '../format/store-index.js';

const HEAD_READ = 64 << 10; // first bytes read to make a blob's record (a 8,000-token prompt)

/** Records why a blob cannot be loaded: too large (LIMIT), not of the layout (refused), else corrupt. */
export function refuse(record, err) {
  if (!record) return;
  record.status = !(err instanceof RlxkvError) ? 'refused' : err.code === 'LIMIT' ? 'too-large' : 'corrupt';
}

/** The error of a put that could not take a loaded entry (NOSPACE: capBytes; NOMEM: wasm memory). */
export const putFailed = (st, name) => statusError(st, `loading ${name}`, st === STATUS.NOSPACE ? 'no room in memory (capBytes)' : undefined);

export function sameTokens(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** A blob record as the API lists it (BlobInfo). */
export function infoOf(r, status) {
  return {
    name: r.name,
    tokens: r.tokens ? r.tokens.length : 0,
    bytes: r.bytes,
    mtime: new Date(r.lastUse),
    fingerprint: r.fingerprint ?? 0n,
    status, // ok, stale, corrupt, foreign, too-large, unreadable
    error: status === 'corrupt' ? STATUS.CORRUPT : status === 'too-large' ? STATUS.LIMIT : status === 'unreadable' ? STATUS.IO : 0,
    dtype: r.dtype ?? null,
    kvBytes: r.nValues * (r.dtype === 'f16' ? 2 : 4) || 0,
    page: !!r.start,
  };
}

/**
 * Whether a valid record is under a name of its own: its page name or its
 * blob name (what a cache's store, or a store before pages, saves it
 * under), as `native` (a NativeCache) names them.
 */
export function ownName(native, r) {
  return r.name === native.pageName(r.tokens, r.dtype, r.fingerprint) || r.name === native.blobName(r.tokens, r.fingerprint);
}

/**
 * How many stored pages name each blob as their parent (name -> count): of
 * the store's fingerprint or another (a tool store's are all stale to it).
 */
export function childCounts(records) {
  const out = new Map();
  for (const r of records) if (r.start && (r.status === 'ok' || r.status === 'stale')) out.set(r.parent, (out.get(r.parent) ?? 0) + 1);
  return out;
}

/**
 * Of `candidates` ({ r: record }, least recently used first), those a prune
 * removes to free `excess` bytes, leaves first: a page others still need
 * (children: childCounts) waits until they have gone, then goes in its
 * turn. Passes over the list until the bytes are freed or none can go.
 */
export function leavesFirst(candidates, excess, children) {
  const picked = [], left = [...candidates];
  let freed = 0, progress = true;
  while (freed < excess && progress) {
    progress = false;
    for (let i = 0; i < left.length && freed < excess; i++) {
      const d = left[i];
      if (!d || children.get(d.r.name)) continue;
      picked.push(d);
      freed += d.r.bytes;
      left[i] = null;
      progress = true;
      if (d.r.start) children.set(d.r.parent, children.get(d.r.parent) - 1);
    }
  }
  return picked;
}

/** A blob record from what blobHead said of it. */
export function recordOf(name, bytes, lastUse, info) {
  if (!info || !info.ok) return { name, bytes, lastUse, fingerprint: null, status: info?.tooLarge ? 'too-large' : 'corrupt' };
  return {
    name, bytes, lastUse, fingerprint: info.fingerprint, status: 'ok',
    dtype: info.dtype, tokens: info.tokens, nValues: info.nValues, rowMajor: info.rowMajor, ...pageOf(info.page),
  };
}

/** The record of each file { name, bytes, mtimeMs } of `blobs` (headRecord), as many at a time as the backend bears (headReads), those gone left out. */
export async function headRecords(blobs, files) {
  return (await mapBounded(files, blobs.headReads, (file) => headRecord(blobs, file))).filter(Boolean);
}

/**
 * The record of a store's blob { name, bytes, mtimeMs }, from its first
 * bytes; null if it is gone; status 'unreadable' if it cannot be read
 * (kept as it is: never judged, never pruned).
 */
async function headRecord(blobs, { name, bytes, mtimeMs }) {
  try {
    const head = await blobs.head(name, Math.min(bytes, HEAD_READ));
    if (!head) return null;
    let info = blobHead(head, bytes);
    if (!info) {
      // More tokens than the first read holds: read up to the first block's length.
      const nTokens = new DataView(head.buffer, head.byteOffset).getUint32(24, true);
      const more = await blobs.head(name, Math.min(bytes, headBytes(nTokens, true)));
      if (!more) return null;
      info = blobHead(more, bytes);
    }
    return recordOf(name, bytes, mtimeMs, info);
  } catch (err) {
    if (!(err instanceof RlxkvError)) throw err;
    return { name, bytes, lastUse: mtimeMs, fingerprint: null, status: 'unreadable', error: err.message };
  }
}

/** fn of each item, at most `limit` running at once: their results, in order. */
async function mapBounded(items, limit, fn) {
  const out = new Array(items.length);
  let next = 0;
  const run = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, run));
  return out;
}
