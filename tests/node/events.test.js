// Seeing what the cache does, as an app's debug panel does: onEvent tells
// each hit and miss with its source, tokens, bytes and time; evictions;
// flushes; prunes; what another cache on the store changed; and a lookup
// that misses what only match() would read. match() takes an AbortSignal.
import 'fake-indexeddb/auto';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import init from 'rlxkv';
import { kvFor, range, tempDir } from './helpers.js';

const FP = 0xe7e7n;
const kv = (seed) => kvFor(8, { layers: 1, width: 64, seed });
const ENTRY_BYTES = 2 * 8 * 64 * 4;

test('onEvent tells hits from memory and from storage, misses, evictions, flushes and prunes', async () => {
  const dir = tempDir();
  const rlx = await init({ newInstance: true });
  const first = await rlx.openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'fs', path: dir });
  for (let i = 0; i < 3; i++) first.insert(range(1000 * i, 8), kv(i));
  await first.close();

  const events = [];
  const cache = await rlx.openCache({
    capBytes: 2 * ENTRY_BYTES, fingerprint: FP, storage: 'fs', path: dir, storageCapBytes: 1 << 20,
    onEvent: (e) => events.push(e),
  });
  const open = events.shift();
  assert.equal(open.type, 'open');
  assert.equal(open.indexed, 3);
  assert.equal(cache.restoreReport.indexed, 3);
  assert.equal(cache.restoreReport.loaded, 3, 'the deprecated name still reads');

  // A lookup misses what only a match reads: the event says so.
  assert.equal(cache.lookup(range(0, 10)), null);
  assert.deepEqual(events.shift(), { type: 'miss', tokens: 10, stored: 8 });
  await cache.match(range(0, 10));
  const fromStorage = events.shift();
  assert.deepEqual({ ...fromStorage, ms: 0 }, { type: 'hit', source: 'storage', tokens: 8, entryTokens: 8, bytes: ENTRY_BYTES, ms: 0 });
  assert.ok(fromStorage.ms >= 0);
  await cache.match(range(0, 10));
  assert.equal(events.shift().source, 'memory');
  await cache.match(range(1000, 8));
  await cache.match(range(2000, 8)); // a third entry in a cache of two: one evicted (stays stored)
  assert.deepEqual(events.filter((e) => e.type !== 'hit').map((e) => [e.type, e.entries]), [['evict', 1]]);
  events.length = 0;
  assert.equal(await cache.match(range(5000, 8)), null);
  assert.deepEqual(events.shift(), { type: 'miss', tokens: 8, stored: 0 });

  cache.insert(range(9000, 8), kv(9));
  await cache.flush();
  const flush = events.find((e) => e.type === 'flush');
  assert.deepEqual([flush.saved, flush.bytes > ENTRY_BYTES, flush.error], [1, true, null]);
  await cache.prune({ maxBytes: 0 });
  const prune = events.find((e) => e.type === 'prune');
  assert.equal(prune.reason, 'prune');
  assert.ok(prune.removed >= 1);
  await cache.close();
});

test('onEvent tells what another cache on the store saved and deleted', async () => {
  const path = '/events-heard';
  const rlx = await init({ newInstance: true });
  const events = [];
  const watcher = await rlx.openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path, watch: true, onEvent: (e) => events.push(e) });
  const writer = await rlx.openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'idb', path });
  writer.insert(range(0, 8), kv(0));
  await writer.flush();
  for (let i = 0; !events.some((e) => e.type === 'heard'); i++) {
    assert.ok(i < 500);
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.deepEqual(events.find((e) => e.type === 'heard'), { type: 'heard', saved: 1, removed: 0 });
  await Promise.all([writer.close(), watcher.close()]);
});

test('an observer that throws breaks nothing; onEvent must be a function', async () => {
  const rlx = await init({ newInstance: true });
  const cache = rlx.createCache({ capBytes: 1 << 20, onEvent: () => { throw new Error('the app\'s bug'); } });
  cache.insert(range(0, 8), kv(0));
  assert.equal(cache.lookup(range(0, 8)).matched, 8);
  assert.throws(() => rlx.createCache({ capBytes: 1, onEvent: 'log' }), /onEvent must be a function/);
});

test('match() with an aborted signal reads nothing and rejects with AbortError', async () => {
  const dir = tempDir();
  const rlx = await init({ newInstance: true });
  const first = await rlx.openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'fs', path: dir });
  first.insert(range(0, 8), kv(0));
  await first.close();
  const cache = await rlx.openCache({ capBytes: 1 << 20, fingerprint: FP, storage: 'fs', path: dir });
  const aborted = AbortSignal.abort();
  await assert.rejects(cache.match(range(0, 8), { signal: aborted }), (err) => err.name === 'AbortError');
  assert.equal(cache.size, 0, 'nothing read');
  await assert.rejects(cache.match(range(0, 8), { signal: 'stop' }), TypeError);
  assert.equal((await cache.match(range(0, 8), { signal: new AbortController().signal })).matched, 8);
  await cache.close();
});

test('importBlob tells its progress as the body arrives, and stops at an aborted signal', async () => {
  const rlx = await init({ newInstance: true });
  const cache = rlx.createCache({ capBytes: 1 << 20, fingerprint: FP });
  const blob = rlx.encodeEntry({ tokens: range(0, 8), ...kv(0) }, FP);
  const body = () => new ReadableStream({
    start(c) {
      for (let at = 0; at < blob.length; at += 1024) c.enqueue(blob.slice(at, at + 1024));
      c.close();
    },
  });
  const seen = [];
  const r = await cache.importBlob(new Response(body(), { headers: { 'content-length': String(blob.length) } }), { onProgress: (p) => seen.push(p) });
  assert.equal(r.tokens, 8);
  assert.deepEqual(seen.at(-1), { loaded: blob.length, total: blob.length });
  assert.ok(seen.length >= Math.ceil(blob.length / 1024), 'a report per piece');
  assert.ok(seen.every((p, i) => i === 0 || p.loaded > seen[i - 1].loaded));
  const stop = new AbortController();
  stop.abort();
  await assert.rejects(cache.importBlob(new Response(body()), { signal: stop.signal }), (err) => err.name === 'AbortError');
  cache.close();
});
