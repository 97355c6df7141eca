// The dedicated worker of bench/bench_ttft.mjs (started by bench/ttft_page.js):
// transformers.js 4.x on onnxruntime-web's wasm backend (one thread) runs
// the SmolLM2-135M-shaped random model (build/models/rlxkv-smollm2-135m-shape,
// scripts/make-model.mjs --shape smollm2-135m) through rlxkv/transformers'
// cachedGenerate, and times the first token of a 1,000-token system prompt
// plus a short user turn. Everything runs in this worker, so 'opfs' gets
// its sync access handles; a page reload ends the worker (a new JS heap,
// a new wasm memory, a new ORT session).
//
// Phases (one message each, { phase, ...args } → result or { error }):
//   first:  cold runs (empty memory cache), then warm runs from memory over
//           the system prompt the last cold run cached, then that entry
//           written to 'idb' and to 'opfs' (nothing else in either store);
//   reload: after a page reload, one warm run from 'idb' or 'opfs' (the
//           entry read from storage by the run's match), then one from
//           memory in the same worker; the store is left as it was. With
//           preload, as an app that opens its cache while the model loads:
//           openCache({ preload: true }) called before the model's load,
//           awaited after it (any wait for it counted in the TTFT), and
//           the warm run served from memory.
import init from '/wasm/dist/rlxkv.browser.js';
import * as adapter from '/js/transformers.js';
import { DEFAULT_SYSTEM_PROMPT, userTurn } from '/demo/system-prompt.js';
import { localTransformers } from './transformers_local.js';

/** The model folder under /build/models/ (bench/bench_ttft.mjs --model): each phase's message names it. */
let MODEL_ID = 'rlxkv-smollm2-135m-shape';
const SYSTEM_TOKENS = 1000;
const CAP = 512 << 20;
/** User messages: [0] is the one cached with the system prompt; each starts with its own letter, so a later turn reuses only the system prompt and '\nUser: '. */
const MESSAGES = [
  'Hello! What can you do for me?',
  'Can you summarise your rules in one line?',
  'Do you keep any of my data anywhere?',
  'Explain a prompt cache in one sentence.',
  'Give me a tiny JavaScript example of a closure.',
  'Is this page sending anything over the network?',
  'Name three things you will not do.',
  'Why is the first token slow without a cache?',
];
export const PATHS = { idb: '/bench-ttft-idb', opfs: '/bench-ttft-opfs' };

const now = () => performance.now();
let env = null;

/** Exactly SYSTEM_TOKENS tokens of system prompt (the byte-level tokenizer: one per byte). */
const systemText = () => (DEFAULT_SYSTEM_PROMPT + DEFAULT_SYSTEM_PROMPT).slice(0, SYSTEM_TOKENS);

async function setup() {
  if (env) return env;
  const t0 = now();
  const tf = await localTransformers();
  tf.env.backends.onnx.wasm.numThreads = 1;
  const rlx = await init();
  const tokenizer = await tf.AutoTokenizer.from_pretrained(MODEL_ID);
  const model = await tf.AutoModelForCausalLM.from_pretrained(MODEL_ID, { dtype: 'fp32', device: 'wasm' });
  const loadMs = now() - t0;
  // ORT's first-run setup, on a 2-token prompt (no cache involved), as an app's first request would not be.
  const t1 = now();
  await model.generate({ input_ids: tokenizer('Hi').input_ids, max_new_tokens: 1, do_sample: false });
  const warmupMs = now() - t1;
  const system = systemText();
  const systemTokens = tokenizer(system, { add_special_tokens: false }).input_ids.dims[1];
  if (systemTokens !== SYSTEM_TOKENS) throw new Error(`the system prompt is ${systemTokens} tokens, not ${SYSTEM_TOKENS}`);
  const layout = adapter.layoutOf(model.config);
  const fingerprint = rlx.fingerprintOf(model.config.rlxkv.fingerprint_key);
  env = { tf, rlx, tokenizer, model, layout, fingerprint, system, systemTokens, loadMs, warmupMs };
  return env;
}

const promptOf = (e, i) => e.tokenizer(e.system + userTurn(MESSAGES[i])).input_ids;

/** One cachedGenerate of one new token: ms to the first token (streamer), the token, reused tokens. */
async function turn(e, cache, i) {
  const ids = promptOf(e, i);
  globalThis.gc?.();
  let puts = 0, first = 0;
  const streamer = { put() { if (puts++ === 1) first = now(); }, end() {} };
  const t0 = now();
  const out = await adapter.cachedGenerate(e.model, cache, { input_ids: ids, max_new_tokens: 1, do_sample: false, streamer }, { transformers: e.tf });
  const t1 = now();
  if (!first) first = t1; // no streamer call for the token: the run's end
  return { msg: i, ttft: first - t0, total: t1 - t0, token: Number(out.sequences.data[ids.dims[1]]), promptTokens: ids.dims[1], reused: out.reused };
}

/** Bytes of KV per token of the model's layout (float32). */
const bytesPerToken = (layout) => layout.layers * 2 * layout.heads * layout.headDim * 4;

