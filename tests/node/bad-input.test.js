// Every public function against wrong types, wrong lengths, huge values,
// detached buffers, and a closed cache: a clear TypeError / RangeError /
// RlxkvError each time, the cache unchanged, the module still usable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { openSync, writeSync, ftruncateSync, closeSync, writeFileSync, existsSync, utimesSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import init, { RlxkvError } from 'rlxkv';
import { kvFor, tempDir } from './helpers.js';

const rlx = await init();

function detachedF32() {
  const a = new Float32Array(4);
  structuredClone(a.buffer, { transfer: [a.buffer] });
  return a;
}
function detachedU32() {
  const a = new Uint32Array([1, 2]);
  structuredClone(a.buffer, { transfer: [a.buffer] });
  return a;
}

const badTokens = [undefined, null, 42, 'abc', {}, [1, NaN], [1, Infinity], [2 ** 32], [-1], [1.5], [1n << 40n], [[1]], new Float64Array([1.5]), detachedU32(), new DataView(new ArrayBuffer(8))];
const badKv = [undefined, null, 1, {}, { k: [] }, { k: [new Float32Array(2)], v: [new Float32Array(2), new Float32Array(2)] },
  { k: [new Float64Array(2)], v: [new Float32Array(2)] }, { k: [[1, 2]], v: [new Float32Array(2)] }, { k: [detachedF32()], v: [new Float32Array(4)] },
  { k: 'x', v: 'y' }];
const badBytes = [undefined, null, 'RLXKV001', 12, {}, [1, 2, 3], new Uint8Array(0), new Uint8Array(3), new Uint8Array(1 << 16)];
const badFp = [-1, 1.5, 2 ** 53, 1n << 64n, -1n, 'abc', {}, null];
const badCap = [-1, 1.5, NaN, Infinity, '10', null, 10n];

function show(x) {
  try { return typeof x === 'bigint' ? `${x}n` : JSON.stringify(x) ?? String(x); } catch { return Object.prototype.toString.call(x); }
}

function isClear(e) {
  return (e instanceof TypeError || e instanceof RangeError || e instanceof RlxkvError) && e.message.length > 0;
}

function snapshot(cache) {
  return JSON.stringify({ entries: cache.entries().map((e) => [[...e.tokens], e.bytes, e.pinned]), stats: cache.stats });
}

