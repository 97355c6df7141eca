// Pages through the public API: a chat app's conversations over one system
// prompt hold each token's KV once, and hits give back exactly what a
// cache of whole entries would.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import init from 'rlxkv';
import { modelKv } from './helpers.js';

const rlx = await init();
const layout = { order: 'head-major', heads: 2, headDim: 4, layers: 2 };
const TOKEN_BYTES = 2 * 2 * 2 * 4 * 4; // K and V, 2 layers, 2 heads x 4 floats

const kvOf = (tokens, from = 0) => modelKv(tokens, layout, from);

const system = Array.from({ length: 50 }, (_, i) => 1000 + i);
const turn = (chat, k) => Array.from({ length: 10 }, (_, i) => chat * 10000 + k * 100 + i);
const conversation = (chat, turns) => [...system, ...Array.from({ length: turns }, (_, k) => turn(chat, k + 1)).flat()];

test('a chat app: every turn extends its conversation, and each token is held once', () => {
  const cache = rlx.createCache({ capBytes: 1 << 24, fingerprint: 1n, layout });
  assert.equal(cache.paging, true);
  cache.insert(system, kvOf(system));
  cache.pin(system);
  for (let k = 1; k <= 5; k++) {
    for (let chat = 1; chat <= 4; chat++) {
      const tokens = conversation(chat, k);
      const hit = cache.lookup(tokens, { partial: true, maxMatched: tokens.length - 1 });
      assert.equal(hit.matched, tokens.length - 10, 'the conversation so far');
      cache.insert(tokens, kvOf(tokens)); // the whole conversation's KV, as a model hands it back
    }
  }
  assert.equal(cache.size, 1 + 4 * 5);
  assert.equal(cache.bytes, (50 + 4 * 5 * 10) * TOKEN_BYTES, 'the unique tokens, once');
  for (let chat = 1; chat <= 4; chat++) {
    for (let k = 0; k <= 5; k++) {
      const tokens = conversation(chat, k);
      const hit = cache.lookup(tokens);
      assert.equal(hit.matched, tokens.length);
      assert.deepEqual(hit.k, kvOf(tokens).k);
      assert.deepEqual(hit.v, kvOf(tokens).v);
      // A partial hit cuts inside a turn.
      const cut = cache.lookup([...tokens.slice(0, -3), 7], { partial: true });
      assert.equal(cut.matched, tokens.length - 3);
      assert.deepEqual(cut.k, kvOf(tokens.slice(0, -3)).k);
    }
  }
  cache.close();
});

test('insert with start brings only the new tokens, and refuses a gap', () => {
  const cache = rlx.createCache({ capBytes: 1 << 24, layout });
  const one = conversation(1, 1), two = conversation(1, 2);
  cache.insert(one, kvOf(one));
  const hit = cache.lookup(two, { partial: true });
  cache.insert(two, kvOf(two, hit.matched), { start: hit.matched });
  assert.equal(cache.bytes, two.length * TOKEN_BYTES);
  assert.deepEqual(cache.lookup(two).k, kvOf(two).k);
  const three = conversation(1, 3);
  assert.throws(() => cache.insert(three, kvOf(three, two.length + 1), { start: two.length + 1 }), { code: 'NOTFOUND' });
  assert.equal(cache.has(three), false);
  assert.throws(() => cache.insert(three, kvOf(three, 5), { start: 6 }), RangeError, 'the blocks must hold tokens from start on');
  assert.throws(() => cache.insert(three, kvOf(three), { start: -1 }), RangeError);
  cache.close();
});

test('a hit over pages is gathered, once, into copies (a view only where it lies in one entry)', () => {
  const cache = rlx.createCache({ capBytes: 1 << 24, layout });
  const one = conversation(2, 1), two = conversation(2, 2);
  cache.insert(one, kvOf(one));
  cache.insert(two, kvOf(two));
  const whole = cache.lookup(one, { view: true }); // one entry's own values: viewed in place
  assert.equal(whole.view, true);
  assert.deepEqual([...whole.k[1]], [...kvOf(one).k[1]]);
  const copies = cache.lookup(two);
  assert.equal(copies.view, false);
  assert.deepEqual(copies.v, kvOf(two).v);
  const paged = cache.lookup(two, { view: true });
  assert.equal(paged.view, false);
  assert.deepEqual(paged.v, kvOf(two).v);
  assert.equal(whole.valid, true, 'a gather frees nothing');
  cache.close();
});

test('exportBlob assembles a path into the blob a cache of whole entries writes', () => {
  const paged = rlx.createCache({ capBytes: 1 << 24, fingerprint: 9n, layout });
  const whole = rlx.createCache({ capBytes: 1 << 24, fingerprint: 9n, layout });
  const two = conversation(3, 2);
  for (const tokens of [system, conversation(3, 1), two]) paged.insert(tokens, kvOf(tokens));
  whole.insert(two, kvOf(two));
  assert.deepEqual(paged.exportBlob(two), whole.exportBlob(two));
  const fresh = rlx.createCache({ capBytes: 1 << 24, fingerprint: 9n, layout });
  return fresh.importBlob(paged.exportBlob(two)).then(() => {
    assert.deepEqual(fresh.lookup(two).k, kvOf(two).k);
    for (const c of [paged, whole, fresh]) c.close();
  });
});

test('removing the system prompt keeps the chats over it whole; eviction takes the coldest chat from its newest turn', () => {
  const cache = rlx.createCache({ capBytes: (50 + 2 * 20) * TOKEN_BYTES, layout });
  cache.insert(system, kvOf(system));
  for (const chat of [1, 2]) for (const k of [1, 2]) cache.insert(conversation(chat, k), kvOf(conversation(chat, k)));
  cache.remove(system);
  assert.equal(cache.has(system), false);
  assert.deepEqual(cache.lookup(conversation(2, 2)).k, kvOf(conversation(2, 2)).k); // chat 1 is now the coldest
  cache.insert(conversation(3, 1), kvOf(conversation(3, 1))); // over the cap
  assert.equal(cache.has(conversation(1, 2)), false);
  assert.equal(cache.has(conversation(1, 1)), true, 'its first turn is the next to go, not taken with the newest');
  assert.deepEqual(cache.lookup(conversation(2, 2)).k, kvOf(conversation(2, 2)).k);
  assert.deepEqual(cache.lookup(conversation(3, 1)).v, kvOf(conversation(3, 1)).v);
  cache.close();
});
