// Browser test 2: the page (or the whole browser) goes away while a flush is
// writing to IndexedDB. Eight 4 MiB entries are flushed as version A; then
// all eight are replaced by version B and a flush is started without being
// awaited; as soon as the page issues its first IndexedDB put (a console
// line from pages/harness.js T.watchPuts), and while that flush is still
// running, the tab is closed (round 1), the browser quit (round 2) or its
// process killed with SIGKILL (round 3, a crash). On the next load the
// cache opens with restoreReport.corrupt == 0 and all eight entries, each
// entirely A or entirely B (bits compared), never torn. Which one it was
// is printed as a diagnostic (both are correct).
import assert from 'node:assert/strict';
import { browserTest, call } from './helpers.js';

const IDS = [0, 1, 2, 3, 4, 5, 6, 7];
const SHAPE = { tokens: 256, layers: 8, width: 256 }; // 4 MiB of KV each
const CAP = 96 << 20;

async function checkRestored(t, page, path, label) {
  const opened = await call(page, 'open', { path, capBytes: CAP });
  const r = opened.restoreReport;
  assert.equal(r.corrupt, 0, `${label}: no corrupt blob`);
  assert.equal(r.loaded, IDS.length, `${label}: every entry restored`);
  const found = await call(page, 'verify', IDS, ['A', 'B'], SHAPE);
  const versions = IDS.map((id) => found[id].version);
  for (const id of IDS) {
    assert.ok(['A', 'B'].includes(found[id].version), `${label}: entry ${id} is ${found[id].version}, not A or B`);
  }
  t.diagnostic(`${label}: restored versions ${versions.join('')}`);
  return versions;
}

/** Version A durable, then B being flushed when `interrupt` is called. */
async function flushThenInterrupt(session, path, interrupt) {
  const page = await session.open();
  await call(page, 'open', { path, capBytes: CAP });
  await call(page, 'insert', IDS, 'A', SHAPE);
  assert.deepEqual(await call(page, 'flush', 60000), { ok: true }, 'version A flushed');
  await call(page, 'watchPuts');
  await call(page, 'insert', IDS, 'B', SHAPE);
  const firstPut = page.waitForEvent('console', {
    predicate: (m) => m.text().includes('first IndexedDB put'), timeout: 30000,
  });
  await call(page, 'flushNoWait');
  await firstPut;
  const state = await call(page, 'flushState');
  assert.equal(state, 'running', 'the flush of version B is still in progress when interrupted');
  await interrupt(page);
}

browserTest('closing the tab mid-flush leaves every entry old or new, never torn', async (t, session) => {
  await flushThenInterrupt(session, '/interrupt-tab', (page) => page.close({ runBeforeUnload: false }));
  const page = await session.open();
  await checkRestored(t, page, '/interrupt-tab', 'tab closed');
  await call(page, 'close', { flush: false });
}, { timeout: 120000 });

browserTest('quitting the browser mid-flush leaves every entry old or new, never torn', async (t, session) => {
  await flushThenInterrupt(session, '/interrupt-quit', () => session.quit());
  await session.launch();
  const page = await session.open();
  await checkRestored(t, page, '/interrupt-quit', 'browser quit');
  await call(page, 'close', { flush: false });
}, { timeout: 120000 });

browserTest('a browser crash (SIGKILL) mid-flush leaves every entry old or new, never torn', async (t, session) => {
  await flushThenInterrupt(session, '/interrupt-crash', () => session.crash());
  await session.launch();
  const page = await session.open();
  await checkRestored(t, page, '/interrupt-crash', 'browser killed');
  await call(page, 'close', { flush: false });
}, { timeout: 120000 });
