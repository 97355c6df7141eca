// Browser test 3: two tabs of one origin (two pages of one browser context,
// each with its own rlxkv module instance over the same IndexedDB mount)
// insert different entries, plus one entry with the same tokens but
// different KV, and flush at the same time. After a reload every entry of
// both tabs is there, byte-exact; the shared one is entirely one tab's.
import assert from 'node:assert/strict';
import { HARNESS, browserTest, call } from './helpers.js';

const SHAPE = { tokens: 128, layers: 4, width: 64 }; // 256 KiB of KV each
const TAB_A = [0, 1, 2, 3, 4, 5];
const TAB_B = [10, 11, 12, 13, 14, 15];
const SHARED = 99;
const PATH = '/two-tabs';

browserTest('two tabs flushing at once keep both sets, none torn', async (t, session) => {
  const [a, b] = [await session.open(), await session.open()];
  // Both tabs open before either writes: neither has the other's blobs.
  await Promise.all([call(a, 'open', { path: PATH }), call(b, 'open', { path: PATH })]);
  await call(a, 'insert', [...TAB_A, SHARED], 'A', SHAPE);
  await call(b, 'insert', [...TAB_B, SHARED], 'B', SHAPE);
  const [fa, fb] = await Promise.all([call(a, 'flush'), call(b, 'flush')]);
  assert.deepEqual(fa, { ok: true }, 'tab A flushed');
  assert.deepEqual(fb, { ok: true }, 'tab B flushed');

  // Second round: tab B changes one of its entries while A adds one.
  await call(a, 'insert', [6], 'A', SHAPE);
  await call(b, 'insert', [10], 'B2', SHAPE);
  const [ga, gb] = await Promise.all([call(a, 'flush'), call(b, 'flush')]);
  assert.deepEqual([ga, gb], [{ ok: true }, { ok: true }]);

  await session.reload(a);
  const opened = await call(a, 'open', { path: PATH });
  const all = [...TAB_A, 6, ...TAB_B, SHARED];
  assert.equal(opened.restoreReport.corrupt, 0);
  assert.equal(opened.restoreReport.indexed, all.length, 'both tabs\' entries restored');
  const found = await call(a, 'verify', all, ['A', 'B', 'B2'], SHAPE);
  for (const id of [...TAB_A, 6]) assert.equal(found[id].version, 'A', `tab A's entry ${id}`);
  for (const id of TAB_B.slice(1)) assert.equal(found[id].version, 'B', `tab B's entry ${id}`);
  assert.equal(found[10].version, 'B2', 'tab B\'s rewritten entry is the new version');
  assert.ok(['A', 'B'].includes(found[SHARED].version), `shared entry is ${found[SHARED].version}`);
  t.diagnostic(`shared entry restored as tab ${found[SHARED].version}'s`);

  await Promise.all([call(a, 'close', { flush: false }), call(b, 'close', { flush: false })]);
});

// With js/index.js and with the browser bundle, where watching, copyStore
// and openStore's Store are chunks loaded when first used.
for (const [lib, query] of [['js/index.js', ''], ['the browser bundle', '?lib=bundle']]) {
  browserTest(`a tab that watches finds what another tab saves without reopening (${lib}); the store copies and lists whole`, async (t, session) => {
    const [a, b] = [await session.open(`${HARNESS}${query}`), await session.open(`${HARNESS}${query}`)];
    const path = `${PATH}-watch${query ? '-bundle' : ''}`;
    await Promise.all([call(a, 'open', { path }), call(b, 'open', { path, watch: true })]);
    await call(a, 'insert', TAB_A, 'A', SHAPE);
    assert.deepEqual(await call(a, 'flush'), { ok: true });
    assert.deepEqual(await call(b, 'knows', TAB_A, SHAPE), TAB_A, 'tab B knows every entry tab A saved');
    const found = await call(b, 'verify', TAB_A, ['A'], SHAPE);
    for (const id of TAB_A) assert.equal(found[id].version, 'A', `entry ${id} read from IndexedDB by tab B`);
    await Promise.all([call(a, 'close', { flush: false }), call(b, 'close', { flush: false })]);
    const copied = await call(a, 'copyStore', { storage: 'idb', path }, { storage: 'idb', path: `${path}-copy` });
    assert.equal(copied.copied, TAB_A.length);
    assert.equal(await call(a, 'storeBlobs', { storage: 'idb', path: `${path}-copy` }), TAB_A.length, 'openStore lists the copy');
    await call(a, 'open', { path: `${path}-copy` });
    const again = await call(a, 'verify', TAB_A, ['A'], SHAPE);
    for (const id of TAB_A) assert.equal(again[id].version, 'A', `entry ${id} read from the copy`);
    await call(a, 'close', { flush: false });
  });
}