test('the bad-input sweep', async () => {
  const cache = rlx.createCache({ capBytes: 1 << 20, fingerprint: 5n });
  cache.insert([1, 2, 3], kvFor(3));
  cache.pin([1, 2, 3]);
  cache.insert([4, 5], kvFor(2));
  const before = snapshot(cache);
  let calls = 0;
  const expectClear = (fn, label) => {
    calls++;
    let threw = null;
    try { fn(); } catch (e) { threw = e; }
    assert.ok(threw && isClear(threw), `${label}: ${threw}`);
  };
  const expectClearAsync = async (fn, label) => {
    calls++;
    await assert.rejects(fn, (e) => isClear(e), label);
  };

  for (const t of badTokens) {
    const label = `tokens ${show(t)}`;
    expectClear(() => cache.insert(t, kvFor(1)), `insert ${label}`);
    expectClear(() => cache.lookup(t), `lookup ${label}`);
    expectClear(() => cache.lookup(t, { partial: true }), `partial ${label}`);
    expectClear(() => cache.pin(t), `pin ${label}`);
    expectClear(() => cache.unpin(t), `unpin ${label}`);
    expectClear(() => cache.remove(t), `remove ${label}`);
    expectClear(() => cache.has(t), `has ${label}`);
    expectClear(() => cache.exportBlob(t), `exportBlob ${label}`);
    expectClear(() => rlx.encodeEntry({ tokens: t, ...kvFor(1) }, 1n), `encodeEntry ${label}`);
  }
  for (const kv of badKv) {
    expectClear(() => cache.insert([7, 8], kv), `insert kv ${show(kv)}`);
    if (kv && typeof kv === 'object') expectClear(() => rlx.encodeEntry({ tokens: [1], ...kv }, 1n), 'encodeEntry kv');
  }
  for (const b of badBytes) {
    expectClear(() => rlx.decodeEntry(b), `decodeEntry ${show(b)}`);
    await expectClearAsync(() => cache.importBlob(b), `importBlob ${show(b)}`);
  }
  for (const fp of badFp) {
    expectClear(() => rlx.createCache({ capBytes: 10, fingerprint: fp }), `fingerprint ${show(fp)}`);
    expectClear(() => rlx.encodeEntry({ tokens: [1], ...kvFor(1) }, fp), `encode fingerprint ${show(fp)}`);
    expectClear(() => rlx.decodeEntry(new Uint8Array(8), { fingerprint: fp }), `decode fingerprint ${show(fp)}`);
  }
  for (const cap of badCap) {
    expectClear(() => rlx.createCache({ capBytes: cap }), `capBytes ${show(cap)}`);
    expectClear(() => { cache.capBytes = cap; }, `set capBytes ${show(cap)}`);
  }
  for (const opts of [null, 5, 'x']) {
    expectClear(() => rlx.createCache(opts), `createCache ${show(opts)}`);
    await expectClearAsync(() => rlx.openCache(opts), `openCache ${show(opts)}`);
  }
  await expectClearAsync(() => rlx.openCache({ capBytes: 10, storage: 'cloud' }), 'storage');
  await expectClearAsync(() => rlx.openCache({ capBytes: 10, storage: 'fs', path: 42 }), 'path');
  await expectClearAsync(() => rlx.openCache({ capBytes: 10, fingerprint: 1n, storage: 'fs', path: '/proc/version/x' }), 'unusable directory');
  expectClear(() => cache.lookup([1], { maxMatched: -2 }), 'maxMatched');
  expectClear(() => cache.lookup([1], 'view'), 'lookup opts');
  expectClear(() => cache.pin([9, 9, 9]), 'pin of an absent entry');
  expectClear(() => rlx.fingerprintOf(12), 'fingerprintOf');
  // Larger than wasm32 can address (3 GiB of K and of V, lazily zeroed by
  // the OS): an RlxkvError, not a crash, and nothing inserted.
  const huge = new Float32Array(2 ** 29 + 2 ** 28);
  calls++;
  assert.throws(() => cache.insert([6], { k: [huge], v: [huge] }), (e) => e instanceof RlxkvError);

  assert.equal(snapshot(cache), before, 'the cache is exactly as it was');
  assert.ok(calls > 150);

  await cache.close();
  for (const [name, fn] of Object.entries({
    insert: () => cache.insert([1], kvFor(1)), lookup: () => cache.lookup([1]), pin: () => cache.pin([1]),
    unpin: () => cache.unpin([1]), remove: () => cache.remove([1]), has: () => cache.has([1]), clear: () => cache.clear(),
    entries: () => cache.entries(), stats: () => cache.stats, size: () => cache.size, exportBlob: () => cache.exportBlob([1]),
    listBlobs: () => cache.listBlobs(), setCap: () => { cache.capBytes = 5; },
  })) {
    assert.throws(fn, (e) => e instanceof TypeError && /closed/.test(e.message), name);
  }
  await assert.rejects(cache.importBlob(new Uint8Array(10)), TypeError);
  await assert.rejects(cache.flush(), TypeError);
  await assert.rejects(cache.prune(), TypeError);

  const fresh = rlx.createCache({ capBytes: 1 << 20 });
  fresh.insert([1, 2], kvFor(2));
  assert.equal(fresh.lookup([1, 2, 3]).matched, 2, 'the module is still usable');
  await fresh.close();
});

// ---- hostile blobs and store directories (RELIABILITY.md, "Hostile input") ----

/**
 * Writes, sparse, a valid RLXKV001 blob of `bytes` bytes (one token, one
 * layer whose K block holds every value, an empty V block) under the name
 * a store gives it: its values are a hole, so it costs no disk.
 */
function sparseBlob(dir, fp, token, bytes) {
  const kValues = (bytes - 64) / 4; // head 32, a token, n_layers, two lengths
  const head = Buffer.alloc(56);
  head.write('RLXKV001', 0, 'latin1');
  head.writeBigUInt64LE(fp, 8);
  head.writeBigUInt64LE(1n, 16);
  head.writeBigUInt64LE(1n, 24);
  head.writeBigUInt64LE(BigInt(token), 32);
  head.writeBigUInt64LE(1n, 40);
  head.writeBigUInt64LE(BigInt(kValues), 48);
  const path = join(dir, rlx.pageName([token], fp));
  const fd = openSync(path, 'w');
  writeSync(fd, head, 0, 56, 0);
  ftruncateSync(fd, bytes); // the V length (0) and the values: the hole
  closeSync(fd);
  return path;
}

const GiB = 2 ** 30;
/** A restore report's counts, for an assertion's message. */
const full = (r) => JSON.stringify(Object.fromEntries(
  ['indexed', 'resident', 'stale', 'corrupt', 'skipped', 'bytes', 'foreign', 'tooLarge', 'unreadable'].map((k) => [k, r[k]])));
const cliPath = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
const cliRun = (...args) => spawnSync(process.execPath, [cliPath, ...args], { encoding: 'utf8', timeout: 120000 });

