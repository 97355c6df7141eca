// The demo's transformers.js engine, a module worker: a model folder (ONNX
// decoder + tokenizer.json + config.json, served by this origin) run by
// transformers.js on onnxruntime-web's wasm backend, its prompt KV kept by
// rlxkv/transformers in IndexedDB. Same protocol as worker.js, except:
//   init   { model, dtype, tjs }  model: the folder's URL path (default the
//                                 project's test model, build/models/rlxkv-demo/);
//                                 dtype: transformers.js's (fp32 → onnx/model.onnx,
//                                 q4 → onnx/model_q4.onnx, ...); tjs: '4' or '3'
//   verify                        not offered (canVerify: false)
// While init runs it posts { type: 'progress', phase, ... } (see loadProgress).
// Everything is loaded from this origin: transformers.js and onnxruntime-web
// from node_modules/, the model with allowRemoteModels off.
import init from '../wasm/dist/rlxkv.browser.js'; // the minified browser bundle (npm run build)
import { layoutOf, kvDtypeOf, cachedGenerate } from '../js/transformers.js';
import { DEFAULT_SYSTEM_PROMPT, REPLY_TOKENS, userTurn } from './system-prompt.js';
import { Origins, cacheInfo, entryOf, openedInfo, clearCache, hex, now, openCache, prefixOf, round, serveRequests, watchCache } from './worker-common.js';

export const DEFAULT_MODEL = '/build/models/rlxkv-demo/';
/**
 * transformers.js and its onnxruntime-web. `plain`: the runtime's build
 * without asyncify, which is all device 'wasm' needs. transformers.js 4
 * would load the asyncify build (made for WebGPU): twice the wasm, which
 * the browser compiles again at every load (most of the model's load time,
 * then more in the background, where it slows whatever the page does next,
 * a first hit's IndexedDB read included), and slower code to run.
 */
const LIBS = {
  4: { lib: '../node_modules/@huggingface/transformers/dist/transformers.min.js', wasm: '../node_modules/onnxruntime-web/dist/', plain: 'ort-wasm-simd-threaded' },
  3: { lib: '../node_modules/transformers-v3/dist/transformers.min.js', wasm: '../node_modules/transformers-v3/node_modules/onnxruntime-web/dist/' },
};
const CAP_BYTES = 512 * 1024 * 1024;
const STORAGE_CAP_BYTES = 256 * 1024 * 1024;
/** Tokens generated per reply by a model with an end-of-sequence token (it may stop earlier). */
const CHAT_REPLY_TOKENS = 96;

let rlx = null;
let tf = null;
let tokenizer = null;
let model = null;
let cache = null;
let fingerprint = 0n;
let fingerprintKey = '';
let chatTemplate = false;
let defaultSystem = null;    // tokens of the default system prompt's part of a prompt
let startup = null;
const origins = new Origins();
const watch = watchCache();

const startsWith = (tokens, prefix) => tokens.length >= prefix.length && prefix.every((t, i) => tokens[i] === t);
const commonPrefix = (a, b) => {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
};
const numbers = (t) => Array.from(t.data, Number);
const encode = (text, special = true) => numbers(tokenizer(text, { add_special_tokens: special }).input_ids);

/**
 * The prompt of one user message: the model's chat template if it has one,
 * else the demo's (system prompt, then userTurn). `system` is how many of its
 * first tokens are the system prompt's, the part every message shares.
 */
function promptOf(systemText, message) {
  if (chatTemplate) {
    const messages = [{ role: 'system', content: systemText }, { role: 'user', content: message }];
    const tokens = encode(tokenizer.apply_chat_template(messages, { tokenize: false, add_generation_prompt: true }), false);
    const sys = encode(tokenizer.apply_chat_template(messages.slice(0, 1), { tokenize: false }), false);
    return { tokens, system: commonPrefix(sys, tokens) };
  }
  const tokens = encode(systemText + userTurn(message));
  return { tokens, system: commonPrefix(encode(systemText), tokens) };
}

