// Mirrors a MEMFS mount to IndexedDB, in place of Emscripten 3.1.6's IDBFS
// and its FS.syncfs. Same database layout as IDBFS (one database named by the
// mount path, store FILE_DATA keyed by absolute path, records
// {timestamp, mode, contents}), but safe where 3.1.6's reconcile is not:
//   - it merges instead of mirroring: restore never deletes local files, and
//     persist deletes only files this instance removed itself, so two tabs
//     (or a restore over unsaved files) cannot erase each other's blobs;
//   - a save is one readwrite transaction: a page closed mid-flush leaves
//     every record old or new, never torn;
//   - every failure, a QuotaExceededError abort included, rejects with a
//     real error (3.1.6 passes `undefined`, or never calls back on abort);
//   - calls are serialized per mirror, saves under a Web Lock across tabs
//     where the Locks API exists, and the connection is closed on close().
import { RlxkvError } from './errors.js';
import { serialQueue } from './queue.js';

export const STORE = 'FILE_DATA';
export const VERSION = 21; // IDBFS.DB_VERSION in 3.1.6

export function idbError(err, what) {
  const name = err && err.name;
  if (name === 'QuotaExceededError') {
    return new RlxkvError('QUOTA', `${what}: storage quota exceeded`, { cause: err });
  }
  const detail = (err && err.message) || name || 'unknown IndexedDB error';
  return new RlxkvError('IO', `${what}: ${detail}`, { cause: err });
}

export function request(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = (ev) => { ev.preventDefault(); reject(req.error); };
  });
}

/** Resolves when tx commits; rejects on error or abort (quota included). */
export function committed(tx) {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = (ev) => ev.preventDefault();
    tx.onabort = () => reject(tx.error || new DOMException('transaction aborted', 'AbortError'));
  });
}

/** The IDBFS database of a mount path (created in IDBFS's layout if new). */
export async function openIdbfs(factory, name) {
  const req = factory.open(name, VERSION);
  req.onupgradeneeded = () => {
    const db = req.result;
    const store = db.objectStoreNames.contains(STORE)
      ? req.transaction.objectStore(STORE)
      : db.createObjectStore(STORE);
    if (!store.indexNames.contains('timestamp')) {
      store.createIndex('timestamp', 'timestamp', { unique: false });
    }
  };
  try {
    return await request(req);
  } catch (err) {
    throw idbError(err, `opening IndexedDB "${name}"`);
  }
}

export class IdbMirror {
  /**
   * @param {object} FS Emscripten's FS
   * @param {string} mountpoint absolute path of the mount
   * @param {IDBFactory} factory
   */
  constructor(FS, mountpoint, factory) {
    this.FS = FS;
    this.mountpoint = mountpoint;
    this.factory = factory;
    this.db = null;
    // path -> MEMFS node last known to match IndexedDB. Saves write a temp
    // file and rename it, so a changed file is always a new node, even
    // within the same millisecond (where an mtime check would miss it).
    this.synced = new Map();
    /** Runs fn after every earlier call on this mirror has settled. */
    this.serialize = serialQueue();
  }

  async openDb() {
    if (this.db) return this.db;
    this.db = await openIdbfs(this.factory, this.mountpoint);
    // Another connection wants to upgrade or delete: let it.
    this.db.onversionchange = () => this.closeDb();
    return this.db;
  }

  closeDb() {
    if (this.db) this.db.close();
    this.db = null;
  }

  /** IndexedDB → MEMFS: takes in files missing or older here; deletes nothing. */
  restore() {
    return this.serialize(async () => {
      const db = await this.openDb();
      let keys, values;
      try {
        const tx = db.transaction([STORE], 'readonly');
        const store = tx.objectStore(STORE);
        // One get per key, all in flight at once: Chromium's getAll of large
        // records measured ~1.7x slower than this.
        keys = await request(store.getAllKeys());
        values = await Promise.all(keys.map((k) => request(store.get(k))));
      } catch (err) {
        throw idbError(err, 'reading IndexedDB');
      }
      const { FS } = this;
      const prefix = this.mountpoint.endsWith('/') ? this.mountpoint : this.mountpoint + '/';
      // getAllKeys gives keys in ascending order: a directory before its files.
      for (let i = 0; i < keys.length; i++) {
        const path = String(keys[i]);
        const rec = values[i];
        if (!path.startsWith(prefix) || !rec) continue;
        if (FS.isDir(rec.mode)) {
          FS.mkdirTree(path);
          continue;
        }
        const when = rec.timestamp instanceof Date ? rec.timestamp.getTime() : Number(rec.timestamp);
        const local = this.lookup(path);
        if (local && local.timestamp >= when) continue;
        FS.mkdirTree(path.slice(0, path.lastIndexOf('/')) || '/');
        FS.writeFile(path, rec.contents, { canOwn: true });
        FS.utime(path, when, when);
        this.synced.set(path, this.lookup(path));
      }
    });
  }

  lookup(path) {
    try { return this.FS.lookupPath(path).node; } catch { return null; }
  }

  /** Files under the mount: path -> MEMFS node. */
  localFiles() {
    const { FS } = this;
    const out = new Map();
    const walk = (dir) => {
      for (const name of FS.readdir(dir)) {
        if (name === '.' || name === '..') continue;
        const path = dir === '/' ? '/' + name : `${dir}/${name}`;
        const node = FS.lookupPath(path).node;
        if (FS.isDir(node.mode)) walk(path);
        else if (FS.isFile(node.mode)) out.set(path, node);
      }
    };
    walk(this.mountpoint);
    return out;
  }

  /**
   * MEMFS → IndexedDB: new and changed files put, files removed here deleted,
   * in one transaction. On failure nothing is marked saved, so the next
   * persist tries the same work again.
   */
  flush() {
    return this.serialize(() => withLock(`rlxkv-idb:${this.mountpoint}`, async () => {
      const files = this.localFiles();
      const puts = [...files].filter(([path, node]) => this.synced.get(path) !== node);
      const dels = [...this.synced.keys()].filter((path) => !files.has(path));
      if (!puts.length && !dels.length) return;
      const db = await this.openDb();
      try {
        const tx = db.transaction([STORE], 'readwrite');
        const done = committed(tx);
        const store = tx.objectStore(STORE);
        for (const [path, node] of puts) {
          store.put({ timestamp: new Date(node.timestamp), mode: node.mode, contents: exactBytes(node) }, path);
        }
        for (const path of dels) store.delete(path);
        await done;
      } catch (err) {
        throw idbError(err, 'saving to IndexedDB');
      }
      for (const [path, node] of puts) this.synced.set(path, node);
      for (const path of dels) this.synced.delete(path);
    }));
  }

  close() {
    return this.serialize(async () => this.closeDb());
  }
}

/** A file's bytes in an array of exactly that size: IndexedDB clones the
 * whole underlying buffer of a view, and MEMFS over-allocates. */
function exactBytes(node) {
  const c = node.contents;
  if (!c) return new Uint8Array(0);
  const used = node.usedBytes;
  if (c.byteOffset === 0 && c.buffer.byteLength === used) return c;
  return c.slice(0, used);
}

/** Runs fn under a cross-tab lock where the Web Locks API exists. */
export function withLock(name, fn) {
  const locks = typeof navigator === 'object' && navigator && navigator.locks;
  return locks ? locks.request(name, fn) : fn();
}
