// Browser-test page module: a chat app on transformers.js 4.3.x (served from
// node_modules) running the demo model with device 'webgpu', its KV kept in
// rlxkv's IndexedDB store. T.gpu() says what adapter the page has;
// T.first(id) and T.again(id) run a first visit and a visit after a reload
// and return plain data for the test to compare; T.f16(id) runs the f16-KV
// model. Every GPU buffer created in the page is counted (GPUDevice's
// createBuffer and GPUBuffer's destroy, wrapped before ONNX Runtime loads),
// so the test can tell whether turns leave buffers behind.
import init from '/wasm/dist/rlxkv.browser.js';
import { layoutOf, cachedGenerate, kvDtypeOf, kvFromTensors } from '/js/transformers.js';

const LIB = '/node_modules/@huggingface/transformers/dist/transformers.min.js';
const SYSTEM = 'You are a terse assistant. Answer in one line, and never mention the weather.\n';
const QUESTION = 'User: What is a radix tree?\nAssistant:';
const NEXT = '\nUser: And a trie?\nAssistant:';
const NEW = 6;
const LEAK_TURNS = 4;

const T = { ready: null, error: null };
window.T = T;

// Live GPU buffer bytes, wrapped before anything makes a device.
const gpuBytes = { live: 0, created: 0 };
if (globalThis.GPUDevice && globalThis.GPUBuffer) {
  const sizes = new WeakMap();
  const create = GPUDevice.prototype.createBuffer;
  GPUDevice.prototype.createBuffer = function (desc) {
    const buffer = create.call(this, desc);
    sizes.set(buffer, desc.size);
    gpuBytes.live += desc.size;
    gpuBytes.created++;
    return buffer;
  };
  const destroy = GPUBuffer.prototype.destroy;
  GPUBuffer.prototype.destroy = function () {
    if (sizes.has(this)) {
      gpuBytes.live -= sizes.get(this);
      sizes.delete(this);
    }
    return destroy.call(this);
  };
}

let tf = null;
let rlx = null;
const models = new Map();

/** Model `id` of build/models/ on `device`, with its tokenizer, loaded once per page. */
function load(id, device) {
  const key = `${id}@${device}`;
  if (!models.has(key)) {
    models.set(key, (async () => {
      const tokenizer = await tf.AutoTokenizer.from_pretrained(id);
      const model = await tf.AutoModelForCausalLM.from_pretrained(id, { dtype: 'fp32', device });
      return { tokenizer, model, layout: layoutOf(model.config) };
    })());
  }
  return models.get(key);
}

const numbers = (t) => Array.from(t.data, Number);
const ids = (tokens) => new tf.Tensor('int64', BigInt64Array.from(tokens, BigInt), [1, tokens.length]);
const encode = (m, text) => numbers(m.tokenizer(text).input_ids);
const entriesOf = (cache) => cache.entries().map((e) => ({ tokens: e.tokens.length, dtype: e.dtype }));
const locations = (pkv) => [...new Set(Object.values(pkv).map((t) => t.location))];

function open(id, m) {
  const fingerprint = rlx.fingerprintOf(`${id};${JSON.stringify(m.model.config.rlxkv)}`);
  return rlx.openCache({ capBytes: 64 << 20, fingerprint, storage: 'idb', path: `/webgpu-${id}`, layout: m.layout });
}

/**
 * Plain generate (no cache): its greedy tokens, where its KV is (`where`)
 * and the KV itself (`kv`, downloaded: not for the test's JSON).
 */
async function coldTokens(m, prompt) {
  const out = await m.model.generate({ input_ids: ids(prompt), max_new_tokens: NEW, do_sample: false, return_dict_in_generate: true });
  const where = locations(out.past_key_values);
  const kv = await kvFromTensors(out.past_key_values);
  await out.past_key_values.dispose();
  return { tokens: numbers(out.sequences).slice(prompt.length), where, kv };
}

/** One cachedGenerate turn, its KV disposed as transformers.js asks of past_key_values kept. */
async function turn(m, cache, prompt, opts = {}) {
  const out = await cachedGenerate(m.model, cache, { input_ids: ids(prompt), max_new_tokens: NEW, do_sample: false }, { transformers: tf, ...opts });
  const sequences = numbers(out.sequences);
  const where = locations(out.past_key_values);
  const kv = await kvFromTensors(out.past_key_values);
  await out.past_key_values.dispose();
  const t = { prompt: prompt.length, reused: out.reused, prefilled: out.prefilled, sequences, tokens: sequences.slice(prompt.length), where };
  Object.defineProperty(t, 'kv', { value: kv, enumerable: false }); // kept out of the JSON
  return t;
}

/**
 * How far a turn's final KV is from plain generate's: the largest absolute
 * difference over the positions it restored and over those it computed (a
 * restore that lost or bent what was cached shows in the first, and in the
 * second through attention). Tokens alone are a weak check: on the demo's
 * random weights, a restore with every K zeroed still gives the same tokens.
 */
function kvDiff(warm, cold, headDim) {
  if (warm.kv.tokens !== cold.kv.tokens) return { error: `KV of ${warm.kv.tokens} tokens, plain generate's ${cold.kv.tokens}` };
  const T = cold.kv.tokens;
  let restored = 0, computed = 0;
  for (const part of ['k', 'v']) {
    cold.kv[part].forEach((c, l) => {
      const w = warm.kv[part][l];
      for (let row = 0; row < c.length / headDim; row++) { // [heads, T, headDim]: row h × T + position
        const restoredRow = row % T < warm.reused;
        for (let i = row * headDim; i < (row + 1) * headDim; i++) {
          const diff = Math.abs(w[i] - c[i]);
          if (restoredRow) restored = Math.max(restored, diff); else computed = Math.max(computed, diff);
        }
      }
    });
  }
  return { restored, computed };
}