/** The model folder's URL split the way transformers.js wants it: localModelPath + id. */
function folderOf(path) {
  const url = new URL(path, self.location.href);
  if (url.origin !== self.location.origin) throw new Error(`the model folder must be on this server (${self.location.origin}), not ${url.origin}`);
  const clean = url.pathname.replace(/\/+$/, '');
  const cut = clean.lastIndexOf('/');
  return { path: `${clean}/`, base: clean.slice(0, cut + 1), id: clean.slice(cut + 1) };
}

/**
 * The cache and the model as cachedGenerate sees them, timing what happens
 * before the first token: the lookup (cache.match: memory or storage, its
 * onEvent 'hit' kept in marks.event), the restore (from the lookup's end
 * until generate starts: the hit's tensors made by the adapter) and
 * generate's start. An insert of tokens the cache already holds is skipped
 * (marks.kept): the same tokens of the same model have the same KV, and
 * replacing the entry would only save its blob again (a greedy reply to a
 * question asked before is the same reply).
 */
function timed(marks) {
  const match = async function (...args) {
    const t0 = now();
    watch.take();
    const hit = await cache.match(...args);
    marks.lookupMs = now() - t0;
    marks.lookupEnd = now();
    marks.event = hit ? watch.take() : null;
    return hit;
  };
  const insert = function (tokens, kv) {
    if (cache.has(tokens)) {
      marks.kept = true;
      return;
    }
    cache.insert(tokens, kv);
  };
  const generate = function (...args) {
    marks.generateStart = now();
    return model.generate(...args);
  };
  const forward = (target, fns) => new Proxy(target, {
    get: (t, p) => {
      if (Object.hasOwn(fns, p) && typeof t[p] === 'function') return fns[p];
      const v = Reflect.get(t, p);
      return typeof v === 'function' ? v.bind(t) : v;
    },
  });
  return { cache: forward(cache, { match, insert }), model: forward(model, { generate }) };
}

/**
 * Tells the page how loading goes ({ type: 'progress', phase, ... }):
 * 'libraries' (rlxkv and transformers.js), 'files' (each file transformers.js
 * fetches, with its bytes: file, loaded, total), 'session' (its files all
 * fetched: onnxruntime-web compiles its wasm and makes the session, which
 * reports nothing), 'warmup' (a first run) and 'cache' (opening it). Each
 * phase's time goes into the ready message's loadPhases.
 */
function loadProgress() {
  const files = new Map();
  const phases = [];
  let current = null;
  const enter = (phase) => {
    const t = now();
    if (current) current.ms = round(t - current.start);
    current = { phase, start: t, ms: 0 };
    phases.push(current);
    postMessage({ type: 'progress', phase });
  };
  return {
    enter,
    /**
     * A progress_callback for transformers.js; `last`: that of the model's
     * from_pretrained, whose files once all fetched start 'session'.
     */
    files(last = false) {
      return (e) => {
        if (!e || !e.file) return;
        if (current?.phase !== 'files') enter('files');
        const f = files.get(e.file) ?? { loaded: 0, total: null, done: false };
        if (e.status === 'progress') Object.assign(f, { loaded: e.loaded ?? f.loaded, total: e.total ?? f.total });
        if (e.status === 'done') f.done = true;
        files.set(e.file, f);
        postMessage({ type: 'progress', phase: 'files', file: e.file, loaded: f.loaded, total: f.total, done: f.done });
        if (last && e.status === 'done' && [...files.values()].every((x) => x.done)) enter('session');
      };
    },
    /** Each phase's time (a phase entered twice: the sum), the last one ended now; the files and their bytes. */
    end() {
      if (current) current.ms = round(now() - current.start);
      current = null;
      const ms = {};
      for (const p of phases) ms[p.phase] = round((ms[p.phase] ?? 0) + p.ms);
      const bytes = [...files.values()].reduce((n, f) => n + (f.total ?? f.loaded), 0);
      return { phases: Object.entries(ms).map(([phase, t]) => ({ phase, ms: t })), files: [...files.keys()], bytes };
    },
  };
}

const info = () => cacheInfo(rlx, cache, origins, {
  fingerprint,
  fingerprintKey,
  decode: (tokens) => tokenizer.decode(Array.from(tokens), { skip_special_tokens: false }),
  isDefault: (tokens) => startsWith(Array.from(tokens), defaultSystem),
});

