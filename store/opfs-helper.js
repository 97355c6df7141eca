// A window's reads and writes of OPFS files through a helper worker: a
// window has no sync access handles, and its File reads
// (getFile().arrayBuffer()) and createWritable() streams are slower, so
// store/opfs-blobs.js asks a dedicated worker of its own to do them with
// sync handles (bench/bench_opfs.mjs measures both). A read's bytes are
// transferred back (no copy: the worker and the window share a process),
// and the window copies them once into the wasm heap, as it would a
// File's. A write (of a save's temporary file: OpfsBlobs keeps the save's
// locks and its move) goes in pieces of WRITE_PIECE bytes, each copied
// into its message, so that the window is not held up long by any one
// copy.
// Opening a sync handle is much of a small read's time, so the helper
// keeps read-only handles open, on OpfsBlobs' terms (the last few blobs
// read, and the one the open warmed, warm(); each until unused for a
// while), by the same code as OpfsBlobs (store/opfs-kept-handles.js). An open
// read-only handle locks the file, so it cannot go stale; a writer that
// finds it locked asks on the directory's BroadcastChannel for it, and
// the helper closes it and reads that name next under the shared Web
// Lock, which the writer holds until it is done. The helper is its own
// thread: a busy window does not delay its answer. A hidden page's helper
// keeps none (a frozen page could not answer, and its writer would give up
// after 10 s; Chromium itself evicts a page in the back/forward cache whose
// handle another page needs). A first read in a new worker pays for the
// worker's first sync handle and the blob's file handle: the open has the
// helper pay them, behind it (OpfsBlobs.ready()). The worker is made from
// a Blob URL (its source below, which must stay self-contained), so a page
// whose CSP forbids blob: workers gets no helper: start() answers null,
// and the window reads Files and writes createWritable() streams.
import { RlxkvError } from '../wasm/errors.js';
import { KeptHandles } from './opfs-kept-handles.js';

const READY_MS = 2000; // a helper that has not answered by then is not used
const WRITE_PIECE = 4 << 20; // bytes of a write per message (see the header)

/** Whether the helper may keep handles open: while the page is visible (see the header). */
const pageVisible = () => typeof document !== 'object' || document.visibilityState !== 'hidden';

/**
 * The helper's body, run as its own script: nothing from outside this
 * function reaches it. Messages in: { start: path, channel, maxOpen, keepMs }, answered
 * { ready } (whether it has sync handles), then { id, name, warm, keep }, answered
 * { id, buf, size } (buf transferred), { id, gone: true } (and so is a
 * warm-up) or { id, error: { name, message } }; { id, write: name, at,
 * bytes, last }, answered { id } once bytes are written at `at` (and,
 * with last, the file flushed and its handle closed) or with an error
 * (the handle closed: the write is over), and { abort: name } (the
 * window gave up: the handle closed); and { visible } (whether the page
 * is, so whether to keep handles open: false lets go of them all). On the directory's channel:
 * { release: name } from a writer.
 */
