// Forgetting, as an app does for privacy or space: everything of one model
// (cache.clear({ stored: true })), or a whole store (rlx.deleteStore), with
// the caches that watch the store told. And the defaults that keep one
// model's KV from another: a persistent cache needs its fingerprint.
import 'fake-indexeddb/auto';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import init from 'rlxkv';
import { kvFor, range, tempDir } from './helpers.js';

const page = () => init({ newInstance: true });
let dbCount = 0;
const FP = 0x3a11n;
const kv = (seed) => kvFor(8, { layers: 1, width: 64, seed });
const heard = async (until) => {
  for (let i = 0; !until(); i++) {
    assert.ok(i < 500, 'heard within 5 s');
    await new Promise((r) => setTimeout(r, 10));
  }
};

for (const kind of ['fs', 'idb']) {
  const fresh = () => (kind === 'fs' ? tempDir() : `/wipe-${++dbCount}`);
  const open = async (path, opts = {}) => (await page()).openCache({ capBytes: 1 << 22, fingerprint: FP, storage: kind, path, ...opts });

  test(`${kind}: clear({ stored: true }) forgets every entry of the cache, pinned and stored, and deletes its blobs`, async () => {
    const path = fresh();
    const first = await open(path);
    for (let i = 0; i < 3; i++) first.insert(range(1000 * i, 8), kv(i));
    first.pin(range(0, 8));
    await first.close();
    const otherModel = await open(path, { fingerprint: FP + 1n });
    otherModel.insert(range(5000, 8), kv(5));
    await otherModel.close();

    const cache = await open(path);
    const watcher = await open(path, { watch: true });
    await cache.match(range(1000, 8)); // one resident, one pinned stored-only, one stored-only
    cache.insert(range(3000, 8), kv(3)); // and one never saved
    await cache.clear({ stored: true });
    assert.equal(cache.size, 0);
    assert.equal(cache.stats.storedEntries, 0);
    for (let i = 0; i < 4; i++) {
      assert.equal(cache.has(range(1000 * i, 8)), false);
      assert.equal(await cache.match(range(1000 * i, 8)), null, `entry ${i}`);
    }
    assert.deepEqual(cache.listBlobs().map((b) => b.status), ['stale'], 'another model\'s blob stays');
    await heard(() => !watcher.has(range(2000, 8)));
    assert.equal(watcher.stats.storedEntries, 0, 'the watcher forgot them');
    await cache.flush();
    await Promise.all([cache.close(), watcher.close()]);
    const reopened = await open(path);
    assert.equal(reopened.restoreReport.indexed, 0);
    assert.equal(reopened.restoreReport.stale, 1);
    await reopened.close();
  });

  test(`${kind}: deleteStore deletes a whole store; watchers forget it, and a cache open on it saves into an empty one`, async () => {
    const path = fresh();
    const cache = await open(path);
    for (let i = 0; i < 2; i++) cache.insert(range(1000 * i, 8), kv(i));
    await cache.flush();
    const watcher = await open(path, { watch: true });
    assert.equal(watcher.stats.storedEntries, 2);
    const rlx = await page();
    assert.deepEqual(await rlx.deleteStore({ storage: kind, path }), { removed: 2 });
    if (kind === 'fs') assert.equal(existsSync(path), false, 'the directory went too');
    else assert.ok(!(await indexedDB.databases()).some((d) => d.name === path), 'the database went');
    await heard(() => watcher.stats.storedEntries === 0);
    assert.equal(await watcher.match(range(0, 8)), null);
    // The cache that was open keeps its memory and goes on.
    assert.deepEqual(cache.lookup(range(0, 8)).k, kv(0).k);
    cache.insert(range(7000, 8), kv(7));
    await cache.flush();
    await Promise.all([cache.close(), watcher.close()]);
    const reopened = await open(path);
    assert.equal(reopened.restoreReport.indexed, 1, 'only what was saved after');
    assert.deepEqual((await reopened.match(range(7000, 8))).k, kv(7).k);
    await reopened.close();
  });
}

test('fs: deleteStore leaves a directory holding files that are not the store\'s', async () => {
  const dir = tempDir();
  const cache = await (await page()).openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'fs', path: dir });
  cache.insert(range(0, 8), kv(0));
  await cache.close();
  writeFileSync(join(dir, 'notes.txt'), 'mine');
  assert.deepEqual(await (await page()).deleteStore({ storage: 'fs', path: dir }), { removed: 1 });
  assert.deepEqual(readdirSync(dir), ['notes.txt']);
});

test('a persistent cache without a fingerprint is a TypeError that says why; a memory-only one needs none', async () => {
  const rlx = await page();
  await assert.rejects(rlx.openCache({ capBytes: 1 << 20, storage: 'fs', path: tempDir() }),
    (err) => err instanceof TypeError && /fingerprint is required/.test(err.message) && /another model/.test(err.message));
  await assert.rejects(rlx.openCache({ capBytes: 1 << 20, storage: 'idb', path: '/no-fp' }), TypeError);
  const memory = await rlx.openCache({ capBytes: 1 << 20, storage: 'none' });
  assert.equal(memory.fingerprint, 0n);
  await memory.close();
  const chosen = await rlx.openCache({ capBytes: 1 << 20, fingerprint: 0n, storage: 'fs', path: tempDir() });
  assert.equal(chosen.storage, 'fs', '0n, given knowingly, opens');
  await chosen.close();
});

test('an empty token array is refused: an entry is the KV of at least one token', async () => {
  const cache = (await page()).createCache({ capBytes: 1 << 20 });
  assert.throws(() => cache.insert([], { k: [new Float32Array(0)], v: [new Float32Array(0)] }), (err) => err instanceof RangeError && /not be empty/.test(err.message));
  assert.equal(cache.size, 0);
  cache.close();
});

test('openStore takes { storage, path } as openCache does, and the older (path, { storage }) still', async () => {
  const dir = tempDir();
  const rlx = await page();
  const cache = await rlx.openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'fs', path: dir });
  cache.insert(range(0, 8), kv(0));
  await cache.close();
  for (const store of [await rlx.openStore({ storage: 'fs', path: dir }), await rlx.openStore(dir, { storage: 'fs' })]) {
    assert.deepEqual(store.list(FP).map((b) => b.status), ['ok']);
    await store.close();
  }
});
