// The tiny hybrid decoders scripts/build.sh writes (scripts/make_onnx_model.py
// --kind: LFM2-, Qwen3.5-, Gemma3- and Granite-4.0-H-like, float32 and float16 caches) on
// transformers.js 4.x over onnxruntime-node, each in a child process
// (hybrid-models-child.mjs): (a) a cold greedy run; (b) a zeroed or stale
// conv, recurrent or SSM state, a zeroed KV, changes the tokens, while KV rows
// outside a sliding layer's window do not; (c) restoring the cache tensors
// transformers.js itself returned gives exactly the cold tokens. For Qwen3.5
// it also pins the two transformers.js 4.3.2 bugs the child works around.
// Builds nothing: run scripts/build.sh first (or set RLXKV_MODELS).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const child = fileURLToPath(new URL('hybrid-models-child.mjs', import.meta.url));
const models = process.env.RLXKV_MODELS ?? fileURLToPath(new URL('../../build/models/', import.meta.url));
const NEW = 8;
const VOCAB = 257;

const kv = (l) => [`past_key_values.${l}.key`, `past_key_values.${l}.value`];
const KV_DIMS = ['batch_size', 2, 'past_sequence_length', 16];
/** Per model: its type, class, sessions, each cache input's dims (graph metadata), the sliding layers and where positions start (null: no position_ids). */
const MODELS = {
  'rlxkv-lfm2': {
    modelType: 'lfm2', className: 'Lfm2ForCausalLM', sessions: ['model'], firstPosition: 0, sliding: [3],
    caches: { 'past_conv.0': ['batch_size', 64, 3], ...kvOf(1), 'past_conv.2': ['batch_size', 64, 3], ...kvOf(3) },
  },
  'rlxkv-qwen3_5': {
    modelType: 'qwen3_5', className: 'Qwen3_5ForCausalLM', sessions: ['embed_tokens', 'decoder_model_merged'], firstPosition: 0, sliding: [],
    caches: Object.assign({}, ...[0, 1, 2].map((l) => ({ [`past_conv.${l}`]: ['batch_size', 96, 4], [`past_recurrent.${l}`]: ['batch_size', 2, 16, 16] })), kvOf(3)),
  },
  'rlxkv-gemma3': {
    modelType: 'gemma3_text', className: 'Gemma3ForCausalLM', sessions: ['model'], firstPosition: 1, sliding: [0, 1, 3],
    caches: { ...kvOf(0), ...kvOf(1), ...kvOf(2), ...kvOf(3) },
  },
  // Mamba-2 layers' conv state [conv_dim = 4 heads x 32 + 2 groups x 2 x 16 state, d_conv 4] and SSM state
  // [heads, head dim, state]; a NoPE attention layer (Granite 4.0-H takes no position_ids).
  'rlxkv-granite4h': {
    modelType: 'granitemoehybrid', className: 'GraniteMoeHybridForCausalLM', sessions: ['model'], firstPosition: null, sliding: [],
    caches: { ...mambaOf(0), ...kvOf(1), ...mambaOf(2), ...mambaOf(3) },
  },
};
function kvOf(l) {
  const [key, value] = kv(l);
  return { [key]: KV_DIMS, [value]: KV_DIMS };
}
function mambaOf(l) {
  return { [`past_conv.${l}`]: ['batch_size', 192, 4], [`past_ssm.${l}`]: ['batch_size', 4, 32, 16] };
}

