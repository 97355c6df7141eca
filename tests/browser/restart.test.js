// Browser test 1: entries flushed to IndexedDB survive quitting the browser.
// Insert → flush → quit Chromium (context.close()) → start it again on the
// same profile → the cache restores the entries (restoreReport.indexed),
// their KV is byte-exact (bits compared in the page, SHA-256 compared here)
// and a lookup of a longer prompt hits the cached prefix. Run with the
// package's ESM entry (js/index.js) and with its minified browser bundle.
import assert from 'node:assert/strict';
import { HARNESS, browserTest, call } from './helpers.js';

const IDS = [0, 1, 2, 3, 4];
const SHAPE = { tokens: 64, layers: 4, width: 32 }; // 64 KiB of KV each

const LIBS = [
  ['js/index.js', HARNESS, '/js/index.js'],
  ['browser bundle', `${HARNESS}?lib=bundle`, '/wasm/dist/rlxkv.browser.js'],
];

for (const [lib, page0, module] of LIBS) {
  browserTest(`flushed entries survive a browser restart, byte-exact (${lib})`, async (t, session) => {
    let page = await session.open(page0);
    assert.equal(await page.evaluate(() => window.T.lib), module);
    const opened = await call(page, 'open', { path: '/restart' });
    assert.equal(opened.storage, 'idb');
    assert.equal(opened.restoreReport.indexed, 0);
    const digests = await call(page, 'insert', IDS, 1, SHAPE);
    assert.deepEqual(await call(page, 'flush'), { ok: true });

    await session.restart();
    page = await session.open(page0);
    const reopened = await call(page, 'open', { path: '/restart' });
    assert.equal(reopened.storage, 'idb');
    assert.deepEqual(reopened.restoreReport, { indexed: IDS.length, stale: 0, corrupt: 0, skipped: 0, bytes: IDS.length * 64 * 1024, resident: 0, foreign: 0, tooLarge: 0, unreadable: 0, readOnly: false, temporaries: 0, temporaryBytes: 0, swept: 0 });
    assert.equal(reopened.known, IDS.length);

    const found = await call(page, 'verify', IDS, [1], SHAPE);
    for (const id of IDS) {
      assert.equal(found[id].version, 1, `entry ${id} restored byte-exact`);
      assert.equal(found[id].digest, digests[id], `entry ${id}: same SHA-256 as inserted`);
    }
    // A user's lookup: a longer prompt hits the whole cached prefix.
    const hit = await call(page, 'lookup', 2, 40, SHAPE);
    assert.equal(hit && hit.matched, SHAPE.tokens);
    assert.equal(hit.layers, SHAPE.layers);
    assert.equal(await call(page, 'lookup', 99, 0, SHAPE), null, 'an unknown prompt misses');
    await call(page, 'close');
  });
}
