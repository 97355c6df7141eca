// A window's reads of OPFS blobs through a helper worker: a window has no
// sync access handles, and its File reads (getFile().arrayBuffer()) are
// slow, so web/opfs-blobs.js asks a dedicated worker of its own to read
// the file with one and to transfer the bytes back (no copy: the worker
// and the window share a process). The window then copies them once into
// the wasm heap, as it would a File's. Chromium 156, one file into a
// window, warm (ms):            1 MiB  10 MiB  50 MiB
//   getFile().arrayBuffer()      6.0    21.7    66
//   helper worker                3.5    12.7    46
// A first read in a new worker pays for the worker's first sync handle
// and the blob's file handle (2-10 ms more): the open has the helper pay
// them (warm(), on the blob used last). The worker is made from a Blob URL (its source below, which
// must stay self-contained), so a page whose CSP forbids blob: workers
// gets no helper: start() answers null and the window reads Files.
import { RlxkvError, storageError } from './errors.js';

const READY_MS = 2000; // a helper that has not answered by then is not used

/**
 * The helper's body, run as its own script: nothing from outside this
 * function reaches it. Messages in: { start: path }, answered { ready }
 * (whether it can read), then { id, name, warm }, answered { id, buf, size }
 * (buf transferred), { id, gone: true } (and so is a warm-up) or
 * { id, error: { name, message } }.
 */
function helperMain() {
  const MAX_HANDLES = 4096; // as OpfsBlobs keeps
  let dir = null;
  let lockPrefix = '';
  const handles = new Map();
  const keep = (name, h) => {
    if (!handles.has(name) && handles.size >= MAX_HANDLES) handles.delete(handles.keys().next().value);
    handles.set(name, h);
  };
  const readOnly = typeof FileSystemSyncAccessHandle === 'function' && 'mode' in FileSystemSyncAccessHandle.prototype;
  const isGone = (err) => err && (err.name === 'NotFoundError' || err.name === 'TypeMismatchError');
  const fail = (id, err) => postMessage({ id, error: { name: (err && err.name) || 'Error', message: String((err && err.message) || err) } });

  async function start(path) {
    dir = await navigator.storage.getDirectory();
    for (const seg of path.split('/').filter(Boolean)) dir = await dir.getDirectoryHandle(seg);
    lockPrefix = `rlxkv-opfs:${path}/`;
  }

  async function handleOf(name) {
    let h = handles.get(name);
    if (!h) {
      h = await dir.getFileHandle(name);
      keep(name, h);
    }
    return h;
  }

  // The handle of blob `name` kept, and one sync handle opened and closed:
  // a worker's first costs more than the next ones.
  async function warm(id, name) {
    try {
      const s = await (await handleOf(name)).createSyncAccessHandle({ mode: 'read-only' });
      s.close();
    } catch { /* only a head start */ }
    postMessage({ id, gone: true });
  }

  async function read(id, name) {
    let h;
    try {
      h = await handleOf(name);
    } catch (err) {
      return isGone(err) ? postMessage({ id, gone: true }) : fail(id, err);
    }
    // As OpfsBlobs.readWith: no lock but the read-only handle's own, and
    // the shared Web Lock if a move or removal is under way.
    if (readOnly && await readOpen(id, name, h, false)) return;
    await navigator.locks.request(lockPrefix + name, { mode: 'shared' }, () => readOpen(id, name, h, true))
      .catch((err) => fail(id, err));
  }

  /** Reads and answers; false, without the lock, if the file was locked or seemed gone. */
  async function readOpen(id, name, h, locked) {
    let s;
    try {
      s = await h.createSyncAccessHandle({ mode: 'read-only' });
    } catch (err) {
      // As OpfsBlobs: locked or seemingly gone without the lock, the locked read decides.
      if (!locked && err && (err.name === 'NoModificationAllowedError' || isGone(err))) return false;
      if (isGone(err)) handles.delete(name);
      isGone(err) ? postMessage({ id, gone: true }) : fail(id, err);
      return true;
    }
    try {
      const size = s.getSize();
      const buf = new ArrayBuffer(size);
      if (s.read(new Uint8Array(buf), { at: 0 }) !== size) throw new Error('short read');
      postMessage({ id, buf, size }, [buf]);
    } catch (err) {
      fail(id, err);
    }
    // The window has its bytes: close (~0.5 ms) after.
    if (s.mode === 'read-only') await new Promise((resolve) => setTimeout(resolve, 0));
    s.close();
    return true;
  }

  onmessage = (e) => {
    const m = e.data;
    if (m.start !== undefined) {
      start(m.start).then(
        () => postMessage({ ready: typeof FileSystemSyncAccessHandle === 'function' }),
        () => postMessage({ ready: false }));
    } else if (m.warm) {
      warm(m.id, m.name);
    } else {
      read(m.id, m.name);
    }
  };
}

