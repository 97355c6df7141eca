// In-page half of bench/bench_browser.mjs: rlxkv's IndexedDB storage
// (openCache storage 'idb': restore and flush) next to raw IndexedDB
// get/put of the same bytes, one record per entry, in the same page.
// The module under test: the browser bundle when the build made one (what
// browsers get through the package's "browser" export), else js/index.js.
import { request, openRaw } from './raw_idb.js';
async function init(entry) {
  return (await import(entry)).default();
}

const FP = 0xbe7cbn;
// 1 MiB of KV per entry: 256 tokens x 4 layers x 128 floats, K and V.
const TOKENS = 256, LAYERS = 4, ROW = 128;

function committed(tx) {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onabort = () => reject(tx.error || new Error('aborted'));
  });
}

/** Entry i of a set: distinct tokens, KV of pseudo-random floats (not compressible). */
function entry(i) {
  let x = (i + 1) * 0x9e3779b1;
  const rnd = () => {
    x ^= x << 13; x ^= x >>> 17; x ^= x << 5;
    return (x >>> 0) / 4294967296 - 0.5;
  };
  const tokens = Uint32Array.from({ length: TOKENS }, (_, j) => (j === 0 ? 50000 + i : (i * 31 + j * 7) % 32000));
  const block = () => Float32Array.from({ length: TOKENS * ROW }, rnd);
  return { tokens, k: Array.from({ length: LAYERS }, block), v: Array.from({ length: LAYERS }, block) };
}

const mib = (n) => n * 1048576;

/**
 * First visit: fills the rlxkv database (flush) and the raw one (put) with
 * `count` entries, `reps` times each (rlxkv re-inserts so every entry is
 * dirty again); returns the times of each.
 */
export async function writePhase({ count, reps, entry: moduleUrl }) {
  const rlx = await init(moduleUrl);
  const entries = Array.from({ length: count }, (_, i) => entry(i));
  const cache = await rlx.openCache({ capBytes: mib(count + 16), fingerprint: FP, storage: 'idb', path: `/bench-${count}` });
  const raw = await openRaw(`raw-${count}`);
  const flush = [], put = [];
  let blobs = null;
  for (let r = 0; r < reps; r++) {
    for (const e of entries) cache.insert(e.tokens, e);
    if (!blobs) blobs = entries.map((e) => cache.exportBlob(e.tokens));
    const doFlush = async () => {
      const t0 = performance.now();
      await cache.flush();
      flush.push(performance.now() - t0);
    };
    const doPut = async () => {
      const t0 = performance.now();
      const tx = raw.transaction(['blobs'], 'readwrite');
      const done = committed(tx);
      const store = tx.objectStore('blobs');
      blobs.forEach((b, i) => store.put(b, i));
      await done;
      put.push(performance.now() - t0);
    };
    // Alternate which goes first.
    if (r % 2) { await doPut(); await doFlush(); } else { await doFlush(); await doPut(); }
  }
  const bytes = blobs.reduce((s, b) => s + b.length, 0);
  await cache.close({ flush: false });
  raw.close();
  return { flush, put, blob_bytes: bytes, kv_bytes: mib(count) };
}

/**
 * A fresh page load: init, then restore the rlxkv cache (openCache), read the
 * raw records back (open + one readonly transaction: getAllKeys, then a get
 * per key, all in flight) and, as diagnostics, read them with getAllKeys +
 * getAll, and with gets by keys known beforehand; the four in an order
 * rotated by `order`. Returns the times.
 *
 * The raw reference is what any restore must do: a page that reloads does
 * not know which records its database holds, so it lists the keys before
 * it can get them (a get per key measured faster than getAll in Chromium,
 * which is why the mirror does this too). The known-keys variant skips that
 * round trip; it is the floor, not a like-for-like reference.
 */
export async function restorePhase({ count, order, entry: moduleUrl }) {
  const t0 = performance.now();
  const rlx = await init(moduleUrl);
  const initMs = performance.now() - t0;
  let restore, get, getAll, getKnown, report, rawBytes = 0;
  const doRestore = async () => {
    const t = performance.now();
    // preload: every entry read at open, as the raw reads read every record
    // (without it, open reads only the index: see the storage-tier rows).
    const cache = await rlx.openCache({ capBytes: mib(count + 16), fingerprint: FP, storage: 'idb', path: `/bench-${count}`, preload: true });
    restore = performance.now() - t;
    report = cache.restoreReport;
    const hit = cache.lookup(entry(0).tokens, { view: true });
    if (!hit || hit.matched !== TOKENS) throw new Error('restored cache misses');
    await cache.close({ flush: false });
  };
  // The three raw reads: open the raw database, one readonly transaction,
  // then `read` (the only step that differs); timed from the open to the
  // last record, closed after timing.
  const rawRead = async (read) => {
    const t = performance.now();
    const db = await openRaw(`raw-${count}`);
    const tx = db.transaction(['blobs'], 'readonly');
    const store = tx.objectStore('blobs');
    const got = await read(store);
    const ms = performance.now() - t;
    db.close();
    return { ms, got };
  };
  // The reference: getAllKeys, then one get per key, all in flight.
  const doGet = async () => {
    const r = await rawRead(async (store) => {
      const keys = await request(store.getAllKeys());
      return Promise.all(keys.map((k) => request(store.get(k))));
    });
    get = r.ms;
    rawBytes = r.got.reduce((s, b) => s + b.length, 0);
  };
  // Diagnostic: gets by keys known beforehand (no listing round trip).
  const doGetKnown = async () => {
    const r = await rawRead((store) => Promise.all(Array.from({ length: count }, (_, i) => request(store.get(i)))));
    getKnown = r.ms;
    if (r.got.length !== count) throw new Error('get');
  };
  // Diagnostic: getAllKeys + getAll in one transaction (the mirror's get per
  // key measured faster than getAll in Chromium).
  const doGetAll = async () => {
    const r = await rawRead((store) => Promise.all([request(store.getAllKeys()), request(store.getAll())]));
    getAll = r.ms;
    const [keys, values] = r.got;
    if (keys.length !== count || values.length !== count) throw new Error('getAll');
  };
  const steps = [doRestore, doGet, doGetAll, doGetKnown];
  for (let i = 0; i < steps.length; i++) await steps[(i + order) % steps.length]();
  if (report.indexed !== count) throw new Error(`restored ${report.indexed} of ${count}`);
  return { init: initMs, restore, get, getAll, getKnown, raw_bytes: rawBytes, restored_bytes: report.bytes };
}
