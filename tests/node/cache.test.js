// The cache's rules, through the public entry, as an app would use them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import init from 'rlxkv';
import { kvFor, kvBytes, range } from './helpers.js';

const rlx = await init();

test('lookup returns the longest cached prefix, as copies by default', () => {
  const cache = rlx.createCache({ capBytes: 1 << 20, fingerprint: 7n });
  // As a model's: the KV of [1, 2] is the same in both.
  const short = kvFor(2, { seed: 1 });
  const long = kvFor(4, { seed: 1 });
  cache.insert([1, 2], short);
  cache.insert(new Uint32Array([1, 2, 3, 4]), long);

  const hit = cache.lookup([1, 2, 3, 4, 5, 6]);
  assert.equal(hit.matched, 4);
  assert.deepEqual([...hit.tokens], [1, 2, 3, 4]);
  assert.deepEqual(hit.k, long.k);
  assert.deepEqual(hit.v, long.v);
  hit.k[0][0] = -1; // a copy: the cache is not touched
  assert.equal(cache.lookup([1, 2, 3, 4]).k[0][0], long.k[0][0]);

  assert.equal(cache.lookup([1, 2, 9]).matched, 2);
  assert.equal(cache.lookup([5, 6]), null);
  assert.equal(cache.lookup([1]), null, 'an entry longer than the query never matches');
  assert.equal(cache.lookup([]), null);
  cache.close();
});

test('LRU eviction by bytes keeps the recently used', () => {
  const kv = kvFor(4, { layers: 1, width: 2 }); // 64 bytes
  assert.equal(kvBytes(kv), 64);
  const cache = rlx.createCache({ capBytes: 140 });
  cache.insert([1, 1, 1, 1], kv);
  cache.insert([2, 2, 2, 2], kv);
  assert.ok(cache.lookup([1, 1, 1, 1])); // 2 is now least recent
  cache.insert([3, 3, 3, 3], kv);
  assert.ok(cache.lookup([1, 1, 1, 1]));
  assert.equal(cache.lookup([2, 2, 2, 2]), null);
  assert.ok(cache.lookup([3, 3, 3, 3]));
  assert.equal(cache.size, 2);
  assert.equal(cache.bytes, 128);
  assert.equal(cache.stats.evictions, 1);
  cache.close();
});

test('an identical prefix is replaced, and an oversized entry is kept alone', () => {
  const cache = rlx.createCache({ capBytes: 100 });
  cache.insert([9, 9], kvFor(2, { layers: 1, width: 2, seed: 1 }));
  cache.insert([9, 9], kvFor(2, { layers: 1, width: 3, seed: 5 }));
  assert.equal(cache.size, 1);
  assert.equal(cache.bytes, 48);
  assert.equal(cache.lookup([9, 9]).k[0][0], 5000 + 100);
  const big = kvFor(10, { layers: 2, width: 4 }); // 640 bytes > cap
  cache.insert([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], big);
  assert.equal(cache.size, 1);
  assert.equal(cache.bytes, 640);
  cache.close();
});

test('capBytes 0 disables the cache', () => {
  const cache = rlx.createCache({ capBytes: 0 });
  cache.insert([1, 2], kvFor(2));
  assert.equal(cache.size, 0);
  assert.equal(cache.lookup([1, 2, 3]), null);
  cache.close();
});

test('a pinned system prompt is never evicted; no room beside it is an error', () => {
  const kv = kvFor(4, { layers: 1, width: 2 }); // 64 bytes
  const cache = rlx.createCache({ capBytes: 140 });
  cache.insert([7, 7, 7, 7], kv);
  cache.pin([7, 7, 7, 7]);
  for (let i = 0; i < 5; i++) cache.insert([i, i, i, i], kv);
  assert.ok(cache.lookup([7, 7, 7, 7, 1]));
  assert.equal(cache.stats.pinnedEntries, 1);

  const before = cache.entries();
  const huge = kvFor(10, { layers: 1, width: 2 }); // 160 bytes: cannot sit beside 64 pinned
  assert.throws(() => cache.insert(range(100, 10), huge), (e) => e instanceof rlx.RlxkvError && e.code === 'NOSPACE');
  assert.deepEqual(cache.entries(), before, 'a refused insert changes nothing');

  cache.unpin([7, 7, 7, 7]);
  cache.insert(range(100, 10), huge);
  assert.equal(cache.lookup([7, 7, 7, 7]), null);
  assert.throws(() => cache.pin([1, 2, 3]), (e) => e.code === 'NOTFOUND');
  cache.close();
});

