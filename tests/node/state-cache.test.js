// A cache of a model that keeps state as well as KV (conv or recurrent
// layers: LFM2, Qwen3.5): a hit restores a prefix only where the state was
// taken after exactly its tokens, with the KV of its attention layers, in
// memory, after a restart, and never one without the other.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import 'fake-indexeddb/auto';
import init from 'rlxkv';
import { modelKv, tempDir } from './helpers.js';

const rlx = await init();
// Two attention layers (model layers 1 and 3) and two conv layers' state.
const layout = {
  order: 'head-major', heads: 2, headDim: 4, layers: 2, attention: [1, 3],
  state: [{ name: 'past_conv.0', shape: [8, 3] }, { name: 'past_conv.2', shape: [8, 3] }],
};
const STATE_VALUES = 24;

const system = Array.from({ length: 40 }, (_, i) => 500 + i);
const turn = (k) => Array.from({ length: 10 }, (_, i) => k * 100 + i);
const prompt = (turns) => [...system, ...Array.from({ length: turns }, (_, k) => turn(k + 1)).flat()];

/** The state a model holds after exactly `tokens`: a function of all of them, as a conv's or a recurrence's is. */
function stateAfter(tokens) {
  let h = 2166136261;
  for (const t of tokens) h = Math.imul(h ^ t, 16777619) >>> 0;
  return layout.state.map((_, s) => Float32Array.from({ length: STATE_VALUES }, (_, i) => ((h >>> 4) % 100000) + s + i / 32));
}

/** What the model hands back after running `tokens`: its attention layers' KV and its state. */
const modelCache = (tokens) => ({ ...modelKv(tokens, layout), state: stateAfter(tokens) });

function assertRestores(hit, tokens) {
  assert.equal(hit.matched, tokens.length);
  assert.deepEqual(hit.k, modelKv(tokens, layout).k);
  assert.deepEqual(hit.v, modelKv(tokens, layout).v);
  assert.deepEqual(hit.state, stateAfter(tokens), 'the state taken after exactly the matched tokens');
}

test('a hit restores the KV and the state taken after exactly its tokens', async () => {
  const cache = await rlx.openCache({ capBytes: 1 << 20, fingerprint: 1n, layout, storage: 'none' });
  assert.deepEqual(cache.layout.attention, [1, 3]);
  cache.insert(prompt(1), modelCache(prompt(1)));
  cache.insert(prompt(2), modelCache(prompt(2)));
  // The next turn's prompt: everything up to the last checkpoint is reused.
  const next = [...prompt(2), ...turn(3)];
  assertRestores(cache.lookup(next, { partial: true }), prompt(2));
  // A prompt edited inside turn 2 reuses only up to the checkpoint before the edit,
  // though the KV alone would serve 5 more tokens.
  const edited = [...prompt(1), ...turn(2).slice(0, 5), 9999];
  assertRestores(cache.lookup(edited, { partial: true }), prompt(1));
  // At most maxMatched: the checkpoint at or before it.
  assertRestores(cache.lookup(next, { partial: true, maxMatched: prompt(2).length - 1 }), prompt(1));
  assert.equal(cache.lookup([...system.slice(0, 20), 1], { partial: true }), null, 'no checkpoint inside the system prompt');
  assert.equal(cache.stats.state.entries, 2);
  assert.equal(cache.has(prompt(1)), true);
  await cache.close();
});

for (const storage of ['fs', 'idb']) {
  test(`after a restart (${storage}), the KV and the state come back from storage`, async () => {
    const path = storage === 'fs' ? tempDir('state-cache') : `/state-cache-${Date.now()}`;
    const opts = { capBytes: 1 << 20, fingerprint: 2n, layout, storage, path };
    let cache = await rlx.openCache(opts);
    cache.insert(prompt(1), modelCache(prompt(1)));
    cache.insert(prompt(2), modelCache(prompt(2)));
    await cache.close();

    cache = await rlx.openCache(opts);
    assert.equal(cache.restoreReport.indexed, 2);
    assert.equal(cache.restoreReport.state.indexed, 2);
    assertRestores(await cache.match([...prompt(2), ...turn(3)], { partial: true }), prompt(2));
    assertRestores(await cache.match([...prompt(1), 7], { partial: true }), prompt(1));
    await cache.close();

    // Another state layout (a model with other conv sizes): its checkpoints
    // are not this store's, so nothing is restored, and nothing is lost.
    const other = { ...layout, state: [{ name: 'past_conv.0', shape: [8, 4] }, { name: 'past_conv.2', shape: [8, 4] }] };
    cache = await rlx.openCache({ ...opts, layout: other });
    assert.equal(await cache.match([...prompt(2), 1], { partial: true }), null);
    await cache.close();
    cache = await rlx.openCache(opts);
    assertRestores(await cache.match([...prompt(2), 1], { partial: true }), prompt(2));
    await cache.close();

    // deleteStore takes the checkpoints too.
    assert.deepEqual(await rlx.deleteStore({ storage, path }), { removed: 4 });
    if (storage === 'fs') assert.equal(existsSync(path), false);
    cache = await rlx.openCache(opts);
    assert.equal(cache.restoreReport.state.indexed, 0);
    await cache.close();
  });
}

