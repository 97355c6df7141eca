// rlxkv/transformers in Chromium: transformers.js (4.3.x and 3.8.x, served
// from node_modules) on onnxruntime-web's wasm backend runs the demo
// transformer exported to ONNX (build/models/, f32 and f16 KV). A first
// visit generates greedily into an empty cache, flushed to IndexedDB; after
// a page reload (4.x) or a browser restart on the same profile (3.x) the
// same prompt is restored from IndexedDB and gives exactly the cold tokens,
// and a second user turn reuses the whole first turn. So do models with
// state (LFM2-like, Qwen3.5-like, Granite-4.0-H-like) and sliding windows (Gemma3-like) on 4.x,
// whose state checkpoints come back from IndexedDB too, and an edited
// system prompt reuses up to the checkpoint before the edit. Every request
// to another origin is refused and fails the test.
import assert from 'node:assert/strict';
import { browserTest, call, localOnly } from './helpers.js';

const PAGE = '/tests/browser/pages/transformers.html';
const MODELS = [['rlxkv-demo', 'f32'], ['rlxkv-demo-f16kv', 'f16']];
const VERSIONS = [
  { v: '4', major: '4.3.', again: 'reload' },
  { v: '3', major: '3.8.', again: 'restart' },
];

/** T[fn](id) in the page, its failure kept as { error } so the other cases still run. */
const attempt = (page, fn, id) => call(page, fn, id).catch((err) => ({ error: String(err.message).split('\n')[0] }));

for (const { v, major, again } of VERSIONS) {
  browserTest(`transformers.js ${v}.x: warm tokens after a ${again} equal the cold run's, f32 and f16 KV`, async (t, session) => {
    const outside = [];
    await localOnly(session, outside);
    let page = await session.open(`${PAGE}?v=${v}`);
    const version = await page.evaluate(() => window.T.tjsVersion);
    assert.ok(version.startsWith(major), `transformers.js ${version}`);
    t.diagnostic(`transformers.js ${version}, Float16Array: ${await page.evaluate(() => window.T.float16Array)}`);

    const cold = {}, warm = {};
    for (const [id] of MODELS) cold[id] = await attempt(page, 'cold', id);
    if (again === 'reload') {
      await session.reload(page);
    } else {
      await session.restart();
      await localOnly(session, outside);
      page = await session.open(`${PAGE}?v=${v}`);
    }
    for (const [id] of MODELS) warm[id] = await attempt(page, 'warm', id);
    assert.deepEqual(outside, [], 'nothing requested from other origins');

    for (const [id, dtype] of MODELS) {
      await t.test(`${dtype} KV (${id})`, () => {
        const c = cold[id], w = warm[id];
        assert.equal(c.error, undefined, `cold run: ${c.error}`);
        assert.equal(c.storage, 'idb');
        assert.equal(c.restored, 0);
        assert.equal(c.turn.reused, 0, 'nothing cached on a first visit');
        assert.deepEqual(c.turn.tokens, c.expected, 'cachedGenerate = generate on a miss');
        assert.deepEqual(c.entries, [{ tokens: c.turn.prompt + c.turn.tokens.length - 1, dtype }]);

        assert.equal(w.error, undefined, `warm run: ${w.error}`);
        assert.equal(w.storage, 'idb');
        assert.equal(w.restored, 1, 'the entry came back from IndexedDB');
        assert.deepEqual(w.entriesAtOpen, c.entries);
        assert.ok(w.again.reused > 0);
        assert.equal(w.again.reused, w.again.prompt - 1, 'all but the last prompt token restored');
        assert.deepEqual(w.again.tokens, c.expected, 'warm tokens = cold tokens');
        assert.deepEqual(w.againExpected, c.expected);
        // The next user turn: the first turn's prompt and reply are reused.
        assert.equal(w.second.reused, w.again.sequences.length - 1);
        assert.deepEqual(w.second.tokens, w.secondExpected);
        assert.ok(w.entries.every((e) => e.dtype === dtype), JSON.stringify(w.entries));
      });
    }
  }, { timeout: 120_000 });
}

/** Models that are not plain decoders (scripts/make_onnx_model.py --kind), and what a hit restores. */
const STATE_MODELS = [
  ['rlxkv-lfm2', { state: true }], ['rlxkv-lfm2-f16kv', { state: true }],
  // Only the prompt's KV and state are kept (transformers.js 4.3 misplaces a reply's positions).
  ['rlxkv-qwen3_5', { state: true, promptOnly: true }], ['rlxkv-qwen3_5-f16kv', { state: true, promptOnly: true }],
  ['rlxkv-gemma3', { state: false }],
  ['rlxkv-granite4h', { state: true }], ['rlxkv-granite4h-f16kv', { state: true }],
];
const EVERY = 16; // the page's checkpointEvery

browserTest('transformers.js 4.x, models with state or sliding windows: warm tokens after a reload equal the cold run\'s', async (t, session) => {
  const outside = [];
  await localOnly(session, outside);
  const page = await session.open(`${PAGE}?v=4`);
  const cold = {}, warm = {};
  for (const [id] of STATE_MODELS) cold[id] = await attempt(page, 'cold', id);
  await session.reload(page);
  for (const [id] of STATE_MODELS) warm[id] = await attempt(page, 'warm', id);
  assert.deepEqual(outside, [], 'nothing requested from other origins');

  for (const [id, { state, promptOnly }] of STATE_MODELS) {
    await t.test(id, () => {
      const c = cold[id], w = warm[id];
      assert.equal(c.error, undefined, `cold run: ${c.error}`);
      assert.deepEqual(c.turn.tokens, c.expected);
      assert.equal(c.checkpoints, state ? Math.floor((c.turn.prompt - 1) / EVERY) + 1 : null);
      assert.equal(w.error, undefined, `warm run: ${w.error}`);
      assert.equal(w.restoredCheckpoints, state ? c.checkpoints : null, 'the checkpoints came back from IndexedDB');
      const n = w.again.prompt;
      assert.equal(w.again.reused, state && !promptOnly ? Math.floor((n - 1) / EVERY) * EVERY : n - 1);
      assert.deepEqual(w.again.tokens, c.expected, 'warm tokens = cold tokens');
      assert.equal(w.second.reused, promptOnly ? n - 1 : w.again.sequences.length - 1);
      assert.deepEqual(w.second.tokens, w.secondExpected);
      assert.equal(w.edited.reused, state ? Math.floor(w.editedAt / EVERY) * EVERY : w.editedAt);
      assert.deepEqual(w.edited.tokens, w.editedExpected);
    });
  }
}, { timeout: 120_000 });
