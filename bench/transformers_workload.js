// The transformers.js benchmark's workload, shared by Node
// (bench/bench_transformers.mjs, onnxruntime-node) and Chromium
// (bench/transformers_page.html, onnxruntime-web's wasm backend): time to
// first token of the demo's ~1,100-token prompt through cachedGenerate,
// cold (empty cache) and warm (all but the last prompt token cached), and
// where a warm start's time before generate goes: the lookup (a copy of the
// KV out of the cache) and the adapter's conversion into transformers.js
// tensors, next to a bare lookup + copy of the same KV. Every figure is a
// list of per-repetition times (ms); the caller takes medians.
import { DEFAULT_SYSTEM_PROMPT, userTurn } from '../demo/system-prompt.js';

const now = () => performance.now();
/** A collection before each timed step where the runtime allows it (node --expose-gc), so one step's garbage is not another's pause. */
const settle = () => globalThis.gc?.();

/**
 * One model's figures. env: { tf (the transformers.js module), rlx (rlxkv
 * init()), adapter (rlxkv/transformers), open (async (fingerprint, layout) →
 * a persisted cache, or null) }. opts: { id, store, coldReps, warmReps }.
 */
export async function measure(env, { id, store = 'auto', coldReps, warmReps }) {
  const { tf, rlx, adapter } = env;
  const tokenizer = await tf.AutoTokenizer.from_pretrained(id);
  const model = await tf.AutoModelForCausalLM.from_pretrained(id, { dtype: 'fp32', device: env.device });
  const layout = adapter.layoutOf(model.config);
  const modelDtype = adapter.kvDtypeOf(model);
  const prompt = Array.from(tokenizer(DEFAULT_SYSTEM_PROMPT + userTurn('What can you help me with today?')).input_ids.data, Number);
  const n = prompt.length;
  const ids = () => new tf.Tensor('int64', BigInt64Array.from(prompt, BigInt), [1, n]);
  const query = Uint32Array.from(prompt);
  const lookupOpts = { partial: true, maxMatched: n - 1 };

  const marks = {};
  const cache = rlx.createCache({ capBytes: 256 << 20, layout });
  const timedCache = new Proxy(cache, {
    get(t, p) {
      if (p === 'lookup') {
        return (...a) => { marks.lookupStart = now(); const hit = t.lookup(...a); marks.lookupEnd = now(); return hit; };
      }
      if (p === 'match' && typeof t.match === 'function') { // the tiered cache's lookup over memory and storage
        return async (...a) => { marks.lookupStart = now(); const hit = await t.match(...a); marks.lookupEnd = now(); return hit; };
      }
      if (p === 'insert') {
        return (...a) => { marks.insertStart = now(); return t.insert(...a); };
      }
      const v = Reflect.get(t, p);
      return typeof v === 'function' ? v.bind(t) : v;
    },
  });
  const timedModel = new Proxy(model, {
    get(t, p) {
      if (p === 'generate') {
        return async (...a) => { marks.generateStart = now(); const out = await t.generate(...a); marks.generateEnd = now(); return out; };
      }
      const v = Reflect.get(t, p);
      return typeof v === 'function' ? v.bind(t) : v;
    },
  });
  /** One cachedGenerate of one new token; its marks, relative to its start. */
  async function turn() {
    for (const k of Object.keys(marks)) delete marks[k];
    settle();
    let puts = 0, first = 0;
    const streamer = { put() { if (puts++ === 1) first = now(); }, end() {} };
    const t0 = now();
    const out = await adapter.cachedGenerate(timedModel, timedCache, { input_ids: ids(), max_new_tokens: 1, do_sample: false, streamer }, { transformers: tf, storeDtype: store });
    const t1 = now();
    return {
      reused: out.reused,
      ttft: first - t0,
      lookup: marks.lookupEnd - marks.lookupStart,
      // From the lookup's end to generate's start: tensorsFromHit + DynamicCache.
      convert: marks.generateStart - marks.lookupEnd,
      // Before generate: the lookup and the conversion (what a bare lookup is compared with).
      restore: marks.generateStart - marks.lookupStart,
      // After generate: kvFromTensors (and any dtype change) until insert starts, then insert.
      fromTensors: marks.insertStart - marks.generateEnd,
      insert: t1 - marks.insertStart,
    };
  }

  await model.generate({ input_ids: tokenizer('Hi').input_ids, max_new_tokens: 1, do_sample: false }); // ORT's first-run setup
  const cold = [];
  for (let r = 0; r < coldReps; r++) {
    cache.clear();
    const t = await turn();
    if (t.reused !== 0) throw new Error(`a cold run reused ${t.reused} tokens`);
    cold.push(t);
  }
  // Warm runs, each next to a bare lookup + copy of the same KV (alternating order).
  const warm = [], bare = [];
  for (let r = 0; r < warmReps; r++) {
    const bareOne = () => {
      settle();
      const t0 = now();
      const hit = cache.lookup(query, lookupOpts);
      const ms = now() - t0;
      if (!hit || hit.matched !== n - 1) throw new Error('the bare lookup missed');
      bare.push(ms);
    };
    if (r % 2) bareOne();
    const t = await turn();
    if (t.reused !== n - 1) throw new Error(`a warm run reused ${t.reused} of ${n} tokens`);
    warm.push(t);
    if (!(r % 2)) bareOne();
  }
  // Outside generate, many times: the adapter's restore (lookup + copy, then
  // tensorsFromHit + DynamicCache under 4.x, each part timed) next to a bare
  // lookup + copy of the same KV, alternating order.
  const restoreLoop = [], lookupPart = [], convertOnly = [], bareLoop = [];
  const adapterRestore = () => {
    const t0 = now();
    const hit = cache.lookup(query, lookupOpts);
    const t1 = now();
    const past = adapter.tensorsFromHit(hit, layout, tf.Tensor, { dtype: modelDtype });
    if (tf.DynamicCache) new tf.DynamicCache(past);
    const t2 = now();
    restoreLoop.push(t2 - t0);
    lookupPart.push(t1 - t0);
    convertOnly.push(t2 - t1);
  };
  const bareLookup = () => {
    const t0 = now();
    cache.lookup(query, lookupOpts);
    bareLoop.push(now() - t0);
  };
  for (let r = 0; r < 5 * warmReps; r++) {
    if (r % 2) { bareLookup(); adapterRestore(); } else { adapterRestore(); bareLookup(); }
  }
  const entry = cache.entries()[0];
  const result = {
    id, store, modelDtype, entryDtype: entry.dtype, promptTokens: n, restoredTokens: n - 1,
    kvBytes: entry.bytes, cold, warm, bare, restoreLoop, lookupPart, convertOnly, bareLoop, restoreAtOpen: null, restoreAtOpenError: null,
  };
  // A restart: the entry flushed, then a cache opened on that storage, and
  // the match that reads its blob back.
  if (env.open) {
    try {
      const fingerprint = rlx.fingerprintOf(`bench-transformers;${id};${store}`);
      const persisted = await env.open(fingerprint, layout, 'write');
      persisted.insert(entry.tokens, cache.lookup(entry.tokens));
      await persisted.close();
      const t0 = now();
      const again = await env.open(fingerprint, layout, 'read');
      const hit = await again.match(entry.tokens, { view: true });
      result.restoreAtOpen = now() - t0;
      if (!hit || hit.matched !== entry.tokens.length) throw new Error('the restarted cache did not read the entry back');
      await again.close();
    } catch (err) {
      result.restoreAtOpenError = `${err.code || err.name}: ${err.message}`;
    }
  }
  await cache.close({ flush: false });
  return result;
}

/** The rows both runners measure: the model, and how its entries are stored. */
export const WORKLOADS = [
  { id: 'rlxkv-demo', store: 'auto', label: 'f32 KV' },
  { id: 'rlxkv-demo-f16kv', store: 'auto', label: 'f16 KV' },
  { id: 'rlxkv-demo-f16kv', store: 'f32', label: 'f16 KV stored as f32 (converted on restore)' },
];
