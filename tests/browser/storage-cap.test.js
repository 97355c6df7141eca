// Browser test 6: a persistent byte budget, openCache({ storageCapBytes }).
// A cache whose memory holds 2 entries and whose stored blobs may total 4
// entries' worth flushes 7 entries turn by turn, as a chat app would:
// listBlobs() of its fingerprint then totals <= the budget and holds the
// newest 4 (checked after a reload, bits compared). Blobs of another
// fingerprint, stored earlier, are untouched by the budget, and
// cache.prune({ stale: true }) removes them when asked, durably.
//
// Emscripten 3.1.6's stat() gives mtimes in whole seconds; wasm/patch-glue.mjs
// fills in the milliseconds, so turns a second apart and turns within one
// second must both keep the newest blobs.
import assert from 'node:assert/strict';
import { browserTest, call } from './helpers.js';

const SHAPE = { tokens: 64, layers: 4, width: 32 }; // 64 KiB of KV each
const KV_BYTES = 64 * 1024;
const OTHER_FP = 'beef';
const FP = 'f00d';
const N = 7;
const KEEP = 4;
const ids = Array.from({ length: N }, (_, i) => i);

/** Opens PATH with the budget, flushes entries 0..N-1 one by one; returns the blob listing. */
async function flushTurns(page, path, budget, { turnsApart }) {
  await call(page, 'open', { path, fingerprint: FP, capBytes: 2 * KV_BYTES, storageCapBytes: budget });
  for (const id of ids) {
    if (turnsApart) await call(page, 'nextSecond');
    await call(page, 'insert', [id], 'A', SHAPE);
    assert.deepEqual(await call(page, 'flush'), { ok: true }, `flush after entry ${id}`);
  }
  const blobs = await call(page, 'list');
  await call(page, 'close');
  return blobs;
}

/** After a reload: which entries the store still has, byte-exact. */
async function survivors(session, page, path) {
  await session.reload(page);
  const all = await call(page, 'open', { path, fingerprint: FP, capBytes: 64 * KV_BYTES });
  assert.equal(all.restoreReport.corrupt, 0);
  const found = await call(page, 'verify', ids, ['A'], SHAPE);
  for (const id of ids) assert.ok(['A', 'missing'].includes(found[id].version), `entry ${id}: ${found[id].version}`);
  return { report: all.restoreReport, kept: ids.filter((id) => found[id].version === 'A') };
}

browserTest('storageCapBytes keeps the newest blobs within budget; prune({ stale }) removes others', async (t, session) => {
  const PATH = '/storage-cap';
  const page = await session.open();
  // Another model's blobs, stored first.
  await call(page, 'open', { path: PATH, fingerprint: OTHER_FP });
  await call(page, 'insert', [100, 101], 'X', SHAPE);
  assert.deepEqual(await call(page, 'flush'), { ok: true });
  const blobBytes = (await call(page, 'list'))[0].bytes;
  await call(page, 'close');
  const budget = KEEP * blobBytes + (blobBytes >> 1); // 4.5 blobs

  await session.reload(page);
  const blobs = await flushTurns(page, PATH, budget, { turnsApart: true });
  const mine = blobs.filter((b) => b.fingerprint === FP);
  const total = mine.reduce((n, b) => n + b.bytes, 0);
  assert.ok(total <= budget, `this fingerprint's blobs total ${total} B, budget ${budget} B`);
  assert.equal(mine.length, KEEP, 'as many blobs as the budget holds');
  const stale = blobs.filter((b) => b.status === 'stale');
  assert.equal(stale.length, 2, 'the other fingerprint\'s blobs are untouched by the budget');
  assert.ok(stale.every((b) => b.fingerprint === OTHER_FP && b.bytes === blobBytes));

  const { report, kept } = await survivors(session, page, PATH);
  assert.deepEqual(kept, ids.slice(N - KEEP), 'the newest blobs survive the budget');
  assert.equal(report.indexed, KEEP);
  assert.equal(report.stale, 2);

  // Asked to, prune removes the other fingerprint's blobs, durably.
  const pruned = await call(page, 'prune', { stale: true });
  assert.equal(pruned.removed, 2);
  assert.equal(pruned.removedBytes, 2 * blobBytes);
  assert.deepEqual((await call(page, 'list')).filter((b) => b.status !== 'ok'), []);
  await call(page, 'close');
  await session.reload(page);
  const other = await call(page, 'open', { path: PATH, fingerprint: OTHER_FP });
  assert.equal(other.restoreReport.indexed, 0, 'the pruned fingerprint has nothing left');
  assert.equal(other.restoreReport.stale, KEEP, 'and this fingerprint\'s blobs are still there');
  await call(page, 'close', { flush: false });
});

// The same turns within one second (ordered by the patched millisecond mtimes).
browserTest('storageCapBytes keeps the newest blobs when turns are less than a second apart', async (t, session) => {
  const PATH = '/storage-cap-fast';
  const page = await session.open();
  await call(page, 'open', { path: PATH, fingerprint: FP });
  await call(page, 'insert', [200], 'A', SHAPE);
  await call(page, 'flush');
  const blobBytes = (await call(page, 'list'))[0].bytes;
  await call(page, 'close');
  await session.reload(page);
  await flushTurns(page, PATH, KEEP * blobBytes + (blobBytes >> 1), { turnsApart: false });
  const { kept } = await survivors(session, page, PATH);
  assert.deepEqual(kept, ids.slice(N - KEEP), 'the newest blobs survive the budget');
});
