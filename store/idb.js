// IndexedDB in IDBFS's layout, the pieces store/idb-blobs.js builds on: one
// database named by the mount path (IDBFS.DB_VERSION 21), store FILE_DATA;
// requests and transactions as promises, where 3.1.6's IDBFS lost errors
// (it passes `undefined`, or never calls back when a quota error aborts a
// transaction).
import { storageError } from '../wasm/errors.js';

export const OBJECT_STORE = 'FILE_DATA';
export const VERSION = 21; // IDBFS.DB_VERSION in 3.1.6

/** A DOMException from IndexedDB as an RlxkvError: QUOTA when storage is full, else IO. */
export const idbError = (err, what) => storageError(err, what, 'IndexedDB');

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
    const store = db.objectStoreNames.contains(OBJECT_STORE)
      ? req.transaction.objectStore(OBJECT_STORE)
      : db.createObjectStore(OBJECT_STORE);
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
