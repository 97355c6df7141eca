// Blob files in the Origin Private File System (OPFS), keeping the
// backend contract (store/backend.js) beside store/fs-blobs.js (a Node
// directory) and store/idb-blobs.js (IndexedDB). Bytes only, no format:
// one file per blob, named by its caller, in the directory `path` under
// the OPFS root, and an index file its caller keeps. FORMATS.md ("A store
// directory") gives the names and markers on disk; STORAGE.md what a user
// can rely on. How it differs from a Node directory, and why:
//   - Two paths. A dedicated worker has sync access handles: reads go
//     straight into memory the caller gives (the wasm heap: readWith()),
//     and writes are synchronous calls; it uses them for blobs of every
//     size, since only they read into the heap without a copy. A window
//     has none: its reads, and its writes of temporary files, go through a
//     helper worker of its own (store/opfs-helper.js), or where a page can
//     have none, File reads and createWritable() streams.
//   - No rename, but FileSystemFileHandle.move(dir, name), which in
//     Chromium replaces a file of that name. A save writes a temporary
//     file, closes it, then moves it onto the name: a killed browser
//     leaves the old file or the new, never a torn one
//     (tests/browser/opfs.test.js kills one mid-flush).
//   - A file with an open sync access handle is locked: a move onto it or
//     its removal fails (NoModificationAllowedError), and a File read
//     across a replace fails. So every move or removal takes the blob
//     name's exclusive Web Lock and tries again while a reader's handle is
//     open; a File read, and a read through a handle that may be exclusive,
//     take the shared lock; a read through a read-only handle takes none
//     (the open handle is itself the lock, and a read that meets a move
//     under way waits for it under the shared lock). Readers keep
//     read-only handles open for the next hit (#keepOpen), so a writer
//     that finds a blob locked asks them, on the directory's
//     BroadcastChannel, to let go. A temporary file is held under its own
//     exclusive lock while written, so that a listing removes only the
//     strays of writers that are gone.
//   - An index file, so that an open reads one file instead of a head of
//     every blob (a getFile() and a Web Lock each: seconds for a thousand
//     blobs). It also holds each blob's last use (a file's mtime cannot be
//     set here). So that an open need not list the directory to know the
//     index describes it, a writer first puts a marker file in
//     .rlxkv-pending, held under its own exclusive Web Lock, and removes it
//     after its index update: a marker whose lock is free is a writer that
//     died in between, and only then (or with no index) does an open list
//     the directory and repair the index (store/opfs-writer-marks.js).
import { commitFiles } from './backend.js';
import { RlxkvError, storageError } from '../wasm/errors.js';
import { OpfsHelper } from './opfs-helper.js';
import { KeptHandles } from './opfs-kept-handles.js';
import { WriterMarks } from './opfs-writer-marks.js';

export const INDEX_NAME = '.rlxkv-index';
const SUFFIX = '.rlxkv';
const TMP = '.tmp';
const SWAP = '.crswap'; // what Chromium's createWritable() writes before replacing on close
const MAX_HANDLES = 4096; // file handles kept (see #handles)
// A window's stream writes (where it has no helper) go in pieces of at
// most this many bytes. Chromium sends each write() through a data pipe of
// at most 2 MiB; when the browser fails a larger write (over quota) while
// the page still fills the pipe, write() rejects with an AbortError instead
// of QuotaExceededError. A piece that fits the pipe keeps the quota error,
// which the caller must see as QUOTA.
const STREAM_CHUNK = 1 << 20;

/** A DOMException from OPFS as an RlxkvError: QUOTA when storage is full, else IO. */
export const opfsError = (err, what) => storageError(err, what, 'OPFS');