test('a small valid blob of ten million empty layers is refused with LIMIT everywhere, in moments', async () => {
  const layers = 10_000_000;
  const bytes = new Uint8Array(48 + 16 * layers); // 160 MB, every block empty
  bytes.set(new TextEncoder().encode('RLXKV001'));
  const dv = new DataView(bytes.buffer);
  dv.setBigUint64(8, 5n, true);
  dv.setBigUint64(16, 1n, true);
  dv.setBigUint64(24, 1n, true);
  dv.setBigUint64(40, BigInt(layers), true);
  assert.throws(() => rlx.decodeEntry(bytes), (e) => e instanceof RlxkvError && e.code === 'LIMIT');
  const cache = rlx.createCache({ capBytes: 1 << 20, fingerprint: 5n });
  await assert.rejects(cache.importBlob(bytes), (e) => e instanceof RlxkvError && e.code === 'LIMIT');
  await cache.close();

  const dir = tempDir();
  const file = join(dir, rlx.pageName([0], 5n));
  writeFileSync(file, bytes);
  const restored = await rlx.openCache({ capBytes: 1 << 20, fingerprint: 5n, storage: 'fs', path: dir });
  assert.deepEqual([restored.restoreReport.indexed, restored.restoreReport.tooLarge], [0, 1]);
  assert.equal(await restored.match([0, 1]), null);
  assert.equal(restored.listBlobs()[0].status, 'too-large');
  await restored.close();
  const r = cliRun('inspect', file);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /10000000 layers, more than the 4096/);
  const ls = JSON.parse(cliRun('ls', '--json', dir).stdout);
  assert.equal(ls.blobs[0].status, 'too-large');
  assert.equal(cliRun('prune', dir, '--fingerprint', '5').status, 0);
  assert.ok(existsSync(file), 'never pruned as corrupt');
});

test('a valid blob over 2 GiB is listed valid from its header, never pruned as corrupt; only a budget removes it', () => {
  // A cache reads such a blob straight into its entry (store/direct-read.js), so
  // it is no more too large for a store than for the process.
  const dir = tempDir();
  const big = sparseBlob(dir, 0x66n, 1, 2.5 * GiB);
  sparseBlob(dir, 0x66n, 2, 1024);
  const ls = JSON.parse(cliRun('ls', '--json', '--fingerprint', '66', dir).stdout);
  const byName = Object.fromEntries(ls.blobs.map((b) => [b.name, b]));
  const b = byName[basename(big)];
  assert.deepEqual([b.status, b.bytes, b.tokens, b.fingerprint], ['ok', 2.5 * GiB, 1, '0x0000000000000066']);
  assert.equal(ls.totals.ok, 2);
  const r = cliRun('prune', dir, '--fingerprint', '66');
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /removed 0 blobs/);
  assert.ok(existsSync(big));
  assert.match(cliRun('prune', dir, '--fingerprint', '66', '--max-bytes', '1G').stdout, /removed \d+ blobs? /);
  assert.ok(!existsSync(big), 'over the budget alone');
});

test('byte budgets and reports are 64-bit: 6 GiB of blobs against a 5 GiB budget', () => {
  const dir = tempDir();
  const paths = [1, 2, 3, 4].map((t) => sparseBlob(dir, 0x77n, t, 1.5 * GiB));
  paths.forEach((p, i) => utimesSync(p, new Date(1e12 + i * 1e6), new Date(1e12 + i * 1e6))); // oldest first
  const ls = JSON.parse(cliRun('ls', '--json', '--fingerprint', '77', dir).stdout);
  assert.equal(ls.totals.bytes, 6 * GiB);
  assert.equal(ls.totals.ok, 4);
  const r = cliRun('prune', dir, '--fingerprint', '77', '--max-bytes', '5G', '--dry-run');
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`would remove 1 blob \\(${1.5 * GiB} bytes\\); kept 3 \\(${4.5 * GiB} bytes\\)`));
  const real = cliRun('prune', dir, '--fingerprint', '77', '--max-bytes', '5G');
  assert.match(real.stdout, /removed 1 blob /);
  assert.deepEqual(paths.map((p) => existsSync(p)), [false, true, true, true], 'the least recently used went');
});

test('blobs that do not fit in memory are skipped and counted, not a failed open', async () => {
  const dir = tempDir();
  for (let t = 1; t <= 4; t++) sparseBlob(dir, 0x88n, t, GiB - 4096);
  // The case as reported: capBytes 3.5e9 and four 1 GiB blobs. Opening
  // reads the index only: all four are known, none is read.
  let cache = await rlx.openCache({ capBytes: 3.5e9, fingerprint: 0x88n, storage: 'fs', path: dir, newInstance: true });
  let r = cache.restoreReport;
  assert.deepEqual([r.indexed, r.resident, r.tooLarge, r.corrupt], [4, 0, 0, 0], full(r));
  assert.equal(cache.stats.storedEntries, 4);
  await cache.close({ flush: false });
  // preload reads what capBytes admits, most recent first, and stops there.
  cache = await rlx.openCache({ capBytes: 2.5 * GiB, fingerprint: 0x88n, storage: 'fs', path: dir, newInstance: true, preload: true });
  r = cache.restoreReport;
  assert.deepEqual([r.indexed, r.resident], [4, 2], full(r));
  assert.equal(cache.stats.storedEntries, 2);
  await cache.close({ flush: false });
});
