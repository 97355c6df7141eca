// Storage as a tier below memory, as an app with many stored prompts meets
// it: opening reads the index, not the KV; a hit on a stored-only entry
// reads that one blob; what memory cannot hold stays stored; an index that
// disagrees with the blobs is repaired from them.
import 'fake-indexeddb/auto';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, writeFileSync, unlinkSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import init from 'rlxkv';
import { dropIndex, kvFor, range, storeFiles, tempDir } from './helpers.js';

const page = () => init({ newInstance: true });
let dbCount = 0;
const freshPath = () => `/tiers-${++dbCount}`;
const FP = 0x7135n;
/** 8 tokens of 4 KiB of KV each: one layer, 64 floats a row. */
const kv = (seed) => kvFor(8, { layers: 1, width: 64, seed });
const ENTRY_BYTES = 2 * 8 * 64 * 4;

/**
 * Resolves once the clock has passed the millisecond it was called in, so
 * that a record written next has a later IDBFS timestamp than any written
 * before. A fixed setTimeout cannot promise that: a timer counts from the
 * event loop's cached clock, which a busy machine leaves behind.
 */
async function laterMillisecond() {
  const now = Date.now();
  while (Date.now() <= now) await new Promise((resolve) => setTimeout(resolve, 1));
}

/**
 * Resolves once cond() holds: what a watching cache hears comes by
 * BroadcastChannel whenever the event loop gets to it, which a fixed wait
 * can outrun on a busy machine. Fails after 10 s.
 */