function helperMain(KeptHandles) {
  const MAX_HANDLES = 4096; // as OpfsBlobs keeps
  let dir = null;
  let lockPrefix = '';
  const handles = new Map();
  let open = null; // read-only sync handles kept open (KeptHandles, made at start())
  const writing = new Map(); // file name -> its read-write sync handle, while the window sends its pieces
  let keeping = false;
  const keep = (name, h) => {
    if (!handles.has(name) && handles.size >= MAX_HANDLES) handles.delete(handles.keys().next().value);
    handles.set(name, h);
  };
  const readOnly = typeof FileSystemSyncAccessHandle === 'function' && 'mode' in FileSystemSyncAccessHandle.prototype;
  const isGone = (err) => err && (err.name === 'NotFoundError' || err.name === 'TypeMismatchError');
  const fail = (id, err) => postMessage({ id, error: { name: (err && err.name) || 'Error', message: String((err && err.message) || err) } });

  async function start({ start: path, channel, maxOpen, keepMs }) {
    dir = await navigator.storage.getDirectory();
    for (const seg of path.split('/').filter(Boolean)) dir = await dir.getDirectoryHandle(seg);
    lockPrefix = `${channel}/`;
    open = new KeptHandles(channel, { maxOpen, keepMs, maxNames: MAX_HANDLES });
  }

  /** Keeps sync handle s of `name` open for the next read (while the page is visible), or closes it. */
  const keepOpen = (name, s) => open.keep(name, s, !keeping);

  /** Reads the whole file through open sync handle s and sends it; throws if it cannot. */
  function send(id, s) {
    const size = s.getSize();
    const buf = new ArrayBuffer(size);
    if (s.read(new Uint8Array(buf), { at: 0 }) !== size) throw new Error('short read');
    postMessage({ id, buf, size }, [buf]);
  }

  async function handleOf(name) {
    let h = handles.get(name);
    if (!h) {
      h = await dir.getFileHandle(name);
      keep(name, h);
    }
    return h;
  }

  // The handle of blob `name` kept, and a sync handle on it opened (a
  // worker's first costs more than the next ones) and kept open.
  async function warm(id, name) {
    try {
      if (!open.has(name)) keepOpen(name, await (await handleOf(name)).createSyncAccessHandle({ mode: 'read-only' }));
    } catch { /* only a head start */ }
    postMessage({ id, gone: true });
  }

  // As writeSync in opfs-blobs.js, a piece at a time.
  async function write(id, name, at, bytes, last) {
    let s = writing.get(name);
    try {
      if (!s) {
        if (at !== 0) throw new Error('write: a piece after its file was closed');
        s = await (await dir.getFileHandle(name)).createSyncAccessHandle();
        writing.set(name, s);
      }
      for (let off = 0; off < bytes.length;) {
        const n = s.write(off ? bytes.subarray(off) : bytes, { at: at + off });
        if (!n) throw new Error('write made no progress');
        off += n;
      }
      if (last) {
        writing.delete(name);
        s.flush();
        s.close();
      }
      postMessage({ id });
    } catch (err) {
      writing.delete(name);
      try { s?.close(); } catch { /* closed already */ }
      fail(id, err);
    }
  }

  async function read(id, name, keep) {
    const writerAsked = open.wasAsked(name);
    const kept = open.take(name);
    if (kept) {
      let sent = false;
      try {
        send(id, kept);
        sent = true;
      } catch {
        try { kept.close(); } catch { /* it failed already */ }
        // Read it again as if it had not been kept: that read says what is wrong.
      }
      if (sent) return keep ? keepOpen(name, kept) : kept.close();
    }
    let h;
    try {
      h = await handleOf(name);
    } catch (err) {
      return isGone(err) ? postMessage({ id, gone: true }) : fail(id, err);
    }
    // As OpfsBlobs.readWith: no lock but the read-only handle's own, and
    // the shared Web Lock if a move or removal is under way.
    // A writer that asked for it is under way: its lock says when it is done.
    if (readOnly && !writerAsked && await readOpen(id, name, h, false, keep)) return;
    await navigator.locks.request(lockPrefix + name, { mode: 'shared' }, () => readOpen(id, name, h, true, keep))
      .catch((err) => fail(id, err));
  }

  /** Reads and answers; false, without the lock, if the file was locked or seemed gone. */
  async function readOpen(id, name, h, locked, keep) {
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
      send(id, s);
    } catch (err) {
      fail(id, err);
      s.close();
      return true;
    }
    if (keep) keepOpen(name, s);
    else s.close();
    return true;
  }

  onmessage = (e) => {
    const m = e.data;
    if (m.start !== undefined) {
      start(m).then(
        () => postMessage({ ready: typeof FileSystemSyncAccessHandle === 'function' }),
        () => postMessage({ ready: false }));
    } else if (m.visible !== undefined) {
      keeping = !!m.visible;
      if (!keeping) open?.letGoAll();
    } else if (m.abort !== undefined) {
      const s = writing.get(m.abort); // the window gave up on this file's write
      writing.delete(m.abort);
      try { s?.close(); } catch { /* closed already */ }
    } else if (m.write !== undefined) {
      write(m.id, m.write, m.at, m.bytes, m.last);
    } else if (m.warm) {
      warm(m.id, m.name);
    } else {
      read(m.id, m.name, m.keep);
    }
  };
}

/** A read or write that failed because the helper ended (closed, or its worker failed): the caller does it another way. */
const helperGone = (what) => Object.assign(new RlxkvError('IO', `OPFS helper worker ${what}`), { helperGone: true });

