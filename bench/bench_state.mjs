// Models with state (issue #25) through rlxkv/transformers in Node
// (transformers.js 4.x on onnxruntime-node), on the demo's ~1,100-token
// prompt: what taking state checkpoints costs a cold prefill, and what a
// warm start's restore costs next to a bare lookup plus copy of the same
// bytes. Models: an LFM2-350M-layered decoder and one of Qwen3.5-0.8B's
// widths (make_onnx_model.py --kind lfm2-bench, qwen3_5-bench, made here if
// missing) and the tiny LFM2-, Qwen3.5- and Gemma3-like test models.
//
//   node --expose-gc bench/bench_state.mjs OUT.json [--quick]
//
// Cold time to first token, with the prompt run in pieces that end at each
// multiple of 256 (cachedGenerate's default checkpointEvery), at the last
// multiple of 256 before the prompt's end only (one checkpoint inside the
// prompt), and in one piece (no checkpoint inside the prompt: only the
// reply's end is kept). Warm: the same prompt with its checkpoints held.
// Restore: cache.match as cachedGenerate asks it for CPU tensors (copies)
// and the tensors (tensorsFromHit, DynamicCache), against a
// bare lookup and copy of the same KV from a KV-only cache plus a copy of
// the state's bytes, made into the same tensors.
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as tf from '@huggingface/transformers';
import init from '../js/index.js';
import * as adapter from '../js/transformers.js';
import { DEFAULT_SYSTEM_PROMPT, userTurn } from '../demo/system-prompt.js';

const out = process.argv[2];
const quick = process.argv.includes('--quick');
if (!out) {
  console.error('usage: node --expose-gc bench/bench_state.mjs OUT.json [--quick]');
  process.exit(2);
}
const models = fileURLToPath(new URL('../build/models/', import.meta.url));
for (const kind of ['lfm2-bench', 'qwen3_5-bench']) {
  if (!existsSync(`${models}rlxkv-${kind}/config.json`)) {
    execFileSync('/usr/bin/python3', [fileURLToPath(new URL('../scripts/make_onnx_model.py', import.meta.url)), '--kind', kind, '--out', models], { stdio: 'inherit' });
  }
}
tf.env.allowRemoteModels = false;
tf.env.localModelPath = models;
const rlx = await init();
const now = () => performance.now();
const settle = () => globalThis.gc?.();
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const EVERY = 256;

const MODELS = [
  { id: 'rlxkv-lfm2-bench', label: 'LFM2-350M layers (16: 10 conv, 6 attention; MLP 2,048)', cold: quick ? 1 : 3 },
  { id: 'rlxkv-qwen3_5-bench', label: 'Qwen3.5-0.8B widths (12 layers: 9 linear, 3 full attention; MLP 2,048)', cold: quick ? 1 : 3 },
  { id: 'rlxkv-lfm2', label: 'tiny LFM2-like (4 layers, hidden 64)', cold: quick ? 2 : 5 },
  { id: 'rlxkv-qwen3_5', label: 'tiny Qwen3.5-like (4 layers, hidden 64)', cold: quick ? 2 : 5 },
  { id: 'rlxkv-gemma3', label: 'tiny Gemma3-like (4 layers, hidden 64; KV only)', cold: quick ? 2 : 5 },
];

