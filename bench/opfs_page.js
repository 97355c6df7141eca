// In-page half of bench/bench_opfs.mjs: the hit-load of one stored entry
// (await cache.match() of a stored-only entry: its blob read, checked and
// put in memory) from rlxkv's 'opfs' storage in a window and in a worker,
// from its 'idb' storage, next to the raw reads of the same bytes: an
// IndexedDB get of the blob as one record, a File read of the OPFS file,
// and a sync access handle's read() of it (worker). Imported by the page
// and by opfs_worker.js.
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

function request(r) {
  return new Promise((resolve, reject) => { r.onsuccess = () => resolve(r.result); r.onerror = () => reject(r.error); });
}
function openRaw(name) {
  const r = indexedDB.open(name, 1);
  r.onupgradeneeded = () => r.result.createObjectStore('blobs');
  return request(r);
}

/** ms that fn takes, and its result. */
async function timed(fn) {
  const t0 = performance.now();
  const result = await fn();
  return [performance.now() - t0, result];
}

/** The cache's hit-load of the stored entry of `size` MiB from `storage`: ms (opening, which reads no KV, untimed). */
async function hitLoad(rlx, storage, size) {
  const cache = await rlx.openCache({ capBytes: mib(size + 8), fingerprint: FP, storage, path: path(size) });
  try {
    if (cache.stats.entries !== 0 || cache.stats.storedEntries !== 1) throw new Error(`${storage}: expected one stored-only entry`);
    const [ms, hit] = await timed(() => cache.match(tokensOf(size), { view: true }));
    if (!hit || hit.matched !== TOKENS) throw new Error(`${storage}: no hit`);
    return ms;
  } finally {
    await cache.close({ flush: false });
  }
}

async function opfsFile(size) {
  let dir = await navigator.storage.getDirectory();
  for (const seg of path(size).split('/').filter(Boolean)) dir = await dir.getDirectoryHandle(seg);
  for await (const [name, h] of dir.entries()) if (name.endsWith('.rlxkv')) return h;
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
  const h = await opfsFile(size);
  const [file_read] = await timed(async () => (await h.getFile()).arrayBuffer());
  return {
    idb_get,
    file_read,
    idb_hit: await hitLoad(rlx, 'idb', size),
    opfs_window_hit: await hitLoad(rlx, 'opfs', size),
  };
}

/** In a fresh worker: the bare sync-handle read (into a ready buffer; and with opening the handle), then the hit-load, cold and warm heap. */
export async function workerPhase({ size, entry }) {
  const rlx = await init(entry);
  const h = await opfsFile(size);
  const [open_ms, s] = await timed(() => h.createSyncAccessHandle({ mode: 'read-only' }));
  const buf = new Uint8Array(s.getSize()).fill(1); // ready: its pages touched before the timed read
  const [read] = await timed(() => s.read(buf, { at: 0 }));
  s.close();
  return {
    bare_read: read,
    bare_open_read: open_ms + read,
    opfs_worker_hit: await hitLoad(rlx, 'opfs', size),
    // Again on the same instance: the heap has grown and its pages are touched (steady state).
    opfs_worker_hit_warm: await hitLoad(rlx, 'opfs', size),
  };
}
