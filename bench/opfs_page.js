// In-page half of bench/bench_opfs.mjs: the hit-load of one stored entry
// (await cache.match() of a stored-only entry: its blob read, checked and
// put in memory) from rlxkv's 'opfs' storage in a window and in a worker,
// from its 'idb' storage, next to the raw reads of the same bytes: an
// IndexedDB get of the blob as one record, a File read of the OPFS file,
// and a bare read of it through a sync access handle (worker). Imported by
// the page and by opfs_worker.js.
import { request, openRaw } from './raw_idb.js';
const FP = 0x0bf5n;
const TOKENS = 256, LAYERS = 4;
const mib = (n) => n * 1048576;
const path = (size) => `/bench-opfs-${size}`;
const rawDb = (size) => `raw-opfs-bench-${size}`;

async function init(entry) { return (await import(entry)).default(); }

/** One entry of `size` MiB of KV (pseudo-random floats: nothing compresses). */
function entryOf(size) {
  let x = 0x9e3779b1;
  const row = 128 * size;
  const block = () => {
    const b = new Uint32Array(TOKENS * row);
    for (let i = 0; i < b.length; i++) { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; b[i] = (x >>> 0) & 0x3f7fffff; }
    return new Float32Array(b.buffer);
  };
  const tokens = Uint32Array.from({ length: TOKENS }, (_, j) => 1000 * size + j);
  return { tokens, k: Array.from({ length: LAYERS }, block), v: Array.from({ length: LAYERS }, block) };
}
const tokensOf = (size) => Uint32Array.from({ length: TOKENS }, (_, j) => 1000 * size + j);


/** ms that fn takes, and its result. */
async function timed(fn) {
  const t0 = performance.now();
  const result = await fn();
  return [performance.now() - t0, result];
}

/**
 * The cache's hit-load of the stored entry of `size` MiB from `storage`:
 * ms (opening, which reads no KV, untimed); grows, if given, gets the ms
 * spent in memory.grow() during the hit and the bytes grown.
 */
async function hitLoad(rlx, storage, size, grows = null) {
  const cache = await rlx.openCache({ capBytes: mib(size + 8), fingerprint: FP, storage, path: path(size) });
  try {
    if (cache.stats.entries !== 0 || cache.stats.storedEntries !== 1) throw new Error(`${storage}: expected one stored-only entry`);
    const [ms, hit, growMs, grown] = await timedGrows(() => cache.match(tokensOf(size), { view: true }));
    if (!hit || hit.matched !== TOKENS) throw new Error(`${storage}: no hit`);
    if (grows) Object.assign(grows, { ms: growMs, bytes: grown });
    return ms;
  } finally {
    await cache.close({ flush: false });
  }
}

/** [the OPFS directory of the entry of `size` MiB, its blob's name] (as an open cache has them before a hit). */
async function opfsFile(size) {
  let dir = await navigator.storage.getDirectory();
  for (const seg of path(size).split('/').filter(Boolean)) dir = await dir.getDirectoryHandle(seg);
  for await (const [name, h] of dir.entries()) if (h.kind === 'file' && name.endsWith('.rlxkv')) return [dir, name];
  throw new Error('no OPFS blob');
}

/** First visit: the entry flushed to 'idb' and to 'opfs' (this window), and its blob put as one raw IndexedDB record. */
export async function setup({ size, entry }) {
  const rlx = await init(entry);
  const e = entryOf(size);
  const out = {};
  for (const storage of ['idb', 'opfs']) {
    const cache = await rlx.openCache({ capBytes: mib(size + 8), fingerprint: FP, storage, path: path(size) });
    cache.insert(e.tokens, e);
    [out[`${storage}_flush_ms`]] = await timed(() => cache.flush());
    if (storage === 'idb') {
      const blob = cache.exportBlob(e.tokens);
      out.blob_bytes = blob.length;
      const db = await openRaw(rawDb(size));
      const tx = db.transaction('blobs', 'readwrite');
      tx.objectStore('blobs').put(blob, 'blob');
      await new Promise((resolve, reject) => { tx.oncomplete = resolve; tx.onabort = () => reject(tx.error); });
      db.close();
    }
    await cache.close({ flush: false });
  }
  return out;
}

/** A fresh window: raw IndexedDB get, File read of the OPFS file, hit-loads from 'idb' and 'opfs'. */
export async function windowPhase({ size, entry }) {
  const rlx = await init(entry);
  const db = await openRaw(rawDb(size));
  const [idb_get] = await timed(async () => {
    const v = await request(db.transaction('blobs', 'readonly').objectStore('blobs').get('blob'));
    if (!v || v.byteLength < mib(size)) throw new Error('raw record missing');
  });
  db.close();
  const [dir, name] = await opfsFile(size);
  const [file_read] = await timed(async () => (await (await dir.getFileHandle(name)).getFile()).arrayBuffer());
  return {
    idb_get,
    file_read,
    idb_hit: await hitLoad(rlx, 'idb', size),
    opfs_window_hit: await hitLoad(rlx, 'opfs', size),
  };
}

/**
 * One flush of a new entry of `size` MiB (entry `salt`'s tokens) to
 * `storage` here (a window, with its helper or not, or a worker): its ms;
 * the entry then removed (untimed), so that the store stays small.
 */
