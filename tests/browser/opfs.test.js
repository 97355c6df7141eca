// Browser tests of storage: 'opfs' (store/opfs-blobs.js), in a module worker
// (sync access handles: reads straight into the wasm heap) and in a window
// (a helper worker's reads, File reads under a CSP that forbids it,
// createWritable streams): a browser restart between the two,
// each reading what the other wrote; a flush interrupted by a SIGKILL of
// the browser (worker) and by closing the tab (window), leaving every entry
// old or new and no stray temporary file once reopened, and by a SIGKILL
// while a worker replaces one blob in a tight loop (move() atomic under a
// crash); two tabs flushing
// the same entries while a third reads them; a quota error in both (and in
// a window, again and again, the store whole after a reload); a store
// copied from IndexedDB to OPFS and back; storageCapBytes, pins and prune;
// a window watching what a worker saves; a save and a removal waiting out
// a reader's open handle.
import assert from 'node:assert/strict';
import { HARNESS, browserTest, call } from './helpers.js';

const SHAPE = { tokens: 64, layers: 4, width: 64 }; // 128 KiB of KV each
const BIG = { tokens: 512, layers: 8, width: 256 }; // 8 MiB of KV

const inWorker = (page, w, fn, ...args) =>
  page.evaluate(([i, f, a]) => window.T.inWorker(i, f, ...a), [w, fn, args]);
const spawn = (page) => page.evaluate(() => window.T.spawnWorker());
const strays = (names) => names.filter((n) => !n.endsWith('.rlxkv') && n !== '.rlxkv-index'); // markers too

/** A new page of the session at `url` whose CSP forbids blob: workers: it can have no helper worker. */
async function openWithoutHelper(session, url) {
  const page = await session.context.newPage();
  await page.route('**/harness.html*', async (route) => {
    const response = await route.fetch();
    await route.fulfill({ response, headers: { ...response.headers(), 'content-security-policy': "worker-src 'self'" } });
  });
  await session.load(page, url);
  return page;
}

/**
 * Asks probe() until it answers `want` or 10 s have passed, and returns its
 * last answer: workers, locks and their events come late on a busy
 * machine, and a count of tries bounds the wait by the machine's speed.
 */
