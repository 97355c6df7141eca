// Child process of tests/node/transformers.test.js: one process of a chat
// app on transformers.js (4.x, or 3.x with 'v3') whose KV lives in an rlxkv
// 'fs' store. Prints one JSON line. Arguments:
//   v3|v4  phase  storeDir  modelsDir  modelId
// phase 'cold': a fresh store; one turn through cachedGenerate, then the
//   cache is closed (flushed) and the process ends.
// phase 'warm': the same store after that restart: the same turn again, a
//   second user turn, an edited system prompt and a mis-shaped cache, each
//   compared with model.generate run cold on the same prompt.
import init from '../../js/index.js';
import { layoutOf, cachedGenerate } from '../../js/transformers.js';

const [version, phase, storeDir, modelsDir, modelId] = process.argv.slice(2);
const T = await import(version === 'v3' ? 'transformers-v3' : '@huggingface/transformers');
T.env.allowRemoteModels = false;
T.env.localModelPath = modelsDir.endsWith('/') ? modelsDir : `${modelsDir}/`;
const tokenizer = await T.AutoTokenizer.from_pretrained(modelId);
const model = await T.AutoModelForCausalLM.from_pretrained(modelId, { dtype: 'fp32' });

export const SYSTEM = 'You are a terse assistant. Answer in one line, and never mention the weather.\n';
const NEW = 6;
const rlx = await init();
const layout = layoutOf(model.config);
const fingerprint = rlx.fingerprintOf(`${modelId};${JSON.stringify(model.config.rlxkv)}`);
const open = (extra = {}) => rlx.openCache({ capBytes: 64 << 20, fingerprint, storage: 'fs', path: storeDir, layout, ...extra });
const ids = (tokens) => new T.Tensor('int64', BigInt64Array.from(tokens, BigInt), [1, tokens.length]);
const encode = (text) => Array.from(tokenizer(text).input_ids.data, Number);
const numbers = (t) => Array.from(t.data, Number);

/** The new tokens of a cold greedy run, without any cache. */
async function coldTokens(prompt) {
  const out = await model.generate({ input_ids: ids(prompt), max_new_tokens: NEW, do_sample: false });
  return numbers(out).slice(prompt.length);
}

async function turn(cache, prompt) {
  const out = await cachedGenerate(model, cache, { input_ids: ids(prompt), max_new_tokens: NEW, do_sample: false }, { transformers: T });
  const sequences = numbers(out.sequences);
  return { prompt: prompt.length, reused: out.reused, prefilled: out.prefilled, sequences, tokens: sequences.slice(prompt.length) };
}

const first = encode(`${SYSTEM}User: What is a radix tree?\nAssistant:`);
const result = { version: T.env.version, phase };
if (phase === 'cold') {
  const cache = await open();
  result.restored = cache.restoreReport.indexed;
  result.turn = await turn(cache, first);
  result.expected = await coldTokens(first);
  result.entries = cache.entries().map((e) => ({ tokens: e.tokens.length, dtype: e.dtype }));
  await cache.close();
} else {
  const cache = await open();
  result.restored = cache.restoreReport.indexed;
  result.entriesAtOpen = cache.entries().map((e) => ({ tokens: e.tokens.length, dtype: e.dtype }));
  result.again = await turn(cache, first);
  result.againExpected = await coldTokens(first);
  // The next user turn: the whole conversation so far, then new text.
  const second = [...result.again.sequences, ...encode('\nUser: And a trie?\nAssistant:').slice(1)];
  result.second = await turn(cache, second);
  result.secondExpected = await coldTokens(second);
  // The system prompt edited at one character: only its unchanged prefix is reused.
  const edited = encode(`${SYSTEM.replace('terse', 'tense')}User: What is a radix tree?\nAssistant:`);
  result.editedAt = edited.findIndex((t, i) => t !== first[i]);
  result.edited = await turn(cache, edited);
  result.editedExpected = await coldTokens(edited);
  result.entries = cache.entries().map((e) => ({ tokens: e.tokens.length, dtype: e.dtype, pinned: e.pinned }));
  await cache.close();
  // A cache whose layout is not the model's refuses what the run computed.
  const wrong = rlx.createCache({ capBytes: 1 << 20, layout: { ...layout, heads: layout.heads * 2 } });
  try {
    await turn(wrong, first);
    result.misShaped = 'accepted';
  } catch (err) {
    result.misShaped = `${err.name}: ${err.message}`;
  }
  result.misShapedEntries = wrong.size;
}
process.stdout.write(`${JSON.stringify(result)}\n`);