test('KV is never restored without its state, nor state without its KV', async () => {
  const kvBytes = (n) => n * 2 * 2 * 2 * 4 * 4;
  // Room for every checkpoint, and for the KV of the first prompt only:
  // turn 2 cannot hang below it, so it is held whole and the first goes;
  // then turn 3 likewise (the newest entry is kept, alone). Every
  // checkpoint stays, and each restores over the KV of its own tokens.
  let cache = await rlx.openCache({ capBytes: kvBytes(prompt(1).length) + 4096, stateCapBytes: 4096, fingerprint: 3n, layout, storage: 'none' });
  for (const k of [1, 2, 3]) cache.insert(prompt(k), modelCache(prompt(k)));
  assert.equal(cache.stats.state.entries, 3);
  assert.equal(cache.size, 1);
  assertRestores(cache.lookup([...prompt(3), 1], { partial: true }), prompt(3));
  assertRestores(cache.lookup([...prompt(1), 1], { partial: true }), prompt(1)); // turn 3's KV cut, with turn 1's state
  await cache.close();

  // Room for all the KV, and for one checkpoint: the last one taken stays.
  cache = await rlx.openCache({ capBytes: (1 << 20) + 200, stateCapBytes: 200, fingerprint: 3n, layout, storage: 'none' });
  for (const k of [1, 2, 3]) cache.insert(prompt(k), modelCache(prompt(k)));
  assert.equal(cache.stats.state.entries, 1);
  assert.equal(cache.lookup([...prompt(2), 1], { partial: true }), null, 'the KV of prompt(2) is held, its state is not');
  assertRestores(cache.lookup([...prompt(3), 1], { partial: true }), prompt(3));
  await cache.close();
});

test('pin holds the KV and the state of a prompt', async () => {
  const cache = await rlx.openCache({ capBytes: 1 << 20, fingerprint: 4n, layout, storage: 'none' });
  cache.insert(system, modelCache(system));
  cache.pin(system);
  assert.equal(cache.isPinned(system), true);
  cache.capBytes = 0; // nothing unpinned fits
  assertRestores(cache.lookup([...system, 1], { partial: true }), system);
  cache.unpin(system);
  cache.capBytes = 0;
  assert.equal(cache.lookup([...system, 1], { partial: true }), null);
  await cache.close();
});

test('bad state is refused before anything is stored', async () => {
  const cache = await rlx.openCache({ capBytes: 1 << 20, fingerprint: 5n, layout, storage: 'none' });
  const { k, v } = modelKv(system, layout);
  assert.throws(() => cache.insert(system, { k, v }), /kv.state must be an array/);
  assert.throws(() => cache.insert(system, { k, v, state: [new Float32Array(STATE_VALUES)] }), /2 tensors/);
  assert.throws(() => cache.insert(system, { k, v, state: [new Float32Array(STATE_VALUES), new Float32Array(5)] }), /past_conv\.2.*needs 24/);
  assert.equal(cache.size, 0);
  assert.equal(cache.stats.state.entries, 0);
  // A blob holds KV only: no prefix of it could be restored.
  await assert.rejects(cache.importBlob(rlx.encodeEntry({ tokens: system, ...modelKv(system, layout) }, 5n)), { code: 'SHAPE' });
  await cache.close();
  assert.throws(() => rlx.createCache({ capBytes: 1 << 20, layout }), /openCache/);
  await assert.rejects(rlx.openCache({ capBytes: 1 << 20, layout: { ...layout, state: [{ name: 'x', shape: [0] }] }, storage: 'none' }), RangeError);
  await assert.rejects(rlx.openCache({ capBytes: 100, stateCapBytes: 200, layout, storage: 'none' }), /stateCapBytes/);
});