async function soon(probe, want) {
  const end = Date.now() + 10_000;
  let got;
  while ((got = await probe()) !== want && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  return got;
}

function assertVersions(found, ids, versions, label) {
  for (const id of ids) assert.ok(versions.includes(found[id].version), `${label}: entry ${id} is ${found[id].version}`);
}

browserTest('opfs: a worker and a window each restore, after a restart, what the other flushed', async (t, session) => {
  const PATH = '/opfs-restart';
  let page = await session.open();
  const w1 = await spawn(page);
  const opened = await inWorker(page, w1, 'open', { path: PATH, storage: 'opfs' });
  assert.equal(opened.storage, 'opfs');
  const digests = await inWorker(page, w1, 'insert', [0, 1, 2], 'W', SHAPE);
  assert.deepEqual(await inWorker(page, w1, 'flush'), { ok: true });
  await page.evaluate((i) => window.T.terminateWorker(i), w1);

  await session.restart();
  page = await session.open();
  const main = await call(page, 'open', { path: PATH, storage: 'opfs' });
  assert.deepEqual(main.restoreReport, { indexed: 3, stale: 0, corrupt: 0, skipped: 0, bytes: 3 * 128 * 1024, resident: 0, foreign: 0, tooLarge: 0, unreadable: 0, readOnly: false, temporaries: 0, temporaryBytes: 0, swept: 0 });
  assert.equal(main.size, 0, 'opening reads the index only');
  const onMain = await call(page, 'verify', [0, 1, 2], ['W'], SHAPE);
  for (const id of [0, 1, 2]) assert.equal(onMain[id].digest, digests[id], `window: entry ${id} byte-exact`);
  await call(page, 'insert', [3], 'M', SHAPE);
  await call(page, 'close');

  const w2 = await spawn(page);
  const again = await inWorker(page, w2, 'open', { path: PATH, storage: 'opfs' });
  assert.equal(again.restoreReport.indexed, 4, 'the worker finds the window\'s entry too');
  const found = await inWorker(page, w2, 'verify', [0, 1, 2, 3], ['W', 'M'], SHAPE);
  assert.deepEqual([0, 1, 2, 3].map((id) => found[id].version), ['W', 'W', 'W', 'M']);
  for (const id of [0, 1, 2]) assert.equal(found[id].digest, digests[id], `worker: entry ${id} byte-exact`);
  await inWorker(page, w2, 'close');
  assert.deepEqual(strays(await call(page, 'opfsNames', PATH)), [], 'no temporary file left');
});

browserTest('opfs: a worker with a layout reads each blob in one go, byte-exact, and refuses one changed behind its index', async (t, session) => {
  // With a layout the index tells each blob's shape: a hit reads header,
  // values and block headers with the sync handle and checks what it read.
  const PATH = '/opfs-layout';
  const layout = { order: 'token-major', heads: 1, headDim: SHAPE.width, layers: SHAPE.layers };
  const page = await session.open();
  const w1 = await spawn(page);
  await inWorker(page, w1, 'open', { path: PATH, storage: 'opfs', layout });
  const digests = await inWorker(page, w1, 'insert', [0, 1, 2], 'L', SHAPE);
  assert.deepEqual(await inWorker(page, w1, 'flush'), { ok: true });
  await inWorker(page, w1, 'close');
  const names = (await call(page, 'opfsNames', PATH)).filter((n) => n.endsWith('.rlxkv'));
  assert.equal(names.length, 3);

  // Two blobs changed behind the index, in place: a token (the header), or
  // a block header. (Before the open: an open keeps the handle of the blob
  // used last open, which locks the file against such writes.)
  for (const [i, at] of [[0, 32 + 8 * 5], [1, 32 + 8 * SHAPE.tokens + 8 + (8 + 4 * SHAPE.tokens * SHAPE.width) * 3]]) {
    await call(page, 'opfsFlip', PATH, names[i], at);
  }
  const w2 = await spawn(page);
  assert.equal((await inWorker(page, w2, 'open', { path: PATH, storage: 'opfs', layout })).restoreReport.indexed, 3, 'from the index');
  const found = await inWorker(page, w2, 'verify', [0, 1, 2], ['L'], SHAPE);
  const good = [0, 1, 2].filter((id) => found[id].version === 'L');
  assert.equal(good.length, 1, `two blobs changed, one intact: ${JSON.stringify(found)}`);
  for (const id of good) assert.equal(found[id].digest, digests[id], 'the intact one byte-exact');
  assert.equal([0, 1, 2].filter((id) => found[id].version === 'missing').length, 2, 'the changed ones refused');
  await inWorker(page, w2, 'close');
  assert.equal((await call(page, 'opfsNames', PATH)).filter((n) => n.endsWith('.rlxkv')).length, 3, 'refused blobs stay');
});

browserTest('opfs: a worker that read a blob reads it again as replaced by a window, then finds it gone', async (t, session) => {
  // A worker keeps the file handles of blobs it has read: handles name
  // paths, so a replacement (a move onto the name) and a removal show.
  const PATH = '/opfs-replaced';
  const page = await session.open();
  const w = await spawn(page);
  await inWorker(page, w, 'open', { path: PATH, storage: 'opfs' });
  await inWorker(page, w, 'insert', [0, 1], 'A', SHAPE);
  assert.deepEqual(await inWorker(page, w, 'flush'), { ok: true });
  assert.equal(await inWorker(page, w, 'clear'), 0);
  assert.equal((await inWorker(page, w, 'verify', [0], ['A', 'B'], SHAPE))[0].version, 'A', 'read once: its handle kept');
  await call(page, 'open', { path: PATH, storage: 'opfs' });
  await call(page, 'insert', [0], 'B', SHAPE);
  assert.deepEqual(await call(page, 'flush'), { ok: true });
  assert.equal(await inWorker(page, w, 'clear'), 0);
  assert.equal((await inWorker(page, w, 'verify', [0], ['A', 'B'], SHAPE))[0].version, 'B', 'the replacement, read through the kept handle');
  // The window keeps its handles too (File reads): entry 1 read, replaced by the worker, read again.
  assert.equal((await call(page, 'verify', [1], ['A', 'C'], SHAPE))[1].version, 'A');
  await inWorker(page, w, 'insert', [1], 'C', SHAPE);
  assert.deepEqual(await inWorker(page, w, 'flush'), { ok: true });
  assert.equal(await call(page, 'clear'), 0);
  assert.equal((await call(page, 'verify', [1], ['A', 'C'], SHAPE))[1].version, 'C', 'the window reads the replacement');
  await call(page, 'remove', [0], SHAPE);
  assert.deepEqual(await call(page, 'flush'), { ok: true });
  await call(page, 'close');
  assert.equal(await inWorker(page, w, 'clear'), 0);
  assert.equal((await inWorker(page, w, 'verify', [0, 1], ['A', 'C'], SHAPE))[0].version, 'missing', 'removed: gone');
  assert.deepEqual(await inWorker(page, w, 'flush'), { ok: true }, 'nothing of it left to save');
  await inWorker(page, w, 'close');
  const left = (await call(page, 'opfsNames', PATH)).filter((n) => n.endsWith('.rlxkv'));
  assert.equal(left.length, 1, 'entry 1 stays stored');
});

for (const [lib, query] of [['js/index.js', ''], ['the browser bundle', '?lib=bundle']]) {
browserTest(`opfs: a window reads and writes blobs through a helper worker (${lib}); a page whose CSP forbids blob: workers uses Files and streams`, async (t, session) => {
  const PATH = `/opfs-helper${query ? '-bundle' : ''}`;
  const page = await session.open(HARNESS + query);
  const w = await spawn(page);
  await inWorker(page, w, 'open', { path: PATH, storage: 'opfs' });
  await inWorker(page, w, 'insert', [0, 1, 2], 'A', SHAPE);
  assert.deepEqual(await inWorker(page, w, 'flush'), { ok: true });
  await inWorker(page, w, 'close');

  const helpers = (p) => p.workers().filter((x) => x.url().startsWith('blob:'));
  // Opens the store in page p, hits every entry (byte-exact) and saves
  // entry id (8 MiB: the helper gets it in pieces): the File reads and
  // the streams the window made.
  const useAll = async (p, id) => {
    await call(p, 'open', { path: PATH, storage: 'opfs' });
    await p.evaluate(() => window.T.countFileReads());
    const found = await call(p, 'verify', [0, 1, 2], ['A', 'B'], SHAPE);
    assert.deepEqual([0, 1, 2].map((i) => found[i].version), ['A', 'A', 'A']);
    await call(p, 'insert', [id], 'A', BIG);
    assert.deepEqual(await call(p, 'flush'), { ok: true });
    return p.evaluate(() => ({ reads: window.T.fileReads, streams: window.T.streamWrites }));
  };
  assert.deepEqual(await useAll(page, 3), { reads: 0, streams: 0 }, 'no File read, no stream in the window');
  assert.equal(helpers(page).length, 1, 'the open started one helper worker');
  await call(page, 'close');
  assert.equal(await soon(() => helpers(page).length, 0), 0, 'close() ends the helper'); // the event comes late

  const strict = await openWithoutHelper(session, HARNESS + query);
  assert.deepEqual(await useAll(strict, 4), { reads: 3, streams: 2 }, 'one File read per hit, a stream for the blob and the index');
  assert.equal(helpers(strict).length, 0, 'no helper under this CSP');
  await call(strict, 'close');

  const w2 = await spawn(page);
  await inWorker(page, w2, 'open', { path: PATH, storage: 'opfs' });
  const found = await inWorker(page, w2, 'verify', [3, 4], ['A', 'B'], BIG);
  assert.deepEqual([found[3].version, found[4].version], ['A', 'A'], 'what each window wrote, read in a worker, byte-exact');
  await inWorker(page, w2, 'close');
});
}

browserTest('opfs: a save and a removal wait while a reader in another worker holds the blob open, then go through', async (t, session) => {
  // Reads through read-only handles take no Web Lock; a move onto the
  // file or its removal fails while one is open, and is tried again.
  const PATH = '/opfs-held';
  const page = await session.open();
  const writer = await spawn(page);
  const reader = await spawn(page);
  await inWorker(page, writer, 'open', { path: PATH, storage: 'opfs' });
  await inWorker(page, writer, 'insert', [0], 'A', SHAPE);
  assert.deepEqual(await inWorker(page, writer, 'flush'), { ok: true });
  const [name] = (await call(page, 'opfsNames', PATH)).filter((n) => n.endsWith('.rlxkv'));

  await inWorker(page, reader, 'opfsHold', PATH, name, 300);
  await inWorker(page, writer, 'insert', [0], 'B', SHAPE);
  assert.deepEqual(await inWorker(page, writer, 'flush'), { ok: true }, 'the save goes through');
  const saved = await call(page, 'now');
  assert.ok(saved >= await inWorker(page, reader, 'heldUntil'), 'after the reader let go');
  assert.equal(await inWorker(page, writer, 'clear'), 0);
  assert.equal((await inWorker(page, writer, 'verify', [0], ['A', 'B'], SHAPE))[0].version, 'B');

  await inWorker(page, reader, 'opfsHold', PATH, name, 300);
  await inWorker(page, writer, 'remove', [0], SHAPE);
  assert.deepEqual(await inWorker(page, writer, 'flush'), { ok: true }, 'the removal goes through');
  assert.ok(await call(page, 'now') >= await inWorker(page, reader, 'heldUntil'), 'after the reader let go');
  assert.deepEqual((await call(page, 'opfsNames', PATH)).filter((n) => n.endsWith('.rlxkv')), [], 'removed');
  assert.deepEqual(strays(await call(page, 'opfsNames', PATH)), [], 'no temporary file left');
});

browserTest('opfs: readers keep the handles of blobs they read open, let a writer in when it asks, then read what it saved; a hidden page keeps none', async (t, session) => {
  // Kept open, a read-only handle saves the next hit its opening. It also
  // locks the file: each save and removal below would fail after its 10 s
  // of retries if the holder did not let go when asked.
  const PATH = '/opfs-kept';
  const VERSIONS = ['A', 'B', 'C'];
  const page = await session.open();
  const probe = await spawn(page);
  const blobName = async () => (await call(page, 'opfsNames', PATH)).filter((n) => n.endsWith('.rlxkv'));
  const lockedSoon = (name, want) => soon(() => inWorker(page, probe, 'opfsLocked', PATH, name), want);
  await call(page, 'open', { path: PATH, storage: 'opfs' });
  await call(page, 'insert', [0], 'A', SHAPE);
  assert.deepEqual(await call(page, 'flush'), { ok: true });
  const [name0] = await blobName();
  assert.equal(await inWorker(page, probe, 'opfsLocked', PATH, name0), false, 'written, not read');
  assert.equal(await call(page, 'clear'), 0);
  assert.equal((await call(page, 'verify', [0], VERSIONS, SHAPE))[0].version, 'A');
  assert.equal(await lockedSoon(name0, true), true, "read: the window's helper keeps it open");

  // A worker replaces it (the worker's open keeps it open too: the blob used last).
  const w = await spawn(page);
  await inWorker(page, w, 'open', { path: PATH, storage: 'opfs' });
  await inWorker(page, w, 'insert', [0], 'B', SHAPE);
  assert.deepEqual(await inWorker(page, w, 'flush'), { ok: true }, 'the helper let go when asked');
  assert.equal(await call(page, 'clear'), 0);
  assert.equal((await call(page, 'verify', [0], VERSIONS, SHAPE))[0].version, 'B', 'the window reads the new file');

  // The window replaces it, which the worker and the window's helper keep open.
  assert.equal(await inWorker(page, w, 'clear'), 0);
  assert.equal((await inWorker(page, w, 'verify', [0], VERSIONS, SHAPE))[0].version, 'B');
  await call(page, 'insert', [0], 'C', SHAPE);
  assert.deepEqual(await call(page, 'flush'), { ok: true }, 'the worker let go when asked');
  assert.equal(await inWorker(page, w, 'clear'), 0);
  assert.equal((await inWorker(page, w, 'verify', [0], VERSIONS, SHAPE))[0].version, 'C', 'the worker reads the new file');
  assert.equal(await lockedSoon(name0, true), true, 'read: the worker keeps it open');
  assert.equal(await inWorker(page, probe, 'opfsLocked', PATH, '.rlxkv-index'), false, 'never the index');
  await inWorker(page, w, 'close');
  assert.equal(await lockedSoon(name0, false), false, "the worker's close lets go");

  // The window removes it, which its helper keeps open.
  assert.equal(await call(page, 'clear'), 0);
  assert.equal((await call(page, 'verify', [0], VERSIONS, SHAPE))[0].version, 'C');
  assert.equal(await lockedSoon(name0, true), true, 'kept');
  await call(page, 'remove', [0], SHAPE);
  assert.deepEqual(await call(page, 'flush'), { ok: true }, 'the removal goes through');
  assert.deepEqual(await blobName(), [], 'removed');

  // A page that goes hidden lets go of what it keeps, and keeps nothing it reads then.
  await call(page, 'insert', [1], 'A', SHAPE);
  assert.deepEqual(await call(page, 'flush'), { ok: true });
  const [name1] = await blobName();
  assert.equal(await call(page, 'clear'), 0);
  assert.equal((await call(page, 'verify', [1], VERSIONS, SHAPE))[1].version, 'A');
  assert.equal(await lockedSoon(name1, true), true, 'kept');
  assert.equal(await call(page, 'pretendHidden', true), 'hidden');
  assert.equal(await lockedSoon(name1, false), false, 'let go when hidden');
  assert.equal(await call(page, 'clear'), 0);
  assert.equal((await call(page, 'verify', [1], VERSIONS, SHAPE))[1].version, 'A');
  assert.equal(await lockedSoon(name1, false), false, 'read while hidden: not kept');
  assert.equal(await call(page, 'pretendHidden', false), 'visible');

  // At most 8 kept: the ninth read lets go of the first.
  const names = [];
  for (const id of [2, 3, 4, 5, 6, 7, 8, 9, 10]) {
    const before = await blobName();
    await call(page, 'insert', [id], 'A', SHAPE);
    assert.deepEqual(await call(page, 'flush'), { ok: true });
    names.push((await blobName()).find((n) => !before.includes(n)));
  }
  assert.equal(await call(page, 'clear'), 0);
  for (const id of [2, 3, 4, 5, 6, 7, 8, 9, 10]) assert.equal((await call(page, 'verify', [id], VERSIONS, SHAPE))[id].version, 'A');
  assert.equal(await lockedSoon(names[8], true), true, 'the last read kept');
  assert.equal(await lockedSoon(names[1], true), true, 'the second kept');
  assert.equal(await lockedSoon(names[0], false), false, 'the first let go');
  await call(page, 'close');
});

browserTest("opfs: a worker's prune removes a blob that its own hit reads meanwhile", async (t, session) => {
  // A hit keeps its blob's handle open, which would lock out the prune's
  // removal of that blob for good (a channel does not hear itself): a
  // worker keeps no handle of a blob it is moving or removing. Another
  // worker holds the file for 500 ms, so that the hit comes while the
  // removal waits.
  const PATH = '/opfs-kept-prune';
  const page = await session.open();
  const w = await spawn(page);
  await inWorker(page, w, 'open', { path: PATH, storage: 'opfs' });
  await inWorker(page, w, 'insert', [0], 'A', SHAPE);
  assert.deepEqual(await inWorker(page, w, 'flush'), { ok: true });
  await inWorker(page, w, 'close');
  const [name] = (await call(page, 'opfsNames', PATH)).filter((n) => n.endsWith('.rlxkv'));
  const holder = await spawn(page);
  await inWorker(page, w, 'open', { path: PATH, storage: 'opfs' });
  await inWorker(page, holder, 'opfsHold', PATH, name, 500);
  const report = await inWorker(page, w, 'pruneWhileMatching', { maxBytes: 0 }, [0], 100, SHAPE);
  assert.equal(report.removed, 1, 'the prune went through');
  assert.deepEqual((await call(page, 'opfsNames', PATH)).filter((n) => n.endsWith('.rlxkv')), [], 'removed');
  await inWorker(page, w, 'close');
  assert.deepEqual(strays(await call(page, 'opfsNames', PATH)), [], 'no temporary file left');
});

browserTest('opfs: an open reads the index file, not each blob; blobs it does not describe, a lost or a damaged index are repaired from the blobs', async (t, session) => {
  const PATH = '/opfs-index';
  const INDEX = '.rlxkv-index';
  const page = await session.open();
  // Opens the window's cache and counts its File reads (a head is one, a getFile() of the listing another).
  const openCounting = async () => {
    await page.evaluate(() => window.T.countFileReads());
    const opened = await call(page, 'open', { path: PATH, storage: 'opfs' });
    const reads = await page.evaluate(() => window.T.fileReads);
    await call(page, 'close');
    return { known: opened.known, reads };
  };
  const w = await spawn(page);
  await inWorker(page, w, 'open', { path: PATH, storage: 'opfs' });
  await inWorker(page, w, 'insert', [0, 1, 2, 3], 'A', SHAPE);
  assert.deepEqual(await inWorker(page, w, 'flush'), { ok: true });
  assert.ok(await call(page, 'opfsFile', PATH, INDEX), 'the flush wrote the index');
  assert.deepEqual(await openCounting(), { known: 4, reads: 0 }, 'the index alone');

  // A writer that died between its save and its index update, its marker
  // left: the blob is found and added, the marker cleared.
  const before = await call(page, 'opfsFile', PATH, INDEX);
  await inWorker(page, w, 'insert', [4], 'A', SHAPE);
  assert.deepEqual(await inWorker(page, w, 'flush'), { ok: true });
  await call(page, 'opfsFile', PATH, INDEX, before);
  assert.deepEqual(await openCounting(), { known: 4, reads: 0 }, 'no dead writer: the index is trusted');
  await call(page, 'opfsFile', `${PATH}/.rlxkv-pending`, 'dead-writer', []);
  assert.deepEqual(await openCounting(), { known: 5, reads: 2 }, 'entry 4 read: its size, its head');
  assert.deepEqual(strays(await call(page, 'opfsNames', PATH)), [], 'the marker cleared');
  assert.deepEqual(await openCounting(), { known: 5, reads: 0 }, 'and the index repaired');

  // A blob removed by a writer that died before its index update leaves it.
  const [gone] = (await call(page, 'opfsNames', PATH)).filter((n) => n.endsWith('.rlxkv'));
  await call(page, 'opfsFile', PATH, gone, null);
  await call(page, 'opfsFile', `${PATH}/.rlxkv-pending`, 'dead-writer', []);
  const describing = await call(page, 'opfsFile', PATH, INDEX);
  assert.deepEqual(await openCounting(), { known: 4, reads: 0 });
  assert.ok((await call(page, 'opfsFile', PATH, INDEX)).length < describing.length, 'the index rewritten without it');

  // No index, or one damaged: rebuilt from every blob's head, once.
  await call(page, 'opfsFile', PATH, INDEX, null);
  assert.deepEqual(await openCounting(), { known: 4, reads: 8 });
  assert.deepEqual(await openCounting(), { known: 4, reads: 0 });
  const index = await call(page, 'opfsFile', PATH, INDEX);
  await call(page, 'opfsFile', PATH, INDEX, index.slice(0, index.length - 3));
  assert.deepEqual(await openCounting(), { known: 4, reads: 8 });
  assert.deepEqual(await openCounting(), { known: 4, reads: 0 });

  // A blob the index records as corrupt is read again at each open: replaced by a good one behind the index, it is found.
  const [victim] = (await call(page, 'opfsNames', PATH)).filter((n) => n.endsWith('.rlxkv'));
  const good = await call(page, 'opfsFile', PATH, victim);
  await call(page, 'opfsFlip', PATH, victim, 0);
  await call(page, 'opfsFile', PATH, INDEX, null);
  assert.deepEqual(await openCounting(), { known: 3, reads: 8 }, 'rebuilt: one corrupt');
  await call(page, 'opfsFile', PATH, victim, good);
  await call(page, 'opfsFile', `${PATH}/.rlxkv-pending`, 'dead-writer', []);
  assert.deepEqual(await openCounting(), { known: 4, reads: 2 }, 'only the corrupt one read again');
  assert.deepEqual(await openCounting(), { known: 4, reads: 0 });

  // Every entry reads back as it was saved.
  await call(page, 'open', { path: PATH, storage: 'opfs' });
  const found = await call(page, 'verify', [0, 1, 2, 3, 4], ['A', 'B'], SHAPE);
  assert.equal(Object.values(found).filter((f) => f.version === 'A').length, 4);
  assert.equal(Object.values(found).filter((f) => f.version === 'missing').length, 1);
  await call(page, 'close');
  await inWorker(page, w, 'close');

  // A hit's use is kept in the index (at the close's flush): its blob is the newest at the next open.
  const [one] = Object.entries(found).filter(([, f]) => f.version === 'A').map(([id]) => Number(id));
  await call(page, 'open', { path: PATH, storage: 'opfs' });
  const uses = new Map((await call(page, 'list')).map((b) => [b.name, b.mtime]));
  await call(page, 'nextSecond');
  await call(page, 'verify', [one], ['A'], SHAPE);
  await call(page, 'close');
  await call(page, 'open', { path: PATH, storage: 'opfs' });
  const changed = (await call(page, 'list')).filter((b) => b.mtime !== uses.get(b.name));
  assert.equal(changed.length, 1, 'one blob was used');
  assert.ok(changed[0].mtime > Math.max(...uses.values()), 'and it is the newest now');
  await call(page, 'close');
});

browserTest('opfs: an index update that fails, or that races another writer of the same blob, leaves the next open right', async (t, session) => {
  const PATH = '/opfs-index-races';
  const page = await session.open();
  const known = async () => {
    const opened = await call(page, 'open', { path: PATH, storage: 'opfs' });
    const found = await call(page, 'verify', [0, 1, 2], ['A', 'B'], SHAPE);
    await call(page, 'close');
    return [opened.known, [0, 1, 2].map((id) => found[id].version)];
  };
  // A flush whose index update fails, then one that succeeds: the first
  // blob is in neither index, so the writer keeps its marker, and the open
  // after its close repairs the index.
  const w = await spawn(page);
  await inWorker(page, w, 'open', { path: PATH, storage: 'opfs' });
  await inWorker(page, w, 'insert', [2], 'A', SHAPE); // an index to update: one not found is rebuilt whole
  assert.deepEqual(await inWorker(page, w, 'flush'), { ok: true });
  await inWorker(page, w, 'failIndexMoves', 1);
  await inWorker(page, w, 'insert', [0], 'A', SHAPE);
  assert.equal((await inWorker(page, w, 'flush')).code, 'QUOTA');
  await inWorker(page, w, 'insert', [1], 'A', SHAPE);
  assert.deepEqual(await inWorker(page, w, 'flush'), { ok: true });
  await inWorker(page, w, 'close');
  assert.deepEqual(await known(), [3, ['A', 'A', 'A']]);
  assert.deepEqual(strays(await call(page, 'opfsNames', PATH)), [], 'the marker cleared by the repair');

  // Writer 1 removes entries 0 and 1 (the least recently used first: 0),
  // and waits at 1, whose blob a reader holds open; meanwhile writer 2
  // saves entry 0 again and updates the index. Writer 1's update, last,
  // must not drop entry 0. (Entry 2 stays: an empty index is never trusted.)
  const reader = await spawn(page), w2 = await spawn(page), w1 = await spawn(page);
  await inWorker(page, w1, 'open', { path: PATH, storage: 'opfs' });
  await inWorker(page, w2, 'open', { path: PATH, storage: 'opfs' });
  const idOf = async (name) => (await call(page, 'opfsFile', PATH, name))[34] - 1; // the first token's bits 16-23: id + 1
  const names = (await call(page, 'opfsNames', PATH)).filter((n) => n.endsWith('.rlxkv'));
  const ids = await Promise.all(names.map(idOf));
  assert.deepEqual([...ids].sort(), [0, 1, 2]);
  await inWorker(page, reader, 'opfsHold', PATH, names[ids.indexOf(1)], 1500);
  await inWorker(page, w1, 'remove', [0, 1], SHAPE);
  await inWorker(page, w1, 'flushNoWait');
  // Writer 1 waits at entry 1 once entry 0's blob is gone (it removes one
  // at a time, in that order). A fixed wait could end before that on a
  // busy machine, and writer 1 would then remove what writer 2 saves.
  const name0 = names[ids.indexOf(0)];
  assert.equal(await soon(async () => (await call(page, 'opfsNames', PATH)).includes(name0), false), false, 'entry 0 removed first');
  await inWorker(page, w2, 'insert', [0], 'B', SHAPE);
  assert.deepEqual(await inWorker(page, w2, 'flush', 30000), { ok: true });
  for (let i = 0; i < 200 && await inWorker(page, w1, 'flushState') === 'running'; i++) await new Promise((r) => setTimeout(r, 50));
  assert.equal(await inWorker(page, w1, 'flushState'), 'done');
  await inWorker(page, w1, 'close');
  await inWorker(page, w2, 'close');
  assert.deepEqual(await known(), [2, ['B', 'missing', 'A']], 'entry 0 as writer 2 saved it, known from the index');
});

browserTest('opfs: a window that watches finds at once what a worker saves, and reads it', async (t, session) => {
  const PATH = '/opfs-watch';
  const page = await session.open();
  await call(page, 'open', { path: PATH, storage: 'opfs', watch: true });
  const w = await spawn(page);
  await inWorker(page, w, 'open', { path: PATH, storage: 'opfs' });
  const digests = await inWorker(page, w, 'insert', [0, 1, 2], 'W', SHAPE);
  assert.deepEqual(await inWorker(page, w, 'flush'), { ok: true });
  assert.deepEqual(await call(page, 'knows', [0, 1, 2], SHAPE), [0, 1, 2], 'the window knows every entry the worker saved');
  const found = await call(page, 'verify', [0, 1, 2], ['W'], SHAPE);
  for (const id of [0, 1, 2]) assert.equal(found[id].digest, digests[id], `entry ${id} read from OPFS, byte-exact`);
  await inWorker(page, w, 'close');
  await page.evaluate((i) => window.T.terminateWorker(i), w);
  await call(page, 'close');
});

const IDS = [0, 1, 2, 3, 4, 5, 6, 7];
const MID = { tokens: 128, layers: 4, width: 256 }; // 1 MiB of KV each
const MID5 = { tokens: 128, layers: 4, width: 1280 }; // 5 MiB: a window's helper gets each in two pieces

/**
 * Version A flushed, then B being flushed (stalled at its first write)
 * when interrupt() runs. A worker stalls inside its synchronous write, so
 * it cannot be asked; the interruption lands inside that write.
 */
async function interruptedFlush(page, run, interrupt, { ask = true, shape = MID, helper = false } = {}) {
  await run('open', { path: '/opfs-interrupt', storage: 'opfs', capBytes: 64 << 20 });
  await run('insert', IDS, 'A', shape);
  assert.deepEqual(await run('flush'), { ok: true }, 'version A flushed');
  await run('watchOpfsWrites');
  await run('insert', IDS, 'B', shape);
  const first = page.waitForEvent('console', { predicate: (m) => m.text().includes('first OPFS write'), timeout: 30000 });
  await run('flushNoWait');
  await first;
  if (ask) assert.equal(await run('flushState'), 'running', 'the flush of B is under way when interrupted');
  if (helper) assert.equal(page.workers().filter((x) => x.url().startsWith('blob:')).length, 1, "held in the helper's write");
  await interrupt();
}

async function checkInterrupted(t, session, label, shape = MID) {
  const page = await session.open();
  const w = await spawn(page);
  const opened = await inWorker(page, w, 'open', { path: '/opfs-interrupt', storage: 'opfs', capBytes: 64 << 20 });
  assert.equal(opened.restoreReport.corrupt, 0, `${label}: no corrupt blob`);
  assert.equal(opened.restoreReport.indexed, IDS.length, `${label}: every entry`);
  const found = await inWorker(page, w, 'verify', IDS, ['A', 'B'], shape);
  assertVersions(found, IDS, ['A', 'B'], label);
  t.diagnostic(`${label}: restored ${IDS.map((id) => found[id].version).join('')}`);
  await inWorker(page, w, 'close', { flush: false });
  assert.deepEqual(strays(await call(page, 'opfsNames', '/opfs-interrupt')), [], `${label}: the stray temporary file is removed`);
}

browserTest('opfs: a browser killed (SIGKILL) mid-flush in a worker leaves every entry old or new', async (t, session) => {
  const page = await session.open();
  const w = await spawn(page);
  await interruptedFlush(page, (fn, ...a) => inWorker(page, w, fn, ...a), () => session.crash(), { ask: false });
  await session.launch();
  await checkInterrupted(t, session, 'browser killed');
}, { timeout: 120000 });

browserTest('opfs: a browser killed while a worker replaces one blob in a loop leaves it whole (move() is atomic)', async (t, session) => {
  const PATH = '/opfs-loop';
  const seen = [];
  for (let round = 0; round < 3; round++) {
    const page = await session.open();
    const w = await spawn(page);
    await inWorker(page, w, 'open', { path: PATH, storage: 'opfs' });
    const running = page.waitForEvent('console', { predicate: (m) => m.text().includes('flush loop running'), timeout: 30000 });
    await inWorker(page, w, 'flushLoop', 0);
    await running;
    await new Promise((r) => setTimeout(r, 200 + 400 * round));
    await session.crash();
    await session.launch();
    const again = await session.open();
    const opened = await call(again, 'open', { path: PATH, storage: 'opfs' });
    assert.equal(opened.restoreReport.corrupt, 0, `round ${round}: no corrupt blob`);
    const which = await call(again, 'whichLoop', 0, 1e6);
    assert.ok(which.i >= 0, `round ${round}: the blob is one whole version, not ${which.version}`);
    seen.push(which.i);
    await call(again, 'close', { flush: false });
    assert.deepEqual(strays(await call(again, 'opfsNames', PATH)), [], `round ${round}: no stray temporary file`);
    await again.close();
  }
  t.diagnostic(`versions found after each kill: ${seen.join(', ')}`);
}, { timeout: 120000 });

browserTest('opfs: a tab closed mid-flush in a window leaves every entry old or new', async (t, session) => {
  const page = await session.open();
  // Closed while its helper worker holds a temporary file half written.
  await interruptedFlush(page, (fn, ...a) => call(page, fn, ...a), () => page.close({ runBeforeUnload: false }), { shape: MID5, helper: true });
  await checkInterrupted(t, session, 'tab closed', MID5);
}, { timeout: 120000 });

browserTest('opfs: two tabs flush the same entries while a third reads them; nothing torn or lost', async (t, session) => {
  const PATH = '/opfs-tabs';
  const SHARED = [0, 1, 2, 3];
  const a = await session.open(), b = await session.open(), c = await session.open();
  const wa = await spawn(a), wc = await spawn(c);
  const runA = (fn, ...x) => inWorker(a, wa, fn, ...x);       // tab 1: a worker
  const runB = (fn, ...x) => call(b, fn, ...x);               // tab 2: the window
  const runC = (fn, ...x) => inWorker(c, wc, fn, ...x);       // tab 3: a worker that reads
  await runA('open', { path: PATH, storage: 'opfs' });
  await runB('open', { path: PATH, storage: 'opfs' });
  await runA('insert', SHARED, 'P0', SHAPE);
  assert.deepEqual(await runA('flush'), { ok: true });
  // Memory for one entry: every hit in tab 3 reads a blob.
  await runC('open', { path: PATH, storage: 'opfs', capBytes: 128 * 1024 });
  const versions = ['P0'];
  for (let r = 1; r <= 3; r++) {
    versions.push(`P${r}`, `Q${r}`);
    await runA('insert', [...SHARED, 10], `P${r}`, SHAPE);
    await runB('insert', [...SHARED, 20], `Q${r}`, SHAPE);
    const [fa, fb, seen] = await Promise.all([runA('flush'), runB('flush'), runC('verify', SHARED, versions, SHAPE)]);
    assert.deepEqual(fa, { ok: true }, `round ${r}: tab 1 flushed`);
    assert.deepEqual(fb, { ok: true }, `round ${r}: tab 2 flushed`);
    assertVersions(seen, SHARED, versions, `round ${r}, tab 3 reading`);
  }
  await runC('close');
  const d = await session.open();
  const opened = await call(d, 'open', { path: PATH, storage: 'opfs' });
  assert.equal(opened.restoreReport.corrupt, 0);
  assert.equal(opened.restoreReport.indexed, SHARED.length + 2);
  const all = await call(d, 'verify', [...SHARED, 10, 20], versions, SHAPE);
  assertVersions(all, SHARED, ['P3', 'Q3'], 'after the last round');
  assert.equal(all[10].version, 'P3');
  assert.equal(all[20].version, 'Q3');
  assert.deepEqual(strays(await call(d, 'opfsNames', PATH)), []);
});

browserTest('opfs: a quota error rejects flush() with QUOTA in a worker and in a window; nothing is lost', async (t, session) => {
  const PATH = '/opfs-quota';
  let page = await session.open();
  await call(page, 'open', { path: PATH, storage: 'opfs' });
  await call(page, 'insert', [0, 1], 'A', SHAPE);
  assert.deepEqual(await call(page, 'flush'), { ok: true });
  await call(page, 'close');
  const { usage } = await session.storageUsage(page);

  await session.restart();
  const small = await session.setQuota(session.context.pages()[0], usage + (1 << 20));
  assert.ok(small.overrideActive);
  page = await session.open();
  const w = await spawn(page);
  for (const [where, run] of [['worker', (fn, ...a) => inWorker(page, w, fn, ...a)], ['window', (fn, ...a) => call(page, fn, ...a)]]) {
    const opened = await run('open', { path: PATH, storage: 'opfs' });
    assert.equal(opened.restoreReport.indexed, 2, `${where}: the earlier entries`);
    await run('insert', [50], 'A', BIG);
    const failed = await run('flush', 20000);
    assert.equal(failed.ok, false, `${where}: flush() rejects`);
    assert.equal(failed.isRlxkvError, true, `${where}: ${failed.name}: ${failed.message}`);
    assert.equal(failed.code, 'QUOTA', `${where}: ${failed.message}`);
    assert.equal((await run('verify', [50], ['A'], BIG))[50].version, 'A', `${where}: memory still has it`);
    assertVersions(await run('verify', [0, 1], ['A'], SHAPE), [0, 1], ['A'], `${where}: earlier blobs`);
    await run('close', { flush: false });
    assert.deepEqual(strays(await call(page, 'opfsNames', PATH)), [], `${where}: the failed temporary file is removed`);
  }
  await session.setQuota(page, null);
  await inWorker(page, w, 'open', { path: PATH, storage: 'opfs' });
  await inWorker(page, w, 'insert', [50], 'A', BIG);
  assert.deepEqual(await inWorker(page, w, 'flush', 20000), { ok: true }, 'flush() succeeds once space is back');
  await inWorker(page, w, 'close');
  const again = await call(page, 'open', { path: PATH, storage: 'opfs' });
  assert.equal(again.restoreReport.indexed, 3);
  assert.equal((await call(page, 'verify', [50], ['A'], BIG))[50].version, 'A');
  await call(page, 'close');
});

// Chromium fails some over-quota write()s of more than its data pipe holds
// (2 MiB) as an AbortError (store/opfs-blobs.js STREAM_CHUNK): so rounds of
// 8 MiB blobs, each of which must say QUOTA. Writing each blob in one
// write(), this failed by round 0, 1, 1 and 5 in four runs.
browserTest('opfs: a window flush over quota rejects with QUOTA every time, through its helper and through streams; after a reload every earlier entry is there', async (t, session) => {
  const PATH = '/opfs-window-quota';
  const EARLIER = [0, 1, 2];
  let page = await session.open();
  await call(page, 'open', { path: PATH, storage: 'opfs' });
  const digests = await call(page, 'insert', EARLIER, 'A', SHAPE);
  assert.deepEqual(await call(page, 'flush'), { ok: true });
  await call(page, 'close');
  const { usage } = await session.storageUsage(page);

  await session.restart();
  assert.ok((await session.setQuota(session.context.pages()[0], usage + (1 << 20))).overrideActive);
  page = await session.open();
  const streams = await openWithoutHelper(session, HARNESS); // it writes streams
  const probe = await spawn(page);
  const names = (await call(page, 'opfsNames', PATH)).filter((n) => n.endsWith('.rlxkv'));
  const keptSoon = () => soon(async () => (await Promise.all(names.map((n) => inWorker(page, probe, 'opfsLocked', PATH, n)))).every(Boolean), true);
  for (const [p, how, rounds] of [[page, 'helper', 4], [streams, 'streams', 12]]) {
    for (let round = 0; round < rounds; round++) {
      const label = `${how}, round ${round}`;
      const opened = await call(p, 'open', { path: PATH, storage: 'opfs' });
      assert.equal(opened.restoreReport.indexed, EARLIER.length, `${label}: the earlier entries`);
      await p.evaluate(() => window.T.countFileReads());
      await call(p, 'insert', [50 + round], 'A', BIG);
      const failed = await call(p, 'flush', 20000);
      assert.equal(failed.ok, false, `${label}: flush() rejects`);
      assert.equal(failed.isRlxkvError, true, `${label}: ${failed.name}: ${failed.message}`);
      assert.equal(failed.code, 'QUOTA', `${label}: ${failed.message}`);
      assert.equal(await p.evaluate(() => window.T.streamWrites) > 0, how === 'streams', `${label}: written by ${how}`);
      assert.equal((await call(p, 'verify', [50 + round], ['A'], BIG))[50 + round].version, 'A', `${label}: memory still has it`);
      if (how === 'helper') {
        // The failed write leaves the helper as it was: it keeps what it reads.
        assert.equal(await call(p, 'clear'), 0);
        assert.deepEqual(Object.values(await call(p, 'verify', EARLIER, ['A'], SHAPE)).map((f) => f.version), ['A', 'A', 'A']);
        assert.equal(await keptSoon(), true, `${label}: the helper keeps the blobs it read`);
      }
      await call(p, 'close', { flush: false });
      assert.deepEqual(strays(await call(p, 'opfsNames', PATH)), [], `${label}: the failed temporary file is removed`);
    }
  }
  await streams.close();

  await session.reload(page);
  const again = await call(page, 'open', { path: PATH, storage: 'opfs' });
  assert.equal(again.restoreReport.indexed, EARLIER.length, 'after a reload: the earlier entries, and none of the failed ones');
  assert.equal(again.restoreReport.corrupt, 0);
  const found = await call(page, 'verify', EARLIER, ['A'], SHAPE);
  for (const id of EARLIER) assert.equal(found[id].digest, digests[id], `after a reload: entry ${id} byte-exact`);
  await call(page, 'close', { flush: false });
});

browserTest('opfs: a store copied from IndexedDB to OPFS and back keeps every blob', async (t, session) => {
  const page = await session.open();
  await call(page, 'open', { path: '/moved', storage: 'idb' });
  const digests = await call(page, 'insert', [0, 1, 2], 'A', SHAPE);
  await call(page, 'pin', [0], SHAPE);
  await call(page, 'close');
  await call(page, 'open', { path: '/moved', storage: 'idb', fingerprint: 'beef' }); // another model's blob
  await call(page, 'insert', [9], 'X', SHAPE);
  await call(page, 'close');

  const there = await call(page, 'copyStore', { storage: 'idb', path: '/moved' }, { storage: 'opfs', path: '/moved' });
  assert.equal(there.copied, 4);
  // The copy wrote the OPFS index: an open reads no blob, and knows every one with its last use.
  await page.evaluate(() => window.T.countFileReads());
  assert.equal((await call(page, 'open', { path: '/moved', storage: 'opfs' })).known, 3);
  assert.equal(await page.evaluate(() => window.T.fileReads), 0, 'the index alone');
  const uses = (await call(page, 'list')).map((b) => b.mtime);
  await call(page, 'close');
  await call(page, 'open', { path: '/moved', storage: 'idb' });
  assert.deepEqual((await call(page, 'list')).map((b) => b.mtime).sort(), uses.sort(), 'the last uses of IndexedDB');
  await call(page, 'close');
  const w = await spawn(page);
  const inOpfs = await inWorker(page, w, 'open', { path: '/moved', storage: 'opfs' });
  assert.deepEqual(inOpfs.restoreReport, { indexed: 3, stale: 1, corrupt: 0, skipped: 0, bytes: 3 * 128 * 1024, resident: 0, foreign: 0, tooLarge: 0, unreadable: 0, readOnly: false, temporaries: 0, temporaryBytes: 0, swept: 0 });
  const found = await inWorker(page, w, 'verify', [0, 1, 2], ['A'], SHAPE);
  for (const id of [0, 1, 2]) assert.equal(found[id].digest, digests[id], `in OPFS: entry ${id} byte-exact`);
  await inWorker(page, w, 'close');

  const back = await inWorker(page, w, 'copyStore', { storage: 'opfs', path: '/moved' }, { storage: 'idb', path: '/back' });
  assert.deepEqual(back, there, 'the same blobs, the same bytes');
  const inIdb = await call(page, 'open', { path: '/back', storage: 'idb' });
  assert.deepEqual(inIdb.restoreReport, inOpfs.restoreReport);
  const again = await call(page, 'verify', [0, 1, 2], ['A'], SHAPE);
  for (const id of [0, 1, 2]) assert.equal(again[id].digest, digests[id], `back in IndexedDB: entry ${id} byte-exact`);
  await call(page, 'close');
});

browserTest('opfs: storageCapBytes keeps the pinned and the newest blobs; listBlobs and prune({ stale })', async (t, session) => {
  const PATH = '/opfs-cap';
  const page = await session.open();
  const w = await spawn(page);
  const run = (fn, ...a) => inWorker(page, w, fn, ...a);
  await run('open', { path: PATH, storage: 'opfs', fingerprint: 'beef' });
  await run('insert', [100], 'X', SHAPE);
  await run('close');
  const blobBytes = (await call(page, 'open', { path: PATH, storage: 'opfs', fingerprint: 'beef' }), (await call(page, 'list'))[0].bytes);
  await call(page, 'close');

  await run('open', { path: PATH, storage: 'opfs', capBytes: 2 * 128 * 1024, storageCapBytes: 3 * blobBytes });
  await run('insert', [0], 'A', SHAPE);
  await run('pin', [0], SHAPE);
  for (const id of [1, 2, 3, 4]) {
    await run('insert', [id], 'A', SHAPE);
    assert.deepEqual(await run('flush'), { ok: true });
  }
  const mine = (await run('list')).filter((b) => b.fingerprint === 'f00d');
  assert.equal(mine.length, 3, 'three blobs fit the budget');
  await run('close');
  await session.reload(page);
  const w2 = await spawn(page);
  await inWorker(page, w2, 'open', { path: PATH, storage: 'opfs' });
  const found = await inWorker(page, w2, 'verify', [0, 1, 2, 3, 4], ['A'], SHAPE);
  assert.deepEqual([0, 1, 2, 3, 4].map((id) => found[id].version), ['A', 'missing', 'missing', 'A', 'A'], 'the pinned entry and the newest two');
  const pruned = await inWorker(page, w2, 'prune', { stale: true });
  assert.equal(pruned.removed, 1, 'the other fingerprint\'s blob');
  await inWorker(page, w2, 'close');
  await call(page, 'open', { path: PATH, storage: 'opfs' });
  assert.deepEqual((await call(page, 'list')).map((b) => b.status), ['ok', 'ok', 'ok']);
  await call(page, 'close');
});