const BUSY_MS = 10000; // how long a save or removal waits for readers to let go of a blob
const RETRY_BUSY_MS = 200; // how long a removal that failed so before waits, when tried again
// Read-only sync handles kept open after a read (store/opfs-kept-handles.js):
// at most MAX_OPEN, each closed once unused for KEEP_MS. A window's helper
// (store/opfs-helper.js) keeps its own, by the same code and terms (start() passes them).
const MAX_OPEN = 8;
const KEEP_MS = 30000;
const isGone = (err) => err && (err.name === 'NotFoundError' || err.name === 'TypeMismatchError');
// The file is locked: a sync handle is open on it, or a move onto it is under way.
const isLocked = (err) => !!err && err.name === 'NoModificationAllowedError';
const BUSY = Symbol('busy'); // a read without the lock that must be made under it
/** Whether a read keeps the file's handle open (#keepOpen): a blob's, not the index's, which every flush replaces. */
const keptOpen = (name) => name.endsWith(SUFFIX);

/** Whether sync handles can be read-only (Chromium 121+): such handles share a file. */
const readOnlyHandles = () => {
  const S = globalThis.FileSystemSyncAccessHandle;
  return !!S && 'mode' in S.prototype;
};

/** Whether sync access handles exist here (a dedicated worker). */
function opfsSyncHandles() {
  const H = globalThis.FileSystemFileHandle;
  return !!H && typeof H.prototype.createSyncAccessHandle === 'function';
}

/** Whether this environment has OPFS with everything this backend uses (move(), Web Locks). */
function opfsAvailable() {
  const H = globalThis.FileSystemFileHandle;
  return !!(globalThis.navigator && navigator.storage && typeof navigator.storage.getDirectory === 'function' &&
    H && typeof H.prototype.move === 'function' && navigator.locks &&
    (opfsSyncHandles() || typeof H.prototype.createWritable === 'function'));
}

export class OpfsBlobs {
  /**
   * Opens (creating if missing) the directory `path` ('/a/b': segments
   * under the OPFS root). early: what was asked for while this module
   * loaded (store/backends.js opfsEarly): promises of the directory and of the
   * index file's bytes, or none.
   */
  static async open(path, early) {
    if (!opfsAvailable()) throw new RlxkvError('IO', "storage 'opfs' needs the Origin Private File System with move() and Web Locks, which this environment lacks");
    let dir;
    try {
      dir = await (early?.dir.catch(() => null)); // failed: asked again, for its error
      if (!dir) {
        dir = await navigator.storage.getDirectory();
        for (const seg of path.split('/').filter(Boolean)) dir = await dir.getDirectoryHandle(seg, { create: true });
      }
    } catch (err) {
      throw opfsError(err, `cannot use OPFS directory ${path}`);
    }
    const blobs = new OpfsBlobs(path, dir);
    blobs.#earlyIndex = early?.index;
    // A window's reads and writes go through a helper worker once it is up (it
    // starts beside the open, which does not wait for it: reads and writes
    // do, see ready()).
    if (!blobs.direct) {
      blobs.#helperStarting = OpfsHelper.start(path, { channel: blobs.#channelName, maxOpen: MAX_OPEN, keepMs: KEEP_MS })
        .then((r) => { blobs.#helper = r; });
    }
    return blobs;
  }

  #dir;
  #earlyIndex = null; // promise of the index file's bytes, read as the open began (open()), until readIndex() takes it
  // name -> FileSystemFileHandle. A handle names a path, not a file: it
  // finds a blob replaced since (by a move onto its name) and fails as
  // gone once it is removed. Kept from ready(), listings and reads, so
  // that a hit skips getFileHandle's round trip to the browser (~0.6 ms).
  #handles = new Map();

  #helper = null; // a window's OpfsHelper, if it has one
  #helperStarting = null;
  /** This writer's marker while the index may not describe what it did (store/opfs-writer-marks.js). */
  #marks;
  // Read handles kept open (#keepOpen: store/opfs-kept-handles.js). The
  // channel's name is also the prefix of this directory's Web Locks; the
  // protocol on it ({ release }) is every reader's and writer's of a
  // store, in any tab.
  #channelName;
  #kept;
  #writing = new Map(); // name -> moves or removals of it under way here: none of its handles is kept
  #closed = false;
  #temporaries = 0; // temporary files named, for their names

  constructor(path, dir) {
    this.kind = 'opfs';
    this.path = path;
    this.#dir = dir;
    // The capabilities of store/backend.js's contract. Sync access handles
    // (a worker's): readWith() and synchronous writes.
    this.direct = opfsSyncHandles();
    this.readOnly = false;
    this.pieces = false;
    this.indexComplete = true;
    this.headReads = 32;
    this.#channelName = `rlxkv-opfs:${path}`;
    this.#marks = new WriterMarks(dir, (name, mode, fn, ifAvailable) => this.#lock(name, mode, fn, ifAvailable), path);
    this.#kept = new KeptHandles(this.#channelName, { maxOpen: this.direct && readOnlyHandles() ? MAX_OPEN : 0, keepMs: KEEP_MS, maxNames: MAX_HANDLES });
  }

  /** fn() under the Web Lock of `name` in this directory; with ifAvailable, only if it is free at once. */
  #lock(name, mode, fn, ifAvailable = false) {
    return navigator.locks.request(`${this.#channelName}/${name}`, { mode, ifAvailable },
      ifAvailable ? (lock) => lock && fn() : fn);
  }

  /**
   * fn(answer) under the blob's shared lock, settled with what fn returns
   * or throws, or earlier with what it passes to answer(): not when the
   * lock is released (a round trip to the browser, ~0.5 ms later), so
   * that what fn does after answering (a close) and the release happen
   * after the caller has its bytes.
   */
  #shared(name, fn) {
    return new Promise((resolve, reject) => {
      this.#lock(name, 'shared', () => fn(resolve).then(resolve, reject)).catch(reject);
    });
  }