async function until(cond, what) {
  for (const end = Date.now() + 10_000; !cond();) {
    if (Date.now() > end) assert.fail(`not within 10 s: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function storeOf(kind, n) {
  const path = kind === 'fs' ? tempDir() : freshPath();
  const cache = await (await page()).openCache({ capBytes: 1 << 24, fingerprint: FP, storage: kind, path });
  for (let i = 0; i < n; i++) cache.insert(range(1000 * i, 8), kv(i));
  await cache.close();
  return path;
}

for (const kind of ['fs', 'idb']) {
  test(`${kind}: opening reads the index; a hit reads one blob; eviction keeps it stored`, async () => {
    const path = await storeOf(kind, 12);
    const rlx = await page();
    const cache = await rlx.openCache({ capBytes: 3 * ENTRY_BYTES, fingerprint: FP, storage: kind, path });
    assert.deepEqual(cache.restoreReport, {
      indexed: 12, stale: 0, corrupt: 0, skipped: 0, bytes: 12 * ENTRY_BYTES, resident: 0, foreign: 0, tooLarge: 0, unreadable: 0, readOnly: false, temporaries: 0, temporaryBytes: 0, swept: 0,
    });
    let s = cache.stats;
    assert.deepEqual([s.entries, s.bytes, s.storedEntries, s.storedBytes], [0, 0, 12, 12 * ENTRY_BYTES]);
    assert.ok(cache.has(range(5000, 8)), 'known, stored-only');
    assert.equal(cache.lookup(range(5000, 9)), null, 'the sync lookup sees memory only');

    const hit = await cache.match([...range(5000, 8), 7]);
    assert.equal(hit.matched, 8);
    assert.deepEqual(hit.k, kv(5).k);
    assert.equal(cache.lookup(range(5000, 9)).matched, 8, 'resident now');
    // Four more hits: memory holds three; the evicted stay stored.
    for (const i of [1, 2, 3, 4]) assert.equal((await cache.match(range(1000 * i, 8))).matched, 8);
    s = cache.stats;
    assert.deepEqual([s.entries, s.storedEntries], [3, 9]);
    assert.equal((await cache.match(range(5000, 8))).matched, 8, 'an evicted entry is read again');
    assert.deepEqual((await cache.match(range(5000, 8))).v, kv(5).v);
    const resident = cache.entries().filter((e) => e.resident).map((e) => e.tokens[0]);
    assert.deepEqual(resident, [5000, 4000, 3000]);
    assert.equal(await cache.match(range(77777, 3)), null);
    await cache.close();
  });

  test(`${kind}: partial hits reach stored-only entries, and a layout cuts them right`, async () => {
    const path = kind === 'fs' ? tempDir() : freshPath();
    const layout = { order: 'head-major', heads: 2, headDim: 2 };
    const headMajor = Float32Array.from({ length: 16 }, (_, i) => i); // 2 heads x 4 tokens x 2
    const first = await (await page()).openCache({ capBytes: 1 << 20, fingerprint: FP, storage: kind, path, layout });
    first.insert([1, 2, 3, 4], { k: [headMajor], v: [headMajor] });
    await first.close();
    const cache = await (await page()).openCache({ capBytes: 1 << 20, fingerprint: FP, storage: kind, path, layout });
    const hit = await cache.match([1, 2, 9], { partial: true });
    assert.equal(hit.matched, 2);
    assert.deepEqual([...hit.k[0]], [0, 1, 2, 3, 8, 9, 10, 11]);
    await cache.close();
  });

  test(`${kind}: preload brings back what fits, most recent first`, async () => {
    const path = await storeOf(kind, 6);
    const cache = await (await page()).openCache({ capBytes: 4 * ENTRY_BYTES, fingerprint: FP, storage: kind, path, preload: true });
    assert.equal(cache.restoreReport.resident, 4);
    assert.equal(cache.size, 4);
    assert.equal(cache.lookup(range(5000, 8)).matched, 8);
    await cache.close();
  });

  test(`${kind}: remove() drops the entry at once and its blob at the next flush`, async () => {
    const path = await storeOf(kind, 3);
    const cache = await (await page()).openCache({ capBytes: 1 << 20, fingerprint: FP, storage: kind, path });
    assert.equal(cache.remove(range(1000, 8)), true, 'a stored-only entry');
    assert.equal(cache.has(range(1000, 8)), false);
    assert.equal(await cache.match(range(1000, 8)), null);
    assert.equal(cache.remove(range(1000, 8)), false);
    await cache.close();
    const again = await (await page()).openCache({ capBytes: 1 << 20, fingerprint: FP, storage: kind, path });
    assert.deepEqual([again.restoreReport.indexed, again.has(range(0, 8)), again.has(range(1000, 8))], [2, true, false]);
    await again.close();
  });
}

test('fs: a blob that went bad or away after the index is skipped at the hit, and never deleted', async () => {
  const dir = await storeOf('fs', 3);
  const rlx = await page();
  const cache = await rlx.openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'fs', path: dir });
  const torn = await blobName(rlx, range(0, 8)), gone = await blobName(rlx, range(1000, 8));
  writeFileSync(join(dir, torn), new Uint8Array([82, 76, 88, 75, 86])); // torn after the open
  unlinkSync(join(dir, gone));
  assert.equal(await cache.match(range(0, 8)), null);
  assert.equal(await cache.match(range(1000, 8)), null);
  assert.equal((await cache.match(range(2000, 8))).matched, 8);
  assert.equal(cache.has(range(0, 8)), false, 'dropped from the index');
  assert.ok(readdirSync(dir).includes(torn), 'the damaged blob is still there for prune to judge');
  assert.deepEqual(cache.listBlobs().map((b) => b.status).sort(), ['corrupt', 'ok']);
  await cache.close();
});

test('fs: fifos and directories named like blobs are skipped, never opened', async () => {
  const dir = await storeOf('fs', 1);
  execFileSync('mkfifo', [join(dir, '00000000000000ff.rlxkv')]);
  execFileSync('mkdir', [join(dir, '00000000000000fe.rlxkv')]);
  const cache = await (await page()).openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'fs', path: dir });
  assert.equal(cache.restoreReport.indexed, 1);
  assert.equal((await cache.match(range(0, 8))).matched, 8);
  await cache.close();
});

/** Runs fn(store) on the raw FILE_DATA store of an IDBFS database (made as IDBFS makes it). */
function rawIdb(path, fn) {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(path, 21);
    req.onupgradeneeded = () => req.result.createObjectStore('FILE_DATA').createIndex('timestamp', 'timestamp', { unique: false });
    req.onsuccess = () => {
      const tx = req.result.transaction(['FILE_DATA'], 'readwrite');
      fn(tx.objectStore('FILE_DATA'));
      tx.oncomplete = () => { req.result.close(); resolve(); };
      tx.onerror = () => reject(tx.error);
    };
    req.onerror = () => reject(req.error);
  });
}

test('idb: a 0.1.0 store (IDBFS records, no index) opens with nothing lost, and gets an index', async () => {
  const rlx = await page();
  const path = freshPath();
  const blobs = [0, 1, 2].map((i) => ({ tokens: range(1000 * i, 8), bytes: rlx.encodeEntry({ tokens: range(1000 * i, 8), ...kv(i) }, FP) }));
  for (const b of blobs) b.name = await blobName(rlx, b.tokens);
  await rawIdb(path, (store) => {
    store.put({ timestamp: new Date(), mode: 0o40777 }, path);
    for (const b of blobs) store.put({ timestamp: new Date(), mode: 0o100644, contents: b.bytes }, `${path}/${b.name}`);
  });
  const cache = await rlx.openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path });
  assert.equal(cache.restoreReport.indexed, 3);
  assert.deepEqual((await cache.match(range(2000, 9))).k, kv(2).k);
  await cache.close();
  // Behind the index's back: one blob deleted, one added by someone else
  // (IDBFS timestamps are milliseconds: a later one).
  const extra = { tokens: range(9000, 8), bytes: rlx.encodeEntry({ tokens: range(9000, 8), ...kv(9) }, FP) };
  const extraName = await blobName(rlx, extra.tokens);
  await laterMillisecond();
  await rawIdb(path, (store) => {
    store.delete(`${path}/${blobs[0].name}`);
    store.put({ timestamp: new Date(), mode: 0o100644, contents: extra.bytes }, `${path}/${extraName}`);
  });
  const again = await rlx.openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path });
  assert.equal(again.restoreReport.indexed, 3);
  assert.equal(again.has(blobs[0].tokens), false);
  assert.deepEqual((await again.match(range(9000, 8))).v, kv(9).v);
  await again.close();
});

test('idb: an index that agrees with the store opens without listing its keys; one that does not is checked key by key', async () => {
  const path = await storeOf('idb', 4);
  const listings = [];
  const getAllKeys = IDBObjectStore.prototype.getAllKeys;
  IDBObjectStore.prototype.getAllKeys = function (...args) { listings.push(args); return getAllKeys.apply(this, args); };
  try {
    const rlx = await page();
    const open = () => rlx.openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path });
    let cache = await open();
    assert.equal(cache.restoreReport.indexed, 4);
    assert.equal(listings.length, 0, 'what the index says is what the store holds');
    await cache.close();
    // A blob deleted behind the index's back: fewer records than it says.
    const gone = await blobName(rlx, range(3000, 8));
    await rawIdb(path, (store) => store.delete(`${path}/${gone}`));
    cache = await open();
    assert.equal(listings.length, 1);
    assert.equal(cache.restoreReport.indexed, 3);
    assert.equal(cache.has(range(3000, 8)), false);
    await cache.close();
    // Repaired: the next open trusts it again.
    cache = await open();
    assert.equal(listings.length, 1);
    assert.equal(cache.restoreReport.indexed, 3);
    await cache.close();
  } finally {
    IDBObjectStore.prototype.getAllKeys = getAllKeys;
  }
});

test('idb: the index keeps tokens of any size; an index of the unreleased first layout (RLXKVIX1) is rebuilt from the blobs', async () => {
  const rlx = await page();
  const path = freshPath();
  // Tokens near and past 16 bits, where the index writes a high half apart.
  const sets = [range(5, 8), Uint32Array.of(0xffff, 0x10000, 0xffffffff, 7, 0x12345678, 0xfffe, 0, 0x10001), Uint32Array.of(0x1ffff, ...range(40, 7))];
  let cache = await rlx.openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path });
  sets.forEach((t, i) => cache.insert(t, kv(i)));
  await cache.close();
  const listings = [];
  const getAllKeys = IDBObjectStore.prototype.getAllKeys;
  IDBObjectStore.prototype.getAllKeys = function (...args) { listings.push(args); return getAllKeys.apply(this, args); };
  try {
    const expectAll = async (what) => {
      const c = await rlx.openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path });
      assert.equal(c.restoreReport.indexed, 3, what);
      for (const [i, t] of sets.entries()) assert.deepEqual((await c.match(t)).k, kv(i).k, `${what}: entry ${i}, found by its tokens`);
      const blobs = c.listBlobs();
      await c.close({ flush: false });
      return blobs;
    };
    const blobs = await expectAll('the index');
    assert.equal(listings.length, 0, 'trusted: no key listed');
    // An index of the layout of development builds before any release
    // (RLXKVIX1) is of an unknown magic: rebuilt from the blobs, as they were.
    const v1 = new Uint8Array(64);
    v1.set([...'RLXKVIX1'].map((c) => c.charCodeAt(0)));
    await laterMillisecond();
    await rawIdb(path, (store) => store.put({ timestamp: new Date(), mode: 0o100644, contents: v1 }, `${path}/.rlxkv-index`));
    assert.deepEqual((await expectAll('an RLXKVIX1 index')).map((b) => b.name).sort(), blobs.map((b) => b.name).sort());
    assert.ok(listings.length > 0, 'rebuilt from the keys');
  } finally {
    IDBObjectStore.prototype.getAllKeys = getAllKeys;
  }
});

/** Reads (get) or writes (put) the index record of an IDBFS-layout store at path. */
function indexRecord(path, put) {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(path);
    req.onsuccess = () => {
      const tx = req.result.transaction(['FILE_DATA'], put ? 'readwrite' : 'readonly');
      const r = put ? tx.objectStore('FILE_DATA').put({ timestamp: new Date(), mode: 0o100644, contents: put }, `${path}/.rlxkv-index`)
        : tx.objectStore('FILE_DATA').get(`${path}/.rlxkv-index`);
      tx.oncomplete = () => { req.result.close(); resolve(put ? undefined : r.result.contents); };
      tx.onerror = () => reject(tx.error);
    };
    req.onerror = () => reject(req.error);
  });
}

test('idb: a damaged index is rebuilt from the blobs; one read back at any offset is trusted', async () => {
  const path = await storeOf('idb', 3);
  const good = await indexRecord(path);
  const rlx = await page();
  const listings = [];
  const getAllKeys = IDBObjectStore.prototype.getAllKeys;
  IDBObjectStore.prototype.getAllKeys = function (...args) { listings.push(args); return getAllKeys.apply(this, args); };
  const u32 = (b, at, v) => { const c = b.slice(); new DataView(c.buffer).setUint32(at, v, true); return c; };
  const damaged = {
    truncated: good.subarray(0, good.length - 1),
    'a byte more': Uint8Array.from([...good, 0]),
    'count off by one': u32(good, 8, 4),
    'tokens off by one': u32(good, 12, new DataView(good.buffer, good.byteOffset).getUint32(12, true) + 1),
    'a blob\'s token count past the stream': u32(good, 24 + 32 * 3, new DataView(good.buffer, good.byteOffset).getUint32(24 + 32 * 3, true) + 1),
    'a name run together': Uint8Array.from(good, (x, i) => (i === good.lastIndexOf(47, good.length - 2) ? 120 : x)), // a '/' made 'x'
    'the last name\'s \'/\' and the byte before it swapped': Uint8Array.from(good, (x, i) => (i < good.length - 2 ? x : good[2 * good.length - 3 - i])),
    'unknown magic': Uint8Array.from(good, (x, i) => (i === 7 ? 57 : x)),
  };
  try {
    for (const [what, bytes] of Object.entries(damaged)) {
      await laterMillisecond();
      await indexRecord(path, bytes);
      const before = listings.length;
      const cache = await rlx.openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path });
      assert.equal(cache.restoreReport.indexed, 3, `${what}: every blob found`);
      assert.equal(listings.length, before + 1, `${what}: found by listing the keys`);
      for (const i of [0, 1, 2]) assert.deepEqual((await cache.match(range(1000 * i, 8))).k, kv(i).k, `${what}: entry ${i}`);
      await cache.close();
    }
    // The good index as a view 4 bytes into a larger buffer (structured clone keeps the offset).
    const shifted = new Uint8Array(good.length + 8);
    shifted.set(good, 4);
    await laterMillisecond();
    await indexRecord(path, shifted.subarray(4, 4 + good.length));
    assert.equal((await indexRecord(path)).byteOffset, 4, 'read back at offset 4');
    const before = listings.length;
    const cache = await rlx.openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path });
    assert.equal(listings.length, before, 'trusted');
    assert.equal(cache.restoreReport.indexed, 3);
    for (const i of [0, 1, 2]) assert.deepEqual((await cache.match(range(1000 * i, 8))).v, kv(i).v);
    await cache.close();
  } finally {
    IDBObjectStore.prototype.getAllKeys = getAllKeys;
  }
});

test('idb: a blob under a name not its own stays foreign from open to open', async () => {
  const path = await storeOf('idb', 2);
  const rlx = await page();
  const bytes = rlx.encodeEntry({ tokens: range(7000, 8), ...kv(7) }, FP);
  await rawIdb(path, (store) => store.put({ timestamp: new Date(), mode: 0o100644, contents: bytes }, `${path}/copied-by-hand.rlxkv`));
  for (const round of [1, 2, 3]) {
    const cache = await rlx.openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path });
    assert.equal(cache.restoreReport.indexed, 2 + round - 1, `open ${round}`);
    assert.equal(cache.restoreReport.foreign, 1, `open ${round}: foreign`);
    assert.equal(cache.listBlobs().find((b) => b.name === 'copied-by-hand.rlxkv').status, 'foreign');
    assert.equal(cache.has(range(7000, 8)), false);
    cache.insert(range(8000 + round, 8), kv(round)); // each open writes the index again
    await cache.close();
  }
});

for (const kind of ['fs', 'idb']) {
  test(`${kind}: a watching cache learns at once what another cache on its store saves and deletes`, async () => {
    const path = kind === 'fs' ? tempDir() : freshPath();
    const open = async (opts) => (await page()).openCache({ capBytes: 1 << 20, fingerprint: FP, storage: kind, path, ...opts });
    // Two pages of one app (BroadcastChannel reaches other instances, tabs, workers, threads).
    const writer = await open(), watcher = await open({ watch: true }), other = await open({ fingerprint: FP + 1n });
    writer.insert(range(0, 8), kv(0));
    writer.insert(range(1000, 8), kv(1));
    other.insert(range(2000, 8), kv(2));
    await Promise.all([writer.flush(), other.flush()]);
    await until(() => watcher.stats.storedEntries === 2 && watcher.listBlobs().length === 3, 'both saves heard');
    assert.equal(watcher.stats.storedEntries, 2, 'its fingerprint\'s entries, stored-only');
    assert.deepEqual((await watcher.match(range(1000, 9))).v, kv(1).v, 'read from the blob on the hit');
    assert.equal(watcher.has(range(2000, 8)), false, 'another fingerprint\'s blob is known, not an entry');
    assert.equal(watcher.listBlobs().filter((b) => b.status === 'stale').length, 1);
    // Deleted there: the stored-only entry goes; the resident one stays in memory, unstored.
    writer.remove(range(0, 8));
    writer.remove(range(1000, 8));
    await writer.flush();
    await until(() => watcher.listBlobs().filter((b) => b.status === 'ok').length === 0, 'the removals heard');
    assert.equal(watcher.has(range(0, 8)), false);
    assert.deepEqual(watcher.lookup(range(1000, 8)).k, kv(1).k);
    assert.equal(watcher.stats.storedEntries, 0);
    assert.equal(watcher.listBlobs().filter((b) => b.status === 'ok').length, 0);
    await watcher.flush(); // the deletion holds: not saved again
    const reopened = await open();
    assert.equal(reopened.restoreReport.indexed, 0);
    await Promise.all([writer.close(), watcher.close(), other.close(), reopened.close()]);
    // Not watching: nothing changes until the next open.
    const quiet = await open();
    const again = await open();
    again.insert(range(5000, 8), kv(5));
    await again.flush();
    // Nothing to wait for: time for a message, were one sent (a slow one
    // can only let this pass, never fail it).
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(quiet.has(range(5000, 8)), false);
    await Promise.all([quiet.close(), again.close()]);
  });
}

test('idb: a watching cache keeps what it changed since it was saved when another deletes its blob, and ignores what is not news', async () => {
  const path = freshPath();
  const open = async (opts) => (await page()).openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path, ...opts });
  const writer = await open(), watcher = await open({ watch: true });
  writer.insert(range(0, 8), kv(0));
  await writer.flush();
  await until(() => watcher.has(range(0, 8)), 'the save heard');
  await watcher.match(range(0, 8)); // resident, clean
  watcher.insert(range(0, 8), kv(7)); // changed here, not yet saved
  // What is not news from a store of this version is dropped, not fatal.
  const channel = new BroadcastChannel(`rlxkv:idb:${path}`);
  for (const junk of [null, 42, { rlxkv: 1, saved: [{}], removed: [7] }, { rlxkv: 1, saved: 'x', removed: [] }, { saved: [], removed: ['x.rlxkv'] }]) channel.postMessage(junk);
  channel.close();
  writer.remove(range(0, 8));
  await writer.flush();
  await until(() => watcher.listBlobs().length === 0, 'the removal heard');
  assert.deepEqual(watcher.lookup(range(0, 8)).k, kv(7).k);
  await watcher.flush(); // saved again: it was dirty
  const reopened = await open();
  assert.deepEqual((await reopened.match(range(0, 8))).k, kv(7).k);
  await Promise.all([writer.close(), watcher.close(), reopened.close()]);
});

test('idb: an insert while a hit reads the same blob wins over the blob', async () => {
  const path = await storeOf('idb', 2);
  const cache = await (await page()).openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path });
  const hit = cache.match(range(1000, 8)); // reads the blob of kv(1)
  cache.insert(range(1000, 8), kv(9)); // meanwhile
  assert.deepEqual((await hit).k, kv(9).k);
  assert.deepEqual(cache.lookup(range(1000, 8)).v, kv(9).v);
  await cache.close(); // flushes the insert
  const again = await (await page()).openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path });
  assert.deepEqual((await again.match(range(1000, 8))).k, kv(9).k);
  await again.close();
});

test('watch is a boolean', async () => {
  const rlx = await page();
  await assert.rejects(rlx.openCache({ capBytes: 1, fingerprint: FP, storage: 'fs', path: tempDir(), watch: 'yes' }), TypeError);
});

/** The file name the store gives an entry of these tokens (the one file a flush writes). */
async function blobName(rlx, tokens) {
  const dir = tempDir();
  const c = await rlx.openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'fs', path: dir });
  c.insert(tokens, kv(0));
  await c.close();
  return storeFiles(dir)[0];
}

test("fs: a killed save's temporary file is swept at open when its writer is gone; a live writer's stays", async () => {
  const dir = await storeOf('fs', 1);
  const [blob] = storeFiles(dir);
  const bytes = 5000;
  // A pid above any pid_max (no process has it: an exited child's pid may
  // be given again, on a busy machine with a small pid_max), and this one.
  const dead = 0x7ffffffe;
  writeFileSync(join(dir, `${blob}.${dead.toString(16)}-1-0.tmp`), new Uint8Array(bytes));
  writeFileSync(join(dir, `${blob}.${process.pid.toString(16)}-2-0.tmp`), new Uint8Array(bytes));
  const cache = await (await page()).openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'fs', path: dir });
  const r = cache.restoreReport;
  assert.deepEqual([r.swept, r.temporaries, r.temporaryBytes, r.indexed], [1, 1, bytes, 1]);
  assert.equal(readdirSync(dir).filter((f) => f.endsWith('.tmp')).length, 1);
  await cache.close();
});

/** Makes dir read-only even for root (chattr +i), or for its owner (chmod); returns the undo. */
function readOnly(dir) {
  if (process.getuid?.() === 0) {
    execFileSync('chattr', ['+i', dir]);
    return () => execFileSync('chattr', ['-i', dir]);
  }
  execFileSync('chmod', ['a-w', dir]);
  return () => execFileSync('chmod', ['u+w', dir]);
}

test('fs: a read-only store opens, says so, answers hits, and refuses to flush with IO', async () => {
  const dir = await storeOf('fs', 2);
  const undo = readOnly(dir);
  try {
    const cache = await (await page()).openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'fs', path: dir, storageCapBytes: 1 });
    assert.equal(cache.restoreReport.readOnly, true);
    assert.equal((await cache.match(range(1000, 8))).matched, 8);
    cache.insert([1, 2, 3], kvFor(3));
    await assert.rejects(cache.flush(), { code: 'IO', message: /read-only/ });
    await cache.close({ flush: false });
  } finally {
    undo();
  }
  assert.equal(storeFiles(dir).length, 2, 'nothing was pruned or written');
});

test('copyStore moves a store from a directory to IndexedDB (one index write) and back, every blob byte for byte', async () => {
  const dir = await storeOf('fs', 5);
  const rlx = await page();
  // Another fingerprint's blob travels too.
  const other = await rlx.openCache({ capBytes: 1 << 24, fingerprint: 0xbeefn, storage: 'fs', path: dir });
  other.insert(range(77, 8), kv(77));
  await other.close();
  const idb = freshPath();
  // The blobs and their index records go in one transaction: one index write, not one per blob.
  const put = IDBObjectStore.prototype.put;
  let indexWrites = 0;
  IDBObjectStore.prototype.put = function (value, key) {
    if (String(key).endsWith('/.rlxkv-index')) indexWrites++;
    return put.call(this, value, key);
  };
  let there;
  try {
    there = await rlx.copyStore({ storage: 'fs', path: dir }, { storage: 'idb', path: idb });
  } finally {
    IDBObjectStore.prototype.put = put;
  }
  assert.equal(there.copied, 6);
  assert.equal(indexWrites, 1);
  const inIdb = await rlx.openCache({ capBytes: 1 << 24, fingerprint: FP, storage: 'idb', path: idb });
  assert.deepEqual(inIdb.restoreReport, {
    indexed: 5, stale: 1, corrupt: 0, skipped: 0, bytes: 5 * ENTRY_BYTES, resident: 0, foreign: 0, tooLarge: 0, unreadable: 0, readOnly: false, temporaries: 0, temporaryBytes: 0, swept: 0,
  });
  for (let i = 0; i < 5; i++) {
    const hit = await inIdb.match(range(1000 * i, 9));
    assert.equal(hit?.matched, 8);
    assert.deepEqual(hit.k[0], kv(i).k[0]);
  }
  await inIdb.close({ flush: false });
  const back = tempDir();
  assert.deepEqual(await rlx.copyStore({ storage: 'idb', path: idb }, { storage: 'fs', path: back }), there);
  const names = (d) => readdirSync(d).filter((n) => n.endsWith('.rlxkv')).sort();
  assert.deepEqual(names(back), names(dir));
  for (const n of names(dir)) assert.ok(execFileSync('cmp', [join(dir, n), join(back, n)]).length === 0, `${n} unchanged`);
  await assert.rejects(rlx.copyStore({ storage: 'fs', path: dir }, { storage: 'none' }), RangeError);
  await assert.rejects(rlx.copyStore({ storage: 'fs', path: dir }, { storage: 'fs', path: dir }), RangeError);
});

test('blobSpans (the read-into-the-heap path) judges blobs as decodeBlob does', async () => {
  const { encodeBlob, decodeBlob, blobSpans } = await import('../../format/blob.js');
  const blocks = [new Float32Array(6), new Float32Array(3), new Float32Array(6), new Float32Array(0)];
  const base = encodeBlob(Uint32Array.of(1, 2, 3), blocks, 9n);
  const good = blobSpans((at, n) => base.subarray(at, at + n), base.length, 9n);
  assert.deepEqual([...good.tokens], [1, 2, 3]);
  assert.deepEqual(good.spans.map(([, n]) => n), blocks.map((b) => b.length));
  let x = 1;
  const rnd = (n) => { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; return (x >>> 0) % n; };
  const outcome = (f) => { try { return f() === null ? 'stale' : 'ok'; } catch (e) { return e.code || e.name; } };
  for (let t = 0; t < 20000; t++) {
    let b = base.slice();
    const k = rnd(4);
    if (k === 0) b = b.slice(0, rnd(b.length + 1));
    else if (k === 1) { const c = new Uint8Array(b.length + rnd(9)); c.set(b); b = c; }
    for (let m = rnd(3); m >= 0; m--) b[rnd(b.length || 1)] ^= 1 << rnd(8);
    const fp = rnd(3) === 0 ? undefined : 9n;
    const want = outcome(() => decodeBlob(b, fp));
    const got = outcome(() => blobSpans((at, n) => b.subarray(at, at + n), b.length, fp, [8, 40, 4096][rnd(3)]));
    // RLXKVF16 is a valid magic to blobSpans (its values are read, not decoded here).
    if (want === 'BAD_MAGIC' && got === 'ok' && String.fromCharCode(...b.subarray(0, 8)) === 'RLXKVF16') continue;
    assert.equal(got, want, `mutation ${t}`);
  }
});

test('fs: a hit reads a blob whose block lengths differ, or lie, exactly as decodeBlob judges it', async () => {
  // The hit's read takes the block headers past its first bytes (header and
  // tokens) to repeat the first one's when the file's size allows it: blobs
  // whose headers say otherwise, at that size.
  const { encodeBlob, decodeBlob } = await import('../../format/blob.js');
  const tokens = Uint32Array.of(7, 8, 9);
  const N = 8192; // values per block: 32 KiB
  const blocks = Array.from({ length: 4 }, (_, b) => Float32Array.from({ length: N }, (_, i) => 10 * b + i));
  const base = encodeBlob(tokens, blocks, FP);
  const rlx = await page();
  const name = await blobName(rlx, tokens);
  const firstHeader = 32 + 8 * tokens.length + 8;
  const headerAt = (b) => firstHeader + b * (8 + 4 * N);
  let x = 7;
  const rnd = (n) => { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; return (x >>> 0) % n; };
  const seen = new Set();
  for (let t = 0; t < 60; t++) {
    const b = base.slice(), dv = new DataView(b.buffer);
    const p = 1 + rnd(3), d = 1 + rnd(5);
    if (t % 3 === 0) { // lengths that still add up: a valid blob
      dv.setUint32(headerAt(p - 1), N + d, true); // block p - 1 grows by d values, p shrinks by d
      dv.setBigUint64(headerAt(p) + 4 * d, BigInt(N - d), true);
    } else if (t % 3 === 1) dv.setUint32(headerAt(p) + 4 * rnd(2), rnd(2 ** 31), true); // a lie
    else dv.setUint32(headerAt(p), N + d, true); // too long for what follows
    let want;
    try { want = decodeBlob(b, FP); } catch { want = null; }
    seen.add(want ? 'valid' : 'invalid');
    const dir = tempDir();
    writeFileSync(join(dir, name), b);
    const cache = await rlx.openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'fs', path: dir });
    const hit = await cache.match(tokens);
    if (!want) assert.equal(hit, null, `mutation ${t}: refused`);
    else {
      assert.equal(hit && hit.matched, 3, `mutation ${t}: loaded`);
      assert.deepEqual([...hit.k, ...hit.v].map((a) => [...a]), [...want.k, ...want.v].map((a) => [...a]), `mutation ${t}: its values`);
    }
    assert.ok(readdirSync(dir).includes(name), 'a refused blob stays where it is');
    await cache.close({ flush: false });
  }
  assert.deepEqual([...seen].sort(), ['invalid', 'valid']);
});

test('fs: with a layout, a hit on a blob changed behind the index judges it as decodeBlob and the layout do', async () => {
  // With a layout the index tells a blob's whole shape, and a hit reads it
  // in one go, checking what it read against that shape. Here each blob is
  // replaced after the open by one of the same size mutated anywhere: the
  // header, the tokens, a block header, a value; and by longer and shorter ones.
  const { encodeBlob, decodeBlob } = await import('../../format/blob.js');
  const layout = { order: 'head-major', heads: 2, headDim: 4, layers: 2 };
  const tokens = Uint32Array.of(7, 8, 9);
  const N = 2 * 4 * tokens.length; // values per block
  const blocks = (seed) => Array.from({ length: 4 }, (_, b) => Float32Array.from({ length: N }, (_, i) => seed + 10 * b + i));
  const base = encodeBlob(tokens, blocks(0), FP);
  const rlx = await page();
  const name = await blobName(rlx, tokens);
  let x = 11;
  const rnd = (n) => { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; return (x >>> 0) % n; };
  const headEnd = 32 + 8 * tokens.length + 16;
  const seen = new Set();
  for (let t = 0; t < 80; t++) {
    let b = encodeBlob(tokens, blocks(t + 1), FP);
    const where = t % 5;
    if (where === 0) b[rnd(headEnd)] ^= 1 << rnd(8); // the header, the tokens, the layer count, the first length
    else if (where === 1) b[headEnd + (N * 4 + 8) * (1 + rnd(3)) - 8 + rnd(8)] ^= 1 << rnd(8); // a later block header
    else if (where === 2) b[headEnd + rnd(N * 4)] ^= 1; // a value: still valid
    else if (where === 3) b = Uint8Array.from([...b, 0]); // a byte past the end
    else b = b.subarray(0, b.length - 1 - rnd(8));
    let want = null;
    try { want = decodeBlob(b, FP); } catch { /* invalid */ }
    const fits = want && want.tokens.join() === tokens.join() && [...want.k, ...want.v].every((k) => k.length === N);
    seen.add(fits ? 'loads' : 'refused');
    const dir = tempDir();
    writeFileSync(join(dir, name), base);
    const cache = await rlx.openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'fs', path: dir, layout });
    writeFileSync(join(dir, name), b); // behind the index's back
    const hit = await cache.match(tokens);
    if (!fits) assert.equal(hit, null, `mutation ${t}: refused`);
    else assert.deepEqual([...hit.k, ...hit.v].map((a) => [...a]), [...want.k, ...want.v].map((a) => [...a]), `mutation ${t}: its values`);
    assert.ok(readdirSync(dir).includes(name), 'a refused blob stays where it is');
    await cache.close({ flush: false });
  }
  assert.deepEqual([...seen].sort(), ['loads', 'refused']);
});

test('fs: with a layout, a hit reads its blob in one scatter read, without fstat', async () => {
  const fs = (await import('node:fs')).default;
  const { syncBuiltinESMExports } = await import('node:module');
  const layout = { order: 'token-major', heads: 1, headDim: 64, layers: 1 };
  const dir = tempDir();
  const rlx = await page();
  let cache = await rlx.openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'fs', path: dir, layout });
  cache.insert(range(0, 8), kv(0));
  await cache.close();
  cache = await rlx.openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'fs', path: dir, layout });
  const calls = { readvSync: 0, fstatSync: 0, readSync: 0 };
  const saved = {};
  for (const f of Object.keys(calls)) {
    saved[f] = fs[f];
    fs[f] = function (...args) { calls[f]++; return saved[f].apply(this, args); };
  }
  syncBuiltinESMExports();
  let hit;
  try {
    hit = await cache.match(range(0, 9));
  } finally {
    Object.assign(fs, saved);
    syncBuiltinESMExports();
  }
  assert.deepEqual(hit.k, kv(0).k);
  // No head read, no fstat: one scatter read of the whole blob, and one
  // more that finds the file's end where the blob's is.
  assert.deepEqual(calls, { readvSync: 2, fstatSync: 0, readSync: 0 });
  await cache.close();
});

test('fs: a flush writes blobs in pieces equal to encodeBlob, and an entry replaced mid-save is saved whole by the next', async () => {
  const { encodeBlob, encodePieces } = await import('../../format/blob.js');
  for (const blocks of [[new Float32Array([1, 2, NaN, -0]), new Float32Array(0)], [Uint16Array.of(0x7e01, 0x8000), Uint16Array.of(1)]]) {
    const tokens = Uint32Array.of(5, 6);
    const parts = [];
    for (const piece of encodePieces(tokens, () => blocks, 9n)) parts.push(piece.slice()); // a piece holds until the next
    const joined = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    parts.reduce((at, p) => (joined.set(p, at), at + p.length), 0);
    assert.deepEqual(joined, encodeBlob(tokens, blocks, 9n));
  }
  const dir = tempDir();
  const rlx = await page();
  const big = (seed) => ({ k: Array.from({ length: 16 }, () => new Float32Array(1 << 16).fill(seed)), v: Array.from({ length: 16 }, () => new Float32Array(1 << 16).fill(-seed)) });
  const cache = await rlx.openCache({ capBytes: 1 << 26, fingerprint: FP, storage: 'fs', path: dir });
  const tokens = range(1, 4);
  cache.insert(tokens, big(1));
  const first = cache.flush();
  await new Promise((r) => setImmediate(r));
  cache.insert(tokens, big(2)); // while the first save may be under way
  await first;
  await cache.flush();
  await cache.close();
  const again = await rlx.openCache({ capBytes: 1 << 26, fingerprint: FP, storage: 'fs', path: dir });
  const hit = await again.match(tokens);
  assert.ok(hit.k.every((b) => b.every((x) => x === 2)) && hit.v.every((b) => b.every((x) => x === -2)), 'the second version, whole');
  await again.close();
});

test('idb: openStore lists and prunes an IndexedDB store without a cache, judged as a cache\'s open judges', async () => {
  const path = await storeOf('idb', 3);
  const rlx = await page();
  const other = await rlx.openCache({ capBytes: 1 << 20, fingerprint: 0x99n, storage: 'idb', path });
  other.insert(range(50, 8), kv(50));
  await other.close();
  const store = await rlx.openStore(path, { storage: 'idb' });
  assert.deepEqual(store.list(FP).map((b) => b.status).sort(), ['ok', 'ok', 'ok', 'stale']);
  assert.deepEqual(store.list().map((b) => b.status), ['ok', 'ok', 'ok', 'ok']);
  const dry = await store.prune(FP, { maxBytes: 0, dryRun: true });
  assert.deepEqual([dry.removed, dry.kept], [3, 1]);
  const report = await store.prune(FP, { stale: true, maxBytes: 2 * (ENTRY_BYTES + 200) });
  assert.deepEqual([report.removed, report.kept], [2, 2]); // the stale blob and the least recently used
  await store.close();
  const cache = await rlx.openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path });
  assert.deepEqual([cache.restoreReport.indexed, cache.restoreReport.stale], [2, 0]);
  assert.equal(cache.has(range(0, 8)), false, 'the least recently used went');
  await cache.close();
});
