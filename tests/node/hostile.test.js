// Hostile inputs, second round (issue #26), as an app and a hostile page
// meet them: removals that raced a flush, forged watch messages, removals
// that cannot complete, foreign blobs copied in, budgets shared by
// processes, opens racing deletions or short of file descriptors,
// unreadable blobs, stored entries too large to load, a close racing a
// match. Faults the machine cannot be made to show for real (a file made
// immutable, a file root cannot read) are injected into the backend.
import 'fake-indexeddb/auto';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, statSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import init from 'rlxkv';
import { FsBlobs } from '../../store/fs-blobs.js';
import { IdbBlobs } from '../../store/idb-blobs.js';
import { RlxkvError } from '../../wasm/errors.js';
import { dropIndex, kvFor, modelKv, range, tempDir } from './helpers.js';

const page = () => init({ newInstance: true });
let dbCount = 0;
const freshPath = () => `/hostile-${++dbCount}`;
const FP = 0x4057n;
/** 8 tokens of 4 KiB of KV each: one layer, 64 floats a row. */
const kv = (seed) => kvFor(8, { layers: 1, width: 64, seed });
const blobFiles = (dir) => readdirSync(dir).filter((n) => n.endsWith('.rlxkv'));
const dirBytes = (dir) => blobFiles(dir).reduce((n, f) => n + statSync(join(dir, f)).size, 0);

/** Replaces method `name` of a backend's prototype with wrap(original) until undo() (returned). */
function patch(Backend, name, wrap) {
  const original = Backend.prototype[name];
  Backend.prototype[name] = wrap(original);
  return () => { Backend.prototype[name] = original; };
}

async function openOn(kind, path, opts = {}) {
  return (await page()).openCache({ capBytes: 1 << 22, fingerprint: FP, storage: kind, path, ...opts });
}

// ---- data lost or resurrected -------------------------------------------

for (const kind of ['fs', 'idb']) {
  test(`${kind}: an entry removed while a flush saves it stays removed, through a second flush and a reopen`, async () => {
    const path = kind === 'fs' ? tempDir() : freshPath();
    const cache = await openOn(kind, path);
    const first = range(0, 8), again = range(100, 8);
    cache.insert(again, kv(1));
    await cache.flush(); // saved once: its removal will find a record
    cache.insert(first, kv(0)); // never saved: its removal finds none
    cache.insert(again, kv(2)); // dirty again
    let removedMidFlush = 0;
    const removeBoth = () => { for (const tokens of [first, again]) if (cache.remove(tokens)) removedMidFlush++; };
    // The flush has encoded these entries; the app removes them now: in a
    // directory once the file is in place (before that, a save in pieces
    // sees its entry gone and stops), in IndexedDB as the transaction starts.
    const undo = kind === 'fs'
      ? patch(FsBlobs, 'write', (write) => function (items, done) {
        return write.call(this, items, (item) => { if (!removedMidFlush) removeBoth(); done(item); });
      })
      : patch(IdbBlobs, 'commit', (commit) => function (...args) {
        removeBoth();
        return commit.apply(this, args);
      });
    try {
      await cache.flush();
    } finally {
      undo();
    }
    assert.equal(removedMidFlush, 2, 'remove() said both were there');
    assert.equal(cache.has(first), false);
    assert.equal(cache.has(again), false);
    await cache.flush();
    await cache.close();
    const reopened = await openOn(kind, path);
    assert.equal(reopened.has(first), false, 'not resurrected by the save under way');
    assert.equal(reopened.has(again), false, 'not resurrected by the save under way');
    assert.equal(await reopened.match(first), null);
    assert.equal(reopened.restoreReport.indexed, 0);
    await reopened.close();
  });
}

test('fs: an entry removed and inserted again while a flush runs is saved as inserted, not deleted', async () => {
  const dir = tempDir();
  const cache = await openOn('fs', dir);
  const tokens = range(0, 8);
  cache.insert(tokens, kv(0));
  await cache.flush();
  cache.insert(range(50, 8), kv(5));
  const undo = patch(FsBlobs, 'write', (write) => async function (items, ...rest) {
    undo();
    cache.remove(tokens);
    cache.insert(tokens, kv(9)); // dirty, saved by the next flush
    return write.call(this, items, ...rest);
  });
  await cache.flush();
  await cache.flush();
  await cache.close();
  const reopened = await openOn('fs', dir);
  assert.deepEqual((await reopened.match(tokens)).k, kv(9).k);
  await reopened.close();
});

