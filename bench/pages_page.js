// In-page half of bench/bench_pages_browser.mjs (a window, or a dedicated
// worker through pages_worker.js): the hit-load of a 1,000-token prompt
// stored as 7 pages (bench/pages_workload.js) or whole, from rlxkv's 'idb'
// and 'opfs' storage, timed from openCache to `await cache.match()`
// returning the k/v arrays, next to a raw IndexedDB get of the whole blob's
// bytes as one record of a database of its own, in the same realm.
import { CAP, FP, SHAPES, build, check, fullBlocks, layoutOf, queryOf, tokensOf } from './pages_workload.js';
import { request, openRaw } from './raw_idb.js';

const pathOf = (storage, shape, variant) => `/bench-pages-${storage}-${shape}-${variant}`;
const rawDb = (shape) => `raw-pages-bench-${shape}`;
const init = async (entry) => (await import(entry)).default();

const getRaw = (db, key) => request(db.transaction('blobs', 'readonly').objectStore('blobs').get(key));

/**
 * First visit (a window): both variants flushed to 'idb' and to 'opfs',
 * and in the raw database the whole blob as one record ('blob') and its
 * bytes cut at the sizes of the 'idb' store's 7 pages ('page0'..), for the
 * diagnostic of 7 gets. Returns the blob counts and bytes.
 */
export async function setup({ entry, shape }) {
  const rlx = await init(entry);
  const s = SHAPES[shape], blocks = fullBlocks(s);
  const out = {};
  let pageSizes = null;
  for (const storage of ['idb', 'opfs']) {
    for (const variant of ['paged', 'whole']) {
      const path = pathOf(storage, shape, variant);
      await rlx.deleteStore({ storage, path });
      const cache = await rlx.openCache({ capBytes: CAP, fingerprint: FP, storage, path, layout: layoutOf(s) });
      await build(cache, s, blocks, variant);
      const listed = cache.listBlobs().filter((b) => b.status === 'ok');
      out[`${storage}_${variant}_blobs`] = listed.length;
      out[`${storage}_${variant}_bytes`] = listed.reduce((n, b) => n + b.bytes, 0);
      if (storage === 'idb' && variant === 'paged') pageSizes = listed.map((b) => b.bytes).sort((a, b) => b - a);
      if (storage === 'idb' && variant === 'whole') {
        const blob = cache.exportBlob(tokensOf());
        out.raw_bytes = blob.length;
        await new Promise((resolve, reject) => { const r = indexedDB.deleteDatabase(rawDb(shape)); r.onsuccess = resolve; r.onerror = () => reject(r.error); });
        const db = await openRaw(rawDb(shape));
        const tx = db.transaction('blobs', 'readwrite');
        const st = tx.objectStore('blobs');
        st.put(blob, 'blob');
        let at = 0;
        pageSizes.forEach((n, i) => { st.put(blob.slice(at, Math.min(at + n, blob.length)), `page${i}`); at += n; });
        await new Promise((resolve, reject) => { tx.oncomplete = resolve; tx.onabort = () => reject(tx.error); });
        db.close();
        out.raw_pages = pageSizes.length;
      }
      await cache.close({ flush: false });
    }
  }
  return out;
}

/** Time in WebAssembly.Memory.prototype.grow (and bytes grown) between reset() and stop(). */
function growMeter() {
  const M = WebAssembly.Memory.prototype, grow = M.grow;
  const m = { ms: 0, bytes: 0, on: false, reset() { m.ms = 0; m.bytes = 0; m.on = true; }, stop() { m.on = false; M.grow = grow; } };
  M.grow = function (pages) {
    const t0 = performance.now();
    try { return grow.call(this, pages); } finally { if (m.on) { m.ms += performance.now() - t0; m.bytes += pages * 65536; } }
  };
  return m;
}

/**
 * On a fresh page load or in a fresh worker: the hit-load (openCache, then
 * match of the query) of `variant` from `storage`, and the raw get of the
 * whole blob's record, which goes first as rawFirst says. Then, untimed for
 * the targets: the hit looked up again from memory (its gather alone), and
 * 7 raw gets, one transaction each, of the blob's bytes cut as the pages.
 */
export async function hitPhase({ entry, shape, storage, variant, view, rawFirst, pages }) {
  const s = SHAPES[shape];
  const rlx = await init(entry); // the module's load is not the cache's: untimed
  const q = queryOf();
  const db = await openRaw(rawDb(shape)); // opened untimed, as an app's own database would be
  const out = {};
  let cache, hit;
  const load = async () => {
    const grows = growMeter();
    try {
      const t0 = performance.now();
      cache = await rlx.openCache({ capBytes: CAP, fingerprint: FP, storage, path: pathOf(storage, shape, variant), layout: layoutOf(s) });
      const t1 = performance.now();
      grows.reset();
      hit = await cache.match(q, { view });
      const t2 = performance.now();
      Object.assign(out, { open_ms: t1 - t0, match_ms: t2 - t1, total_ms: t2 - t0 });
    } finally {
      grows.stop();
      Object.assign(out, { match_grow_ms: grows.ms, match_grew_bytes: grows.bytes });
    }
  };
  const raw = async () => {
    const t0 = performance.now();
    const v = await getRaw(db, 'blob');
    out.get_ms = performance.now() - t0;
    if (!v || !v.byteLength) throw new Error('raw record missing');
  };
  if (rawFirst) { await raw(); await load(); } else { await load(); await raw(); }
  // Checked before the diagnostics: a view of a gathered hit holds until the next gathered hit.
  check(hit, s, fullBlocks(s));
  out.view = hit ? hit.view : null;
  const t0 = performance.now();
  const again = cache.lookup(q, { view });
  out.relookup_ms = performance.now() - t0;
  if (!again) throw new Error('relookup: no hit');
  const t1 = performance.now();
  for (let i = 0; i < pages; i++) if (!(await getRaw(db, `page${i}`))) throw new Error(`raw page${i} missing`);
  out.get_pages_ms = performance.now() - t1;
  await cache.close({ flush: false });
  db.close();
  return out;
}