/** A read that failed because the helper ended (closed, or its worker failed): the caller reads another way. */
const helperGone = (what) => Object.assign(new RlxkvError('IO', `OPFS reader worker ${what}`), { helperGone: true });

export class OpfsReader {
  /**
   * A helper worker reading the OPFS directory `path` (segments under the
   * root, as OpfsBlobs.open takes them), or null where there can be none
   * (no Worker, a CSP against blob: workers, no sync access handles in
   * workers) or it did not start within READY_MS.
   */
  static async start(path) {
    if (typeof Worker !== 'function' || typeof Blob !== 'function' || typeof URL.createObjectURL !== 'function') return null;
    let worker, url;
    try {
      url = URL.createObjectURL(new Blob([`(${helperMain})()`], { type: 'text/javascript' }));
      worker = new Worker(url, { name: 'rlxkv-opfs-reader' });
    } catch {
      if (url) URL.revokeObjectURL(url);
      return null;
    }
    const ready = await new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), READY_MS);
      worker.onmessage = (e) => { clearTimeout(timer); resolve(!!e.data.ready); };
      worker.onerror = (e) => { e.preventDefault(); clearTimeout(timer); resolve(false); };
      worker.postMessage({ start: path });
    });
    URL.revokeObjectURL(url);
    if (!ready) {
      worker.terminate();
      return null;
    }
    return new OpfsReader(worker);
  }

  #worker;
  #waiting = new Map(); // id -> { resolve, reject, name }
  #next = 0;
  /** False once the worker has failed: the caller reads some other way. */
  alive = true;

  constructor(worker) {
    this.#worker = worker;
    worker.onmessage = (e) => this.#answer(e.data);
    worker.onerror = (e) => {
      e.preventDefault();
      this.#die(helperGone(`failed: ${e.message || 'error'}`));
    };
    // An answer that cannot arrive (its buffer not allocated here): no read waits forever.
    worker.onmessageerror = () => this.#die(helperGone('sent an answer that could not be received'));
  }

  /**
   * The whole blob `name` in a new buffer (transferred from the worker);
   * null if it is gone. Rejects with QUOTA / IO, or, if the helper ended,
   * an error with helperGone set.
   */
  read(name) { return this.#ask(name, false); }

  /**
   * Readies the helper's first read of blob `name` (its file handle, and
   * the worker's first sync handle, which costs more than the next ones).
   */
  warm(name) { return this.#ask(name, true).catch(() => {}); }

  #ask(name, warm) {
    if (!this.alive) return Promise.reject(helperGone('closed'));
    return new Promise((resolve, reject) => {
      const id = this.#next++;
      this.#waiting.set(id, { resolve, reject, name });
      this.#worker.postMessage({ id, name, warm });
    });
  }

  #answer(m) {
    const w = this.#waiting.get(m.id);
    if (!w) return;
    this.#waiting.delete(m.id);
    if (m.error) {
      // Too large for one ArrayBuffer there: a RangeError, as a File read's here.
      if (m.error.name === 'RangeError') w.reject(new RangeError(m.error.message));
      else w.reject(storageError(new DOMException(m.error.message, m.error.name), `reading ${w.name}`, 'OPFS'));
    } else {
      w.resolve(m.gone ? null : new Uint8Array(m.buf, 0, m.size));
    }
  }

  #die(err) {
    this.alive = false;
    this.#worker.terminate();
    for (const w of this.#waiting.values()) w.reject(err);
    this.#waiting.clear();
  }

  /** Ends the worker; reads waiting reject (helperGone). */
  close() {
    if (this.alive) this.#die(helperGone('closed'));
  }
}
