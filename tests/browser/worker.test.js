// Browser test 5: the API inside a module Web Worker
// (new Worker('/tests/browser/pages/worker.js', { type: 'module' })), with
// IndexedDB persistence: one worker inserts and flushes, and is
// terminated; a second worker restores the entries byte-exact; after a
// page reload the page's own (main-thread) cache restores them too, and a
// worker started after the reload as well.
import assert from 'node:assert/strict';
import { browserTest, call } from './helpers.js';

const PATH = '/worker';
const IDS = [0, 1, 2, 3];
const SHAPE = { tokens: 96, layers: 4, width: 64 }; // 192 KiB of KV each

const inWorker = (page, w, fn, ...args) =>
  page.evaluate(([i, f, a]) => window.T.inWorker(i, f, ...a), [w, fn, args]);

browserTest('a module worker flushes; another worker and the page restore it', async (t, session) => {
  const page = await session.open();
  const w1 = await page.evaluate(() => window.T.spawnWorker());
  const env = await inWorker(page, w1, 'ping');
  assert.deepEqual(env, { indexedDB: 'object', locks: true }, 'IndexedDB and Web Locks in the worker');

  const opened = await inWorker(page, w1, 'open', { path: PATH, storage: 'auto' });
  assert.equal(opened.storage, 'idb', "storage 'auto' is IndexedDB in a worker");
  const digests = await inWorker(page, w1, 'insert', IDS, 'W', SHAPE);
  assert.deepEqual(await inWorker(page, w1, 'flush'), { ok: true });
  await page.evaluate((i) => window.T.terminateWorker(i), w1);

  const w2 = await page.evaluate(() => window.T.spawnWorker());
  const second = await inWorker(page, w2, 'open', { path: PATH });
  assert.equal(second.restoreReport.indexed, IDS.length);
  assert.equal(second.restoreReport.corrupt, 0);
  const found = await inWorker(page, w2, 'verify', IDS, ['W'], SHAPE);
  for (const id of IDS) {
    assert.equal(found[id].version, 'W', `entry ${id} byte-exact in worker 2`);
    assert.equal(found[id].digest, digests[id]);
  }
  assert.equal((await inWorker(page, w2, 'lookup', 3, 10, SHAPE))?.matched, SHAPE.tokens);
  await inWorker(page, w2, 'close');

  await session.reload(page);
  const main = await call(page, 'open', { path: PATH });
  assert.equal(main.restoreReport.indexed, IDS.length, 'the page restores what the worker flushed');
  const onMain = await call(page, 'verify', IDS, ['W'], SHAPE);
  for (const id of IDS) assert.equal(onMain[id].digest, digests[id], `entry ${id} byte-exact on the main thread`);
  await call(page, 'close', { flush: false });

  const w3 = await page.evaluate(() => window.T.spawnWorker());
  const third = await inWorker(page, w3, 'open', { path: PATH });
  assert.equal(third.restoreReport.indexed, IDS.length, 'a worker after the reload restores it too');
  await inWorker(page, w3, 'close');
});
