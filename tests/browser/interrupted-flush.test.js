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
  assert.equal(r.indexed, IDS.length, `${label}: every entry restored`);
  const found = await call(page, 'verify', IDS, ['A', 'B'], SHAPE);
  const versions = IDS.map((id) => found[id].version);
  versions.forEach((version, i) => {
    assert.ok(['A', 'B'].includes(version), `${label}: entry ${IDS[i]} is ${version}, not A or B`);
  });
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

// How each round interrupts the flush; `relaunch` when the browser is gone.
const ROUNDS = [
  {
    name: 'closing the tab mid-flush leaves every entry old or new, never torn',
    path: '/interrupt-tab', label: 'tab closed',
    interrupt: (session, page) => page.close({ runBeforeUnload: false }),
    relaunch: false,
  },
  {
    name: 'quitting the browser mid-flush leaves every entry old or new, never torn',
    path: '/interrupt-quit', label: 'browser quit',
    interrupt: (session) => session.quit(),
    relaunch: true,
  },
  {
    name: 'a browser crash (SIGKILL) mid-flush leaves every entry old or new, never torn',
    path: '/interrupt-crash', label: 'browser killed',
    interrupt: (session) => session.crash(),
    relaunch: true,
  },
];

for (const { name, path, label, interrupt, relaunch } of ROUNDS) {
  browserTest(name, async (t, session) => {
    await flushThenInterrupt(session, path, (page) => interrupt(session, page));
    if (relaunch) await session.launch();
    const page = await session.open();
    await checkRestored(t, page, path, label);
    await call(page, 'close', { flush: false });
  }, { timeout: 120000 });
}
