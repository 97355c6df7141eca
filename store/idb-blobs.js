// Blob records in IndexedDB, in IDBFS's layout (one database named by the
// mount path, store FILE_DATA, key = path + '/' + name, records
// { timestamp, mode, contents }), read and written one record at a time:
// what the tiered store (store/tiers.js) uses in browsers, workers and
// fake-indexeddb. Unlike an IDBFS mount, nothing is mirrored in memory.
//
// A record's value can only be read whole, so the store also keeps one
// index record (INDEX_NAME, an ordinary file to IDBFS) that the caller
// fills: what it needs of every blob without reading it. Every write and
// removal updates it in the same readwrite transaction, which IndexedDB
// runs alone against other writers (other tabs included), so it is merged,
// never lost. It is still only a hint, checked at every open against a
// count of the records and their newest timestamp (list()), and against
// every key (names()) if they disagree.
import { RlxkvError } from '../wasm/errors.js';
import { STORE, openIdbfs, request, committed, idbError } from './idb.js';

export const INDEX_NAME = '.rlxkv-index';

/** A record's contents (IDBFS writes Uint8Array; others may write an ArrayBuffer or another view) as bytes, not copied. */
const bytesOf = (c) => (c instanceof Uint8Array ? c : new Uint8Array(c.buffer ?? c, c.byteOffset ?? 0, c.byteLength));
const FILE_MODE = 0o100644; // what IDBFS writes for a file
const SUFFIX = '.rlxkv';

export class IdbBlobs {
  /** Opens (creating if missing) the IndexedDB store of mount path `path`. */
  static async open(path) {
    const factory = globalThis.indexedDB;
    if (!factory) throw new RlxkvError('IO', "storage 'idb' needs IndexedDB, which this environment lacks");
    const blobs = new IdbBlobs(path, factory);
    await blobs.#db();
    return blobs;
  }

  constructor(path, factory) {
    this.kind = 'idb';
    this.path = path;
    this.#factory = factory;
  }

  #factory;
  #connection = null; // promise of the open database
  #closed = false;    // by close()