test('fs: a page whose parent\'s save was skipped mid-flush (the parent changed) is saved whole, never as an orphan', async () => {
  const dir = tempDir();
  const cache = await openOn('fs', dir, { layout: { order: 'token-major', heads: 1, headDim: 64, layers: 1 } });
  const parent = range(0, 8), child = range(0, 16);
  cache.insert(parent, kv(1));
  cache.insert(child, kvFor(16, { layers: 1, width: 64, seed: 2 })); // a page after parent: neither stored yet
  // The parent's parts stop as a save in pieces does when its entry changes under it.
  const undo = patch(FsBlobs, 'write', (write) => function (items, done, skipped) {
    undo();
    const changedFirst = (async function* () {
      let first = true;
      for await (const item of items) {
        if (first) {
          first = false;
          yield { ...item, parts: { [Symbol.iterator]() { throw new RlxkvError('CHANGED', 'the entry changed while it was saved'); } } };
        } else yield item;
      }
    })();
    return write.call(this, changedFirst, done, skipped);
  });
  await cache.flush();
  const stored = cache.listBlobs();
  assert.deepEqual(stored.map((b) => [b.tokens, b.page]), [[16, false]], 'the child alone, whole: its parent was not saved');
  await cache.close({ flush: false });
  const reopened = await openOn('fs', dir, { layout: { order: 'token-major', heads: 1, headDim: 64, layers: 1 } });
  const hit = await reopened.match(child);
  assert.equal(hit.matched, 16, 'served after a restart');
  await reopened.close();
});

test('fs commit: a removal that fails keeps its name, and the names never tried, in the index', async () => {
  {
    const dir = tempDir();
    const b = await FsBlobs.open(dir);
    const names = ['a', 'b', 'c'].map((c) => `${c.repeat(32)}.rlxkv`);
    await b.commit({ items: names.map((name) => ({ name, bytes: 4, parts: [new Uint8Array(4)] })) });
    const undo = patch(FsBlobs, 'remove', (remove) => async function (list, done) {
      await remove.call(this, list.slice(0, 1), done); // a, then b is held
      throw new RlxkvError('IO', `removing ${list[1]}: EPERM: operation not permitted`);
    });
    let present = null;
    try {
      await assert.rejects(b.commit({ removes: names, update: (cur, p) => { present = p; return undefined; } }), /EPERM/);
    } finally {
      undo();
    }
    assert.deepEqual([...present].sort(), names.slice(1), 'the index update sees b and c still there');
    await b.close();
  }
});

/** Posts msg on the store's channel as any script of the origin can. */
function forge(kind, path, msg) {
  const ch = new BroadcastChannel(`rlxkv:${kind}:${kind === 'fs' ? resolve(path) : path}`);
  ch.postMessage(msg);
  ch.close();
}