async function doInit({ model: folderPath = DEFAULT_MODEL, dtype = 'fp32', tjs = '4' } = {}) {
  if (startup) return { ...startup, info: await info() };
  const lib = LIBS[tjs];
  if (!lib) throw new Error(`unknown transformers.js version ${tjs} (4 or 3)`);
  const folder = folderOf(folderPath);
  const progress = loadProgress();
  progress.enter('libraries');
  const t0 = now();
  rlx = await init();
  tf = await import(new URL(lib.lib, import.meta.url).href);
  tf.env.allowRemoteModels = false;
  tf.env.allowLocalModels = true;
  tf.env.localModelPath = folder.base;
  tf.env.useBrowserCache = false;
  const wasm = new URL(lib.wasm, import.meta.url).href;
  if (lib.plain) {
    // Both files named, or it picks its own; useWasmCache off, or transformers.js
    // fetches the wasm itself and hands over bytes, which the browser cannot
    // compile while they download nor keep compiled.
    tf.env.useWasmCache = false;
    tf.env.backends.onnx.wasm.wasmPaths = { mjs: `${wasm}${lib.plain}.mjs`, wasm: `${wasm}${lib.plain}.wasm` };
  } else {
    tf.env.backends.onnx.wasm.wasmPaths = wasm;
  }
  const wasmMs = now() - t0;

  const t1 = now();
  try {
    tokenizer = await tf.AutoTokenizer.from_pretrained(folder.id, { progress_callback: progress.files() });
    model = await tf.AutoModelForCausalLM.from_pretrained(folder.id, { dtype, device: 'wasm', progress_callback: progress.files(true) });
  } catch (err) {
    throw new Error(`could not load the model folder ${folder.path} (dtype ${dtype}): ${err && err.message || err}. ` +
      'It needs config.json, tokenizer.json, tokenizer_config.json and onnx/model.onnx (or the file of the chosen dtype).');
  }
  chatTemplate = Boolean(tokenizer.chat_template);
  // One short run so the first timed reply does not pay ORT's first-run setup.
  progress.enter('warmup');
  await model.generate({ input_ids: tokenizer('Hi').input_ids, max_new_tokens: 1, do_sample: false });
  const modelMs = now() - t1;

  const layout = layoutOf(model.config);
  const kvDtype = kvDtypeOf(model);
  fingerprintKey = `transformers.js;${folder.path};dtype=${dtype};kv=${kvDtype};${JSON.stringify(model.config)}`;
  fingerprint = rlx.fingerprintOf(fingerprintKey);
  const probe = promptOf(DEFAULT_SYSTEM_PROMPT, 'x');
  defaultSystem = probe.tokens.slice(0, probe.system);

  progress.enter('cache');
  const t2 = now();
  // One IndexedDB mount per model, so no model's blobs are another's stale ones.
  cache = await openCache(rlx, { capBytes: CAP_BYTES, fingerprint, path: `/rlxkv-demo-tjs-${hex(fingerprint).slice(2)}`, storageCapBytes: STORAGE_CAP_BYTES, layout, onEvent: watch.onEvent });
  const openMs = now() - t2;
  const load = progress.end();
  const restore = cache.restoreReport;
  for (const e of cache.entries()) origins.remember(e.tokens, 'IndexedDB');

  const c = model.config;
  startup = {
    engine: 'transformers.js',
    modelName: `${folder.path} on transformers.js ${tf.env.version} (${c.model_type}, ${layout.layers} layers, ${layout.heads} KV heads of ${layout.headDim}, ${kvDtype} KV, dtype ${dtype})`,
    model: folder.path,
    dtype,
    tjsVersion: tf.env.version,
    chatTemplate,
    kvDtype,
    canVerify: false,
    ...openedInfo({ wasmMs, modelMs, openMs, restore, cache }),
    asset: { status: 'none', ms: 0, tokens: 0, bytes: 0, error: null },
    load,
    defaultTokens: defaultSystem.length,
    defaultEntry: entryOf(cache, defaultSystem),
    defaultCached: entryOf(cache, defaultSystem) !== null,
  };
  return { ...startup, info: await info() };
}

