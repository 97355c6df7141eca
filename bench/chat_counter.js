// Bytes written to browser storage, counted by bench/chat_page.js before the
// library loads: the binary bytes of values put into IndexedDB, and the
// bytes handed to OPFS writes. Workers the library starts from a blob: URL
// (as its OPFS helper) get the same counting prepended to their script,
// and report what they count back over a BroadcastChannel.

/**
 * Installs the counting in global `g` (a window or a worker) and returns
 * the counter { bytes, calls, byKind, sync() }: sync() resolves once the
 * counts of every worker heard from so far have arrived. `channel`: given
 * in a worker this function's source was prepended to, which then reports
 * each write there instead of keeping it. Self-contained (it is
 * stringified into workers' scripts): no closures over module scope.
 */
export function installWriteCounter(g, channel = null) {
  if (g.__rlxkvBenchWrites) return g.__rlxkvBenchWrites;
  const remote = !!channel;
  const name = channel || `rlxkv-bench-writes-${Math.random().toString(36).slice(2)}`;
  const c = { bytes: 0, calls: 0, byKind: {}, remoteWorkers: 0, sync: async () => {} };
  g.__rlxkvBenchWrites = c;
  const ch = typeof BroadcastChannel === 'function' ? new BroadcastChannel(name) : null;
  const id = Math.random().toString(36).slice(2);
  const keep = (kind, n) => { c.bytes += n; c.calls++; c.byKind[kind] = (c.byKind[kind] || 0) + n; };
  const add = (kind, n) => {
    if (!(n > 0)) return;
    if (remote && ch) ch.postMessage({ id, kind, n });
    else keep(kind, n);
  };
  /** Binary bytes of a value: ArrayBuffers, typed arrays, DataViews and Blobs, in objects and arrays too (4 levels). */
  const sizeOf = (v, depth = 0) => {
    if (v === null || typeof v !== 'object') return 0;
    if (v instanceof ArrayBuffer || (typeof SharedArrayBuffer === 'function' && v instanceof SharedArrayBuffer)) return v.byteLength;
    if (ArrayBuffer.isView(v)) return v.byteLength;
    if (typeof Blob === 'function' && v instanceof Blob) return v.size;
    if (depth >= 4) return 0;
    let n = 0;
    if (Array.isArray(v)) for (const x of v) n += sizeOf(x, depth + 1);
    else if (v instanceof Map) for (const x of v.values()) n += sizeOf(x, depth + 1);
    else for (const k of Object.keys(v)) n += sizeOf(v[k], depth + 1);
    return n;
  };
  c.sizeOf = sizeOf;
  const dataSize = (d) => (typeof d === 'string' ? new TextEncoder().encode(d).length : sizeOf(d));

  if (typeof IDBObjectStore === 'function') {
    for (const m of ['put', 'add']) {
      const orig = IDBObjectStore.prototype[m];
      IDBObjectStore.prototype[m] = function (value, ...rest) {
        const r = orig.call(this, value, ...rest);
        add(`idb.${m}`, sizeOf(value));
        return r;
      };
    }
  }
  if (typeof FileSystemSyncAccessHandle === 'function') {
    const orig = FileSystemSyncAccessHandle.prototype.write;
    FileSystemSyncAccessHandle.prototype.write = function (...a) {
      const n = orig.apply(this, a);
      add('opfs.syncWrite', n);
      return n;
    };
  }
  if (typeof FileSystemWritableFileStream === 'function') {
    const P = FileSystemWritableFileStream.prototype;
    const size = (d) => (d && typeof d === 'object' && !ArrayBuffer.isView(d) && !(d instanceof ArrayBuffer) && !(typeof Blob === 'function' && d instanceof Blob)
      ? (d.type === 'write' ? dataSize(d.data) : 0) : dataSize(d));
    const orig = P.write;
    P.write = async function (d) { const r = await orig.call(this, d); add('opfs.streamWrite', size(d)); return r; };
    // Writes through a writer of the stream (getWriter().write) bypass P.write.
    if (typeof WritableStreamDefaultWriter === 'function') {
      const writers = new WeakSet();
      const getWriter = P.getWriter || WritableStream.prototype.getWriter;
      P.getWriter = function (...a) { const w = getWriter.apply(this, a); writers.add(w); return w; };
      const ww = WritableStreamDefaultWriter.prototype.write;
      WritableStreamDefaultWriter.prototype.write = function (d) {
        const p = ww.call(this, d);
        return writers.has(this) ? p.then((r) => { add('opfs.writerWrite', size(d)); return r; }) : p;
      };
    }
  }
  // Workers started from blob: URLs of script (the library's OPFS helper): the same counting first, reporting here.
  if (typeof URL === 'function' && typeof URL.createObjectURL === 'function' && typeof Blob === 'function') {
    const orig = URL.createObjectURL;
    const src = installWriteCounter.toString();
    URL.createObjectURL = function (obj) {
      if (obj instanceof Blob && /javascript/.test(obj.type)) {
        obj = new Blob([`(${src})(self, ${JSON.stringify(name)});\n`, obj], { type: obj.type });
      }
      return orig.call(this, obj);
    };
  }
  if (remote && ch) {
    ch.onmessage = ({ data }) => { if (data && data.ping) ch.postMessage({ pong: data.ping, id }); };
    ch.postMessage({ hello: id });
  } else if (ch) {
    const workers = new Set(), waiting = new Map();
    ch.onmessage = ({ data }) => {
      if (!data) return;
      if (data.id && !workers.has(data.id)) { workers.add(data.id); c.remoteWorkers = workers.size; }
      if (data.n) keep(data.kind, data.n);
      if (data.pong && waiting.has(data.pong)) waiting.get(data.pong)(data.id);
    };
    // A ping both reaches the workers and, through a second channel object, comes back here: by then the
    // messages they sent before it are in (one broker orders a channel's messages); then every worker known answers.
    const echo = new BroadcastChannel(name);
    let seq = 0;
    c.sync = () => new Promise((resolve) => {
      const ping = `${id}-${++seq}`;
      const answered = new Set();
      let echoed = false;
      const done = () => { if (echoed && [...workers].every((w) => answered.has(w))) { waiting.delete(ping); clearTimeout(timer); resolve(); } };
      const timer = setTimeout(() => { waiting.delete(ping); resolve(); }, 2000); // a worker gone answers nothing
      waiting.set(ping, (w) => { answered.add(w); done(); });
      const seen = (e) => { if (e.data && e.data.ping === ping) { echoed = true; echo.removeEventListener('message', seen); done(); } };
      echo.addEventListener('message', seen);
      ch.postMessage({ ping });
    });
  }
  return c;
}
