// A page killed while a hit reads its blob: eight 4 MiB entries are flushed
// to IndexedDB, the browser restarts (so they are known only from the
// index), a hit starts reading one, and while its read transaction is open
// the browser is killed (SIGKILL). A hit only reads, so on the next start
// the store opens as it was: every entry found, none corrupt, each one
// whole, and the index record still right.
import assert from 'node:assert/strict';
import { browserTest, call } from './helpers.js';

const IDS = [0, 1, 2, 3, 4, 5, 6, 7];
const SHAPE = { tokens: 256, layers: 8, width: 256 }; // 4 MiB of KV each
const CAP = 96 << 20;
const PATH = '/hit-killed';

browserTest('a browser killed while a hit reads its blob leaves the store as it was', async (t, session) => {
  let page = await session.open();
  await call(page, 'open', { path: PATH, capBytes: CAP });
  await call(page, 'insert', IDS, 'A', SHAPE);
  assert.deepEqual(await call(page, 'flush', 60000), { ok: true });
  await call(page, 'close');

  await session.restart();
  page = await session.open();
  const opened = await call(page, 'open', { path: PATH, capBytes: CAP });
  assert.deepEqual([opened.size, opened.known], [0, IDS.length], 'opened by the index alone');
  await call(page, 'watchBlobGets');
  const firstGet = page.waitForEvent('console', { predicate: (m) => m.text().includes('first blob get'), timeout: 30000 });
  await call(page, 'matchNoWait', 3, SHAPE);
  await firstGet;
  await session.crash();

  await session.launch();
  page = await session.open();
  const again = await call(page, 'open', { path: PATH, capBytes: CAP });
  assert.equal(again.restoreReport.corrupt, 0);
  assert.equal(again.restoreReport.indexed, IDS.length);
  const found = await call(page, 'verify', IDS, ['A'], SHAPE);
  assert.deepEqual(IDS.map((id) => found[id].version), IDS.map(() => 'A'));
  await call(page, 'close', { flush: false });
}, { timeout: 120000 });