/** Keeps one pinned entry per system prompt in use (the default's and the latest custom one's). */
function pinFor(system, inserted) {
  const entries = cache.entries().map((e) => ({ ...e, tokens: Array.from(e.tokens) }));
  const isDefault = system.length === defaultSystem.length && startsWith(system, defaultSystem);
  if (!isDefault) {
    for (const e of entries) {
      if (e.pinned && !startsWith(e.tokens, defaultSystem) && !startsWith(e.tokens, system)) cache.unpin(e.tokens);
    }
  }
  if (!entries.some((e) => e.pinned && startsWith(e.tokens, system)) && cache.has(inserted)) cache.pin(inserted);
}

async function doSend({ id, system: systemText, message }) {
  const t0 = now();
  const { tokens, system } = promptOf(String(systemText), String(message));
  const marks = {};
  const view = timed(marks);
  const generated = [];
  let text = '', ttftMs = 0, seenPrompt = false;
  const streamer = {
    put(ids) {
      if (!seenPrompt) { seenPrompt = true; return; } // generate's first put is the prompt
      const tok = Number(ids[0][0]);
      if (!generated.length) { ttftMs = now() - t0; marks.firstToken = now(); }
      generated.push(tok);
      const all = tokenizer.decode(generated, { skip_special_tokens: true });
      const piece = all.slice(text.length);
      text = all;
      postMessage({ type: 'token', id, index: generated.length - 1, text: piece, ttftMs: generated.length === 1 ? round(ttftMs) : undefined });
    },
    end() {},
  };
  const maxNew = model.config.eos_token_id == null ? REPLY_TOKENS : CHAT_REPLY_TOKENS;
  const input_ids = new tf.Tensor('int64', BigInt64Array.from(tokens, BigInt), [1, tokens.length]);
  const out = await cachedGenerate(view.model, view.cache, { input_ids, max_new_tokens: maxNew, do_sample: false, streamer }, { transformers: tf });
  const genMs = now() - (marks.firstToken ?? now());
  const matched = out.reused;
  const prefix = prefixOf(matched > 0 ? marks.event : null, origins, tokens);

  // What the run inserted (unless the cache held it already): the prompt and the reply but its last token.
  const sequences = numbers(out.sequences);
  const inserted = sequences.slice(0, sequences.length - 1);
  origins.remember(inserted, 'computed');
  const ti = now();
  pinFor(tokens.slice(0, system), inserted);
  const insertMs = now() - ti;
  let flushError = null;
  const tf0 = now();
  try {
    await cache.flush();
  } catch (err) {
    flushError = `${err.code || 'ERROR'}: ${err.message}`;
  }
  const flushMs = now() - tf0;

  const convertMs = marks.lookupEnd && marks.generateStart ? marks.generateStart - marks.lookupEnd : 0;
  return {
    id,
    text,
    reply: text,
    replyTokens: generated,
    promptTokens: tokens.length,
    systemTokens: system,
    matched,
    prefilled: tokens.length - matched,
    source: prefix.source,
    prefix,
    kind: matched > 0 ? 'warm' : 'cold',
    lookupMs: round(marks.lookupMs ?? 0),
    convertMs: round(matched > 0 ? convertMs : 0),
    prefillMs: round((marks.firstToken ?? now()) - (marks.generateStart ?? t0)),
    ttftMs: round(ttftMs),
    genMs: round(genMs),
    insertMs: round(insertMs),
    flushMs: round(flushMs),
    inserted: !marks.kept,
    flushError,
    totalMs: round(now() - t0),
    info: await info(),
  };
}

async function doClear() {
  return { ...(await clearCache(cache, origins)), info: await info() };
}

serveRequests({
  init: async (msg) => ({ type: 'ready', ...(await doInit(msg)) }),
  send: async (msg) => ({ type: 'done', ...(await doSend(msg)) }),
  info: async () => ({ type: 'info', info: await info() }),
  clear: async () => ({ type: 'cleared', ...(await doClear()) }),
  verify: async () => { throw new Error('verify is the built-in engine\'s (it recomputes the KV of the published pages)'); },
}, () => cache !== null);
