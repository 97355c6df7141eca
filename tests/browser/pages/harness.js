// Browser-test page module: window.T is the test API (api.js) over the
// page's own rlxkv module instance, plus module Web Workers that run the
// same API (worker.js). window.T.ready resolves once init() is done;
// window.T.error holds an init failure. The package is /js/index.js, or
// with ?lib=bundle the minified browser bundle wasm/dist/rlxkv.browser.js
// (what the package's 'browser' export gives bundlers).
import { makeApi, within } from './api.js';

const LIBS = { index: '/js/index.js', bundle: '/wasm/dist/rlxkv.browser.js' };
const lib = new URLSearchParams(location.search).get('lib') || 'index';

const workers = [];
let nextCall = 0;

const T = {
  ready: null,
  error: null,
  /**
   * Counts, from now on, the window's File reads of OPFS blobs (getFile()
   * calls on *.rlxkv files) in T.fileReads, and its createWritable() calls
   * (on any file) in T.streamWrites.
   */
  countFileReads() {
    const getFile = T.getFile ??= FileSystemFileHandle.prototype.getFile;
    const createWritable = T.createWritable ??= FileSystemFileHandle.prototype.createWritable;
    T.fileReads = 0;
    T.streamWrites = 0;
    FileSystemFileHandle.prototype.getFile = function (...args) {
      if (this.name.endsWith('.rlxkv')) T.fileReads++;
      return getFile.apply(this, args);
    };
    FileSystemFileHandle.prototype.createWritable = function (...args) {
      T.streamWrites++;
      return createWritable.apply(this, args);
    };
  },
  /** Counts IndexedDB put() calls (T.puts), logs the first one to the console and holds its transaction open for 5 s. */
  watchPuts() {
    const put = IDBObjectStore.prototype.put;
    T.puts = 0;
    IDBObjectStore.prototype.put = function (...args) {
      if (T.puts++ === 0) {
        // Keeps the flush's transaction busy for a while (a chain of gets
        // on its store), so that the test's interruption lands before it
        // commits however fast this machine writes.
        const until = performance.now() + 5000;
        const spin = () => { if (performance.now() < until) this.get('rlxkv-test: nothing').onsuccess = spin; };
        spin();
        console.log('rlxkv-test: first IndexedDB put');
      }
      return put.apply(this, args);
    };
  },
  /**
   * Logs the first IndexedDB get() of a blob (a key ending .rlxkv) to the
   * console and holds that read's transaction open for 5 s, so that a test
   * can kill the page while a hit is reading.
   */
  watchBlobGets() {
    const get = IDBObjectStore.prototype.get;
    let seen = false;
    IDBObjectStore.prototype.get = function (key, ...rest) {
      if (!seen && typeof key === 'string' && key.endsWith('.rlxkv')) {
        seen = true;
        const until = performance.now() + 5000;
        const spin = () => { if (performance.now() < until) get.call(this, 'rlxkv-test: nothing').onsuccess = spin; };
        spin();
        console.log('rlxkv-test: first blob get');
      }
      return get.call(this, key, ...rest);
    };
  },
  /** Starts a module worker running worker.js, on the page's package; returns its index. */
  async spawnWorker() {
    const w = new Worker(`/tests/browser/pages/worker.js?lib=${lib}`, { type: 'module' });
    const pending = new Map();
    w.onmessage = ({ data }) => {
      const p = pending.get(data.call);
      if (!p) return;
      pending.delete(data.call);
      if ('error' in data) p.reject(new Error(`in worker: ${data.error}`));
      else p.resolve(data.result);
    };
    w.onerror = (ev) => {
      const msg = `worker error: ${ev.message || 'unknown'} (${ev.filename}:${ev.lineno})`;
      console.error(msg);
      for (const p of pending.values()) p.reject(new Error(msg));
      pending.clear();
    };
    workers.push({ w, pending });
    const index = workers.length - 1;
    await T.inWorker(index, 'ping');
    return index;
  },
  /** Calls api[fn](...args) inside worker `index`. */
  inWorker(index, fn, ...args) {
    const { w, pending } = workers[index];
    const call = ++nextCall;
    const done = new Promise((resolve, reject) => pending.set(call, { resolve, reject }));
    w.postMessage({ call, fn, args });
    return within(done, 60000, `worker ${fn}()`);
  },
  terminateWorker(index) {
    workers[index].w.terminate();
  },
};
window.T = T;

T.ready = (async () => {
  try {
    if (!LIBS[lib]) throw new Error(`unknown ?lib=${lib}`);
    const { default: init } = await import(LIBS[lib]);
    const rlx = await init();
    Object.assign(T, makeApi(rlx), { rlx, lib: LIBS[lib] });
    return true;
  } catch (e) {
    T.error = String((e && e.stack) || e);
    console.error('rlxkv-test: init failed:', T.error);
    throw e;
  }
})();