T.gpu = async () => {
  if (!navigator.gpu) return { webgpu: false, why: 'no navigator.gpu' };
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) return { webgpu: false, why: 'navigator.gpu.requestAdapter() gave null' };
  const info = adapter.info ?? {};
  return { webgpu: true, vendor: info.vendor, architecture: info.architecture, shaderF16: adapter.features.has('shader-f16') };
};

/** A first visit: cold tokens, then turns through the cache (miss, hit, next turn), flushed to IndexedDB. */
T.first = async (id) => {
  const m = await load(id, 'webgpu');
  const session = m.model.sessions.model ?? m.model.sessions.decoder_model_merged;
  const first = encode(m, SYSTEM + QUESTION);
  const result = { device: session.config?.device, kvDtype: kvDtypeOf(m.model) };
  const cold = await coldTokens(m, first);
  result.expected = cold.tokens;
  result.generateKvLocation = cold.where;
  result.wasmExpected = (await coldTokens(await load(id, 'wasm'), first)).tokens;
  const cache = await open(id, m);
  result.storage = cache.storage;
  result.restored = cache.restoreReport.indexed;
  result.miss = await turn(m, cache, first);
  result.entriesAfterMiss = entriesOf(cache);
  result.hit = await turn(m, cache, first);
  result.missKv = kvDiff(result.miss, cold, m.layout.headDim);
  result.hitKv = kvDiff(result.hit, cold, m.layout.headDim);
  await secondTurn(m, cache, result);
  // The same turn again and again: GPU buffers alive after each.
  result.live = [];
  result.leakTokens = [];
  for (let i = 0; i < LEAK_TURNS; i++) {
    const t = await turn(m, cache, first);
    result.leakTokens.push(t.tokens);
    result.live.push(gpuBytes.live);
  }
  result.entries = entriesOf(cache);
  result.entryBytes = cache.entries().map((e) => e.bytes);
  await cache.close();
  return result;
};

/** After a reload: the first turn restored from IndexedDB, then the second. */
T.again = async (id) => {
  const m = await load(id, 'webgpu');
  const cache = await open(id, m);
  const first = encode(m, SYSTEM + QUESTION);
  const result = { storage: cache.storage, restored: cache.restoreReport.indexed, entriesAtOpen: entriesOf(cache) };
  result.hit = await turn(m, cache, first);
  const cold = await coldTokens(m, first);
  result.expected = cold.tokens;
  result.hitKv = kvDiff(result.hit, cold, m.layout.headDim);
  await secondTurn(m, cache, result);
  // The hit written straight into GPU buffers of the model's device (opts.gpuDevice).
  const device = await tf.env.backends.onnx.webgpu.device;
  const liveBefore = gpuBytes.live;
  result.gpuHit = await turn(m, cache, first, { gpuDevice: device });
  result.gpuHitKv = kvDiff(result.gpuHit, cold, m.layout.headDim);
  result.gpuBytesLeft = gpuBytes.live - liveBefore;
  result.entries = entriesOf(cache);
  await cache.close();
  return result;
};

/** The next user turn after result.hit's, into result: its tokens and KV, and a cold run's. */
async function secondTurn(m, cache, result) {
  const second = [...result.hit.sequences, ...encode(m, NEXT).slice(1)];
  result.second = await turn(m, cache, second);
  const secondCold = await coldTokens(m, second);
  result.secondExpected = secondCold.tokens;
  result.secondKv = kvDiff(result.second, secondCold, m.layout.headDim);
}

/** The f16-KV model on WebGPU: plain generate and one cachedGenerate turn, failures kept as messages. */
T.f16 = async (id) => {
  const m = await load(id, 'webgpu');
  const first = encode(m, SYSTEM + QUESTION);
  const result = { kvDtype: kvDtypeOf(m.model), wasmExpected: (await coldTokens(await load(id, 'wasm'), first)).tokens };
  const cache = rlx.createCache({ capBytes: 64 << 20, layout: m.layout });
  const firstLine = (e) => String(e?.message ?? e).split('\n')[0];
  try { result.expected = (await coldTokens(m, first)).tokens; } catch (e) { result.generateError = firstLine(e); }
  try {
    result.miss = await turn(m, cache, first);
    result.hit = await turn(m, cache, first);
  } catch (e) {
    result.turnError = firstLine(e);
  }
  result.entries = entriesOf(cache);
  await cache.close({ flush: false });
  return result;
};

T.ready = (async () => {
  try {
    tf = await import(LIB);
    tf.env.allowRemoteModels = false;
    tf.env.allowLocalModels = true;
    tf.env.localModelPath = '/build/models/';
    tf.env.useBrowserCache = false;
    tf.env.backends.onnx.wasm.wasmPaths = '/node_modules/onnxruntime-web/dist/';
    rlx = await init();
    T.tjsVersion = tf.env.version;
    return true;
  } catch (e) {
    T.error = String((e && e.stack) || e);
    console.error('rlxkv-test: init failed:', T.error);
    throw e;
  }
})();
