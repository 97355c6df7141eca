// rlxkv/transformers with a real ONNX decoder (the demo transformer,
// scripts/make-model.mjs) on transformers.js 4.x and 3.x over
// onnxruntime-node: greedy generation with the KV restored by rlxkv after a
// process restart gives exactly the tokens of a cold run, for f32 and f16
// KV. Each version runs in child processes (two onnxruntime-node builds
// cannot share one), two per case: before and after the restart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { layoutOf } from 'rlxkv/transformers';
import { modelsDir } from './onnx-model-run.js';
import { tempDir } from './helpers.js';

const child = fileURLToPath(new URL('transformers-child.mjs', import.meta.url));
const models = modelsDir();

function run(version, phase, store, id) {
  const out = execFileSync(process.execPath, [child, version, phase, store, models, id], { encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').at(-1));
}

test('layoutOf reads heads and head size from a model config', () => {
  assert.deepEqual(layoutOf({ num_hidden_layers: 4, num_attention_heads: 4, num_key_value_heads: 4, hidden_size: 128, head_dim: 32 }),
    { order: 'head-major', heads: 4, headDim: 32, layers: 4 });
  // Grouped-query attention without head_dim (Llama-3.2-1B's numbers).
  assert.deepEqual(layoutOf({ num_hidden_layers: 16, num_attention_heads: 32, num_key_value_heads: 8, hidden_size: 2048 }),
    { order: 'head-major', heads: 8, headDim: 64, layers: 16 });
  assert.throws(() => layoutOf({ num_attention_heads: 3, hidden_size: 100 }), RangeError);
});

for (const version of ['v4', 'v3']) {
  for (const [id, dtype] of [['rlxkv-demo', 'f32'], ['rlxkv-demo-f16kv', 'f16']]) {
    test(`${version}, ${dtype} KV: a restarted chat app reuses its cached KV and generates exactly the cold tokens`, (t) => {
      const store = tempDir('rlxkv-tjs-');
      const cold = run(version, 'cold', store, id);
      t.diagnostic(`transformers.js ${cold.version}`);
      assert.equal(cold.restored, 0);
      assert.equal(cold.turn.reused, 0, 'nothing cached on a first visit');
      assert.deepEqual(cold.turn.tokens, cold.expected);
      // One entry: the prompt and the reply but its last token, as generate's cache covers.
      assert.deepEqual(cold.entries, [{ tokens: cold.turn.prompt + cold.turn.tokens.length - 1, dtype }]);

      const warm = run(version, 'warm', store, id);
      assert.equal(warm.restored, 1, 'the entry came back from the store');
      assert.deepEqual(warm.entriesAtOpen, cold.entries);
      // The same prompt: all but its last token restored (a restore never covers the whole prompt).
      assert.equal(warm.again.reused, warm.again.prompt - 1);
      assert.equal(warm.again.prefilled, 1);
      assert.deepEqual(warm.again.tokens, cold.expected);
      assert.deepEqual(warm.againExpected, cold.expected);
      // A second user turn reuses the whole first turn.
      assert.equal(warm.second.reused, warm.again.sequences.length - 1);
      assert.deepEqual(warm.second.tokens, warm.secondExpected);
      // An edited system prompt reuses exactly its unchanged prefix.
      assert.ok(warm.editedAt > 10);
      assert.equal(warm.edited.reused, warm.editedAt);
      assert.deepEqual(warm.edited.tokens, warm.editedExpected);
      // Every entry keeps the model's dtype; superseded turns were replaced.
      assert.ok(warm.entries.every((e) => e.dtype === dtype));
      assert.equal(warm.entries.length, 2, JSON.stringify(warm.entries));
      assert.match(warm.misShaped, /^RangeError: kv\.k\[0\] has \d+ values; the head-major layout needs 8 heads/);
      assert.equal(warm.misShapedEntries, 0);
    });
  }
}
