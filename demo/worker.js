// The demo's built-in engine, a module worker: owns the model
// (demo/model.js) and an rlxkv cache persisted in IndexedDB, so the page
// stays responsive while it prefills. worker-transformers.js is the other
// engine, with the same protocol.
//
// Protocol (postMessage). In: { type, id?, ... }
//   init   { useAsset }           open the cache; import the shipped KV of the
//                                 default system prompt if it is not cached
//   send   { system, message }    reply: 'token'* then 'done'
//   info                          cache panel numbers
//   clear                         drop every entry, in memory and stored
//   verify                        recompute the default prompt's KV here and
//                                 compare it with the shipped asset's bytes
// Out: { type: 'ready' | 'token' | 'done' | 'info' | 'cleared' | 'verified' |
//        'error', id?, ... }. Requests are handled one at a time, in order.
import init from '../web/dist/rlxkv.browser.js'; // the minified browser bundle (npm run build)
import { createModel, kvHash } from './model.js';
import { MODEL_OPTIONS, DEFAULT_SYSTEM_PROMPT, REPLY_TOKENS, userTurn } from './system-prompt.js';
import { Origins, cacheInfo, entryOf, openedInfo, clearCache, keyOf, now, openCache, prefixOf, round, serveRequests, watchCache } from './worker-common.js';

const CAP_BYTES = 256 * 1024 * 1024;
/** Stored blobs beyond this (oldest first, not the pinned prompts) are pruned on flush. */
const STORAGE_CAP_BYTES = 96 * 1024 * 1024;
const IDB_PATH = '/rlxkv-demo';
const ASSET_URL = new URL('./assets/system.rlxkv', import.meta.url).href;
/** FNV-1a of the KV of 'Hello, rlxkv!' (see tests/node/demo-model.test.js). */
const GOLDEN_HELLO = 'ed3a58ed';

let rlx = null;
let model = null;
let cache = null;
let fingerprint = 0n;
let defaultTokens = null;
let startup = null;          // what init measured, repeated in 'ready'
const origins = new Origins();
const watch = watchCache();
let currentCustom = null;    // tokens of the pinned non-default system prompt, if any