export async function first({ reps, upload = null }) {
  if (reps + 1 > MESSAGES.length) throw new Error(`at most ${MESSAGES.length - 1} repetitions`);
  const e = await setup();
  const { rlx, layout, fingerprint } = e;
  const cache = await rlx.openCache({ capBytes: CAP, fingerprint, layout, storage: 'none' });
  // Cold: messages 1..reps, then 0, each on an empty cache; the last leaves
  // system prompt + message 0 cached.
  const cold = [];
  for (const i of [...Array.from({ length: reps }, (_, r) => r + 1), 0]) {
    await cache.clear();
    const t = await turn(e, cache, i);
    if (t.reused !== 0) throw new Error(`a cold run reused ${t.reused} tokens`);
    cold.push(t);
  }
  const seed = cache.entries();
  if (seed.length !== 1) throw new Error(`${seed.length} entries after the cold runs`);
  // Warm from memory: messages 1..reps over the cached system prompt.
  const memory = [];
  for (let i = 1; i <= reps; i++) memory.push(await turn(e, cache, i));
  // The seed entry alone, written to each store (emptied first).
  const tokens = seed[0].tokens;
  const hit = cache.lookup(tokens);
  if (!hit || hit.matched !== tokens.length) throw new Error('the seed entry is gone');
  const stores = {};
  for (const storage of Object.keys(PATHS)) {
    const s = await rlx.openCache({ capBytes: CAP, fingerprint, layout, storage, path: PATHS[storage] });
    await s.clear({ stored: true });
    s.insert(tokens, hit);
    const t0 = now();
    await s.flush();
    stores[storage] = { flushMs: now() - t0, storedEntries: s.entries().length };
    await s.close({ flush: false });
  }
  // The seed entry as one blob, to the benchmark's CDN stand-in, which publishes it as pages.
  if (upload) {
    const res = await fetch(upload, { method: 'PUT', body: cache.exportBlob(tokens) });
    if (!res.ok) throw new Error(`uploading the seed blob: HTTP ${res.status}`);
  }
  await cache.close({ flush: false });
  return {
    transformers: e.tf.env.version, modelId: MODEL_ID, layout, systemTokens: e.systemTokens, loadMs: e.loadMs, warmupMs: e.warmupMs,
    seedTokens: tokens.length, seedBytes: seed[0].bytes, bytesPerToken: bytesPerToken(layout), cold, memory, stores,
  };
}

export async function reload({ storage, msg, after, preload = false }) {
  const events = [];
  const open = (rlx, fingerprint, layout) => rlx.openCache({ capBytes: CAP, fingerprint, layout, storage, path: PATHS[storage], preload, onEvent: (ev) => events.push(ev) });
  let t0 = now(), opening = null, openMs, waitMs = 0;
  if (preload) {
    // What the app knows before its model loads: the model's fingerprint key and layout (its config).
    const rlx = await init();
    const config = await (await fetch(`/build/models/${MODEL_ID}/config.json`)).json();
    opening = open(rlx, rlx.fingerprintOf(config.rlxkv.fingerprint_key), adapter.layoutOf(config));
    opening.then(() => { openMs = now() - t0; }, () => {});
  }
  const e = await setup();
  const { rlx, layout, fingerprint } = e;
  let cache;
  if (preload) {
    const t1 = now();
    cache = await opening;
    waitMs = now() - t1;
  } else {
    t0 = now();
    cache = await open(rlx, fingerprint, layout);
    openMs = now() - t0;
  }
  try {
    const st = cache.stats;
    if (st.entries !== (preload ? 1 : 0) || cache.entries().length !== 1) throw new Error(`${storage}: expected one ${preload ? 'preloaded' : 'stored-only'} entry, found ${cache.entries().length} (${st.entries} resident)`);
    events.length = 0;
    const warm = await turn(e, cache, msg);
    const hits = events.filter((ev) => ev.type === 'hit');
    const source = preload ? 'memory' : 'storage';
    if (hits.length !== 1 || hits[0].source !== source) throw new Error(`${storage}: the run's hit was ${JSON.stringify(hits)}, not one from ${source}`);
    events.length = 0;
    const then = await turn(e, cache, after);
    const memHits = events.filter((ev) => ev.type === 'hit');
    if (memHits.length !== 1 || memHits[0].source !== 'memory') throw new Error(`${storage}: the second run's hit was ${JSON.stringify(memHits)}, not one from memory`);
    // The same read again, in this worker, outside generate: a second cache on the store, its match of the entry.
    const again = await rlx.openCache({ capBytes: CAP, fingerprint, layout, storage, path: PATHS[storage] });
    let readAgainMs;
    try {
      const t1 = now();
      const hit = await again.match(Uint32Array.from(promptOf(e, msg).data.subarray(0, warm.reused), Number), { partial: true, view: true });
      readAgainMs = now() - t1;
      if (!hit || hit.matched !== warm.reused) throw new Error(`${storage}: the second read matched ${hit && hit.matched}`);
    } finally {
      await again.close({ flush: false });
    }
    return { storage, preload, loadMs: e.loadMs, warmupMs: e.warmupMs, openMs, waitMs, warm, readBytes: hits[0].bytes, readMs: hits[0].ms, then, readAgainMs };
  } finally {
    await cache.close({ flush: false }); // the store keeps the seed entry alone
  }
}

