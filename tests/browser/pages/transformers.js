// Browser-test page module: a chat app on transformers.js (?v=4: 4.3.x,
// ?v=3: 3.8.x, both served from node_modules) whose KV lives in rlxkv's
// IndexedDB store, mirroring tests/node/transformers-child.mjs. window.T.ready
// resolves once both libraries are loaded; T.cold(id) and T.warm(id) run one
// model's phases and return plain data for the test to compare.
import init from '/wasm/dist/rlxkv.browser.js';
import { layoutOf, cachedGenerate } from '/js/transformers.js';

const VERSIONS = {
  4: { lib: '/node_modules/@huggingface/transformers/dist/transformers.min.js', wasm: '/node_modules/onnxruntime-web/dist/' },
  3: { lib: '/node_modules/transformers-v3/dist/transformers.min.js', wasm: '/node_modules/transformers-v3/node_modules/onnxruntime-web/dist/' },
};
const SYSTEM = 'You are a terse assistant. Answer in one line, and never mention the weather.\n';
const QUESTION = 'User: What is a radix tree?\nAssistant:';
const NEXT = '\nUser: And a trie?\nAssistant:';
const NEW = 6;
/** A model with state keeps a checkpoint every 16 prompt tokens here (default 256), so that short prompts have some. */
const CHECKPOINT_EVERY = 16;

const version = new URLSearchParams(location.search).get('v') || '4';
const T = { ready: null, error: null, version };
window.T = T;

let tf = null;
let rlx = null;
const models = new Map();

/** Model `id` of build/models/ with its tokenizer, loaded once per page. */
async function load(id) {
  if (!models.has(id)) {
    models.set(id, (async () => {
      const tokenizer = await tf.AutoTokenizer.from_pretrained(id);
      const model = await tf.AutoModelForCausalLM.from_pretrained(id, { dtype: 'fp32', device: 'wasm' });
      return { tokenizer, model, layout: layoutOf(model.config) };
    })());
  }
  return models.get(id);
}

const numbers = (t) => Array.from(t.data, Number);
const ids = (tokens) => new tf.Tensor('int64', BigInt64Array.from(tokens, BigInt), [1, tokens.length]);
/** input_ids and attention_mask, as the tokenizer gives them (Qwen3.5's decoder takes the mask). */
const inputs = (tokens) => ({ input_ids: ids(tokens), attention_mask: new tf.Tensor('int64', new BigInt64Array(tokens.length).fill(1n), [1, tokens.length]) });
const encode = (m, text) => numbers(m.tokenizer(text).input_ids);
const entriesOf = (cache) => cache.entries().map((e) => ({ tokens: e.tokens.length, dtype: e.dtype }));

function open(id, m) {
  const fingerprint = rlx.fingerprintOf(`${id};${JSON.stringify(m.model.config.rlxkv)}`);
  return rlx.openCache({ capBytes: 64 << 20, fingerprint, storage: 'idb', path: `/tjs-v${version}-${id}`, layout: m.layout });
}

async function coldTokens(m, prompt) {
  const out = await m.model.generate({ ...inputs(prompt), max_new_tokens: NEW, do_sample: false });
  return numbers(out).slice(prompt.length);
}

async function turn(m, cache, prompt) {
  const t0 = performance.now();
  const out = await cachedGenerate(m.model, cache, { ...inputs(prompt), max_new_tokens: NEW, do_sample: false },
    { transformers: tf, checkpointEvery: CHECKPOINT_EVERY });
  const sequences = numbers(out.sequences);
  return { prompt: prompt.length, reused: out.reused, prefilled: out.prefilled, sequences, tokens: sequences.slice(prompt.length), ms: performance.now() - t0 };
}

/** A first visit: one turn into an empty cache, flushed to IndexedDB. */
T.cold = async (id) => {
  const m = await load(id);
  const cache = await open(id, m);
  const first = encode(m, SYSTEM + QUESTION);
  const result = { storage: cache.storage, restored: cache.restoreReport.indexed };
  result.turn = await turn(m, cache, first);
  result.expected = await coldTokens(m, first);
  result.entries = entriesOf(cache);
  result.checkpoints = cache.stats.state?.entries ?? null;
  await cache.close();
  return result;
};

/** After a reload: the same turn restored from IndexedDB, then a second user turn. */
T.warm = async (id) => {
  const m = await load(id);
  const cache = await open(id, m);
  const first = encode(m, SYSTEM + QUESTION);
  const result = { storage: cache.storage, restored: cache.restoreReport.indexed, entriesAtOpen: entriesOf(cache) };
  result.again = await turn(m, cache, first);
  result.againExpected = await coldTokens(m, first);
  const second = [...result.again.sequences, ...encode(m, NEXT).slice(1)];
  result.second = await turn(m, cache, second);
  result.secondExpected = await coldTokens(m, second);
  // The system prompt edited at one character: its unchanged prefix is reused (a model with state: up to a checkpoint).
  const edited = encode(m, SYSTEM.replace('never', 'ever') + QUESTION);
  result.editedAt = edited.findIndex((t, i) => t !== first[i]);
  result.edited = await turn(m, cache, edited);
  result.editedExpected = await coldTokens(m, edited);
  result.restoredCheckpoints = cache.restoreReport.state?.indexed ?? null;
  result.entries = entriesOf(cache);
  await cache.close();
  return result;
};

T.ready = (async () => {
  try {
    const v = VERSIONS[version];
    if (!v) throw new Error(`unknown ?v=${version}`);
    tf = await import(v.lib);
    tf.env.allowRemoteModels = false;
    tf.env.allowLocalModels = true;
    tf.env.localModelPath = '/build/models/';
    tf.env.useBrowserCache = false;
    tf.env.backends.onnx.wasm.wasmPaths = v.wasm;
    rlx = await init();
    T.tjsVersion = tf.env.version;
    T.float16Array = typeof Float16Array === 'function';
    return true;
  } catch (e) {
    T.error = String((e && e.stack) || e);
    console.error('rlxkv-test: init failed:', T.error);
    throw e;
  }
})();
