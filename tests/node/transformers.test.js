// rlxkv/transformers with a real ONNX decoder (the demo transformer,
// scripts/make-model.mjs) on transformers.js 4.x and 3.x over
// onnxruntime-node: greedy generation with the KV restored by rlxkv after a
// process restart gives exactly the tokens of a cold run, for f32 and f16
// KV. Each version runs in child processes (two onnxruntime-node builds
// cannot share one), two per case: before and after the restart. This
// process imports transformers.js 4.x only for its Tensor, and refuses
// hostile configs, tensors and input ids without running a model.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Tensor } from '@huggingface/transformers';
import init from 'rlxkv';
import { layoutOf, kvFromTensors, cachedGenerate } from 'rlxkv/transformers';
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
  // A multimodal config's text_config; config.json's null for "not given".
  assert.deepEqual(layoutOf({ model_type: 'gemma3', text_config: { num_hidden_layers: 26, num_attention_heads: 4, num_key_value_heads: 1, head_dim: 256, hidden_size: 1152 } }),
    { order: 'head-major', heads: 1, headDim: 256, layers: 26 });
  assert.deepEqual(layoutOf({ num_hidden_layers: 4, num_attention_heads: 4, num_key_value_heads: null, hidden_size: 128, head_dim: null }),
    { order: 'head-major', heads: 4, headDim: 32, layers: 4 });
});

