// The demo's built-in engine, a module worker: owns the model
// (demo/model.js) and an rlxkv cache persisted in IndexedDB, so the page
// stays responsive while it prefills. worker-transformers.js is the other
// engine, with the same protocol.
//
// Protocol (postMessage). In: { type, id?, ... }
//   init   { useAsset }           open the cache; fetch the published pages of
//                                 the default system prompt (its remote tier)
//                                 if it is not cached
//   send   { system, message }    reply: 'token'* then 'done'
//   info                          cache panel numbers
//   clear                         drop every entry, in memory and stored
//   verify                        recompute the default prompt's KV here and
//                                 compare it with the published pages' KV
// Out: { type: 'ready' | 'token' | 'done' | 'info' | 'cleared' | 'verified' |
//        'error', id?, ... }. Requests are handled one at a time, in order.
import init from '../wasm/dist/rlxkv.browser.js'; // the minified browser bundle (npm run build)
import { createModel, kvHash, kvLayoutOf } from './model.js';
import { MODEL_OPTIONS, DEFAULT_SYSTEM_PROMPT, REPLY_TOKENS, userTurn } from './system-prompt.js';
import { Origins, cacheInfo, entryOf, openedInfo, clearCache, keyOf, now, openCache, prefixOf, round, serveRequests, watchCache } from './worker-common.js';

const CAP_BYTES = 256 * 1024 * 1024;
/** Stored blobs beyond this (oldest first, not the pinned prompts) are pruned on flush. */
const STORAGE_CAP_BYTES = 96 * 1024 * 1024;
const IDB_PATH = '/rlxkv-demo';
/** The default prompt's KV as published pages (scripts/precompute.mjs: `rlxkv publish`), found by name. */
const PAGES_URL = new URL('./assets/kv/', import.meta.url).href;
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
  // With the published pages as the remote tier unless the page asks for a first visit without them.
  const remote = useAsset ? { url: PAGES_URL } : undefined;
  cache = await openCache(rlx, { capBytes: CAP_BYTES, fingerprint, layout: kvLayoutOf(model.config), path: IDB_PATH, storageCapBytes: STORAGE_CAP_BYTES, onEvent: watch.onEvent, remote });
  const openMs = now() - t2;
  const restore = cache.restoreReport;
  for (const e of cache.entries()) origins.remember(e.tokens, 'IndexedDB');
  // Blobs of an older model version are useless now.
  if (restore && restore.stale > 0) await cache.prune({ stale: true }).catch(() => {});

  // The server's pages: fetched now on a first visit (nothing of the default
  // prompt stored), so that the first reply finds them in memory.
  const asset = { status: 'skipped', ms: 0, tokens: 0, bytes: 0, pages: 0, error: null };
  const storedPrefix = cache.entries().some((e) => e.tokens.length <= defaultTokens.length && e.tokens.every((t, i) => t === defaultTokens[i]));
  if (storedPrefix) {
    asset.status = 'cached';
  } else if (useAsset) {
    const ta = now();
    watch.take();
    const hit = await cache.match(defaultTokens, { partial: true });
    const event = watch.take();
    asset.ms = now() - ta;
    const r = cache.stats.remote;
    if (hit && event && event.source === 'remote') {
      const fetched = defaultTokens.subarray(0, hit.matched);
      asset.status = 'fetched';
      asset.tokens = hit.matched;
      asset.bytes = r.bytes;
      asset.pages = r.pages;
      origins.remember(fetched, 'server');
      cache.pin(fetched);
      // Store it, so a reload restores it from IndexedDB.
      await cache.flush().catch((err) => { asset.error = `flush: ${err.message}`; });
    } else {
      asset.status = r.notFound ? 'missing' : 'failed';
      asset.error = r.lastError;
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
  // The published pages, fetched by a cache of their own: their values bit for bit against this tab's.
  let assetMatch = null, assetError = null, assetTokens = 0;
  const probe = rlx.createCache({ capBytes: CAP_BYTES, fingerprint, layout: kvLayoutOf(model.config), remote: { url: PAGES_URL } });
  try {
    const hit = await probe.match(defaultTokens, { partial: true });
    if (!hit) throw new Error(probe.stats.remote.lastError || 'no pages');
    assetTokens = hit.matched;
    const rows = hit.matched * model.config.dModel;
    const bits = (a) => new Uint32Array(a.buffer, a.byteOffset, a.length);
    assetMatch = [...hit.k, ...hit.v].every((b, i) => {
      const want = bits((i < hit.k.length ? kv.k[i] : kv.v[i - hit.k.length]).subarray(0, rows)), got = bits(b);
      return got.length === want.length && got.every((x, j) => x === want[j]);
    });
  } catch (err) {
    assetError = String(err.message || err);
  } finally {
    await probe.close();
  }
  // And the cached entry, if any (whatever its origin).
  const cached = cache.exportBlob(defaultTokens);
  const cacheMatch = cached ? cached.length === mine.length && cached.every((b, i) => b === mine[i]) : null;
  return {
    helloHash,
    helloMatch: helloHash === GOLDEN_HELLO,
    assetMatch,
    assetError,
    assetTokens,
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