function concat(a, b) {
  const out = new Uint32Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

const info = () => cacheInfo(rlx, cache, origins, {
  fingerprint,
  fingerprintKey: model.fingerprintKey,
  decode: (tokens) => model.decode(tokens),
  isDefault: (tokens) => tokens.length === defaultTokens.length && keyOf(tokens) === keyOf(defaultTokens),
});

async function doInit({ useAsset = true } = {}) {
  if (startup) return { ...startup, info: await info() };
  const t0 = now();
  rlx = await init();
  const wasmMs = now() - t0;

  const t1 = now();
  model = createModel(MODEL_OPTIONS);
  model.warmUp(); // let the JIT compile the kernels before anything is timed
  const modelMs = now() - t1;
  fingerprint = rlx.fingerprintOf(model.fingerprintKey);
  defaultTokens = model.encode(DEFAULT_SYSTEM_PROMPT);

  const t2 = now();
  cache = await openCache(rlx, { capBytes: CAP_BYTES, fingerprint, path: IDB_PATH, storageCapBytes: STORAGE_CAP_BYTES, onEvent: watch.onEvent });
  const openMs = now() - t2;
  const restore = cache.restoreReport;
  for (const e of cache.entries()) origins.remember(e.tokens, 'IndexedDB');
  // Blobs of an older model version are useless now.
  if (restore && restore.stale > 0) await cache.prune({ stale: true }).catch(() => {});

  const asset = { status: 'skipped', ms: 0, tokens: 0, bytes: 0, error: null };
  if (cache.has(defaultTokens)) {
    asset.status = 'cached';
  } else if (useAsset) {
    const ta = now();
    try {
      const r = await cache.importBlob(ASSET_URL, { pin: true });
      asset.status = 'imported';
      asset.tokens = r.tokens;
      asset.bytes = r.bytes;
      origins.remember(defaultTokens, 'shipped asset');
      if (!cache.has(defaultTokens)) throw new Error('the shipped asset is not the default system prompt');
    } catch (err) {
      asset.status = err && err.code === 'STALE' ? 'stale' : 'missing';
      asset.error = String(err && err.message || err);
    }
    asset.ms = now() - ta;
    if (asset.status === 'imported') {
      // Store it, so a reload restores it from IndexedDB.
      await cache.flush().catch((err) => { asset.error = `flush: ${err.message}`; });
    }
  }
  if (cache.has(defaultTokens)) cache.pin(defaultTokens);

  startup = {
    engine: 'builtin',
    modelName: `built-in transformer (${model.config.layers} layers, d_model ${model.config.dModel}, byte tokens)`,
    canVerify: true,
    ...openedInfo({ wasmMs, modelMs, openMs, restore, cache }),
    asset: { ...asset, ms: round(asset.ms) },
    defaultTokens: defaultTokens.length,
    defaultEntry: entryOf(cache, Array.from(defaultTokens)),
    config: model.config,
  };
  return { ...startup, info: await info() };
}

async function doSend({ id, system, message }) {
  const t0 = now();
  const sysTokens = model.encode(String(system));
  const tokens = concat(sysTokens, model.encode(userTurn(String(message)), { bos: false }));

  const tl = now();
  // match: memory or IndexedDB (a stored prompt's one blob is read on its
  // first hit after a reload; onEvent's 'hit' says which, and the read's
  // time). view: the hit's K/V are read straight from wasm memory (no
  // copy); they stay valid until the cache frees an entry, and prefill
  // copies them first.
  watch.take();
  const hit = await cache.match(tokens, { partial: true, maxMatched: tokens.length - 1, view: true });
  const lookupMs = now() - tl;
  const matched = hit ? hit.matched : 0;
  const prefix = prefixOf(hit ? watch.take() : null, origins, tokens);

  const tp = now();
  const past = hit ? { k: hit.k, v: hit.v } : null;
  const { kv } = model.prefill(tokens.subarray(matched), past);
  const prefillMs = now() - tp;

  let ttftMs = 0;
  let text = '';
  const tg = now();
  const out = model.generate(kv, tokens, REPLY_TOKENS, {
    onToken(tok, i) {
      const ch = model.decode([tok]);
      text += ch;
      if (i === 0) ttftMs = now() - t0;
      postMessage({ type: 'token', id, index: i, text: ch, ttftMs: i === 0 ? round(ttftMs) : undefined });
    },
  });
  const genMs = now() - tg;

  // Cache the system prompt's KV (its rows are the first of `kv`).
  let inserted = false, insertMs = 0, flushMs = 0, flushError = null;
  const ti = now();
  if (!cache.has(sysTokens)) {
    const rows = sysTokens.length * model.config.dModel; // insert copies these views
    cache.insert(sysTokens, { k: kv.k.map((b) => b.subarray(0, rows)), v: kv.v.map((b) => b.subarray(0, rows)) });
    inserted = true;
    origins.remember(sysTokens, 'computed');
  }
  const isDefault = keyOf(sysTokens) === keyOf(defaultTokens);
  if (!isDefault && currentCustom && keyOf(currentCustom) !== keyOf(sysTokens) && cache.has(currentCustom)) {
    cache.unpin(currentCustom); // pin only the default and the latest custom prompt
  }
  cache.pin(sysTokens);
  if (!isDefault) currentCustom = sysTokens;
  insertMs = now() - ti;
  const tf = now();
  try {
    await cache.flush();
  } catch (err) {
    flushError = `${err.code || 'ERROR'}: ${err.message}`;
  }
  flushMs = now() - tf;

  return {
    id,
    text,
    reply: model.decode(out),
    promptTokens: tokens.length,
    systemTokens: sysTokens.length,
    matched,
    prefilled: tokens.length - matched,
    source: prefix.source,
    prefix,
    kind: matched > 0 ? 'warm' : 'cold',
    lookupMs: round(lookupMs),
    prefillMs: round(prefillMs),
    ttftMs: round(ttftMs),
    genMs: round(genMs),
    insertMs: round(insertMs),
    flushMs: round(flushMs),
    inserted,
    flushError,
    totalMs: round(now() - t0),
    info: await info(),
  };
}

async function doClear() {
  const r = await clearCache(cache, origins);
  currentCustom = null;
  return { ...r, info: await info() };
}

async function doVerify() {
  const t0 = now();
  const helloHash = kvHash(model.prefill(model.encode('Hello, rlxkv!')).kv);
  const { kv } = model.prefill(defaultTokens);
  const prefillMs = now() - t0;
  const mine = rlx.encodeEntry({ tokens: defaultTokens, k: kv.k, v: kv.v }, fingerprint);
  let assetMatch = null, assetError = null;
  try {
    const res = await fetch(ASSET_URL);
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    const shipped = new Uint8Array(await res.arrayBuffer());
    assetMatch = shipped.length === mine.length && shipped.every((b, i) => b === mine[i]);
  } catch (err) {
    assetError = String(err.message || err);
  }
  // And the cached entry, if any (whatever its origin).
  const cached = cache.exportBlob(defaultTokens);
  const cacheMatch = cached ? cached.length === mine.length && cached.every((b, i) => b === mine[i]) : null;
  return {
    helloHash,
    helloMatch: helloHash === GOLDEN_HELLO,
    assetMatch,
    assetError,
    cacheMatch,
    bytes: mine.length,
    prefillMs: round(prefillMs),
    ms: round(now() - t0),
  };
}

const handlers = {
  init: async (msg) => ({ type: 'ready', ...(await doInit(msg)) }),
  send: async (msg) => ({ type: 'done', ...(await doSend(msg)) }),
  info: async () => ({ type: 'info', info: await info() }),
  clear: async () => ({ type: 'cleared', ...(await doClear()) }),
  verify: async () => ({ type: 'verified', ...(await doVerify()) }),
};

serveRequests(handlers, () => cache !== null);