function run(id) {
  const dir = join(models, id);
  assert.ok(existsSync(join(dir, 'config.json')), `${dir} is missing: run scripts/build.sh first`);
  const out = execFileSync(process.execPath, [child, models, id], { encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').at(-1));
}

for (const [base, expected] of Object.entries(MODELS)) {
  for (const [suffix, type] of [['', 'float32'], ['-f16kv', 'float16']]) {
    const id = base + suffix;
    test(`${id}: cold greedy run, every cached state matters, and transformers.js's own cache restores the cold tokens`, (t) => {
      const r = run(id);
      assert.equal(r.modelType, expected.modelType);
      assert.equal(r.className, expected.className);
      assert.deepEqual(r.sessions, expected.sessions);

      // The cache inputs, in graph order: fixed-size states with numeric dims (transformers.js fills zeros of them), KV with a past length.
      const caches = r.inputs.filter((m) => /^past_/.test(m.name));
      assert.deepEqual(caches.map((m) => [m.name, m.dims]), Object.entries(expected.caches));
      assert.ok(caches.every((m) => m.type === type), JSON.stringify(caches));
      // What generate returns: every state at its fixed size, every KV (sliding layers too) over the whole sequence but the last token.
      const P = r.prompt;
      assert.ok(P > 40, `prompt of ${P} tokens`);
      assert.deepEqual(r.returned.map((m) => [m.name, m.type, m.dims]), Object.entries(expected.caches)
        .map(([name, dims]) => [name, type, name.startsWith('past_key_values.') ? [1, 2, P + NEW - 1, 16] : [1, ...dims.slice(1)]]));

      // (a) cold: NEW token ids of the vocabulary, at positions from firstPosition on
      assert.equal(r.cold.length, NEW);
      assert.ok(r.cold.every((id) => Number.isInteger(id) && id >= 0 && id < VOCAB), JSON.stringify(r.cold));
      const p0 = expected.firstPosition;
      assert.deepEqual(r.positions, p0 === null ? Array(NEW).fill(null)
        : [[p0, p0 + P - 1], ...Array.from({ length: NEW - 1 }, (_, i) => [p0 + P + i, p0 + P + i])]);
      t.diagnostic(`${P}-token prompt -> ${r.cold.join(' ')}`);

      // (c) restored from generate's own past_key_values: after 60 tokens, after all but the last, and a second turn over the first
      assert.deepEqual(r.restoredHalf, r.cold, 'restored after 60 tokens');
      assert.deepEqual(r.restoredLast, r.cold, 'restored after all but the last prompt token');
      assert.deepEqual(r.turn2.warm, r.turn2.cold, 'second turn over the first turn\'s cache');
      assert.deepEqual(r.shortTurn2.warm, r.shortTurn2.cold, 'second turn after a short first turn');

      // (b) restored after all but the last token, with one cache tensor wrong: a zeroed state or KV value, a state 4 tokens stale
      const states = Object.keys(expected.caches).filter((n) => !n.startsWith('past_key_values.'));
      const values = Object.keys(expected.caches).filter((n) => n.endsWith('.value'));
      assert.deepEqual(Object.keys(r.zeroed).sort(), [...states, ...values].sort());
      for (const [name, tokens] of Object.entries(r.zeroed)) assert.notDeepEqual(tokens, r.cold, `zeroed ${name}`);
      assert.deepEqual(Object.keys(r.stale).sort(), [...states].sort());
      for (const [name, tokens] of Object.entries(r.stale)) assert.notDeepEqual(tokens, r.cold, `stale ${name}`);
      // KV rows older than the window: a sliding layer never reads them (exactly the cold tokens); a full layer does
      const attention = r.layerTypes.map((kind, l) => [kind, l]).filter(([kind]) => kind.endsWith('attention') && kind !== 'linear_attention');
      assert.deepEqual(attention.filter(([kind]) => kind === 'sliding_attention').map(([, l]) => l), expected.sliding);
      if (expected.sliding.length) {
        assert.equal(r.slidingWindow, 8);
        for (const [kind, l] of attention) {
          if (kind === 'sliding_attention') assert.deepEqual(r.oldRowsZeroed[l], r.cold, `layer ${l}: rows outside the window`);
          else assert.notDeepEqual(r.oldRowsZeroed[l], r.cold, `layer ${l}: old rows of a full attention layer`);
        }
      }

      if (expected.modelType === 'qwen3_5') {
        // transformers.js 4.3.2, unpatched: a past leaving more than one token to run throws (it calls the absent vision encoder) ...
        assert.match(r.restWithoutCatchUp, /Cannot read properties of undefined \(reading 'inputNames'\)/);
        // ... and generated tokens go 2 x the prompt's length too far (3P, 3P + 1, ... instead of P, P + 1, ...) ...
        const U = r.unpatched.prompt;
        assert.deepEqual(r.unpatched.positions.slice(1).map((p) => p[0]), Array.from({ length: NEW - 1 }, (_, i) => 3 * U + i));
        // ... so a reply's cached keys are not a cold pass's (the prompt's are); with the rope delta patched they are.
        assert.ok(r.unpatched.replyKeyDiff > 0.5, `reply keys differ by ${r.unpatched.replyKeyDiff}`);
        assert.ok(r.unpatched.promptKeyDiff < 1e-3, `prompt keys differ by ${r.unpatched.promptKeyDiff}`);
        assert.ok(r.patchedReplyKeyDiff < 1e-2, `patched reply keys differ by ${r.patchedReplyKeyDiff}`);
        t.diagnostic(`unpatched second turn: cold ${r.unpatched.turn2.cold.join(' ')}, warm ${r.unpatched.turn2.warm.join(' ')}`);
      }
    });
  }
}
