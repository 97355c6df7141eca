// What tests/node/onnx-model.test.js runs with either transformers.js: the
// 4.x it imports, or the 3.x alias in a child process (onnx-model-v3.mjs),
// since the two onnxruntime-node builds cannot load into one process (their
// libonnxruntime.so.1 clash). `T` is the imported transformers.js module.
import { existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { tempDir } from './helpers.js';

export const MODELS = ['rlxkv-demo', 'rlxkv-demo-f16kv'];
export const PROMPT = 'The quick brown fox jumps over the lazy dog.';
export const PREFIX = 20;      // tokens of PROMPT (BOS included) in the restored cache
export const NEW_TOKENS = 8;

/**
 * The folder holding the model folders: $RLXKV_MODELS, else build/models
 * (scripts/build.sh), else one generated now into a temp dir.
 */
export function modelsDir() {
  if (process.env.RLXKV_MODELS) return process.env.RLXKV_MODELS;
  const built = fileURLToPath(new URL('../../build/models/', import.meta.url));
  if (existsSync(`${built}/${MODELS[1]}/onnx/model.onnx`)) return built;
  const dir = tempDir('rlxkv-models-');
  execFileSync(process.execPath, [fileURLToPath(new URL('../../scripts/make-model.mjs', import.meta.url)), '--out', dir]);
  process.env.RLXKV_MODELS = dir; // a child process reuses it
  return dir;
}

export const isV4 = (T) => Number(T.env.version.split('.')[0]) >= 4;

/** Tokenizer and fp32 model of one folder, offline. */
export async function open(T, dir, id) {
  T.env.allowRemoteModels = false;
  T.env.localModelPath = dir.endsWith('/') ? dir : `${dir}/`;
  const tokenizer = await T.AutoTokenizer.from_pretrained(id);
  const model = await T.AutoModelForCausalLM.from_pretrained(id, { dtype: 'fp32' });
  return { tokenizer, model };
}

export const ids = (T, tokens) => new T.Tensor('int64', BigInt64Array.from(tokens, BigInt), [1, tokens.length]);
export const ones = (T, n) => new T.Tensor('int64', new BigInt64Array(n).fill(1n), [1, n]);
export const numbers = (tensor) => Array.from(tensor.data, Number);

/** A forward pass's present.N.key/value, renamed past_key_values.N.* (copies). */
export function presentAsPast(T, outputs) {
  const entries = {};
  for (const [name, t] of Object.entries(outputs)) {
    if (name.startsWith('present.')) entries[name.replace('present', 'past_key_values')] = new T.Tensor(t.type, t.data.slice(), t.dims);
  }
  return entries;
}

/** What generate() takes as past_key_values: a DynamicCache in 4.x, the plain object in 3.x. */
export const asCache = (T, entries) => (isV4(T) ? new T.DynamicCache(entries) : { ...entries });

/**
 * demo/model.js's KV of its first n rows ({k, v}: per layer n rows of dModel
 * floats, heads side by side) as float32 past_key_values.N.* tensors of
 * [1, heads, n, headDim].
 */
export function demoKvAsPast(T, kv, n, { heads, headDim }) {
  const D = heads * headDim;
  const entries = {};
  for (const [side, name] of [['k', 'key'], ['v', 'value']]) {
    kv[side].forEach((rows, l) => {
      const out = new Float32Array(heads * n * headDim);
      for (let h = 0; h < heads; h++) {
        for (let t = 0; t < n; t++) out.set(rows.subarray(t * D + h * headDim, t * D + (h + 1) * headDim), (h * n + t) * headDim);
      }
      entries[`past_key_values.${l}.${name}`] = new T.Tensor('float32', out, [1, heads, n, headDim]);
    });
  }
  return entries;
}

/** Greedy decoding; returns { tokens (the new ones), sequences, cache }. */
export async function greedy(model, inputs) {
  const out = await model.generate({ ...inputs, max_new_tokens: NEW_TOKENS, do_sample: false, return_dict_in_generate: true });
  const sequences = numbers(out.sequences);
  return { tokens: sequences.slice(-NEW_TOKENS), sequences, cache: out.past_key_values };
}

/**
 * For each model: PROMPT's tokens; greedy tokens of a cold run; the same
 * after restoring the KV of the first PREFIX tokens (from a forward pass),
 * given once as the whole sequence with its full attention mask and once as
 * the rest only; the cache's tensor types; and (f32 model) the same from
 * demoKv, the demo model's own KV of those PREFIX tokens, when given.
 */
export async function scenarios(T, dir, { demoKv = null, shape = null } = {}) {
  const result = { version: T.env.version, models: {} };
  for (const id of MODELS) {
    const { tokenizer, model } = await open(T, dir, id);
    const prompt = numbers(tokenizer(PROMPT).input_ids);
    const all = { input_ids: ids(T, prompt), attention_mask: ones(T, prompt.length) };
    const cold = await greedy(model, all);
    const prefix = presentAsPast(T, await model({ input_ids: ids(T, prompt.slice(0, PREFIX)), attention_mask: ones(T, PREFIX) }));
    const passed = asCache(T, prefix);
    const whole = await greedy(model, { ...all, past_key_values: passed });
    const rest = await greedy(model, {
      input_ids: ids(T, prompt.slice(PREFIX)), attention_mask: ones(T, prompt.length), past_key_values: asCache(T, prefix),
    });
    const k0 = cold.cache['past_key_values.0.key'];
    const r = {
      prompt,
      decoded: tokenizer.decode(prompt, { skip_special_tokens: true }),
      cold: cold.tokens,
      coldSequenceLength: cold.sequences.length,
      coldCacheDims: k0.dims,
      kvType: k0.type,
      kvData: k0.data.constructor.name,
      cacheClass: Object.getPrototypeOf(cold.cache)?.constructor?.name ?? null,
      whole: whole.tokens,
      rest: rest.tokens,
      restSequenceLength: rest.sequences.length,
      passedCacheRowsAfter: passed['past_key_values.0.key'].dims[2],
    };
    if (demoKv && id === 'rlxkv-demo') {
      r.fromDemo = (await greedy(model, { ...all, past_key_values: asCache(T, demoKvAsPast(T, demoKv, PREFIX, shape)) })).tokens;
    }
    result.models[id] = r;
  }
  return result;
}