async function measure({ id, label, cold: coldReps }) {
  const tokenizer = await tf.AutoTokenizer.from_pretrained(id);
  const model = await tf.AutoModelForCausalLM.from_pretrained(id, { dtype: 'fp32' });
  const layout = adapter.layoutOf(model.config);
  const prompt = Array.from(tokenizer(DEFAULT_SYSTEM_PROMPT + userTurn('What can you help me with today?')).input_ids.data, Number);
  const n = prompt.length;
  const inputs = () => ({
    input_ids: new tf.Tensor('int64', BigInt64Array.from(prompt, BigInt), [1, n]),
    attention_mask: new tf.Tensor('int64', new BigInt64Array(n).fill(1n), [1, n]),
  });
  const open = () => rlx.openCache({ capBytes: 512 << 20, layout, storage: 'none' });
  /** Time to first token of one cachedGenerate of the prompt, checkpoints every `every` tokens. */
  async function ttft(cache, every) {
    settle();
    let puts = 0, first = 0;
    const streamer = { put() { if (puts++ === 1) first = now(); }, end() {} };
    const t0 = now();
    const o = await adapter.cachedGenerate(model, cache, { ...inputs(), max_new_tokens: 1, do_sample: false, streamer }, { transformers: tf, checkpointEvery: every });
    return { ms: first - t0, reused: o.reused };
  }
  await model.generate({ ...inputs(), max_new_tokens: 1, do_sample: false }); // ORT's first-run setup
  const lastBoundary = Math.floor((n - 1) / EVERY) * EVERY;
  const ways = layout.state
    ? [['every', EVERY], ['last', lastBoundary], ['none', 1e9]]
    : [['none', 1e9]];
  const cold = Object.fromEntries(ways.map(([w]) => [w, []]));
  for (let r = 0; r < coldReps; r++) {
    for (const [w, every] of r % 2 ? [...ways].reverse() : ways) {
      const cache = await open();
      cold[w].push((await ttft(cache, every)).ms);
      await cache.close();
    }
  }
  // Warm: a cache holding the checkpoints every EVERY tokens and the reply's end.
  const cache = await open();
  await ttft(cache, EVERY);
  const warm = [];
  let reused = 0;
  for (let r = 0; r < (quick ? 3 : 9); r++) {
    const t = await ttft(cache, EVERY);
    warm.push(t.ms);
    reused = t.reused;
  }
  // Restore next to a bare lookup + copy of the same bytes.
  const query = Uint32Array.from(prompt);
  const how = { partial: true, maxMatched: n - 1 };
  const hit = await cache.match(query, how);
  const plain = rlx.createCache({ capBytes: 512 << 20, layout: { order: layout.order, heads: layout.heads, headDim: layout.headDim, layers: layout.layers } });
  plain.insert(query.subarray(0, hit.matched), { k: hit.k, v: hit.v });
  const state = hit.state ?? [];
  const restore = [], bare = [];
  const dtypes = { dtype: adapter.kvDtypeOf(model) };
  const restoreOnce = async () => {
    settle();
    const t0 = now();
    const h = await cache.match(query, how); // as cachedGenerate asks for CPU tensors
    new tf.DynamicCache(adapter.tensorsFromHit(h, layout, tf.Tensor, dtypes));
    restore.push(now() - t0);
  };
  // The same tensors made of the bare hit: a copy of 25 MB sets off a
  // collection at the next allocations, which would otherwise fall in the
  // restore's time only.
  const bareOnce = () => {
    settle();
    const t0 = now();
    const h = plain.lookup(query, how);
    h.state = state.map((b) => b.slice());
    h.stateDtype = hit.stateDtype;
    new tf.DynamicCache(adapter.tensorsFromHit(h, layout, tf.Tensor, dtypes));
    bare.push(now() - t0);
  };
  for (let r = 0; r < (quick ? 10 : 60); r++) {
    if (r % 2) { bareOnce(); await restoreOnce(); } else { await restoreOnce(); bareOnce(); }
  }
  const bytes = (bs) => bs.reduce((s, b) => s + b.byteLength, 0);
  const row = {
    id, label, prompt_tokens: n, kv_bytes: bytes([...hit.k, ...hit.v]), state_bytes: bytes(state),
    checkpoints: cache.stats.state?.entries ?? 0, warm_reused: reused,
    cold_ms: Object.fromEntries(Object.entries(cold).map(([w, xs]) => [w, median(xs)])),
    warm_ms: median(warm), restore_ms: median(restore), bare_ms: median(bare),
  };
  row.restore_over_bare = row.restore_ms / row.bare_ms;
  if (layout.state) {
    row.every_over_none = row.cold_ms.every / row.cold_ms.none;
    row.last_over_none = row.cold_ms.last / row.cold_ms.none;
  }
  await cache.close();
  plain.close();
  console.error(`  ${id}: cold ${Object.entries(row.cold_ms).map(([w, v]) => `${w} ${v.toFixed(0)} ms`).join(', ')}; warm ${row.warm_ms.toFixed(1)} ms (reused ${reused}/${n}); restore ${row.restore_ms.toFixed(3)} ms = x${row.restore_over_bare.toFixed(2)} a bare lookup + copy`);
  return row;
}

const results = { config: { quick, runtime: 'onnxruntime-node', transformers: tf.env.version, node: process.version, every: EVERY }, rows: [] };
for (const m of MODELS) results.rows.push(await measure(m));
writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
