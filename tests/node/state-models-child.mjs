// Child process of tests/node/state-models.test.js: one process of a chat
// app on transformers.js 4.x whose model keeps state (LFM2-like) or sliding
// windows (Gemma3-like), its cache in an rlxkv 'fs' store. Prints one JSON
// line. Arguments: phase storeDir modelsDir modelId
// phase 'cold': a fresh store; one turn through cachedGenerate, then the
//   cache is closed (flushed) and the process ends.
// phase 'warm': the same store after that restart: the same turn again, a
//   second user turn, an edited system prompt, each compared with
//   model.generate run cold on the same prompt; then caches of another
//   model type's layout.
import init from '../../js/index.js';
import { layoutOf, cachedGenerate } from '../../js/transformers.js';

const [phase, storeDir, modelsDir, modelId] = process.argv.slice(2);
const T = await import('@huggingface/transformers');
T.env.allowRemoteModels = false;
T.env.localModelPath = modelsDir.endsWith('/') ? modelsDir : `${modelsDir}/`;
const tokenizer = await T.AutoTokenizer.from_pretrained(modelId);
const model = await T.AutoModelForCausalLM.from_pretrained(modelId, { dtype: 'fp32' });

const SYSTEM = 'You are a terse assistant. Answer in one line, and never mention the weather.\n';
const NEW = 8;
const CHECKPOINT_EVERY = 16;
const rlx = await init();
const layout = layoutOf(model.config);
const fingerprint = rlx.fingerprintOf(`${modelId};${JSON.stringify(model.config.rlxkv)}`);
const open = (extra = {}) => rlx.openCache({ capBytes: 64 << 20, fingerprint, storage: 'fs', path: storeDir, layout, ...extra });
const ids = (tokens) => new T.Tensor('int64', BigInt64Array.from(tokens, BigInt), [1, tokens.length]);
/** input_ids and attention_mask, as the tokenizer gives them (Qwen3.5's decoder takes the mask). */
const inputs = (tokens) => ({ input_ids: ids(tokens), attention_mask: new T.Tensor('int64', new BigInt64Array(tokens.length).fill(1n), [1, tokens.length]) });
const encode = (text) => Array.from(tokenizer(text).input_ids.data, Number);
const numbers = (t) => Array.from(t.data, Number);

/** The new tokens of a cold greedy run, without any cache. */
async function coldTokens(prompt) {
  const out = await model.generate({ ...inputs(prompt), max_new_tokens: NEW, do_sample: false });
  return numbers(out).slice(prompt.length);
}

async function turn(cache, prompt) {
  const out = await cachedGenerate(model, cache, { ...inputs(prompt), max_new_tokens: NEW, do_sample: false },
    { transformers: T, checkpointEvery: CHECKPOINT_EVERY });
  const sequences = numbers(out.sequences);
  return { prompt: prompt.length, reused: out.reused, prefilled: out.prefilled, sequences, tokens: sequences.slice(prompt.length) };
}

async function refusal(f) {
  try {
    await f();
    return 'accepted';
  } catch (err) {
    return `${err.name}: ${err.message}`;
  }
}

const first = encode(`${SYSTEM}User: What is a radix tree?\nAssistant:`);
const result = { phase, layout };
const cache = await open();
result.restored = cache.restoreReport.indexed;
result.restoredState = cache.restoreReport.state?.indexed ?? null;
if (phase === 'cold') {
  result.turn = await turn(cache, first);
  result.expected = await coldTokens(first);
  result.state = cache.stats.state ?? null;
  await cache.close();
} else {
  result.again = await turn(cache, first);
  result.againExpected = await coldTokens(first);
  // The next user turn: the whole conversation so far, then new text.
  const second = [...result.again.sequences, ...encode('\nUser: And a trie?\nAssistant:').slice(1)];
  result.second = await turn(cache, second);
  result.secondExpected = await coldTokens(second);
  // The system prompt edited at one character: its unchanged prefix is reused, up to a checkpoint.
  const edited = encode(`${SYSTEM.replace('never', 'ever')}User: What is a radix tree?\nAssistant:`);
  result.editedAt = edited.findIndex((t, i) => t !== first[i]);
  result.edited = await turn(cache, edited);
  result.editedExpected = await coldTokens(edited);
  await cache.close();
  // Caches of another layout: a model's with no state, one with other state shapes.
  const plain = { order: 'head-major', heads: layout.heads, headDim: layout.headDim, layers: layout.layers };
  const kvOnly = await rlx.openCache({ capBytes: 1 << 20, layout: plain, storage: 'none' });
  result.kvOnlyRefused = await refusal(() => turn(kvOnly, first));
  result.kvOnlyEntries = kvOnly.size;
  // Another model type's: state where this model has none, or other state shapes.
  const otherState = layout.state ? layout.state.map((s) => ({ name: s.name, shape: [s.shape[0] * 2, ...s.shape.slice(1)] }))
    : [{ name: 'past_conv.0', shape: [64, 3] }];
  const other = await rlx.openCache({ capBytes: 1 << 20, layout: { ...plain, attention: layout.attention ?? [...Array(layout.layers).keys()], state: otherState }, storage: 'none' });
  result.otherStateRefused = await refusal(() => turn(other, first));
  result.otherStateEntries = other.size;
}
process.stdout.write(`${JSON.stringify(result)}\n`);