export class OpfsHelper {
  /**
   * A helper worker reading and writing in the OPFS directory `path` (segments under the
   * root, as OpfsBlobs.open takes them), or null where there can be none
   * (no Worker, a CSP against blob: workers, no sync access handles in
   * workers) or it did not start within READY_MS. It keeps the handles
   * of up to maxOpen blobs open (none by default), each until unused for
   * keepMs, and hears writers on BroadcastChannel `channel`, also the
   * prefix of the directory's Web Locks (see OpfsBlobs).
   */
  static async start(path, { channel, maxOpen = 0, keepMs = 0 }) {
    if (typeof Worker !== 'function' || typeof Blob !== 'function' || typeof URL.createObjectURL !== 'function') return null;
    let worker, url;
    try {
      url = URL.createObjectURL(new Blob([`(${helperMain})(${KeptHandles})`], { type: 'text/javascript' }));
      worker = new Worker(url, { name: 'rlxkv-opfs-helper' });
    } catch {
      if (url) URL.revokeObjectURL(url);
      return null;
    }
    const ready = await new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), READY_MS);
      worker.onmessage = (e) => { clearTimeout(timer); resolve(!!e.data.ready); };
      worker.onerror = (e) => { e.preventDefault(); clearTimeout(timer); resolve(false); };
      worker.postMessage({ start: path, channel, maxOpen, keepMs });
    });
    URL.revokeObjectURL(url);
    if (!ready) {
      worker.terminate();
      return null;
    }
    return new OpfsHelper(worker);
  }

  #worker;
  #waiting = new Map(); // id -> { resolve, reject }
  #next = 0;
  #onVisibility = null;
  /** False once the worker has failed or been closed: the caller reads and writes some other way. */
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
    const visibility = () => worker.postMessage({ visible: pageVisible() });
    visibility(); // before any read: messages arrive in order
    if (typeof document === 'object') {
      this.#onVisibility = visibility;
      document.addEventListener('visibilitychange', visibility);
    }
  }

  /**
   * The whole blob `name` in a new buffer (transferred from the worker);
   * null if it is gone. With keep, the helper keeps its handle open for
   * the next read (until a writer asks for it: see the header). Rejects
   * as write() does.
   */
  read(name, keep = false) { return this.#ask({ name, keep }); }

  /**
   * Readies the helper's first read of blob `name` (its file handle, and
   * the worker's first sync handle, which costs more than the next ones).
   */
  warm(name) { return this.#ask({ name, warm: true, keep: true }).catch(() => {}); }

  /**
   * Writes parts (Uint8Arrays, one after another) into the file `name`,
   * which must exist and be no one else's while this runs (a save's
   * temporary file), then flushes and closes it. Rejects with a
   * DOMException of the name of the error met there (QuotaExceededError
   * when storage is full; a RangeError as itself: the caller makes them
   * RlxkvErrors), with what a copy or a message here threw, or, if the
   * helper ended, with an error with helperGone set.
   */
  // parts must hold still while this runs (whole arrays, not pieces of one reused buffer).
  async write(name, parts) {
    const pieces = [];
    for (const part of parts) for (let off = 0; off < part.length; off += WRITE_PIECE) pieces.push([part, off]);
    if (!pieces.length) pieces.push([new Uint8Array(0), 0]);
    let at = 0;
    try {
      for (const [i, [part, off]] of pieces.entries()) {
        // A copy of its own, transferred: a view's clone would copy its whole buffer.
        const bytes = part.slice(off, off + WRITE_PIECE);
        const n = bytes.length; // (bytes is detached once sent)
        await this.#ask({ write: name, at, bytes, last: i === pieces.length - 1 }, [bytes.buffer]);
        at += n;
      }
    } catch (err) {
      // Failed here (a copy, a message), not there: the helper lets go of the file.
      if (this.alive) this.#worker.postMessage({ abort: name });
      throw err;
    }
  }

  /** Sends m with a new id (transferring `transfer`); its answer settles the promise. */
  #ask(m, transfer = []) {
    if (!this.alive) return Promise.reject(helperGone('closed'));
    return new Promise((resolve, reject) => {
      const id = this.#next++;
      this.#waiting.set(id, { resolve, reject });
      this.#worker.postMessage({ id, ...m }, transfer);
    });
  }

  #answer(m) {
    const w = this.#waiting.get(m.id);
    if (!w) return;
    this.#waiting.delete(m.id);
    if (m.error) {
      // Too large for one ArrayBuffer there: a RangeError, as a File read's here.
      w.reject(m.error.name === 'RangeError' ? new RangeError(m.error.message) : new DOMException(m.error.message, m.error.name));
    } else {
      w.resolve(m.buf ? new Uint8Array(m.buf, 0, m.size) : null); // null: gone, or a write's answer
    }
  }

  #die(err) {
    this.alive = false;
    if (this.#onVisibility) document.removeEventListener('visibilitychange', this.#onVisibility);
    this.#worker.terminate(); // and with it every handle it kept open
    for (const w of this.#waiting.values()) w.reject(err);
    this.#waiting.clear();
  }

  /** Ends the worker; reads and writes waiting reject (helperGone). */
  close() {
    if (this.alive) this.#die(helperGone('closed'));
  }
}
