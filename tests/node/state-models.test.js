// cachedGenerate on models that are not plain decoders, through
// transformers.js 4.x over onnxruntime-node (the tiny models scripts/build.sh
// writes, scripts/make_onnx_model.py --kind): an LFM2-like model (conv
// layers' state, a full and a sliding attention layer), a Qwen3.5-like one
// (linear attention's conv and recurrent state, a full attention layer; rope
// indices), a Gemma3-like one (sliding and global layers) and a
// Granite-4.0-H-like one (Mamba-2 layers' conv and SSM state, a NoPE
// attention layer), f32 and f16 caches. Greedy tokens with the
// restored cache are exactly a cold run's after a restart; a second turn
// reuses the first; an edited system prompt reuses up to the last
// checkpoint before the edit; a cache of another model type's layout is
// refused. Each case runs in two child processes (state-models-child.mjs):
// before and after the restart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { modelsDir } from './onnx-model-run.js';
import { tempDir } from './helpers.js';

const child = fileURLToPath(new URL('state-models-child.mjs', import.meta.url));
const models = modelsDir();
const CHECKPOINT_EVERY = 16; // the child's

function run(phase, store, id) {
  const out = execFileSync(process.execPath, [child, phase, store, models, id], { encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').at(-1));
}

const MODELS = {
  'rlxkv-lfm2': { attention: [1, 3], state: ['past_conv.0', 'past_conv.2'] },
  // transformers.js 4.3 misplaces its replies' positions: only the prompt's KV and state are kept.
  'rlxkv-qwen3_5': { attention: [3], state: ['past_conv.0', 'past_recurrent.0', 'past_conv.1', 'past_recurrent.1', 'past_conv.2', 'past_recurrent.2'], promptOnly: true },
  'rlxkv-gemma3': { attention: undefined, state: undefined },
  'rlxkv-granite4h': { attention: [1], state: ['past_conv.0', 'past_ssm.0', 'past_conv.2', 'past_ssm.2', 'past_conv.3', 'past_ssm.3'] },
};

for (const id of Object.keys(MODELS).flatMap((m) => [m, `${m}-f16kv`])) {
  const model = MODELS[id.replace(/-f16kv$/, '')];
  const stateful = !!model.state;
  test(`${id}: restored ${stateful ? 'state and KV' : 'sliding and global KV'} give a cold run's tokens after a restart`, () => {
    const store = tempDir('state-models');
    const cold = run('cold', store, id);
    assert.equal(cold.turn.reused, 0);
    assert.deepEqual(cold.turn.tokens, cold.expected);
    if (stateful) {
      assert.deepEqual(cold.layout.attention, model.attention, 'the other layers have no KV');
      assert.deepEqual(cold.layout.state.map((s) => s.name), model.state);
      // A checkpoint at each multiple of 16 in the prompt, and one at the reply's end (or the prompt's).
      assert.equal(cold.state.entries, Math.floor((cold.turn.prompt - 1) / CHECKPOINT_EVERY) + 1);
    } else {
      assert.equal(cold.layout.state, undefined, 'whole-sequence KV only: a plain layout');
    }

    const warm = run('warm', store, id);
    assert.equal(warm.restored, stateful ? cold.state.entries : 1);
    if (stateful) assert.equal(warm.restoredState, cold.state.entries);
    // The same prompt again: a state model restores at the last checkpoint before its last token.
    const n = warm.again.prompt;
    assert.equal(warm.again.reused, stateful && !model.promptOnly ? Math.floor((n - 1) / CHECKPOINT_EVERY) * CHECKPOINT_EVERY : n - 1);
    assert.deepEqual(warm.again.tokens, warm.againExpected);
    // The next turn reuses the whole first turn (its reply's state was kept), or its prompt.
    assert.equal(warm.second.reused, model.promptOnly ? n - 1 : warm.again.sequences.length - 1);
    assert.deepEqual(warm.second.tokens, warm.secondExpected);
    // The edited system prompt: all before the edit (KV), or before the last checkpoint before it.
    assert.ok(warm.editedAt > CHECKPOINT_EVERY);
    assert.equal(warm.edited.reused, stateful ? Math.floor(warm.editedAt / CHECKPOINT_EVERY) * CHECKPOINT_EVERY : warm.editedAt);
    assert.deepEqual(warm.edited.tokens, warm.editedExpected);

    // Caches of another model type's layout are refused before the model runs.
    if (stateful) {
      assert.equal(warm.kvOnlyRefused, `RangeError: cachedGenerate: the cache's layout is not this model's: the model keeps ${model.state.length} state tensors ` +
        `(past_conv.0, ...) and KV in layers ${model.attention.join(', ')}; open the cache with layout: layoutOf(model.config)`);
      assert.equal(warm.kvOnlyEntries, 0);
    } else {
      assert.equal(warm.kvOnlyRefused, 'accepted');
    }
    assert.match(warm.otherStateRefused, /^RangeError: cachedGenerate: the cache's layout is not this model's/);
    assert.equal(warm.otherStateEntries, 0);
  });
}
