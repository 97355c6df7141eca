// Browser test 4: the origin runs out of storage quota. Entries are flushed;
// then the quota is made small (CDP Storage.overrideQuotaForOrigin) and a
// large entry is flushed: flush() must reject with an RlxkvError whose code
// is 'QUOTA' (within a timeout: Emscripten 3.1.6's IDBFS would never call
// back; store/idb-blobs.js must), the in-memory cache must still answer, and
// another tab must restore every blob flushed before, byte-exact. With the
// quota back, flushing again saves the large entry too.
//
// Chromium caches an origin's remaining space per IndexedDB bucket for a
// while (about 30 s) after checking it, so a quota lowered while the page
// has been writing is not seen at once. The small quota is therefore set
// after a browser restart, before the page touches IndexedDB again: the
// user's disk filled up between two sessions.
import assert from 'node:assert/strict';
import { browserTest, call } from './helpers.js';

const PATH = '/quota';
const SMALL = { tokens: 64, layers: 4, width: 32 }; // 64 KiB of KV
const BIG = { tokens: 512, layers: 8, width: 256 }; // 8 MiB of KV
const EARLY = [0, 1, 2];
const LARGE = 50;

browserTest('a quota error rejects flush() with QUOTA; memory and earlier blobs survive', async (t, session) => {
  let page = await session.open();
  await call(page, 'open', { path: PATH });
  await call(page, 'insert', EARLY, 'A', SMALL);
  assert.deepEqual(await call(page, 'flush'), { ok: true }, 'the first flush succeeds');

  const { usage } = await session.storageUsage(page);
  assert.ok(usage > 0, `Chromium counts the blobs: usage ${usage} B`);

  await session.restart();
  const small = await session.setQuota(session.context.pages()[0], usage + (1 << 20));
  assert.ok(small.overrideActive, 'quota override active');
  t.diagnostic(`usage ${usage} B, quota now ${small.quota} B`);

  page = await session.open();
  const opened = await call(page, 'open', { path: PATH });
  assert.equal(opened.restoreReport.indexed, EARLY.length);
  await call(page, 'insert', [LARGE], 'A', BIG);
  const failed = await call(page, 'flush', 20000);
  assert.equal(failed.ok, false, 'flush() rejects when the quota is exceeded');
  assert.ok(!/TIMEOUT/.test(failed.message), `flush() settles: ${failed.message}`);
  assert.equal(failed.isRlxkvError, true, `an RlxkvError, got ${failed.name}: ${failed.message}`);
  assert.equal(failed.code, 'QUOTA');

  // Memory still answers: the large entry and the earlier ones.
  assert.equal((await call(page, 'lookup', LARGE, 7, BIG))?.matched, BIG.tokens);
  assert.equal((await call(page, 'verify', [LARGE], ['A'], BIG))[LARGE].version, 'A');
  assert.equal((await call(page, 'lookup', 1, 7, SMALL))?.matched, SMALL.tokens);

  // Another tab, quota still small: everything flushed before is there.
  const other = await session.open();
  const seen = await call(other, 'open', { path: PATH });
  assert.deepEqual(seen.restoreReport, { indexed: EARLY.length, stale: 0, corrupt: 0, skipped: 0, bytes: EARLY.length * 64 * 1024, resident: 0, foreign: 0, tooLarge: 0, unreadable: 0, readOnly: false, temporaries: 0, temporaryBytes: 0, swept: 0 });
  const found = await call(other, 'verify', EARLY, ['A'], SMALL);
  for (const id of EARLY) assert.equal(found[id].version, 'A', `earlier entry ${id} intact`);
  assert.equal(await call(other, 'lookup', LARGE, 0, BIG), null, 'the large entry was not stored');
  await call(other, 'close', { flush: false });
  await other.close();

  // Quota back: the same flush now succeeds, and a reload has everything.
  await session.setQuota(page, null);
  assert.deepEqual(await call(page, 'flush', 20000), { ok: true }, 'flush() succeeds once space is back');
  await session.reload(page);
  const again = await call(page, 'open', { path: PATH });
  assert.equal(again.restoreReport.indexed, EARLY.length + 1);
  assert.equal(again.restoreReport.corrupt, 0);
  const all = await call(page, 'verify', EARLY, ['A'], SMALL);
  for (const id of EARLY) assert.equal(all[id].version, 'A');
  assert.equal((await call(page, 'verify', [LARGE], ['A'], BIG))[LARGE].version, 'A');
  await call(page, 'close', { flush: false });
});