/**
 * A first visit (a fresh worker, an empty store) through the remote tier:
 * a cache on IndexedDB, emptied first, with remote: { url, dtype,
 * pageTokens }, and one request whose match fetches the published pages.
 * With url null, the same visit with no remote tier: cold, computed. With
 * dtype 'q8' (approximate KV) the cache's fingerprint is the model's
 * folded with 'remote-q8', as README advises, and the tree's.
 *
 * With prefetch, as an app that knows its system prompt before its model
 * has loaded: the cache opened and its match of the system prompt's
 * tokens started first (the tokenizer and the model's config are small),
 * the model loaded beside it, the match awaited after the load (any wait
 * counted in the TTFT), and the request served from memory.
 */
export async function remote({ url, dtype, pageTokens, msg, path, prefetch = false }) {
  const events = [];
  const open = (rlx, config, layout) => rlx.openCache({
    capBytes: CAP, layout, storage: 'idb', path, onEvent: (ev) => events.push(ev),
    fingerprint: rlx.fingerprintOf(`${config.rlxkv.fingerprint_key}${dtype === 'q8' ? ' remote-q8' : ''}`),
    ...(url ? { remote: { url, dtype, pageTokens, timeoutMs: 60000 } } : {}),
  });
  let cache = null, fetching = null, fetched = null, waitMs = 0;
  if (prefetch) {
    const t0 = now();
    const [rlx, tf] = await Promise.all([init(), localTransformers()]);
    const config = await (await fetch(`/build/models/${MODEL_ID}/config.json`)).json();
    const tokenizer = await tf.AutoTokenizer.from_pretrained(MODEL_ID);
    const system = Uint32Array.from(tokenizer(systemText()).input_ids.data, Number);
    cache = await open(rlx, config, adapter.layoutOf(config));
    await cache.clear({ stored: true });
    const t1 = now();
    fetching = cache.match(system, { view: true }).then((hit) => {
      fetched = { ms: now() - t1, startMs: t1 - t0, matched: hit ? hit.matched : 0, system };
    });
  }
  const e = await setup();
  const { rlx, layout, model } = e;
  if (prefetch) {
    const t1 = now();
    await fetching;
    waitMs = now() - t1;
    const ids = promptOf(e, msg).data;
    if (fetched.system.some((t, i) => t !== Number(ids[i]))) throw new Error('the system prompt\'s tokens are not a prefix of the prompt\'s');
  } else {
    cache = await open(rlx, model.config, layout);
    await cache.clear({ stored: true });
  }
  try {
    const remoteHits = events.filter((ev) => ev.type === 'hit');
    events.length = 0;
    const t = await turn(e, cache, msg);
    const hits = events.filter((ev) => ev.type === 'hit');
    if (prefetch) {
      if (remoteHits.length !== 1 || remoteHits[0].source !== 'remote') throw new Error(`remote ${url}: the prefetch's hit was ${JSON.stringify(remoteHits)}, not one from remote (${JSON.stringify(cache.stats.remote)})`);
      // The request's own match may fetch pages past the system prompt's (its user turn's start, shared by every prompt): counted in its TTFT.
      if (hits.length !== 1 || !['memory', 'remote'].includes(hits[0].source) || t.reused < fetched.matched) {
        throw new Error(`remote ${url}: the run's hit after the prefetch was ${JSON.stringify(hits)}, not one over the ${fetched.matched} tokens prefetched`);
      }
    } else {
      if (url && (hits.length !== 1 || hits[0].source !== 'remote')) throw new Error(`remote ${url}: the run's hit was ${JSON.stringify(hits)}, not one from remote (${JSON.stringify(cache.stats.remote)})`);
      if (!url && t.reused) throw new Error(`a cold first visit reused ${t.reused} tokens`);
    }
    // With prefetch, the TTFT counts any wait for the prefetch after the model had loaded.
    const warm = { ...t, ttft: t.ttft + waitMs };
    return {
      url, dtype, pageTokens, prefetch, loadMs: e.loadMs, warm, waitMs, fetchMs: prefetch ? fetched.ms : hits[0]?.ms ?? 0,
      prefetched: prefetch ? fetched.matched : 0, prefetchStartMs: prefetch ? fetched.startMs : 0, remote: cache.stats.remote ?? null,
    };
  } finally {
    await cache.clear({ stored: true });
    await cache.close({ flush: false });
  }
}

const PHASES = { first, reload, remote };
self.onmessage = async ({ data }) => {
  try {
    if (data.model) MODEL_ID = data.model;
    self.postMessage(await PHASES[data.phase](data));
  } catch (err) {
    self.postMessage({ error: String((err && err.stack) || err) });
  }
};
