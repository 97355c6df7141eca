// The demo transformer as an ONNX model (scripts/make-model.mjs, in
// build/models/) under transformers.js: its tokenizer is the demo's byte
// encoding, its present K/V are demo/model.js's KV, greedy generation runs in
// 4.x and 3.x, and a restored prefix cache continues exactly like a cold run.
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as T from '@huggingface/transformers';
import { createModel } from '../../demo/model.js';
import { MODEL_OPTIONS } from '../../demo/system-prompt.js';
import { MODELS, NEW_TOKENS, PREFIX, PROMPT, modelsDir, numbers, open, scenarios } from './onnx-model-run.js';

const dir = modelsDir();
T.env.allowRemoteModels = false;
T.env.localModelPath = dir;
const demo = createModel(MODEL_OPTIONS);
const { heads: H, headDim: DH, dModel: D, layers: L } = demo.config;
const TEXT = 'Hello, wörld ✓ 日本語. The quick brown fox.';

/** A float16 bit pattern (how Node 20, without Float16Array, holds float16 data) as a number. */
function halfToNumber(h) {
  const sign = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, f = h & 0x3ff;
  if (e === 0) return sign * f * 2 ** -24;
  if (e === 31) return f ? NaN : sign * Infinity;
  return sign * (1 + f / 1024) * 2 ** (e - 15);
}

/**
 * The largest |ONNX - demo| over every K and V value, comparing present.N.*
 * ([1, heads, n, headDim]) with the demo's rows (n x dModel, heads side by
 * side); and the largest excess over `slack(ref)`.
 */
function kvDiff(outputs, kv, n, slack) {
  let max = 0, excess = 0;
  for (let l = 0; l < L; l++) {
    for (const [side, name] of [['k', 'key'], ['v', 'value']]) {
      const t = outputs[`present.${l}.${name}`];
      assert.deepEqual(t.dims, [1, H, n, DH], `present.${l}.${name} dims`);
      const value = t.type === 'float16' ? (i) => halfToNumber(t.data[i]) : (i) => t.data[i];
      for (let h = 0; h < H; h++) {
        for (let s = 0; s < n; s++) {
          for (let i = 0; i < DH; i++) {
            const ref = kv[side][l][s * D + h * DH + i];
            const d = Math.abs(value((h * n + s) * DH + i) - ref);
            max = Math.max(max, d);
            excess = Math.max(excess, d - slack(ref));
          }
        }
      }
    }
  }
  return { max, excess };
}

test('the tokenizer encodes text as the demo model does (BOS, then UTF-8 bytes) and decodes it back', async () => {
  const tokenizer = await T.AutoTokenizer.from_pretrained(MODELS[0]);
  const enc = tokenizer(TEXT);
  assert.deepEqual(numbers(enc.input_ids), [...demo.encode(TEXT)]);
  assert.deepEqual(numbers(enc.attention_mask), Array(demo.encode(TEXT).length).fill(1));
  assert.equal(tokenizer.decode(enc.input_ids[0], { skip_special_tokens: true }), TEXT);
  assert.equal(tokenizer.decode(enc.input_ids[0]), `<s>${TEXT}`);
  assert.deepEqual(tokenizer.encode(TEXT, { add_special_tokens: false }), [...demo.encode(TEXT, { bos: false })]);
});

test('present K/V of a forward pass equal demo/model.js KV (f32 to rounding, f16 to float16 rounding)', async (t) => {
  // Past position 256, where the graph's RoPE starts using its second table.
  const long = `${TEXT} `.repeat(6);
  const tokens = demo.encode(long);
  assert.ok(tokens.length > 256);
  const ref = demo.prefill(tokens);
  for (const id of MODELS) {
    const { tokenizer, model } = await open(T, dir, id);
    const out = await model(tokenizer(long));
    const f16 = id.endsWith('f16kv');
    assert.equal(out['present.0.key'].type, f16 ? 'float16' : 'float32');
    assert.equal(out['present.0.key'].data.constructor, f16 ? Uint16Array : Float32Array);
    // float16 keeps 11 significant bits: half an ulp is |x| * 2^-11 at most.
    const { max, excess } = kvDiff(out, ref.kv, tokens.length, f16 ? (x) => Math.abs(x) * 2 ** -11 + 1e-5 : () => 1e-4);
    t.diagnostic(`${id}: max |KV - demo KV| = ${max.toExponential(2)} over ${tokens.length} tokens`);
    assert.ok(excess <= 0, `${id}: KV differs by ${max}`);
    const last = out.logits.data.subarray((tokens.length - 1) * 257, tokens.length * 257);
    const logitDiff = Math.max(...Array.from(last, (x, i) => Math.abs(x - ref.logits[i])));
    t.diagnostic(`${id}: max |logits - demo logits| = ${logitDiff.toExponential(2)}`);
    assert.ok(logitDiff < (f16 ? 1e-2 : 1e-4), `${id}: logits differ by ${logitDiff}`);
  }
});