test('partial reuse trims a longer row-major entry to the common prefix', () => {
  const cache = rlx.createCache({ capBytes: 1 << 20 });
  const kv = kvFor(6, { layers: 2, width: 4 });
  cache.insert([1, 2, 3, 4, 5, 6], kv);
  assert.equal(cache.lookup([1, 2, 3, 9]), null, 'plain lookup needs the whole entry');

  const hit = cache.lookup([1, 2, 3, 9], { partial: true });
  assert.equal(hit.matched, 3);
  assert.deepEqual([...hit.tokens], [1, 2, 3]);
  assert.deepEqual(hit.k[1], kv.k[1].subarray(0, 3 * 4));
  assert.deepEqual(hit.v[0], kv.v[0].subarray(0, 3 * 4));

  const capped = cache.lookup([1, 2, 3, 4, 5, 6], { partial: true, maxMatched: 5 });
  assert.equal(capped.matched, 5, 'one token left to prefill');

  cache.insert([8, 8, 8], { k: [new Float32Array(4)], v: [new Float32Array(4)] }); // 4 % 3 != 0
  assert.equal(cache.lookup([8, 8, 1], { partial: true }), null, 'not row-major: not trimmed');
  assert.equal(cache.stats.tokensReused, 3 + 5);
  cache.close();
});

test('view hits are zero-copy and survive memory growth', () => {
  const cache = rlx.createCache({ capBytes: 1 << 30 });
  const kv = kvFor(64, { layers: 2, width: 16 });
  cache.insert(range(0, 64), kv);
  const hit = cache.lookup(range(0, 65), { view: true });
  assert.deepEqual(hit.k[0], kv.k[0]);
  const first = hit.k[0];
  // Grow the wasm memory by inserting a large entry elsewhere... without
  // changing the viewed entry (growth alone must not break the view).
  const other = rlx.createCache({ capBytes: 1 << 30 });
  other.insert([1], { k: [new Float32Array(16 << 20)], v: [new Float32Array(1)] });
  assert.equal(first.length === 0 || first.buffer !== hit.k[0].buffer, true, 'the view was re-derived');
  assert.deepEqual(hit.k[0], kv.k[0]);
  assert.deepEqual(hit.v[1], kv.v[1]);
  other.close();
  cache.close();
});

test('stats count hits, misses, evictions and reused tokens', () => {
  const cache = rlx.createCache({ capBytes: 1 << 20, fingerprint: 3 });
  cache.insert([1, 2, 3], kvFor(3));
  cache.lookup([1, 2, 3, 4]);
  cache.lookup([1, 2, 3, 4, 5]);
  cache.lookup([2]);
  const s = cache.stats;
  assert.equal(s.hits, 2);
  assert.equal(s.misses, 1);
  assert.equal(s.tokensReused, 6);
  assert.equal(s.entries, 1);
  assert.equal(cache.capBytes, 1 << 20);
  assert.equal(cache.fingerprint, 3n);
  cache.close();
});

test('lowering capBytes evicts to fit', () => {
  const cache = rlx.createCache({ capBytes: 1 << 20 });
  for (let i = 0; i < 10; i++) cache.insert([i], kvFor(1, { layers: 1, width: 2 })); // 16 bytes each
  cache.capBytes = 48;
  assert.equal(cache.size, 3);
  assert.deepEqual(cache.entries().map((e) => e.tokens[0]), [9, 8, 7]);
  cache.close();
});

test('100,000 insert/evict cycles leave the wasm heap bounded', () => {
  const cache = rlx.createCache({ capBytes: 64 * 1024 });
  const kv = kvFor(32, { layers: 2, width: 8 }); // 4 KiB
  const tokens = new Uint32Array(32);
  const warm = 2000;
  let heapAfterWarmup = 0;
  for (let i = 0; i < 100_000; i++) {
    tokens[0] = i; tokens[31] = i * 7;
    cache.insert(tokens, kv);
    if (i % 3 === 0) cache.lookup(tokens);
    if (i === warm) heapAfterWarmup = rlx.memoryBytes;
  }
  assert.equal(cache.size, 16);
  assert.equal(rlx.memoryBytes, heapAfterWarmup, 'no growth after warm-up');
  cache.close();
});