for (const kind of ['fs', 'idb']) {
  test(`${kind}: forged or junk watch messages delete nothing, relabel nothing, hide nothing and list nothing`, async () => {
    const path = kind === 'fs' ? tempDir() : freshPath();
    const writer = await openOn(kind, path);
    for (let i = 0; i < 3; i++) writer.insert(range(1000 * i, 8), kv(i));
    await writer.flush();
    const real = writer.listBlobs().map((b) => b.name);
    const watcher = await openOn(kind, path, { watch: true, storageCapBytes: 1 << 20 });
    const record = (name, over) => ({
      name, bytes: 1e15, lastUse: Date.now() + 1e9, fingerprint: FP, status: 'ok', dtype: 'f32',
      tokens: Uint32Array.from(range(1000, 8)), nValues: 1024, rowMajor: true, ...over,
    });
    const lies = [
      { saved: [record(real[0])], removed: [] }, // a size that would make a budget prune everything
      { saved: [record(real[1], { fingerprint: FP + 1n })], removed: [] }, // relabelled: stale, for prune({ stale })
      { saved: [], removed: [real[2]] }, // deleted, says the message
      { saved: [record('0123456789abcdef.rlxkv'), record('junk.rlxkv'), record('../../etc.rlxkv'), { name: 42 }], removed: [null, 7] },
    ];
    // In every version of the message this or an earlier release reads.
    for (const lie of lies) for (const rlxkv of [1, 2]) forge(kind, path, { rlxkv, ...lie });
    // A real save after them: once it is heard, so were they (in order).
    writer.insert(range(9000, 8), kv(9));
    await writer.flush();
    for (let i = 0; !watcher.has(range(9000, 8)); i++) {
      assert.ok(i < 500, 'the real save is heard');
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.deepEqual(watcher.listBlobs().map((b) => [b.name, b.status]).sort(),
      [...real, writer.listBlobs().find((b) => b.tokens === 8 && !real.includes(b.name)).name].map((n) => [n, 'ok']).sort(),
      'only the store\'s blobs, as the store describes them');
    assert.ok(watcher.has(range(2000, 8)), 'not hidden');
    watcher.insert(range(7000, 8), kv(7));
    await watcher.flush(); // its budget's prune: 5 blobs of 4 KiB fit 1 MiB
    const report = await watcher.prune({ stale: true });
    assert.deepEqual([report.removed, report.kept], [0, 5]);
    await Promise.all([writer.close(), watcher.close()]);
    const reopened = await openOn(kind, path);
    assert.equal(reopened.restoreReport.indexed, 5, 'every blob still stored');
    for (const i of [0, 1, 2]) assert.deepEqual((await reopened.match(range(1000 * i, 8))).k, kv(i).k);
    await reopened.close();
  });
}

for (const kind of ['fs', 'idb']) {
  test(`${kind}: a removal that cannot complete does not stop saves; it is tried again at each flush, and close() closes`, async () => {
    const path = kind === 'fs' ? tempDir() : freshPath();
    const cache = await openOn(kind, path);
    const stuck = range(0, 8);
    cache.insert(stuck, kv(0));
    await cache.flush();
    const stuckName = cache.listBlobs()[0].name;
    // As a file made immutable (chattr +i) or held open by another worker.
    let tries = 0;
    const refuse = (names) => names.includes(stuckName) && ++tries;
    const undo = kind === 'fs'
      ? patch(FsBlobs, 'remove', (remove) => async function (names, done) {
        if (refuse(names)) throw new RlxkvError('IO', `removing ${stuckName}: EPERM: operation not permitted`);
        return remove.call(this, names, done);
      })
      : patch(IdbBlobs, 'commit', (commit) => async function (changes, calls) {
        if (refuse(changes.removes ?? [])) throw new RlxkvError('IO', 'saving to IndexedDB: the record is held');
        return commit.call(this, changes, calls);
      });
    try {
      assert.equal(cache.remove(stuck), true);
      for (let i = 1; i <= 3; i++) {
        cache.insert(range(1000 * i, 8), kv(i));
        await cache.flush();
        assert.equal(cache.stats.pendingRemovals, 1);
        assert.match(cache.stats.removalError.message, /EPERM|held/);
      }
      assert.equal(tries, 3, 'tried once a flush');
      await cache.close();
    } finally {
      undo();
    }
    const reopened = await openOn(kind, path);
    for (let i = 1; i <= 3; i++) assert.deepEqual((await reopened.match(range(1000 * i, 8))).k, kv(i).k, `entry ${i} saved`);
    // The fault gone, the next removal succeeds.
    reopened.remove(stuck);
    await reopened.flush();
    assert.equal(reopened.stats.pendingRemovals, 0);
    assert.equal(reopened.stats.removalError, null);
    await reopened.close();
    assert.equal((await openOn(kind, path)).has(stuck), false);
  });
}

test('copyStore keeps a blob under a name not its own foreign, so the copy\'s budget never counts it', async () => {
  const dir = tempDir();
  const cache = await openOn('fs', dir);
  for (let i = 0; i < 4; i++) cache.insert(range(1000 * i, 8), kv(i));
  const big = range(9000, 64);
  cache.insert(big, kvFor(64, { layers: 1, width: 64, seed: 9 }));
  await cache.close();
  // Copied by hand under another name: a foreign blob, larger than the rest together.
  const names = blobFiles(dir);
  const sizes = names.map((n) => statSync(join(dir, n)).size);
  const largest = names[sizes.indexOf(Math.max(...sizes))];
  renameSync(join(dir, largest), join(dir, 'fedcba9876543210.rlxkv'));
  const rlx = await page();
  const path = freshPath();
  await rlx.copyStore({ storage: 'fs', path: dir }, { storage: 'idb', path });
  const copy = await openOn('idb', path, { storageCapBytes: sizes.reduce((n, b) => n + b, 0) - Math.max(...sizes) });
  assert.equal(copy.restoreReport.foreign, 1);
  assert.equal(copy.listBlobs().find((b) => b.name === 'fedcba9876543210.rlxkv').status, 'foreign');
  for (let i = 0; i < 4; i++) assert.deepEqual((await copy.match(range(1000 * i, 8))).k, kv(i).k, `entry ${i} kept by the budget`);
  await copy.close();
});

test('fs: storageCapBytes bounds the directory, whoever wrote it (two caches that do not watch)', async () => {
  const dir = tempDir();
  const entry = (seed) => kvFor(32, { layers: 1, width: 256, seed }); // 64 KiB
  const cap = 200 * 1024;
  const a = await openOn('fs', dir, { storageCapBytes: cap });
  const b = await openOn('fs', dir, { storageCapBytes: cap });
  for (let i = 0; i < 3; i++) {
    a.insert(range(1000 * i, 32), entry(i));
    b.insert(range(50000 + 1000 * i, 32), entry(10 + i));
  }
  await a.flush();
  assert.ok(dirBytes(dir) <= cap, 'a alone fits');
  await b.flush();
  assert.ok(dirBytes(dir) <= cap, `both: ${dirBytes(dir)} bytes on disk, cap ${cap}`);
  await a.flush();
  assert.ok(dirBytes(dir) <= cap);
  // The newest (b's, resident and saved last) are the ones kept.
  await Promise.all([a.close(), b.close()]);
  const reopened = await openOn('fs', dir);
  assert.deepEqual((await reopened.match(range(52000, 32))).k, entry(12).k);
  await reopened.close();
});

// ---- opens and matches that fail ----------------------------------------

test('fs: a blob deleted by another process while the open reads the directory is simply absent', async () => {
  const dir = tempDir();
  const cache = await openOn('fs', dir);
  for (let i = 0; i < 4; i++) cache.insert(range(1000 * i, 8), kv(i));
  await cache.close();
  const victim = blobFiles(dir)[1];
  dropIndex(dir); // a store without its index: the open reads each blob's first bytes
  // Deleted between the listing and its head read.
  const undo = patch(FsBlobs, 'head', (head) => async function (name, n) {
    if (name === victim) unlinkSync(join(dir, name));
    return head.call(this, name, n);
  });
  let reopened;
  try {
    reopened = await openOn('fs', dir);
  } finally {
    undo();
  }
  assert.equal(reopened.restoreReport.indexed, 3);
  assert.equal(reopened.listBlobs().length, 3);
  await reopened.close();
});

test('fs: a store of more blobs than the process may open files opens (ulimit -n 64, 300 blobs)', async () => {
  const dir = tempDir();
  const cache = await openOn('fs', dir, { capBytes: 1 << 24 });
  for (let i = 0; i < 300; i++) cache.insert(range(1000 * i, 8), kv(i));
  await cache.close();
  const script = `
    import init from 'rlxkv';
    const rlx = await init();
    const cache = await rlx.openCache({ capBytes: 1 << 24, fingerprint: ${FP}n, storage: 'fs', path: ${JSON.stringify(dir)} });
    const hit = await cache.match(Array.from({ length: 8 }, (_, i) => 299000 + i));
    console.log(JSON.stringify({ loaded: cache.restoreReport.indexed, hit: hit && hit.matched }));
    await cache.close();`;
  const out = execFileSync('bash', ['-c', 'ulimit -n 64 && exec node --input-type=module -e "$0"', script], { cwd: process.cwd(), encoding: 'utf8' });
  assert.deepEqual(JSON.parse(out), { loaded: 300, hit: 8 });
});

test('fs: one unreadable blob is skipped and reported, never pruned; the rest open', async () => {
  const dir = tempDir();
  const cache = await openOn('fs', dir);
  for (let i = 0; i < 3; i++) cache.insert(range(1000 * i, 8), kv(i));
  await cache.close();
  const locked = blobFiles(dir)[0];
  dropIndex(dir); // a store without its index: the open reads each blob's first bytes
  // As a file of mode 000 (root reads those, so the fault is injected).
  const undo = patch(FsBlobs, 'head', (head) => async function (name, n) {
    if (name === locked) throw new RlxkvError('IO', `opening ${name}: EACCES: permission denied`);
    return head.call(this, name, n);
  });
  try {
    const reopened = await openOn('fs', dir, { storageCapBytes: 1 });
    assert.equal(reopened.restoreReport.unreadable, 1);
    assert.equal(reopened.restoreReport.indexed, 2);
    const info = reopened.listBlobs().find((b) => b.name === locked);
    assert.equal(info.status, 'unreadable');
    assert.ok(blobFiles(dir).includes(locked), 'the budget\'s prune left it');
    await reopened.prune({ maxBytes: 0, stale: true });
    assert.ok(blobFiles(dir).includes(locked), 'prune left it');
    await reopened.close();
  } finally {
    undo();
  }
});

test('fs: storageCapBytes over an undeletable corrupt file opens, and saves go on', async () => {
  const dir = tempDir();
  const cache = await openOn('fs', dir);
  cache.insert(range(0, 8), kv(0));
  await cache.close();
  writeFileSync(join(dir, '0000000000000bad.rlxkv'), 'not a blob');
  const undo = patch(FsBlobs, 'remove', (remove) => async function (names, done) {
    if (names.includes('0000000000000bad.rlxkv')) throw new RlxkvError('IO', 'removing 0000000000000bad.rlxkv: EPERM: operation not permitted');
    return remove.call(this, names, done);
  });
  try {
    const reopened = await openOn('fs', dir, { storageCapBytes: 1 << 20 });
    assert.equal(reopened.restoreReport.corrupt, 1);
    assert.equal(reopened.stats.pendingRemovals, 1);
    assert.deepEqual((await reopened.match(range(0, 8))).k, kv(0).k);
    reopened.insert(range(100, 8), kv(1));
    await reopened.flush();
    await reopened.close();
  } finally {
    undo();
  }
  assert.equal(blobFiles(dir).length, 3);
});

for (const kind of ['fs', 'idb']) {
  test(`${kind}: match() serves the longest hit it can when a stored entry cannot fit beside the pins`, async () => {
    const path = kind === 'fs' ? tempDir() : freshPath();
    const prefix = range(0, 8), long = range(0, 40);
    const longKv = kvFor(40, { layers: 1, width: 64, seed: 3 });
    const first = await openOn(kind, path);
    first.insert(prefix, kv(1));
    first.insert(long, longKv);
    await first.close();
    // Room for the pinned prefix and not for the long entry beside it.
    const cache = await openOn(kind, path, { capBytes: 2 * 8 * 64 * 4 + 2 * 20 * 64 * 4 });
    await cache.match(prefix);
    cache.pin(prefix);
    const hit = await cache.match(long);
    assert.equal(hit.matched, 8, 'the pinned prefix');
    assert.deepEqual(hit.k, kv(1).k);
    assert.equal(cache.has(long), true, 'still stored');
    await cache.close();
  });
}

for (const kind of ['fs', 'idb']) {
  test(`${kind}: match() of a stored conversation longer than capBytes ends, and serves it whole, alone`, async () => {
    // Two pages, a system prompt and a turn over it, each fitting the
    // budget alone but not together. The turn cannot hang below the prompt
    // (eviction, leaves first, would take it at once: reading them in turn
    // never ended): it is read into one entry with the prompt's pages and
    // held alone, over the budget, as the reference keeps its newest entry.
    const path = kind === 'fs' ? tempDir() : freshPath();
    const layout = { order: 'head-major', heads: 2, headDim: 4, layers: 2 };
    const system = range(1, 20), turn = [...system, ...range(100, 20)];
    const first = await openOn(kind, path, { layout });
    first.insert(system, modelKv(system, layout));
    first.insert(turn, modelKv(turn, layout));
    await first.close();
    const events = [];
    const cache = await openOn(kind, path, { layout, capBytes: 32 * 128, onEvent: (e) => events.push(e.type) });
    assert.equal((await cache.match(system)).matched, 20);
    const hit = await cache.match(turn);
    assert.equal(hit.matched, 40);
    assert.deepEqual(hit.k, modelKv(turn, layout).k);
    assert.deepEqual(hit.v, modelKv(turn, layout).v);
    assert.equal(cache.stats.entries, 1, 'the turn alone');
    assert.ok(events.filter((e) => e === 'evict').length <= 1, `evictions: ${events.join(' ')}`);
    // A new turn that fits beside nothing held stays, whole; the old one goes.
    const next = [...system, ...range(500, 5)];
    cache.insert(next, modelKv(next, layout));
    assert.equal(cache.lookup(next).matched, next.length, 'the newest insert is kept');
    assert.equal(cache.has(turn), true, 'the turn still stored');
    await cache.close();
  });
}

test('idb: a match in flight when close() runs rejects as closed and touches no freed memory', async () => {
  const path = freshPath();
  const first = await openOn('idb', path);
  first.insert(range(0, 8), kv(0));
  await first.close();
  const rlx = await page();
  const cache = await rlx.openCache({ capBytes: 1 << 22, fingerprint: FP, storage: 'idb', path });
  let release;
  const gate = new Promise((r) => { release = r; });
  const undo = patch(IdbBlobs, 'read', (read) => function (name) {
    return gate.then(() => read.call(this, name));
  });
  let matching;
  try {
    matching = cache.match(range(0, 8));
    await cache.close();
  } finally {
    undo();
  }
  release();
  await assert.rejects(matching, (err) => err instanceof TypeError && /closed/.test(err.message));
  // The module's memory is whole: a new cache on it works.
  const next = await rlx.openCache({ capBytes: 1 << 22, fingerprint: FP, storage: 'idb', path });
  assert.deepEqual((await next.match(range(0, 8))).k, kv(0).k);
  await next.close();
});

test('idb: index records with sizes no blob has (NaN, negative, fractional) are damaged: rebuilt from the blobs', async () => {
  const path = freshPath();
  const cache = await openOn('idb', path);
  for (let i = 0; i < 2; i++) cache.insert(range(1000 * i, 8), kv(i));
  await cache.flush();
  const sizes = cache.listBlobs().map((b) => b.bytes).sort();
  await cache.close();
  const index = await readIndex(path);
  for (const bad of [NaN, -4112, 0.5, Infinity]) {
    const b = index.slice();
    new DataView(b.buffer).setFloat64(24, bad, true); // the first record's bytes
    await writeIndex(path, b);
    // A budget that holds both blobs: a size the index made up must not make it prune.
    const reopened = await openOn('idb', path, { storageCapBytes: sizes[0] + sizes[1] });
    assert.equal(reopened.restoreReport.indexed, 2, `bytes ${bad}`);
    assert.deepEqual(reopened.listBlobs().map((x) => x.bytes).sort(), sizes, `bytes ${bad}: read from the blobs`);
    await reopened.close();
  }
});

function rawIdb(path, fn) {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(path, 21);
    req.onsuccess = () => {
      const tx = req.result.transaction(['FILE_DATA'], 'readwrite');
      const out = fn(tx.objectStore('FILE_DATA'));
      tx.oncomplete = () => { req.result.close(); resolve(out && out.result); };
      tx.onerror = () => reject(tx.error);
    };
    req.onerror = () => reject(req.error);
  });
}
const readIndex = async (path) => new Uint8Array((await rawIdb(path, (s) => s.get(`${path}/.rlxkv-index`))).contents);
const writeIndex = (path, bytes) => rawIdb(path, (s) => s.put({ timestamp: new Date(), mode: 0o100644, contents: bytes }, `${path}/.rlxkv-index`));
