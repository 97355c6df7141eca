// Every public function against wrong types, wrong lengths, huge values,
// detached buffers, and a closed cache: a clear TypeError / RangeError /
// RlxkvError each time, the cache unchanged, the module still usable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import init, { RlxkvError } from 'rlxkv';
import { kvFor } from './helpers.js';

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
  await expectClearAsync(() => rlx.openCache({ capBytes: 10, storage: 'fs', path: '/proc/version/x' }), 'unusable directory');
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