  async #file(name) {
    const known = this.#handles.get(name);
    if (known) return known;
    try {
      return this.#keep(name, await this.#dir.getFileHandle(name));
    } catch (err) {
      if (isGone(err)) return null;
      throw opfsError(err, `opening ${name}`);
    }
  }

  /** Keeps handle h of blob `name` (the oldest kept goes past MAX_HANDLES); h. */
  #keep(name, h) {
    if (!this.#handles.has(name) && this.#handles.size >= MAX_HANDLES) this.#handles.delete(this.#handles.keys().next().value);
    this.#handles.set(name, h);
    return h;
  }

  /** A blob found gone through its kept handle: null, and the handle forgotten. */
  #gone(name) {
    this.#handles.delete(name);
    return null;
  }

  /**
   * Backend.names: the blob names (files named *.rlxkv), from the
   * directory listing alone (their file handles kept). The temporary files
   * of writers that are gone are removed; those of live ones are not told
   * (a window cannot size them without opening each).
   */
  async names() {
    const { names, swept } = await this.#names();
    return { blobs: names, temporaries: [], swept };
  }

  async #names() {
    const names = [], strays = [];
    let swept = 0;
    try {
      for await (const [name, h] of this.#dir.entries()) {
        if (h.kind !== 'file') continue;
        if (name.endsWith(SUFFIX)) {
          this.#keep(name, h);
          names.push(name);
          continue;
        }
        const base = name.endsWith(SWAP) ? name.slice(0, -SWAP.length).replace(/\.\d+$/, '') : name;
        if (base.endsWith(TMP)) strays.push([name, base]);
      }
    } catch (err) {
      throw opfsError(err, `listing OPFS ${this.path}`);
    }
    for (const [name, base] of strays) {
      // Held by its writer while being written: free only if that writer is gone.
      await this.#lock(base, 'exclusive', () => this.#dir.removeEntry(name).then(() => { swept++; }, () => {}), true);
    }
    return { names, swept };
  }

  /**
   * The blobs, { name, bytes, mtimeMs } (mtimeMs: the file's last
   * modification), from the names (by default a listing: see names()) and
   * a getFile() of each.
   */
  async list(names = null) {
    names ??= (await this.#names()).names;
    const out = [];
    await Promise.all(names.map(async (name) => {
      const h = await this.#file(name);
      try {
        const f = h && await h.getFile();
        if (f) out.push({ name, bytes: f.size, mtimeMs: f.lastModified });
      } catch (err) {
        if (isGone(err)) this.#gone(name); // gone meanwhile
        else throw opfsError(err, `listing OPFS ${this.path}`);
      }
    }));
    return { blobs: out };
  }

  /**
   * Readies the reads that follow an open, blob `name` (the one used last,
   * the likeliest first hit; none: no blob) first: its file handle kept,
   * and a read-only sync handle on it opened and kept open (#keepOpen; a
   * worker's first one also takes 1-4 ms longer than the next ones): here
   * in a worker, by the helper in a window, once it is up. Never rejects
   * (each step only a head start), so the open need not wait for it: a
   * read that comes first opens its own handle, or waits for the helper.
   */
  async ready(name) {
    if (name && this.direct && readOnlyHandles() && !this.#kept.has(name)) {
      const h = await this.#file(name).catch(() => null);
      await h?.createSyncAccessHandle({ mode: 'read-only' }).then((s) => this.#keepOpen(name, s), () => {});
    }
    await this.#helperStarting;
    if (name && this.#helper?.alive) await this.#helper.warm(name);
  }

  /**
   * Backend.openIndex: the index file, vouched for when no writer died
   * between a save or removal and its index update (no dead marker), and
   * it has records.
   */
  async openIndex() {
    const [bytes, dead] = await Promise.all([this.readIndex(), this.#marks.dead()]);
    return { bytes, describes: (count) => !!dead && !dead.length && count > 0, state: dead };
  }

  /**
   * Backend.opened (state: openIndex()'s dead markers): the reads are readied (ready(newest()); waited for only
   * after a listing); after one, the dead writers' markers go once the
   * index describes the directory, else this writer is marked behind so
   * that the next open lists it again.
   */
  async opened({ listed, written, newest, state: dead }) {
    const ready = this.ready(newest());
    if (!listed) return;
    if (written) await this.#marks.clear(dead ?? []);
    else await this.#marks.behind();
    await ready;
  }

  /** For an open: the index file's bytes, or null if there is none or it cannot be read (the open rebuilds it). */
  async readIndex() {
    const early = this.#earlyIndex;
    this.#earlyIndex = null;
    // Read without the lock: one that met a replace failed, and so did one of no file (read again: null).
    const bytes = early && await early.then((b) => new Uint8Array(b), () => null);
    return bytes ?? this.read(INDEX_NAME, true).catch(() => null);
  }

  /**
   * Replaces the index file with update(its bytes or null if there is
   * none, the set of `names` whose files exist now) (no change if it
   * returns nothing; { bytes, behind: true } if the index it makes may not
   * describe the directory: see WriterMarks behind()), atomically as a blob, under
   * a lock that orders every writer of this directory's index (other tabs'
   * too), so that each update sees the one before and the files as they
   * are. Rejects with QUOTA or IO, the file as it was (one that cannot be
   * read is not replaced), this writer then behind.
   */
  async updateIndex(update, names = []) {
    try {
      await this.#lock(`${INDEX_NAME}:writer`, 'exclusive', async () => {
        const [cur, found] = await Promise.all([this.read(INDEX_NAME),
          Promise.all(names.map((name) => this.#dir.getFileHandle(name).then(() => name, (err) => (isGone(err) ? null : Promise.reject(err)))))]);
        const present = new Set(found.filter(Boolean));
        let next = update(cur, present);
        if (next && next.behind) {
          await this.#marks.behind();
          next = next.bytes;
        }
        if (next) await this.#save(INDEX_NAME, [next]);
      });
    } catch (err) {
      this.#marks.updateFailed();
      throw err instanceof RlxkvError ? err : opfsError(err, `updating the index of ${this.path}`);
    }
    await this.#marks.indexed();
  }

  /** Up to n bytes from the start of blob `name` (a slice of a File: only those bytes are read); null if it is gone. */
  async head(name, n) {
    return this.#shared(name, async () => {
      const h = await this.#file(name);
      if (!h) return null;
      try {
        return new Uint8Array(await (await h.getFile()).slice(0, n).arrayBuffer());
      } catch (err) {
        if (isGone(err)) return this.#gone(name);
        throw opfsError(err, `reading ${name}`);
      }
    });
  }

  /**
   * The whole blob in a new buffer; null if it is gone. A window's read
   * waits for its helper worker if it is still starting (the open does
   * not: see ready()), unless `now` (the open's read of the index: a
   * File read).
   */
  async read(name, now = false) {
    if (this.direct) {
      return this.readWith(name, (f) => {
        const buf = new Uint8Array(f.size);
        if (f.read(buf, 0) !== f.size) throw new RlxkvError('IO', `reading ${name}: short read`);
        return buf;
      });
    }
    if (!now) await this.#helperStarting;
    if (this.#helper?.alive) {
      try {
        return await this.#helper.read(name, keptOpen(name));
      } catch (err) {
        if (err instanceof RangeError) throw err;
        if (!err.helperGone) throw opfsError(err, `reading ${name}`); // else: the helper ended, the File is read
      }
    }
    return this.#shared(name, async () => {
      const h = await this.#file(name);
      if (!h) return null;
      try {
        return new Uint8Array(await (await h.getFile()).arrayBuffer());
      } catch (err) {
        if (isGone(err)) return this.#gone(name);
        throw opfsError(err, `reading ${name}`);
      }
    });
  }

  /**
   * Workers only (this.direct): opens blob `name` read-only and returns
   * fn({ size, read(dst, at), readv(dsts, at) }) — read() fills the
   * Uint8Array dst (any memory, the wasm heap included) from byte `at`,
   * readv() the dsts one after another (a sync handle has no scatter read:
   * one read each), and both return the bytes read — or null if the blob
   * is gone. fn runs synchronously while the handle is open, so the file
   * cannot change under it: an open read-only handle locks out moves onto
   * the file and its removal. Where handles can be read-only (Chromium
   * 121+) the read takes no Web Lock: a save or removal waits for the
   * handle (#exclusive), and a read that finds one under way waits for it
   * under the shared lock. Elsewhere (exclusive handles) every read takes
   * the shared lock. The answer comes before the handle's close.
   */
  readWith(name, fn) {
    const keep = keptOpen(name);
    const kept = this.#usable(this.#kept.take(name));
    if (kept) {
      let result;
      try {
        result = this.#readOpen(name, kept, fn);
      } catch (err) {
        kept.close();
        return Promise.reject(err);
      }
      this.#keepOpen(name, kept);
      return Promise.resolve(result);
    }
    // A writer under way (one that asked for it, or this one): its lock says when it is done.
    const writer = this.#kept.wasAsked(name) || this.#writing.has(name);
    return new Promise((resolve, reject) => {
      const locked = () => this.#lock(name, 'shared', () => this.#readOnce(name, fn, resolve, true, keep)).then(resolve, reject);
      if (!readOnlyHandles() || writer) return locked();
      this.#readOnce(name, fn, resolve, false, keep).then((got) => (got === BUSY ? locked() : resolve(got)), reject);
    });
  }

  /** s, if it still works; else null, s closed (the origin's storage cleared: a new handle says what is wrong). */
  #usable(s) {
    try {
      s?.getSize();
      return s;
    } catch {
      try { s.close(); } catch { /* already unusable */ }
      return null;
    }
  }

  /**
   * Keeps read-only sync handle s of blob `name` open for the next read,
   * on store/opfs-kept-handles.js's rules (a writer asks for it with
   * #askRelease), unless this store is closed or writing that name.
   */
  #keepOpen(name, s) {
    this.#kept.keep(name, s, this.#closed || this.#writing.has(name));
  }

  /**
   * One read of readWith: answer(fn's result) before the handle's close,
   * which the returned promise waits for. Without the lock (locked false),
   * BUSY if the file is locked (a move or removal under way) or seems gone:
   * the read under the shared lock decides.
   */
  async #readOnce(name, fn, answer, locked, keep) {
    const h = await this.#file(name);
    if (!h) return locked ? null : BUSY;
    let s;
    try {
      s = await h.createSyncAccessHandle({ mode: 'read-only' });
    } catch (err) {
      if (!locked && (isGone(err) || isLocked(err))) return BUSY;
      if (isGone(err)) return this.#gone(name);
      throw opfsError(err, `opening ${name}`);
    }
    let result;
    try {
      result = this.#readOpen(name, s, fn);
    } catch (err) {
      s.close();
      throw err;
    }
    answer(result);
    if (keep) {
      this.#keepOpen(name, s);
      return result;
    }
    // A close takes ~0.5 ms: once the caller has gone on with its answer
    // (its continuations are microtasks, this a task); still locked if
    // locked. A handle that may be exclusive (its mode unknown) closes at
    // once, for the next reader.
    if (s.mode === 'read-only') await new Promise((resolve) => setTimeout(resolve, 0));
    s.close();
    return result;
  }

  /** fn (see readWith) over the open sync handle s, whose close is the caller's. */
  #readOpen(name, s, fn) {
    try {
      const size = s.getSize();
      const read = (dst, at) => s.read(dst, { at });
      const readv = (dsts, at) => {
        let got = 0;
        for (const dst of dsts) {
          const n = read(dst, at + got);
          got += n;
          if (n < dst.length) break;
        }
        return got;
      };
      return fn({ size, read, readv });
    } catch (err) {
      throw err instanceof RlxkvError || err instanceof RangeError ? err : opfsError(err, `reading ${name}`);
    }
  }

  /**
   * op() (a move onto blob `name`, its removal) under the blob's exclusive
   * lock, tried again while readers without the lock hold the file open
   * (NoModificationAllowedError), for up to BUSY_MS: a read holds it for
   * milliseconds, and readers that keep handles open (#keepOpen: workers,
   * a window's helper) let go of them when asked (#askRelease). Meanwhile
   * this one keeps no handle of `name` and reads it under the shared lock.
   */
  async #exclusive(name, op, busyMs = BUSY_MS) {
    this.#writing.set(name, (this.#writing.get(name) || 0) + 1);
    try {
      return await this.#lock(name, 'exclusive', () => whileLocked(() => {
        this.#kept.letGo(name); // this one's own
        return op();
      }, () => this.#askRelease(name), busyMs));
    } finally {
      const n = this.#writing.get(name) - 1;
      if (n) this.#writing.set(name, n);
      else this.#writing.delete(name);
    }
  }

  /**
   * Asks every reader of this directory that keeps blob `name` open
   * (#keepOpen, store/opfs-helper.js), in any tab, to let go of it: from a
   * channel of its own, which the message outlives (and which this one's
   * listener, if it has one, hears too).
   */
  #askRelease(name) {
    if (typeof BroadcastChannel !== 'function') return;
    const ch = new BroadcastChannel(this.#channelName);
    ch.postMessage({ release: name });
    ch.close();
  }

  /**
   * Writes each { name, parts } (parts: Uint8Arrays written one after
   * another) atomically, one after the other: a temporary file, closed,
   * then moved onto the name. Calls done(item) after each move. Rejects
   * with QUOTA or IO at the first failure, having removed its temporary
   * file; blobs written before stay.
   */
  async write(items, done = () => {}) {
    for await (const item of items) {
      try {
        await this.#marks.mark();
        await this.#save(item.name, item.parts);
      } catch (err) {
        await this.#marks.indexed(true);
        throw err;
      }
      this.#marks.wrote();
      done(item);
    }
  }

  async #save(name, parts) {
    const tmpName = `${name}.${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}${(this.#temporaries++).toString(36)}${TMP}`;
    await this.#lock(tmpName, 'exclusive', async () => {
      let tmp = null;
      try {
        tmp = await this.#dir.getFileHandle(tmpName, { create: true });
        if (this.direct) await writeSync(tmp, parts);
        else await this.#writeWindow(tmpName, tmp, parts);
        await this.#exclusive(name, () => tmp.move(this.#dir, name));
      } catch (err) {
        if (tmp) await this.#dir.removeEntry(tmpName).catch(() => {});
        throw opfsError(err, `saving ${name}`);
      }
    });
  }

  /**
   * A window's write of temporary file `name` (its handle h): by the
   * helper's sync handle, else (no helper, or it ended) through a
   * createWritable() stream, slower for large blobs (bench/bench_opfs.mjs
   * compares them).
   */
  async #writeWindow(name, h, parts) {
    await this.#helperStarting;
    if (this.#helper?.alive) {
      try {
        return await this.#helper.write(name, parts);
      } catch (err) {
        if (!err.helperGone) throw err;
        // Else the stream writes it from the start, once the ended helper's handle is gone.
        return whileLocked(() => writeStream(h, parts));
      }
    }
    await writeStream(h, parts);
  }

  /** Backend.commit (store/backend.js). */
  commit(changes, calls) { return commitFiles(this, changes, calls); }

  /**
   * Removes blobs, calling done(name) after each is gone (removed, or not
   * there). Rejects with IO at the first failure (that one and those after
   * stay as they were). retry: these removals failed before (a holder that
   * never lets go): each waits RETRY_BUSY_MS for readers, not BUSY_MS, so
   * that a blob held for good does not hold every flush up.
   */
  async remove(names, done = () => {}, { retry = false } = {}) {
    // Best effort: a store over quota must still be prunable. Without the
    // marker, a crash before the index update leaves records of removed
    // blobs, which a hit finds gone.
    if (names.length) await this.#marks.mark().catch(() => {});
    for (const name of names) {
      this.#handles.delete(name);
      try {
        await this.#exclusive(name, () => this.#dir.removeEntry(name), retry ? RETRY_BUSY_MS : BUSY_MS);
      } catch (err) {
        if (!isGone(err)) {
          await this.#marks.indexed(true);
          throw opfsError(err, `removing ${name}`);
        }
      }
      this.#marks.wrote();
      done(name);
    }
  }

  /**
   * Deletes the store: every blob as remove() deletes it (readers that keep
   * one open asked to let go), then the directory with what else is in it
   * (the index, markers, temporary files). The blob names it held.
   */
  async destroy() {
    const { names } = await this.#names();
    await this.remove(names);
    await this.close();
    const segments = this.path.split('/').filter(Boolean);
    try {
      let parent = await navigator.storage.getDirectory();
      for (const seg of segments.slice(0, -1)) parent = await parent.getDirectoryHandle(seg);
      await whileLocked(() => parent.removeEntry(segments.at(-1), { recursive: true }));
    } catch (err) {
      if (!isGone(err)) throw opfsError(err, `deleting OPFS directory ${this.path}`);
    }
    return names;
  }

  async close() {
    this.#closed = true; // a read finishing meanwhile keeps nothing
    // Saves or removals the index may not describe: the marker stays, dead, for the next open.
    await this.#marks.close();
    await this.#helperStarting;
    this.#helper?.close();
    this.#kept.close();
  }
}

