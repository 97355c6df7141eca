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
// count of the records and their newest timestamp (#census()), and against
// every key (names()) if they disagree.
import { RlxkvError } from '../wasm/errors.js';
import { OBJECT_STORE, openIdbfs, request, committed, idbError } from './idb.js';

export const INDEX_NAME = '.rlxkv-index';

/** A record's contents (IDBFS writes Uint8Array; others may write an ArrayBuffer or another view) as bytes, not copied. */
const bytesOf = (c) => (c instanceof Uint8Array ? c : new Uint8Array(c.buffer ?? c, c.byteOffset ?? 0, c.byteLength));
const FILE_MODE = 0o100644; // what IDBFS writes for a file
const SUFFIX = '.rlxkv';
const BATCH_BYTES = 64 << 20; // blobs per transaction of commit(), by size

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
    // The capabilities of store/backend.js's contract.
    this.readOnly = false;
    this.direct = false;
    this.pieces = false;
    this.indexComplete = true;
    this.headReads = 1; // a head() reads the whole record
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
  #census() {
    const both = this.#db().then((db) => this.#listIn(db.transaction([OBJECT_STORE], 'readonly').objectStore(OBJECT_STORE)))
      .catch((err) => { throw idbError(err, 'listing IndexedDB'); });
    const index = both.then((b) => b.index), census = both.then((b) => b.census);
    // Whoever awaits one first must not leave the other's failure unhandled.
    index.catch(() => {});
    census.catch(() => {});
    return { index, census };
  }

  /** #census()'s requests, in one transaction's store (made in this task). */
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

  /**
   * Backend.openIndex: the index record, vouched for by the census
   * (#census()): its records count and timestamp agree.
   */
  async openIndex() {
    const { index, census } = this.#census();
    const found = await index;
    const { records, newest } = await census;
    return { bytes: found && found.bytes, describes: (count) => !!found && records === count + 1 && newest <= found.timestamp };
  }

  /** The index record's bytes as they are now, or null. */
  async readIndex() {
    const found = await this.#census().index;
    return found && found.bytes;
  }

  /** Backend.opened: nothing to do (the census is the evidence). */
  async opened() {}

  /** Backend.names: every key under the path; IndexedDB has no temporaries. */
  async names() {
    return { blobs: await this.#keys(), temporaries: [], swept: 0 };
  }

  /**
   * Backend.list: each record read, one at a time (IndexedDB gives a
   * value's size only with the value: so that no more than one is in
   * memory at once).
   */
  async list(names = null) {
    names ??= await this.#keys();
    const blobs = [];
    for (const name of names) {
      const rec = await this.#record(name);
      if (rec) blobs.push({ name, bytes: rec.contents.byteLength, mtimeMs: rec.timestamp instanceof Date ? rec.timestamp.getTime() : 0 });
    }
    return { blobs };
  }

  /** Backend.head: the record is read whole (IndexedDB reads no part of a value). */
  async head(name, n) {
    const bytes = await this.read(name);
    return bytes && bytes.subarray(0, n);
  }

  /** The record of blob `name` ({ timestamp, contents } as bytes), or null. */
  #record(name) {
    return new Promise((resolve, reject) => {
      if (!this.#reads) {
        this.#reads = [];
        queueMicrotask(() => this.#readBatch());
      }
      this.#reads.push({ name, resolve, reject });
    });
  }

  /** The blob names under the path (every key listed). */
  async #keys() {
    try {
      const store = (await this.#db()).transaction([OBJECT_STORE], 'readonly').objectStore(OBJECT_STORE);
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
  async read(name) {
    const rec = await this.#record(name);
    return rec && rec.contents;
  }

  #reads = null;

  async #readBatch() {
    const reads = this.#reads;
    this.#reads = null;
    let store;
    try {
      store = (await this.#db()).transaction([OBJECT_STORE], 'readonly').objectStore(OBJECT_STORE);
    } catch (err) {
      for (const r of reads) r.reject(idbError(err, `reading ${r.name}`));
      return;
    }
    for (const { name, resolve, reject } of reads) {
      request(store.get(this.#key(name))).then((rec) => {
        if (!rec || !rec.contents) return resolve(null);
        resolve({ timestamp: rec.timestamp, contents: bytesOf(rec.contents) });
      }, (err) => reject(idbError(err, `reading ${name}`)));
    }
  }

  /**
   * Backend.commit: the removals and the first batch of items in one
   * transaction, each later batch (up to BATCH_BYTES of items) in one of
   * its own, each with its index update. A batch is all or nothing: a
   * failure rejects with QUOTA or IO, and nothing of that batch (nor of
   * later ones) was written; batches before stay.
   */
  async commit({ items = [], removes = [], update = null }, { onSaved, onRemoved } = {}) {
    const it = (items[Symbol.asyncIterator] ?? items[Symbol.iterator]).call(items);
    let next = await it.next();
    for (let first = true; first || !next.done; first = false) {
      const batch = [];
      for (let bytes = 0; !next.done && bytes < BATCH_BYTES; next = await it.next()) {
        batch.push(next.value);
        bytes += next.value.bytes;
      }
      await this.#transact(batch, first ? removes : [], update && ((cur) => update(cur, null, batch)));
      if (first) for (const name of removes) onRemoved?.(name);
      for (const item of batch) onSaved?.(item);
    }
  }

  /**
   * In one transaction: puts each { name, parts } (the parts joined into the
   * record's contents), deletes the names in `removes`, and replaces the
   * index record with updateIndex(current index bytes or null) (no change if
   * it returns undefined). All or nothing: rejects with QUOTA or IO, and
   * then nothing was written.
   */
  async #transact(items, removes, updateIndex) {
    if (!items.length && !removes.length && !updateIndex) return;
    try {
      const tx = (await this.#db()).transaction([OBJECT_STORE], 'readwrite');
      const done = committed(tx);
      const store = tx.objectStore(OBJECT_STORE);
      const now = new Date();
      for (const { name, parts } of items) store.put({ timestamp: now, mode: FILE_MODE, contents: joined(parts) }, this.#key(name));
      for (const name of removes) store.delete(this.#key(name));
      if (updateIndex) {
        const req = store.get(this.#key(INDEX_NAME));
        req.onsuccess = () => {
          const cur = req.result && req.result.contents ? bytesOf(req.result.contents) : null;
          let next = updateIndex(cur);
          if (next && next.bytes) next = next.bytes; // behind: nothing to mark here (the census finds it)
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
    const names = await this.#keys();
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
  if (!Array.isArray(parts)) parts = [...parts];
  if (parts.length === 1 && parts[0].byteOffset === 0 && parts[0].byteLength === parts[0].buffer.byteLength) return parts[0];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}
