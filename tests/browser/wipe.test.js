// Browser test: forgetting, in IndexedDB and OPFS. A worker clears every
// entry of its cache, pinned and stored (clear({ stored: true })), and a
// window watching the store forgets them too; then a whole store is
// deleted (rlx.deleteStore) and nothing of it comes back after a reload.
import assert from 'node:assert/strict';
import { browserTest, call } from './helpers.js';

const SHAPE = { tokens: 32, layers: 2, width: 32 };
const inWorker = (page, w, fn, ...args) =>
  page.evaluate(([i, f, a]) => window.T.inWorker(i, f, ...a), [w, fn, args]);
const spawn = (page) => page.evaluate(() => window.T.spawnWorker());

async function until(fn, what) {
  for (let i = 0; !(await fn()); i++) {
    assert.ok(i < 200, what);
    await new Promise((r) => setTimeout(r, 25));
  }
}

for (const storage of ['idb', 'opfs']) {
  browserTest(`${storage}: clear({ stored: true }) in a worker forgets its entries everywhere; deleteStore deletes the store`, async (t, session) => {
    const path = `/wipe-${storage}`;
    let page = await session.open();
    const w = await spawn(page);
    await inWorker(page, w, 'open', { path, storage });
    await inWorker(page, w, 'insert', [0, 1, 2], 'A', SHAPE);
    await inWorker(page, w, 'pin', [0], SHAPE);
    assert.deepEqual(await inWorker(page, w, 'flush'), { ok: true });
    const watcher = await call(page, 'open', { path, storage, watch: true });
    assert.equal(watcher.known, 3);

    assert.deepEqual(await inWorker(page, w, 'clearStored'), { entries: 0, storedEntries: 0, blobs: 0 });
    await until(async () => (await call(page, 'known')) === 0, 'the watching window forgot them');
    await inWorker(page, w, 'insert', [5], 'B', SHAPE);
    assert.deepEqual(await inWorker(page, w, 'flush'), { ok: true });
    await until(async () => (await call(page, 'known')) === 1, 'the window heard the new save');

    assert.deepEqual(await call(page, 'deleteStore', { storage, path }), { removed: 1 });
    await until(async () => (await call(page, 'known')) === 0, 'the window forgot the deleted store');
    await call(page, 'close', { flush: false });
    await page.evaluate((i) => window.T.terminateWorker(i), w);

    await session.reload(page);
    const reopened = await call(page, 'open', { path, storage });
    assert.equal(reopened.known, 0, 'nothing comes back');
    await call(page, 'close', { flush: false });
  });
}