/**
 * op(), tried again while it fails because a file is locked
 * (NoModificationAllowedError: a handle open on it somewhere), backing off
 * from 1 to 64 ms, for up to busyMs; stillLocked() after each such failure.
 */
async function whileLocked(op, stillLocked = () => {}, busyMs = BUSY_MS) {
  for (let waited = 0, wait = 1; ; waited += wait, wait = Math.min(wait * 2, 64)) {
    try {
      return await op();
    } catch (err) {
      if (!isLocked(err) || waited >= busyMs) throw err;
      stillLocked();
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

async function writeSync(handle, parts) {
  const s = await handle.createSyncAccessHandle();
  try {
    let at = 0;
    for (const part of parts) {
      for (let off = 0; off < part.length;) {
        const n = s.write(off ? part.subarray(off) : part, { at: at + off });
        if (!n) throw new RlxkvError('IO', 'write made no progress');
        off += n;
      }
      at += part.length;
    }
    s.flush();
  } finally {
    s.close();
  }
}

async function writeStream(handle, parts) {
  const w = await handle.createWritable();
  try {
    for (const part of parts) {
      for (let at = 0; at < part.length; at += STREAM_CHUNK) await w.write(part.subarray(at, at + STREAM_CHUNK));
    }
    await w.close();
  } catch (err) {
    await w.abort().catch(() => {});
    throw err;
  }
}
