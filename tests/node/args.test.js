// Wrong input: a clear TypeError/RangeError naming the argument, and the
// cache exactly as it was.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import init from 'rlxkv';
import { kvFor } from './helpers.js';

const rlx = await init();

test('bad arguments are refused and leave the cache unchanged', () => {
  const cache = rlx.createCache({ capBytes: 1 << 20 });
  cache.insert([1, 2, 3], kvFor(3));
  const before = { entries: cache.entries(), stats: cache.stats };
  const kv = kvFor(2);
  const detached = new Float32Array(8);
  structuredClone(detached.buffer, { transfer: [detached.buffer] });

  const cases = [
    [() => cache.insert([1, 2.5], kv), RangeError, /tokens\[1\]/],
    [() => cache.insert([1, -1], kv), RangeError, /tokens\[1\]/],
    [() => cache.insert([1, 2 ** 32], kv), RangeError, /tokens\[1\]/],
    [() => cache.insert([1, '2'], kv), TypeError, /tokens\[1\]/],
    [() => cache.insert('12', kv), TypeError, /tokens/],
    [() => cache.insert([1, 2], { k: [new Float64Array(8)], v: [new Float32Array(8)] }), TypeError, /k\[0\]/],
    [() => cache.insert([1, 2], { k: [new Float32Array(8)], v: [] }), RangeError, /layers/],
    [() => cache.insert([1, 2], null), TypeError, /kv/],
    [() => cache.insert([1, 2], { k: [detached], v: [new Float32Array(8)] }), TypeError, /detached/],
    [() => cache.lookup(42), TypeError, /tokens/],
    [() => cache.lookup([1], { maxMatched: -1 }), RangeError, /maxMatched/],
    [() => cache.pin([1, 1.5]), RangeError, /tokens/],
    [() => { cache.capBytes = -5; }, RangeError, /capBytes/],
    [() => rlx.createCache({ capBytes: '1' }), TypeError, /capBytes/],
    [() => rlx.createCache({ capBytes: 10, fingerprint: -1 }), RangeError, /fingerprint/],
    [() => rlx.createCache({ capBytes: 10, fingerprint: 1n << 64n }), RangeError, /fingerprint/],
    [() => rlx.encodeEntry({ tokens: [1], k: [1], v: [] }, 0n), TypeError, /k\[0\]/],
    [() => rlx.decodeEntry('RLXKV001'), TypeError, /bytes/],
  ];
  for (const [fn, type, message] of cases) {
    assert.throws(fn, (e) => e instanceof type && message.test(e.message), String(fn));
  }
  assert.deepEqual(cache.entries(), before.entries);
  assert.deepEqual(cache.stats, before.stats);
  assert.ok(cache.lookup([1, 2, 3, 4]), 'still answers');
  cache.close();
});

test('a closed cache refuses every call; the module stays usable', async () => {
  const cache = rlx.createCache({ capBytes: 1 << 20 });
  await cache.close();
  assert.equal(cache.closed, true);
  for (const fn of [() => cache.insert([1], kvFor(1)), () => cache.lookup([1]), () => cache.stats, () => cache.pin([1])]) {
    assert.throws(fn, (e) => e instanceof TypeError && /closed/.test(e.message));
  }
  await cache.close(); // twice is fine
  const again = rlx.createCache({ capBytes: 1 << 20 });
  again.insert([1], kvFor(1));
  assert.ok(again.lookup([1, 2]));
  again.close();
});