function checkScenarios(result, label) {
  const f32 = result.models['rlxkv-demo'], f16 = result.models['rlxkv-demo-f16kv'];
  for (const [id, r] of Object.entries(result.models)) {
    assert.equal(r.decoded, PROMPT, `${label} ${id}: decode`);
    assert.equal(r.cold.length, NEW_TOKENS);
    assert.equal(r.coldSequenceLength, r.prompt.length + NEW_TOKENS, `${label} ${id}: sequences = prompt + new tokens`);
    // The returned cache covers sequences minus its last token.
    assert.deepEqual(r.coldCacheDims, [1, H, r.prompt.length + NEW_TOKENS - 1, DH]);
    assert.deepEqual(r.whole, r.cold, `${label} ${id}: restored cache, whole sequence`);
    assert.deepEqual(r.rest, r.cold, `${label} ${id}: restored cache, rest only`);
    assert.equal(r.restSequenceLength, r.prompt.length - PREFIX + NEW_TOKENS, `${label} ${id}: sequences = rest + new tokens`);
  }
  assert.equal(f32.kvType, 'float32');
  assert.equal(f32.kvData, 'Float32Array');
  assert.equal(f16.kvType, 'float16');
  assert.equal(f16.kvData, 'Uint16Array');
  assert.deepEqual(f32.fromDemo, f32.cold, `${label}: demo/model.js KV as the restored cache`);
  assert.deepEqual(f16.cold, f32.cold, `${label}: float16 KV changes no greedy token for this prompt`);
}

let v4Result;
test('transformers.js 4.x: greedy generation, and a restored DynamicCache continues exactly like a cold run', async (t) => {
  const demoKv = demo.prefill(demo.encode(PROMPT).subarray(0, PREFIX)).kv;
  v4Result = await scenarios(T, dir, { demoKv, shape: demo.config });
  t.diagnostic(`${v4Result.version}: ${JSON.stringify(v4Result.models['rlxkv-demo'].cold)}`);
  checkScenarios(v4Result, v4Result.version);
  for (const r of Object.values(v4Result.models)) {
    assert.equal(r.cacheClass, '_DynamicCache');
    // 4.x (since 4.2) grows the cache it was given, to the sequence minus its last token.
    assert.equal(r.passedCacheRowsAfter, r.prompt.length + NEW_TOKENS - 1);
  }
});

test('transformers.js 3.x (child process): the same tokens, and a restored plain-object cache as well', async (t) => {
  assert.ok(v4Result, 'runs after the 4.x test');
  const child = fileURLToPath(new URL('onnx-model-v3.mjs', import.meta.url));
  const out = execFileSync(process.execPath, [child, dir], { encoding: 'utf8' });
  const v3 = JSON.parse(out.trim().split('\n').at(-1));
  assert.match(v3.version, /^3\./);
  t.diagnostic(`${v3.version}: ${JSON.stringify(v3.models['rlxkv-demo'].cold)}`);
  checkScenarios(v3, v3.version);
  for (const [id, r] of Object.entries(v3.models)) {
    assert.equal(r.cacheClass, null, '3.x returns a null-prototype object');
    assert.equal(r.passedCacheRowsAfter, PREFIX, '3.x leaves the cache it was given as it was');
    assert.deepEqual(r.cold, v4Result.models[id].cold, `${id}: 3.x and 4.x agree`);
  }
});