test('layoutOf derives Mamba-2 state from a config: granitemoehybrid and falcon_h1', () => {
  // Granite 4.0-H-350M's sizes (hidden 768, 12 query and 4 KV heads, no head_dim; Mamba-2 of 48 heads of 32,
  // one group, state 128, conv 4), over four layers: conv state [48·32 + 2·1·128, 4], SSM state [48, 32, 128].
  const granite = { model_type: 'granitemoehybrid', num_hidden_layers: 4, hidden_size: 768, num_attention_heads: 12, num_key_value_heads: 4,
    layer_types: ['mamba', 'mamba', 'attention', 'mamba'], mamba_n_heads: 48, mamba_d_head: 32, mamba_n_groups: 1, mamba_d_state: 128,
    mamba_d_conv: 4, mamba_expand: 2 };
  const mamba = (l) => [{ name: `past_conv.${l}`, shape: [1792, 4] }, { name: `past_ssm.${l}`, shape: [48, 32, 128] }];
  assert.deepEqual(layoutOf(granite), { order: 'head-major', heads: 4, headDim: 64, layers: 1, attention: [2], state: [...mamba(0), ...mamba(1), ...mamba(3)] });
  // HF's other name for the list; a Granite 4.0 of attention layers only (granite-4.0-micro) keeps KV only.
  const { layer_types: types, ...rest } = granite;
  assert.deepEqual(layoutOf({ ...rest, layers_block_type: types }).attention, [2]);
  assert.deepEqual(layoutOf({ ...granite, layer_types: ['attention', 'attention', 'attention', 'attention'] }),
    { order: 'head-major', heads: 4, headDim: 64, layers: 4 });
  // Fields it needs, by name: HF's unresolved 'auto', a missing one, a layer kind Granite does not have.
  assert.throws(() => layoutOf({ ...granite, mamba_d_head: 'auto' }), { name: 'TypeError', message: 'layoutOf(config): mamba_d_head is "auto", not a positive integer' });
  assert.throws(() => layoutOf({ ...granite, mamba_n_groups: undefined }), { name: 'RangeError', message: 'layoutOf(config): mamba_n_groups is undefined, not a positive integer' });
  assert.throws(() => layoutOf({ ...granite, layer_types: ['mamba', 'hybrid'] }), { name: 'RangeError', message: 'layoutOf(config): layer_types[1] is "hybrid", not a layer kind of granitemoehybrid' });
  assert.throws(() => layoutOf({ ...granite, layer_types: ['mamba', 'constructor'] }), { name: 'RangeError', message: /layer_types\[1\] is "constructor"/ });
  assert.throws(() => layoutOf(rest), { name: 'TypeError', message: /layer_types must list each layer's kind for model_type granitemoehybrid/ });

  // Falcon-H1-0.5B's sizes: every layer attention and Mamba-2 (mamba_d_ssm 1536 = 24 heads of 64), no layer list.
  const falcon = { model_type: 'falcon_h1', num_hidden_layers: 36, hidden_size: 1024, num_attention_heads: 8, num_key_value_heads: 2, head_dim: 64,
    mamba_d_ssm: 1536, mamba_n_heads: 24, mamba_d_head: 64, mamba_n_groups: 1, mamba_d_state: 128, mamba_d_conv: 4, mamba_expand: 2 };
  const f = layoutOf(falcon);
  assert.deepEqual([f.heads, f.headDim, f.layers, f.attention], [2, 64, 36, Array.from({ length: 36 }, (_, i) => i)]);
  assert.equal(f.state.length, 72);
  assert.deepEqual(f.state.slice(0, 2), [{ name: 'past_conv.0', shape: [1792, 4] }, { name: 'past_ssm.0', shape: [24, 64, 128] }]);
  assert.deepEqual(f.state.at(-1), { name: 'past_ssm.35', shape: [24, 64, 128] });

  // nemotron_h still throws: its configs name layers by hybrid_override_pattern or layers_block_type, in two vocabularies.
  assert.throws(() => layoutOf({ model_type: 'nemotron_h', num_hidden_layers: 4, num_attention_heads: 8, hidden_size: 512 }),
    { name: 'RangeError', message: 'layoutOf(config): model_type nemotron_h keeps state rlxkv does not yet know the shape of' });
});

const llama = { num_hidden_layers: 16, num_attention_heads: 32, num_key_value_heads: 8, hidden_size: 2048 };

test('layoutOf refuses a config field that is no size a layout can hold, naming the field', () => {
  const refused = [
    [{ ...llama, num_hidden_layers: '16' }, TypeError, 'num_hidden_layers is "16", not a positive integer'],
    [{ ...llama, num_hidden_layers: 2.5 }, RangeError, 'num_hidden_layers is 2.5, not a positive integer'],
    [{ ...llama, num_hidden_layers: 0 }, RangeError, 'num_hidden_layers is 0, not a positive integer'],
    [{ ...llama, num_hidden_layers: 5000 }, RangeError, 'num_hidden_layers is 5000, more than the 4096 layers an rlxkv blob may have'],
    [{ ...llama, num_attention_heads: '32' }, TypeError, 'num_attention_heads is "32", not a positive integer'],
    [{ ...llama, num_key_value_heads: -8 }, RangeError, 'num_key_value_heads is -8, not a positive integer'],
    [{ ...llama, num_key_value_heads: 2 ** 32 }, RangeError, 'num_key_value_heads is 4294967296, more than'],
    [{ ...llama, hidden_size: 2048n }, TypeError, 'hidden_size is 2048n, not a positive integer'],
    [{ ...llama, hidden_size: 2050 }, RangeError, 'hidden_size / num_attention_heads is 2050 / 32, not an integer'],
    [{ ...llama, head_dim: 1e10 }, RangeError, 'head_dim is 10000000000, more than'],
    [{ ...llama, head_dim: NaN }, RangeError, 'head_dim is NaN, not a positive integer'],
    [{ ...llama, head_dim: 2 ** 30 }, RangeError, 'num_key_value_heads × head_dim is 8 × 1073741824, more than'],
    [{ text_config: { ...llama, num_hidden_layers: '16' } }, TypeError, 'text_config.num_hidden_layers is "16"'],
    [{ text_config: 'llama' }, TypeError, 'text_config is "llama", not a config object'],
  ];
  for (const [config, type, message] of refused) {
    assert.throws(() => layoutOf(config), (e) => e instanceof type && e.message.startsWith(`layoutOf(config): ${message}`), message);
  }
});

/** A float32 KV tensor of these dims, as a session or generate returns it. */
const kvTensor = (dims) => new Tensor('float32', new Float32Array(dims.reduce((a, b) => a * b, 1)), dims);
/** present.N.key and .value of [1, 2 heads, 3 tokens, 4]. */
const presentLayer = (l) => ({ [`present.${l}.key`]: kvTensor([1, 2, 3, 4]), [`present.${l}.value`]: kvTensor([1, 2, 3, 4]) });

test('kvFromTensors takes every layer or none: a gap, or a tensor it would not keep, is refused by name', async () => {
  const logits = new Tensor('float32', new Float32Array(257 * 3), [1, 3, 257]);
  const whole = await kvFromTensors({ logits, ...presentLayer(0), ...presentLayer(1), ...presentLayer(2) }, { prefix: 'present' });
  assert.equal(whole.k.length, 3);
  assert.equal(whole.tokens, 3);

  await assert.rejects(kvFromTensors({ logits, ...presentLayer(0), ...presentLayer(1), ...presentLayer(3) }, { prefix: 'present' }),
    { name: 'RangeError', message: 'kvFromTensors: layer 2 is missing (no present.2.key or .value), but present.3 follows: a gap in the layers' });
  await assert.rejects(kvFromTensors({ ...presentLayer(1) }, { prefix: 'present' }), { name: 'RangeError', message: /layer 0 is missing/ });
  // An encoder-decoder's KV is not a decoder's layers.
  await assert.rejects(kvFromTensors({ ...presentLayer(0), 'present.0.encoder.key': kvTensor([1, 2, 5, 4]) }, { prefix: 'present' }),
    { name: 'RangeError', message: /^kvFromTensors: present\.0\.encoder\.key is not a layer's key or value/ });
});

test('kvFromTensors refuses dims that are not sizes, naming the tensor', async () => {
  // transformers.js's Tensor refuses these dims; another runtime's tensor (type, dims, data) may not.
  for (const dims of [[1, 2, -1, 4], [1, 2, 1.5, 4], [1, -2, 3, 4], [1, 2, 3, '4']]) {
    const key = { type: 'float32', dims, data: new Float32Array(24) };
    await assert.rejects(kvFromTensors({ 'present.0.key': key, 'present.0.value': kvTensor([1, 2, 3, 4]) }, { prefix: 'present' }),
      { name: 'RangeError', message: `kvFromTensors: present.0.key has dims ${JSON.stringify(dims)}; expected [1, heads, tokens, headDim], each a non-negative integer` });
  }
});

test('cachedGenerate refuses input ids that are no token ids, naming the position, before it looks up, runs or caches anything', async () => {
  const rlx = await init();
  const config = { num_hidden_layers: 2, num_attention_heads: 2, head_dim: 4 };
  const cache = rlx.createCache({ capBytes: 1 << 20, layout: layoutOf(config) });
  const runs = [];
  // A stand-in for a model that generates nothing new: generate's KV covers
  // the sequence but its last token, 2 heads of 4, 2 layers.
  const generate = async (run) => {
    runs.push(run);
    const n = run.input_ids.dims[1];
    const past_key_values = Object.assign({}, ...[0, 1].map((l) => ({
      [`past_key_values.${l}.key`]: kvTensor([1, 2, n - 1, 4]), [`past_key_values.${l}.value`]: kvTensor([1, 2, n - 1, 4]),
    })));
    return { sequences: run.input_ids, past_key_values };
  };
  const model = { config, generate };
  const ids = (type, data) => new Tensor(type, data, [1, data.length]);
  const refused = [
    [ids('int64', BigInt64Array.from([1n, -1n, 3n])), 'input_ids[1] must be an integer in [0, 2^32), got -1'],
    [ids('int64', BigInt64Array.from([1n, 2n, 2n ** 32n])), 'input_ids[2] must be an integer in [0, 2^32), got 4294967296'],
    [ids('int32', Int32Array.from([-7, 1])), 'input_ids[0] must be an integer in [0, 2^32), got -7'],
    [ids('float32', Float32Array.from([1, 2.5])), 'input_ids[1] must be an integer in [0, 2^32), got 2.5'],
  ];
  for (const [input_ids, message] of refused) {
    await assert.rejects(cachedGenerate(model, cache, { input_ids, max_new_tokens: 4 }),
      { name: 'RangeError', message: `cachedGenerate: generateOptions.${message}` });
  }
  assert.equal(runs.length, 0, 'generate never ran');
  assert.equal(cache.stats.misses, 0, 'nothing was looked up');
  assert.equal(cache.size, 0, 'nothing was cached');

  const out = await cachedGenerate(model, cache, { input_ids: ids('int64', BigInt64Array.from([1n, 2n, 3n])), max_new_tokens: 4 });
  assert.equal(runs.length, 1);
  assert.deepEqual([out.reused, out.prefilled], [0, 3]);
  assert.equal(cache.stats.misses, 1);
  assert.deepEqual(cache.entries().map((e) => [...e.tokens]), [[1, 2]]);
  // What a model returns is checked the same way before it is cached.
  const wrapping = { config, generate: async (run) => ({ ...await generate(run), sequences: ids('int64', BigInt64Array.from([7n, -1n, 9n])) }) };
  await assert.rejects(cachedGenerate(wrapping, cache, { input_ids: ids('int64', BigInt64Array.from([7n, 8n, 9n])) }),
    { name: 'RangeError', message: "cachedGenerate: generate's sequences[1] must be an integer in [0, 2^32), got -1" });
  assert.deepEqual(cache.entries().map((e) => [...e.tokens]), [[1, 2]]);
  cache.close();
});

test('cachedGenerate on transformers.js 4.x without { transformers } is refused at its first call, cold, before anything runs', async () => {
  const rlx = await init();
  const config = { num_hidden_layers: 1, num_attention_heads: 1, head_dim: 4 };
  const cache = rlx.createCache({ capBytes: 1 << 20, layout: layoutOf(config) });
  let runs = 0;
  // A 4.x model: its session keeps input metadata (what isV4 reads when no version is given).
  const model = { config, sessions: { model: { inputMetadata: [] } }, generate: async () => { runs++; return {}; } };
  const input_ids = new Tensor('int64', BigInt64Array.from([1n, 2n, 3n]), [1, 3]);
  await assert.rejects(cachedGenerate(model, cache, { input_ids }),
    (err) => err instanceof TypeError && /pass \{ transformers \}/.test(err.message));
  assert.equal(runs, 0, 'generate never ran');
  assert.equal(cache.stats.misses, 0, 'nothing was looked up');
  cache.close();
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
      // Every entry keeps the model's dtype; each turn is an entry of its
      // own, sharing the KV of the one it extends (the first turn, the
      // second over it, the edited prompt).
      assert.ok(warm.entries.every((e) => e.dtype === dtype));
      assert.equal(warm.entries.length, 3, JSON.stringify(warm.entries));
      assert.match(warm.misShaped, /^RangeError: kv\.k\[0\] has \d+ values; the head-major layout needs 8 heads/);
      assert.equal(warm.misShapedEntries, 0);
    });
  }
}