export async function flushPhase({ size, entry, storage, salt }) {
  const rlx = await init(entry);
  const cache = await rlx.openCache({ capBytes: mib(size + 8), fingerprint: FP, storage, path: '/bench-opfs-flush' });
  const e = entryOf(size);
  e.tokens[0] = 50000 + salt; // a new blob each time
  cache.insert(e.tokens, e);
  const [flush_ms] = await timed(() => cache.flush());
  cache.remove(e.tokens);
  await cache.flush();
  await cache.close({ flush: false });
  return { flush_ms };
}

// The open of a store of many entries: OPEN_ENTRIES of OPEN_TOKENS tokens
// and 32 KiB of KV each, the same in 'opfs' and in 'idb'.
export const OPEN_ENTRIES = 1000;
const OPEN_TOKENS = 512;
const OPEN_PATH = '/bench-opfs-open';
const openTokensOf = (i) => Uint32Array.from({ length: OPEN_TOKENS }, (_, j) => (i * 997 + j * 31) % 50257);

/** First visit: OPEN_ENTRIES entries flushed to `storage` (a worker writes 'opfs', the window 'idb'). */
export async function setupOpen({ entry, storage }) {
  const rlx = await init(entry);
  const cache = await rlx.openCache({ capBytes: mib(64), fingerprint: FP, storage, path: OPEN_PATH });
  const kv = () => [new Float32Array(OPEN_TOKENS * 8).fill(0.5)];
  for (let i = 0; i < OPEN_ENTRIES; i++) {
    const t = openTokensOf(i);
    t[0] = 60000 + i; // no entry a prefix of another
    cache.insert(t, { k: kv(), v: kv() });
  }
  await cache.close();
  return {};
}

/** openCache of the OPEN_ENTRIES store from `storage` here (window or worker): { open_ms, known }. */
export async function openPhase({ entry, storage }) {
  const rlx = await init(entry);
  const [open_ms, cache] = await timed(() => rlx.openCache({ capBytes: mib(64), fingerprint: FP, storage, path: OPEN_PATH }));
  const known = cache.stats.storedEntries;
  await cache.close({ flush: false });
  if (known !== OPEN_ENTRIES) throw new Error(`${storage}: ${known} entries known, not ${OPEN_ENTRIES}`);
  return { open_ms };
}

/** What the grows of wasm memory cost while fn runs: [ms of fn, its result, ms in memory.grow(), bytes grown]. */
async function timedGrows(fn) {
  const Memory = WebAssembly.Memory.prototype, grow = Memory.grow;
  let growMs = 0, grown = 0;
  Memory.grow = function (pages) {
    const t0 = performance.now();
    try { return grow.call(this, pages); } finally { growMs += performance.now() - t0; grown += pages * 65536; }
  };
  try {
    const [ms, result] = await timed(fn);
    return [ms, result, growMs, grown];
  } finally {
    Memory.grow = grow;
  }
}

/**
 * A bare read of the whole file, as the least code would: its handle
 * (getFileHandle), a sync access handle, read() into `buf`, close. Returns
 * [ms of it all, ms of the read() alone].
 */
async function bareRead(dir, name, buf) {
  let readMs = 0;
  const [ms] = await timed(async () => {
    const s = await (await dir.getFileHandle(name)).createSyncAccessHandle({ mode: 'read-only' });
    try {
      const b = buf || new Uint8Array(s.getSize());
      [readMs] = await timed(() => s.read(b, { at: 0 }));
    } finally {
      s.close();
    }
  });
  return [ms, readMs];
}

/**
 * In a fresh worker, one of two phases (each in its own worker, so that
 * each pays its first sync access handle and its fresh memory): 'bare',
 * the bare read into a new buffer (fresh pages, as a cold hit's heap), the
 * File API's read of it, then the bare read again into a buffer touched
 * beforehand; or 'hit', the hit-load on a new module instance (the heap
 * growing, its new pages touched by the read), then again on the same
 * instance (warm heap).
 */
export async function workerPhase({ size, entry, phase }) {
  if (phase === 'bare') {
    const [dir, name] = await opfsFile(size);
    const [bare_read] = await bareRead(dir, name, null);
    // The File API instead (getFile().arrayBuffer()), copied once into new memory as into a heap.
    const [worker_file_read] = await timed(async () => {
      const ab = await (await (await dir.getFileHandle(name)).getFile()).arrayBuffer();
      new Uint8Array(ab.byteLength).set(new Uint8Array(ab));
    });
    const touched = new Uint8Array((await (await dir.getFileHandle(name)).getFile()).size).fill(1);
    const [bare_read_warm, read_call] = await bareRead(dir, name, touched);
    return { bare_read, worker_file_read, bare_read_warm, read_call };
  }
  const rlx = await init(entry);
  const grows = {};
  const opfs_worker_hit = await hitLoad(rlx, 'opfs', size, grows);
  return { opfs_worker_hit, opfs_worker_hit_grow: grows.ms, opfs_worker_hit_grew: grows.bytes, opfs_worker_hit_warm: await hitLoad(rlx, 'opfs', size) };
}
