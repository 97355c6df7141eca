// IndexedDB persistence (the browser path) under Node with fake-indexeddb:
// separate module instances stand in for page loads and tabs.
import 'fake-indexeddb/auto';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import init from 'rlxkv';
import { kvFor, range } from './helpers.js';

const page = () => init({ newInstance: true });
const FP = 0xc0ffeen;
let dbCount = 0;
const freshPath = () => `/kv-${++dbCount}`;

function deleteDb(name) {
  return new Promise((resolve, reject) => {
    const req = indexedDB.deleteDatabase(name);
    req.onsuccess = () => resolve('deleted');
    req.onerror = () => reject(req.error);
    req.onblocked = () => resolve('blocked');
  });
}

test('a reload restores flushed entries byte-exact', async () => {
  const path = freshPath();
  const kv = kvFor(50, { layers: 3, width: 8 });
  const first = await (await page()).openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path, preload: true });
  assert.equal(first.storage, 'idb');
  first.insert(range(0, 50), kv);
  await first.close();

  const second = await (await page()).openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'auto', path, preload: true });
  assert.equal(second.restoreReport.indexed, 1);
  const hit = second.lookup(range(0, 60));
  assert.equal(hit.matched, 50);
  assert.deepEqual(hit.k, kv.k);
  assert.deepEqual(hit.v, kv.v);
  await second.close();
  assert.equal(await deleteDb(path), 'deleted', 'close() closed the IndexedDB connection');
});

test('two tabs flushing at once keep both sets of entries', async () => {
  const path = freshPath();
  const [a, b] = await Promise.all([page(), page()]);
  const tabA = await a.openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path });
  const tabB = await b.openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path });
  for (let i = 0; i < 5; i++) {
    tabA.insert(range(100 * i, 10), kvFor(10, { seed: i }));
    tabB.insert(range(100 * i + 50, 10), kvFor(10, { seed: 10 + i }));
  }
  await Promise.all([tabA.flush(), tabB.flush()]);
  tabA.insert(range(999, 3), kvFor(3));
  await Promise.all([tabA.close(), tabB.close()]);

  const reload = await (await page()).openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path, preload: true });
  assert.equal(reload.size, 11);
  assert.deepEqual(reload.lookup(range(150, 12)).k, kvFor(10, { seed: 11 }).k);
  await reload.close();
});

test('a quota error rejects flush with QUOTA; memory and earlier blobs survive', async () => {
  const path = freshPath();
  const cache = await (await page()).openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path });
  cache.insert([1, 2, 3], kvFor(3, { seed: 1 }));
  await cache.flush();

  const put = IDBObjectStore.prototype.put;
  IDBObjectStore.prototype.put = function () {
    throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
  };
  try {
    cache.insert([4, 5, 6], kvFor(3, { seed: 2 }));
    await assert.rejects(cache.flush(), (e) => e.name === 'RlxkvError' && e.code === 'QUOTA');
    assert.ok(cache.lookup([4, 5, 6, 7]), 'the in-memory cache still answers');
    await assert.rejects(cache.close(), (e) => e.code === 'QUOTA');
    assert.equal(cache.closed, false, 'close() keeps the cache open when its flush fails');
  } finally {
    IDBObjectStore.prototype.put = put;
  }
  const other = await (await page()).openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path, preload: true });
  assert.ok(other.lookup([1, 2, 3, 4]), 'the blob flushed before is intact');
  assert.equal(other.lookup([4, 5, 6, 7]), null);
  await other.close();

  await cache.flush(); // quota back: the failed entry is saved now
  await cache.close();
  const last = await (await page()).openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path, preload: true });
  assert.equal(last.size, 2);
  assert.equal(last.remove([4, 5, 6]), true, 'remove() drops the entry and its blob');
  await last.close();
  const after = await (await page()).openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path, preload: true });
  assert.equal(after.size, 1);
  await after.close();
});

test('a transaction aborted by quota (no exception at put) is reported too', async () => {
  const path = freshPath();
  const cache = await (await page()).openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path });
  const transaction = IDBDatabase.prototype.transaction;
  IDBDatabase.prototype.transaction = function (...args) {
    const tx = transaction.apply(this, args);
    if (args[1] === 'readwrite') {
      queueMicrotask(() => {
        Object.defineProperty(tx, 'error', { value: new DOMException('quota', 'QuotaExceededError') });
        tx.abort();
      });
    }
    return tx;
  };
  try {
    cache.insert([9, 9], kvFor(2));
    await assert.rejects(cache.flush(), (e) => e.code === 'QUOTA');
  } finally {
    IDBDatabase.prototype.transaction = transaction;
  }
  await cache.close();
});

test('blobs of another fingerprint stay; corrupt records are skipped and reported', async () => {
  const path = freshPath();
  const other = await (await page()).openCache({ capBytes: 1 << 20, fingerprint: 1n, storage: 'idb', path, preload: true });
  other.insert([5, 5], kvFor(2));
  await other.close();

  const rlx = await page();
  const cache = await rlx.openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path });
  cache.insert([6, 6], kvFor(2));
  await cache.close();
  // A torn record written by something else.
  await new Promise((resolve, reject) => {
    const req = indexedDB.open(path);
    req.onsuccess = () => {
      const tx = req.result.transaction(['FILE_DATA'], 'readwrite');
      tx.objectStore('FILE_DATA').put({ timestamp: new Date(), mode: 0o100644, contents: new Uint8Array([82, 76, 88]) }, `${path}/0000000000000bad.rlxkv`);
      tx.oncomplete = () => { req.result.close(); resolve(); };
      tx.onerror = () => reject(tx.error);
    };
  });

  const again = await (await page()).openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path, preload: true });
  const r = again.restoreReport;
  assert.deepEqual([r.indexed, r.stale, r.corrupt], [1, 1, 1]);
  await again.close();
  const first = await (await page()).openCache({ capBytes: 1 << 20, fingerprint: 1n, storage: 'idb', path, preload: true });
  assert.ok(first.lookup([5, 5, 1]), 'the other fingerprint was left alone');
  await first.close();
});

test('any other IndexedDB failure rejects flush with IO and loses nothing', async () => {
  const path = freshPath();
  const cache = await (await page()).openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path });
  cache.insert([1], kvFor(1));
  await cache.flush();
  const put = IDBObjectStore.prototype.put;
  IDBObjectStore.prototype.put = function () { throw new DOMException('disk I/O failed', 'UnknownError'); };
  try {
    cache.insert([2], kvFor(1));
    await assert.rejects(cache.flush(), (e) => e.code === 'IO' && /disk I\/O failed/.test(e.message) && e.cause.name === 'UnknownError');
  } finally {
    IDBObjectStore.prototype.put = put;
  }
  assert.equal(cache.size, 2);
  await cache.close(); // the retry saves the second entry
  const reload = await (await page()).openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path, preload: true });
  assert.equal(reload.size, 2);
  await reload.close();
});