  /**
   * The database, opened on first use and again after another connection
   * made this one close (versionchange: another tab deleting the store,
   * rlx.deleteStore, or upgrading it): the store goes on, as it is now.
   */
  #db() {
    if (this.#closed) return Promise.reject(new RlxkvError('IO', `IndexedDB "${this.path}" is closed`));
    if (!this.#connection) {
      this.#connection = openIdbfs(this.#factory, this.path).then((db) => {
        db.onversionchange = () => { db.close(); this.#connection = null; };
        return db;
      });
      this.#connection.catch(() => { this.#connection = null; });
    }
    return this.#connection;
  }

  #key(name) { return `${this.path}/${name}`; }

  /**
   * What opening needs, asked in one transaction, reading no blob:
   * { index: Promise<{ bytes, timestamp }|null> (the index record and when
   * it was written, ms), census: Promise<{ records, newest }> (how many
   * records lie under the path, index included, and the newest timestamp
   * of any record in the database, ms, or NaN if one is not a Date) }.
   * Every writer that keeps the index writes it last, with the timestamp
   * of what it wrote: an index whose records count and timestamp agree
   * with the census describes every key. Others change the census: an
   * IDBFS writer that adds a file stores its mtime (newer, unless set back
   * with utime), one that deletes leaves a smaller count; a store whose
   * path holds other keys, or whose database other paths write, never
   * agrees and is listed key by key at every open. Listing the keys
   * (names()) is most of an open's time otherwise.
   */
  list() {
    const both = this.#db().then((db) => this.#listIn(db.transaction([STORE], 'readonly').objectStore(STORE)))
      .catch((err) => { throw idbError(err, 'listing IndexedDB'); });
    const index = both.then((b) => b.index), census = both.then((b) => b.census);
    // Whoever awaits one first must not leave the other's failure unhandled.
    index.catch(() => {});
    census.catch(() => {});
    return { index, census };
  }

  /** list()'s requests, in one transaction's store (made in this task). */
  #listIn(store) {
    const fail = (err) => { throw idbError(err, 'listing IndexedDB'); };
    const index = request(store.get(this.#key(INDEX_NAME))).then((rec) => (rec && rec.contents
      ? { bytes: bytesOf(rec.contents), timestamp: rec.timestamp instanceof Date ? rec.timestamp.getTime() : NaN }
      : null), fail);
    // A store made without IDBFS's timestamp index has no newest: never current.
    const newest = !store.indexNames.contains('timestamp') ? Promise.resolve(NaN)
      : request(store.index('timestamp').openKeyCursor(null, 'prev'))
        .then((cursor) => (!cursor ? -Infinity : cursor.key instanceof Date ? cursor.key.getTime() : NaN));
    const census = Promise.all([request(store.count(this.#range())), newest])
      .then(([records, at]) => ({ records, newest: at }), fail);
    index.catch(() => {});
    census.catch(() => {});
    return { index, census };
  }

  /** The blob names under the path (every key listed). */
  async names() {
    try {
      const store = (await this.#db()).transaction([STORE], 'readonly').objectStore(STORE);
      const keys = await request(store.getAllKeys(this.#range()));
      const at = this.path.length + 1;
      // A name that is not well-formed Unicode could not be written to an index (UTF-8) and read back.
      return keys.map((k) => String(k).slice(at)).filter((n) => n.endsWith(SUFFIX) && !n.includes('/') && n.isWellFormed());
    } catch (err) {
      throw idbError(err, 'listing IndexedDB');
    }
  }

  /** The keys under the path. */
  #range() {
    const prefix = `${this.path}/`;
    return IDBKeyRange.bound(prefix, `${prefix}\uffff`);
  }

  /**
   * The bytes of blob `name`, or null if there is none (one get: the record
   * is read whole). Reads asked for in the same task share one transaction,
   * their gets all in flight (a preload of many entries reads as fast as a
   * raw getAll).
   */
  read(name) {
    return new Promise((resolve, reject) => {
      if (!this.#reads) {
        this.#reads = [];
        queueMicrotask(() => this.#readBatch());
      }
      this.#reads.push({ name, resolve, reject });
    });
  }

  #reads = null;

  async #readBatch() {
    const reads = this.#reads;
    this.#reads = null;
    let store;
    try {
      store = (await this.#db()).transaction([STORE], 'readonly').objectStore(STORE);
    } catch (err) {
      for (const r of reads) r.reject(idbError(err, `reading ${r.name}`));
      return;
    }
    for (const { name, resolve, reject } of reads) {
      request(store.get(this.#key(name))).then((rec) => {
        if (!rec || !rec.contents) return resolve(null);
        resolve(bytesOf(rec.contents));
      }, (err) => reject(idbError(err, `reading ${name}`)));
    }
  }

  /**
   * In one transaction: puts each { name, parts } (the parts joined into the
   * record's contents), deletes the names in `removes`, and replaces the
   * index record with updateIndex(current index bytes or null) (no change if
   * it returns undefined). All or nothing: rejects with QUOTA or IO, and
   * then nothing was written.
   */
  async write(items, removes, updateIndex) {
    try {
      const tx = (await this.#db()).transaction([STORE], 'readwrite');
      const done = committed(tx);
      const store = tx.objectStore(STORE);
      const now = new Date();
      for (const { name, parts } of items) store.put({ timestamp: now, mode: FILE_MODE, contents: joined(parts) }, this.#key(name));
      for (const name of removes) store.delete(this.#key(name));
      if (updateIndex) {
        const req = store.get(this.#key(INDEX_NAME));
        req.onsuccess = () => {
          const cur = req.result && req.result.contents ? bytesOf(req.result.contents) : null;
          const next = updateIndex(cur);
          if (next) store.put({ timestamp: now, mode: FILE_MODE, contents: next }, this.#key(INDEX_NAME));
        };
      }
      await done;
    } catch (err) {
      throw idbError(err, 'saving to IndexedDB');
    }
  }

  /**
   * Deletes the store: its database (IndexedDB asks every other connection
   * to close first, which ours do, then reopen an empty store if used
   * again). The blob names it held.
   */
  async destroy() {
    const names = await this.names();
    await this.close();
    try {
      await request(this.#factory.deleteDatabase(this.path));
    } catch (err) {
      throw idbError(err, `deleting IndexedDB "${this.path}"`);
    }
    return names;
  }

  async close() {
    this.#closed = true;
    const connection = this.#connection;
    this.#connection = null;
    if (connection) (await connection.catch(() => null))?.close();
  }
}

/** One Uint8Array of exactly the bytes: IndexedDB clones a view's whole buffer. */
function joined(parts) {
  if (parts.length === 1 && parts[0].byteOffset === 0 && parts[0].byteLength === parts[0].buffer.byteLength) return parts[0];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}
