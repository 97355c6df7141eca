// Diagnostic (not part of npm run bench): where the time of an IndexedDB
// restore goes. Uses the unbundled modules so that internals can be wrapped
// with performance.now(). Driven by bench/profile_restore.mjs.
import init from '/js/index.js';
import { IdbMirror } from '/web/idb-sync.js';
import { Storage } from '/web/storage.js';

const FP = 0xbe7cbn;
const TOKENS = 256, LAYERS = 4, ROW = 128;
function entry(i) {
  let x = (i + 1) * 0x9e3779b1;
  const rnd = () => { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; return (x >>> 0) / 4294967296 - 0.5; };
  const tokens = Uint32Array.from({ length: TOKENS }, (_, j) => (j === 0 ? 50000 + i : (i * 31 + j * 7) % 32000));
  const block = () => Float32Array.from({ length: TOKENS * ROW }, rnd);
  return { tokens, k: Array.from({ length: LAYERS }, block), v: Array.from({ length: LAYERS }, block) };
}
const mib = (n) => n * 1048576;

export async function write({ count }) {
  const rlx = await init();
  const cache = await rlx.openCache({ capBytes: mib(count + 16), fingerprint: FP, storage: 'idb', path: `/prof-${count}` });
  for (let i = 0; i < count; i++) { const e = entry(i); cache.insert(e.tokens, e); }
  await cache.close();
}

const req = (r) => new Promise((res, rej) => { r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error); });

export async function restore({ count }) {
  const t = {};
  const add = (k, ms) => { t[k] = (t[k] || 0) + ms; };
  const wrap = (obj, name, key, { async: isAsync = false } = {}) => {
    const orig = obj[name];
    obj[name] = function (...a) {
      const s = performance.now();
      const r = orig.apply(this, a);
      if (isAsync) return r.then((v) => { add(key, performance.now() - s); return v; });
      add(key, performance.now() - s);
      return r;
    };
  };
  let s = performance.now();
  const rlx = await init({ newInstance: true });
  t.init = performance.now() - s;
  // IndexedDB side, inside IdbMirror.restore.
  wrap(IdbMirror.prototype, 'openDb', 'idb open', { async: true });
  wrap(IDBObjectStore.prototype, 'getAllKeys', 'getAllKeys (issue)');
  wrap(IdbMirror.prototype, 'restore', 'mirror.restore total', { async: true });
  // The C side, through the FS and the exports.
  const origOpen = Storage.open;
  let core = null;
  Storage.open = async function (c, ...a) {
    core = c;
    const { FS } = c.M;
    if (!FS.__prof) {
      FS.__prof = true;
      wrap(FS, 'writeFile', 'FS.writeFile (records into MEMFS)');
      wrap(FS, 'utime', 'FS.utime');
      wrap(FS, 'read', 'FS.read (MEMFS -> heap)');
      wrap(FS, 'open', 'FS.open');
      wrap(FS, 'stat', 'FS.stat');
      wrap(FS, 'readdir', 'FS.readdir');
      // The cache exists before Storage.open, and without storageCapBytes
      // neither the restore nor close({ flush: false }) prunes.
      for (const f of ['_rlxkv_store_load', '_rlxkv_store_open']) wrap(c.M, f, f);
    }
    const r0 = performance.now();
    const st = await origOpen.call(this, c, ...a);
    add('Storage.open total (mount+restore+store_open)', performance.now() - r0);
    return st;
  };
  s = performance.now();
  const cache = await rlx.openCache({ capBytes: mib(count + 16), fingerprint: FP, storage: 'idb', path: `/prof-${count}` });
  t['openCache total'] = performance.now() - s;
  Storage.open = origOpen;
  t.heap_bytes_after = core.M.HEAPU8.buffer.byteLength;
  if (cache.restoreReport.loaded !== count) throw new Error('restore');
  await cache.close({ flush: false });
  // Raw reference in the same page: open + getAllKeys + get per key (what a
  // restore must do: it does not know the keys beforehand).
  s = performance.now();
  const db = await req(indexedDB.open(`/prof-${count}`));
  t['raw: open'] = performance.now() - s;
  const tx = db.transaction(['FILE_DATA'], 'readonly');
  const st = tx.objectStore('FILE_DATA');
  const keys = await req(st.getAllKeys());
  t['raw: +getAllKeys'] = performance.now() - s;
  await Promise.all(keys.map((k) => req(st.get(k))));
  t['raw: open+keys+gets'] = performance.now() - s;
  db.close();
  // Heap growth cost alone: grow a fresh memory by what the restore grew.
  const m = new WebAssembly.Memory({ initial: 256, maximum: 65536 });
  s = performance.now();
  m.grow(Math.max(0, (t.heap_bytes_after >>> 16) - 256));
  t['grow fresh memory 16MB -> after (alone)'] = performance.now() - s;
  return t;
}
