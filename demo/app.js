// The demo page: UI only. The model and the rlxkv cache live in a worker:
// worker.js (the built-in transformer) or worker-transformers.js
// (transformers.js on a model folder), as the engine switch says.
import { DEFAULT_SYSTEM_PROMPT } from './system-prompt.js';

const RUNS_KEY = 'rlxkv-demo:runs';
const ASSET_KEY = 'rlxkv-demo:use-asset';
const ENGINE_KEY = 'rlxkv-demo:engine';
const MODEL_KEY = 'rlxkv-demo:model';
const DTYPE_KEY = 'rlxkv-demo:dtype';
const ENGINES = { builtin: './worker.js', 'transformers.js': './worker-transformers.js' };
const DEFAULT_MODEL = '/build/models/rlxkv-demo/';
const MAX_RUNS = 40;

const $ = (id) => document.getElementById(id);
const el = {
  system: $('system'), systemTokens: $('system-tokens'), resetSystem: $('reset-system'),
  form: $('send-form'), message: $('message'), send: $('send'),
  status: $('status'), output: $('output'), outUser: $('out-user'),
  ttft: $('ttft'), source: $('source'), matched: $('matched'), prefilled: $('prefilled'),
  lookupMs: $('lookup-ms'), prefillMs: $('prefill-ms'), restore: $('restore'), flushMs: $('flush-ms'),
  chart: $('chart'), chartSummary: $('chart-summary'), resetChart: $('reset-chart'),
  cEntries: $('c-entries'), cTokens: $('c-tokens'), cBytes: $('c-bytes'), cBlobs: $('c-blobs'),
  cFp: $('c-fp'), cStorage: $('c-storage'), cOpen: $('c-open'), cList: $('c-list'),
  coldStart: $('cold-start'), coldStartRow: $('cold-start-row'), loadProgress: $('load-progress'), loadBar: $('load-bar'), loadLog: $('load-log'), clear: $('clear'), reload: $('reload'), verify: $('verify'), verifyResult: $('verify-result'),
  engineForm: $('engine-form'), engine: $('engine'), tjsSettings: $('tjs-settings'), modelDir: $('model-dir'),
  modelDtype: $('model-dtype'), engineName: $('engine-name'), ledeBuiltin: $('lede-builtin'), ledeTjs: $('lede-tjs'),
};

/* ---------------- formatting ---------------- */

const nf = new Intl.NumberFormat('en-US');
function fmtMs(ms) {
  if (ms == null || Number.isNaN(ms)) return '–';
  if (ms < 10) return `${ms.toFixed(1)} ms`;
  if (ms < 10000) return `${nf.format(Math.round(ms))} ms`;
  return `${(ms / 1000).toFixed(1)} s`;
}
function fmtBytes(n) {
  if (n == null) return '–';
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024, u = 0;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[u]}`;
}
const fmtInt = (n) => (n == null ? '–' : nf.format(n));
const byteTokens = (text) => new TextEncoder().encode(text).length + 1; // bytes + BOS

/* ---------------- settings ---------------- */

function stored(key) {
  try { return localStorage.getItem(key); } catch { return null; /* disabled */ }
}
function store(key, value) {
  try { localStorage.setItem(key, value); } catch { /* full or disabled */ }
}

/**
 * The engine and its model folder: ?engine=, ?model=, ?dtype= in the address
 * (saved, so they stay after a reload without them), else the saved choice.
 */
function engineSetting() {
  const q = new URLSearchParams(location.search);
  for (const [param, key] of [['engine', ENGINE_KEY], ['model', MODEL_KEY], ['dtype', DTYPE_KEY]]) {
    if (q.get(param)) store(key, q.get(param));
  }
  const engine = ENGINES[stored(ENGINE_KEY)] ? stored(ENGINE_KEY) : 'builtin';
  return { engine, model: stored(MODEL_KEY) || DEFAULT_MODEL, dtype: stored(DTYPE_KEY) || 'fp32' };
}
const setting = engineSetting();
/** Runs are charted per engine and model. */
const runKey = setting.engine === 'builtin' ? 'builtin' : `transformers.js ${setting.model} ${setting.dtype}`;
const runLabel = (key) => (key === 'builtin' ? 'built-in' : key.replace(/^transformers\.js /, 'transformers.js: '));

/* ---------------- worker ---------------- */

const worker = new Worker(new URL(ENGINES[setting.engine], import.meta.url), { type: 'module' });
const pending = new Map();
let nextId = 1;
let onToken = null;

worker.onmessage = (ev) => {
  const msg = ev.data;
  if (msg.type === 'token') {
    if (onToken) onToken(msg);
    return;
  }
  if (msg.type === 'progress') {
    renderProgress(msg);
    return;
  }
  const p = pending.get(msg.id);
  if (!p) return;
  pending.delete(msg.id);
  if (msg.type === 'error') p.reject(Object.assign(new Error(msg.message), { code: msg.code }));
  else p.resolve(msg);
};
worker.onerror = (ev) => {
  ev.preventDefault();
  fail(`The worker failed to start: ${ev.message || 'see the console'}. Is the wasm module built (npm run build)?`);
};

function request(type, payload = {}) {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    worker.postMessage({ type, id, ...payload });
  });
}

/* ---------------- state ---------------- */

let busy = true;
let startup = null;

function setState(state) {
  document.body.dataset.state = state;
  busy = state !== 'ready';
  el.send.disabled = busy;
  el.clear.disabled = busy;
  el.verify.disabled = busy || !(startup && startup.canVerify);
}

function setStatus(text, tone = '') {
  el.status.textContent = text;
  el.status.className = `status ${tone}`;
}

function fail(message) {
  setStatus(message, 'bad');
  setState('error');
  for (const p of pending.values()) p.reject(new Error(message));
  pending.clear();
}

/** Every engine's runs (`engine` missing: the built-in's, from before the switch existed). */
function loadAllRuns() {
  try {
    const runs = JSON.parse(localStorage.getItem(RUNS_KEY) || '[]');
    return Array.isArray(runs) ? runs.filter((r) => r && typeof r.ttft === 'number').map((r) => ({ engine: 'builtin', ...r })) : [];
  } catch {
    return [];
  }
}
/** This engine's runs. */
const loadRuns = () => loadAllRuns().filter((r) => r.engine === runKey);
/** Replaces this engine's runs, keeping the others'. */
function saveRuns(runs) {
  const others = loadAllRuns().filter((r) => r.engine !== runKey);
  store(RUNS_KEY, JSON.stringify([...others.slice(-MAX_RUNS), ...runs.slice(-MAX_RUNS)]));
}

/** ?asset=0|1 wins; else the cold-start toggle's saved value (default: the asset is used). */
function useAssetSetting() {
  const q = new URLSearchParams(location.search).get('asset');
  if (q === '0' || q === '1') return { value: q === '1', fromUrl: true };
  return { value: stored(ASSET_KEY) !== '0', fromUrl: false };
}

/* ---------------- rendering ---------------- */

/** A reply's prefix source (the worker's prefix.source) as the page names it. */
const SOURCE_LABEL = { storage: 'IndexedDB', memory: 'memory', server: 'server (remote tier)', computed: 'computed (cold)' };

const BORN = { IndexedDB: 'stored in IndexedDB before this load', server: 'fetched from the server (remote tier)', computed: 'computed in this tab' };

/** Load phases (worker-transformers.js loadProgress) as the page names them. */
const PHASE_LABEL = {
  libraries: 'loading rlxkv and transformers.js',
  files: 'fetching the model files',
  session: 'starting ONNX Runtime (compiling its wasm) and creating the session',
  warmup: 'a first run of the model',
  cache: 'opening the cache',
};

function renderInfo(info) {
  if (!info) return;
  el.cEntries.textContent = `${fmtInt(info.entries)} (${fmtInt(info.pinnedEntries)} pinned)`;
  el.cTokens.textContent = fmtInt(info.tokens);
  el.cBytes.textContent = `${fmtBytes(info.bytes)} of ${fmtBytes(info.capBytes)}` +
    (info.storedOnlyEntries ? ` (${fmtBytes(info.storedOnlyBytes)} more stored, read at a hit)` : '');
  el.cBlobs.textContent = info.storage === 'none'
    ? 'not persisted (no IndexedDB)'
    : `${fmtInt(info.blobs)} in IndexedDB (${fmtBytes(info.blobBytes)})`;
  el.cFp.textContent = info.fingerprint;
  el.cFp.title = info.fingerprintKey;
  const { usage, quota } = info.estimate || {};
  el.cStorage.textContent = usage == null ? 'unknown' : `${fmtBytes(usage)} / ${fmtBytes(quota)}`;
  el.cList.replaceChildren(...info.list.map((e) => {
    const li = document.createElement('li');
    const head = document.createElement('div');
    head.className = 'entry-head';
    const where = e.resident ? 'in memory' : 'stored, not read yet';
    head.textContent = `${fmtInt(e.tokens)} tokens · ${fmtBytes(e.bytes)}${e.dtype === 'f16' ? ' f16' : ''} · ${where}${e.pinned ? ' · pinned' : ''} · ${BORN[e.born] || e.born}${e.isDefault ? ' · default prompt' : ''}`;
    const pre = document.createElement('div');
    pre.className = 'entry-preview';
    pre.textContent = e.preview.replace(/\s+/g, ' ') + '…';
    li.append(head, pre);
    return li;
  }));
}

function renderStartup(s) {
  const r = s.restore;
  const parts = [];
  if (s.storage === 'none') parts.push(`IndexedDB unavailable (${s.openError || 'memory only'})`);
  else parts.push(`indexed ${r.indexed} stored ${r.indexed === 1 ? 'entry' : 'entries'} (${fmtBytes(r.bytes)} of KV, read at its first hit) in ${fmtMs(s.openMs)}`);
  if (r && r.stale) parts.push(`${r.stale} stale removed`);
  if (r && r.corrupt) parts.push(`${r.corrupt} corrupt skipped`);
  if (s.asset.status === 'fetched') parts.push(`${s.asset.pages} pages fetched from the server in ${fmtMs(s.asset.ms)}`);
  else if (s.asset.status === 'missing' || s.asset.status === 'failed') parts.push(`server's pages ${s.asset.status} (${s.asset.error})`);
  el.cOpen.textContent = parts.join('; ');
}

/** The default prompt's stored entry, as the ready status tells it: what a reply will read. */
function storedDefault(s) {
  const e = s.defaultEntry;
  const kv = e ? `${fmtInt(s.defaultTokens)} tokens, ${fmtBytes(e.bytes)}` : `${fmtInt(s.defaultTokens)} tokens`;
  return `The default prompt's KV (${kv}) is stored in IndexedDB (indexed at open in ${fmtMs(s.openMs)}): ` +
    'the first reply reads it there instead of prefilling it.';
}

function readyStatus(s) {
  const n = fmtInt(s.defaultTokens);
  if (s.engine === 'transformers.js') {
    const loaded = `Ready: ${s.model} loaded in ${fmtMs(s.modelMs)}.`;
    if (s.defaultCached) return `${loaded} ${storedDefault(s)}`;
    return `${loaded} The cache holds nothing for the default prompt: the first reply prefills all ${n} tokens of it.`;
  }
  if (s.asset.status === 'cached') return `Ready. ${storedDefault(s)}`;
  if (s.asset.status === 'fetched') {
    return `Ready. First visit: the KV of the default prompt's first ${fmtInt(s.asset.tokens)} of ${n} tokens (${fmtBytes(s.asset.bytes)}) came from the server, ${s.asset.pages} pages found by name (the cache's remote tier, ${fmtMs(s.asset.ms)}), so even the first reply prefills only the rest.`;
  }
  const why = s.asset.status === 'skipped' ? "a first visit without the server's pages" : `the server's pages ${s.asset.status}`;
  return `Ready. The cache is empty (${why}): the first reply prefills all ${n} tokens of the prompt.`;
}

function resultStatus(r) {
  const tail = ` Time to first token ${fmtMs(r.ttftMs)}.`;
  if (r.kind === 'cold') {
    const saved = r.flushError ? `cached in memory, but saving failed (${r.flushError})`
      : r.info && r.info.storage === 'none' ? 'now cached in memory' : 'now cached and saved to IndexedDB: reload and send again to see it restored';
    return `Cold: computed, no cached prefix. Prefill ${fmtMs(r.prefillMs)} for all ${fmtInt(r.prefilled)} tokens; the system prompt's KV is ${saved}.${tail}`;
  }
  const p = r.prefix;
  let from;
  if (p.source === 'storage') from = `Restored from IndexedDB: ${fmtBytes(p.bytes)} of KV, its entry read in ${fmtMs(p.ms)}`;
  else if (p.source === 'server') from = `From the server: ${startup.asset.pages} pages fetched at load (${fmtBytes(p.bytes)} of KV in ${fmtMs(startup.asset.ms)})`;
  else from = `Reused from memory (${fmtBytes(p.bytes)} of KV, already read)`;
  const partial = r.matched < r.systemTokens ? ` (a partial hit: the prompt differs after token ${fmtInt(r.matched)})` : '';
  return `${from}, prefill skipped for ${fmtInt(r.matched)} tokens${partial}; prefilled the other ${fmtInt(r.prefilled)} in ${fmtMs(r.prefillMs)}.${tail}`;
}

/** The restore metric: what this reply's prefix cost to get (a storage hit: the blob's read). */
function renderRestore(r) {
  const p = r.prefix;
  const text = {
    storage: `${fmtMs(p.ms)} · ${fmtBytes(p.bytes)}`,
    memory: 'none: in memory',
    server: `at load, ${fmtMs(startup.asset.ms)}`,
    computed: '–',
  }[p.source];
  el.restore.textContent = text ?? '–';
  el.restore.dataset.source = p.source;
  el.restore.dataset.ms = String(p.source === 'storage' ? p.ms : 0);
  el.restore.dataset.bytes = String(p.source === 'computed' ? 0 : p.bytes);
  el.restore.title = p.source === 'storage' ? `read from IndexedDB by cache.match, as onEvent's 'hit' reports it: ${fmtInt(p.entryTokens)}-token entry, ${fmtInt(p.tokens)} tokens used` : '';
}

function renderResult(r) {
  el.ttft.textContent = fmtMs(r.ttftMs);
  el.ttft.dataset.ms = String(r.ttftMs);
  el.source.textContent = SOURCE_LABEL[r.source] || r.source;
  el.source.dataset.source = r.source;
  el.source.className = `source ${r.kind}`;
  renderRestore(r);
  el.matched.textContent = fmtInt(r.matched);
  el.prefilled.textContent = fmtInt(r.prefilled);
  el.lookupMs.textContent = fmtMs(r.lookupMs);
  el.prefillMs.textContent = fmtMs(r.prefillMs);
  if (r.convertMs) el.prefillMs.title = `restore into transformers.js tensors: ${fmtMs(r.convertMs)}`;
  if (r.systemTokens) el.systemTokens.textContent = `${fmtInt(r.systemTokens)} tokens`;
  el.flushMs.textContent = r.flushError ? 'failed' : fmtMs(r.flushMs);
  setStatus(resultStatus(r), r.kind === 'warm' ? 'good' : 'warn');
}

const SVGNS = 'http://www.w3.org/2000/svg';
function svg(name, attrs = {}, text) {
  const node = document.createElementNS(SVGNS, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

function niceStep(max, ticks) {
  const raw = max / ticks;
  const mag = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

const median = (xs) => {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

function renderChart() {
  const runs = loadRuns();
  const shown = runs.slice(-24);
  const W = Math.max(280, Math.round(el.chart.clientWidth || 600));
  const H = W < 420 ? 220 : 260;
  el.chart.setAttribute('viewBox', `0 0 ${W} ${H}`);
  el.chart.replaceChildren();
  el.chart.dataset.runs = String(runs.length);
  const m = { l: 52, r: 10, t: 16, b: 30 };
  const iw = W - m.l - m.r, ih = H - m.t - m.b;
  if (!shown.length) {
    el.chart.append(svg('text', { x: W / 2, y: H / 2, 'text-anchor': 'middle', class: 'chart-empty' }, 'No replies yet: send a message.'));
    el.chartSummary.textContent = '';
    return;
  }
  const max = Math.max(...shown.map((r) => r.ttft), 1);
  const step = niceStep(max, 5);
  const top = Math.ceil(max / step) * step;
  const y = (v) => m.t + ih - (v / top) * ih;
  for (let v = 0; v <= top + 1e-9; v += step) {
    el.chart.append(svg('line', { x1: m.l, x2: W - m.r, y1: y(v), y2: y(v), class: v === 0 ? 'axis' : 'grid' }));
    el.chart.append(svg('text', { x: m.l - 6, y: y(v) + 4, 'text-anchor': 'end', class: 'tick' }, v >= 1000 ? `${v / 1000} s` : `${v} ms`));
  }
  const slot = iw / Math.max(shown.length, 6);
  const bw = Math.max(4, Math.min(44, slot * 0.7));
  const first = runs.length - shown.length;
  shown.forEach((r, i) => {
    const cx = m.l + slot * i + slot / 2;
    const h = Math.max(2, (r.ttft / top) * ih);
    const g = svg('g', { class: `bar ${r.kind}`, 'data-kind': r.kind });
    g.append(svg('title', {}, `#${first + i + 1} ${runLabel(r.engine)} ${r.kind}, prefix from ${SOURCE_LABEL[r.source] || r.source}: ${fmtMs(r.ttft)} to first token (${r.matched} tokens reused, ${r.prefilled} prefilled)`));
    g.append(svg('rect', { x: cx - bw / 2, y: m.t + ih - h, width: bw, height: h, rx: 2 }));
    if (slot >= 30) {
      const label = r.ttft >= 1000 ? `${(r.ttft / 1000).toFixed(1)}s` : `${Math.round(r.ttft)}`;
      g.append(svg('text', { x: cx, y: m.t + ih - h - 4, 'text-anchor': 'middle', class: 'val' }, label));
    }
    if (slot >= 16 || i % 2 === 0) {
      g.append(svg('text', { x: cx, y: H - m.b + 16, 'text-anchor': 'middle', class: 'tick' }, String(first + i + 1)));
    }
    el.chart.append(g);
  });
  const cold = median(runs.filter((r) => r.kind === 'cold').map((r) => r.ttft));
  const warm = median(runs.filter((r) => r.kind === 'warm').map((r) => r.ttft));
  const nCold = runs.filter((r) => r.kind === 'cold').length, nWarm = runs.length - nCold;
  const parts = [];
  if (cold != null) parts.push(`median cold ${fmtMs(cold)} (${nCold})`);
  if (warm != null) parts.push(`median warm ${fmtMs(warm)} (${nWarm})`);
  if (cold != null && warm != null && warm > 0) parts.push(`${(cold / warm).toFixed(cold / warm >= 10 ? 0 : 1)}× faster warm`);
  const others = [...new Set(loadAllRuns().map((r) => r.engine))].filter((k) => k !== runKey).map((k) => {
    const rs = loadAllRuns().filter((r) => r.engine === k);
    const c = median(rs.filter((r) => r.kind === 'cold').map((r) => r.ttft));
    const w = median(rs.filter((r) => r.kind === 'warm').map((r) => r.ttft));
    return `${runLabel(k)}: cold ${fmtMs(c)}, warm ${fmtMs(w)}`;
  });
  el.chartSummary.textContent = parts.join(' · ') + (others.length ? ` (other engines: ${others.join('; ')})` : '');
}

/* ---------------- loading ---------------- */

const loading = { start: performance.now(), phase: null, files: new Map(), timer: 0 };
const fmtSecs = (ms) => `${(ms / 1000).toFixed(1)} s`;

/**
 * A worker's load progress ({ type: 'progress', phase, file?, loaded?,
 * total? }): the status says the phase (and a file's share), the bar
 * shows the model files' bytes. The element keeps every phase and file
 * seen (data-phases, data-files).
 */
function renderProgress(msg) {
  const box = el.loadProgress;
  box.hidden = false;
  loading.phase = msg.phase;
  const phases = new Set((box.dataset.phases || '').split(' ').filter(Boolean)).add(msg.phase);
  box.dataset.phases = [...phases].join(' ');
  if (msg.file) {
    loading.files.set(msg.file, msg);
    box.dataset.files = [...loading.files.keys()].join(' ');
  }
  showPhase();
}

/** The status line of the current phase, its elapsed time ticking through the long silent ones. */
function showPhase() {
  clearTimeout(loading.timer);
  if (!loading.phase || !busy) return;
  let text = PHASE_LABEL[loading.phase] || loading.phase;
  const files = [...loading.files.values()];
  if (loading.phase === 'files' && files.length) {
    const f = files.find((x) => !x.done) || files[files.length - 1];
    const pct = f.total ? Math.floor((100 * f.loaded) / f.total) : null;
    text += `: ${f.file}${pct === null ? '' : ` ${pct}%`}${f.total ? ` (${fmtBytes(f.loaded)} of ${fmtBytes(f.total)})` : ''}`;
    el.loadBar.max = Math.max(1, files.reduce((n, x) => n + (x.total || 0), 0));
    el.loadBar.value = files.reduce((n, x) => n + (x.loaded || 0), 0);
  } else {
    el.loadBar.removeAttribute('value'); // indeterminate: this phase reports nothing
  }
  setStatus(`Loading ${setting.model} (dtype ${setting.dtype}): ${text}… ${fmtSecs(performance.now() - loading.start)}`);
  loading.timer = setTimeout(showPhase, 500);
}

/** After the load: where its time went (the phases the worker timed). */
function renderLoadLog(load) {
  clearTimeout(loading.timer);
  el.loadProgress.hidden = true;
  if (!load) return;
  const parts = load.phases.map(({ phase, ms }) => {
    if (phase === 'files') return `model files ${fmtBytes(load.bytes)} ${fmtMs(ms)}`;
    return `${PHASE_LABEL[phase] || phase} ${fmtMs(ms)}`;
  });
  el.loadLog.hidden = false;
  el.loadLog.textContent = `Loaded in ${fmtSecs(load.phases.reduce((n, p) => n + p.ms, 0))}: ${parts.join(' · ')}.`;
  el.loadLog.title = load.files.join(', ');
}

/* ---------------- actions ---------------- */

async function refreshInfo() {
  try { renderInfo((await request('info')).info); } catch { /* shown elsewhere */ }
}

async function send(ev) {
  ev.preventDefault();
  if (busy) return;
  const message = el.message.value.trim();
  if (!message) return;
  setState('busy');
  el.outUser.hidden = false;
  el.outUser.textContent = message;
  el.output.textContent = '';
  el.output.classList.add('typing');
  el.ttft.textContent = '…';
  el.source.textContent = '…';
  const sysTokens = setting.engine === 'builtin' ? fmtInt(byteTokens(el.system.value)) : 'the';
  setStatus(`Looking up ${sysTokens}+ prompt tokens in the cache, then prefilling what is missing…`);
  onToken = (t) => {
    el.output.textContent += t.text;
    if (t.ttftMs !== undefined) el.ttft.textContent = fmtMs(t.ttftMs);
  };
  try {
    const r = await request('send', { system: el.system.value, message });
    renderResult(r);
    renderInfo(r.info);
    const runs = loadRuns();
    runs.push({ t: Date.now(), engine: runKey, kind: r.kind, ttft: r.ttftMs, source: r.source, matched: r.matched, prefilled: r.prefilled, prefillMs: r.prefillMs });
    saveRuns(runs);
    renderChart();
    setState('ready');
  } catch (err) {
    setStatus(`Error: ${err.message}`, 'bad');
    setState('ready');
  } finally {
    onToken = null;
    el.output.classList.remove('typing');
  }
}

async function clearCache() {
  if (busy) return;
  setState('busy');
  setStatus('Clearing the cache…');
  try {
    const r = await request('clear');
    renderInfo(r.info);
    setStatus(`Cache cleared in ${fmtMs(r.ms)}: ${r.removed} stored ${r.removed === 1 ? 'blob' : 'blobs'} removed (${fmtBytes(r.removedBytes)}). The next reply prefills the whole prompt (cold).`, 'warn');
  } catch (err) {
    setStatus(`Clearing failed: ${err.message}`, 'bad');
  }
  setState('ready');
}

/**
 * The cold-start toggle: saves whether a first visit imports the shipped
 * asset, forgets everything cached (as Clear cache does) and reloads, so
 * the page starts as a first visit with or without it.
 */
async function startOver() {
  store(ASSET_KEY, el.coldStart.checked ? '0' : '1');
  el.coldStart.disabled = true;
  setState('busy');
  setStatus(el.coldStart.checked ? "Starting over as a first visit without the server's pages: clearing the cache…"
    : "Starting over as a first visit with the server's pages: clearing the cache…");
  try {
    await request('clear');
  } catch (err) {
    setStatus(`Clearing failed: ${err.message}`, 'bad');
    el.coldStart.disabled = false;
    setState('ready');
    return;
  }
  // Drop ?asset=: it would override the choice just saved.
  const url = new URL(location.href);
  url.searchParams.delete('asset');
  location.replace(url.href);
}

async function verify() {
  if (busy) return;
  setState('busy');
  el.verifyResult.textContent = 'Recomputing the default prompt’s KV in this browser…';
  try {
    const r = await request('verify');
    const parts = [];
    parts.push(r.helloMatch ? `golden hash ${r.helloHash} ✓` : `golden hash ${r.helloHash} ✗ (Node: different)`);
    if (r.assetMatch === true) parts.push(`bit-identical to the server's pages (${fmtInt(r.assetTokens)} tokens) ✓`);
    else if (r.assetMatch === false) parts.push("differs from the server's pages ✗ (rerun scripts/precompute.mjs)");
    else parts.push(`no pages from the server (${r.assetError})`);
    if (r.cacheMatch === true) parts.push('matches the cached entry ✓');
    else if (r.cacheMatch === false) parts.push('differs from the cached entry ✗');
    el.verifyResult.textContent = `${parts.join('; ')}. Full prefill took ${fmtMs(r.prefillMs)}.`;
    el.verifyResult.dataset.ok = String(r.helloMatch && r.assetMatch !== false && r.cacheMatch !== false);
  } catch (err) {
    el.verifyResult.textContent = `Verification failed: ${err.message}`;
    el.verifyResult.dataset.ok = 'false';
  }
  setState('ready');
}

function updateSystemTokens() {
  // The built-in engine's tokens are bytes; a tokenizer's count comes with the next reply.
  el.systemTokens.textContent = setting.engine === 'builtin' ? `${fmtInt(byteTokens(el.system.value))} tokens` : `${fmtInt(el.system.value.length)} chars`;
  el.resetSystem.disabled = el.system.value === DEFAULT_SYSTEM_PROMPT;
}

/* ---------------- start ---------------- */

/** Saves the chosen engine (and model folder) and reloads the page with it. */
function switchEngine(ev) {
  if (ev) ev.preventDefault();
  store(ENGINE_KEY, el.engine.value);
  if (el.engine.value === 'transformers.js') {
    store(MODEL_KEY, el.modelDir.value.trim() || DEFAULT_MODEL);
    store(DTYPE_KEY, el.modelDtype.value);
  }
  // Drop ?engine=/model=/dtype=: they would override the new choice.
  const url = new URL(location.href);
  for (const p of ['engine', 'model', 'dtype']) url.searchParams.delete(p);
  location.replace(url.href);
}

function renderEngine() {
  const tjs = setting.engine === 'transformers.js';
  el.engine.value = setting.engine;
  el.modelDir.value = setting.model;
  el.modelDtype.value = setting.dtype;
  el.tjsSettings.hidden = !tjs;
  el.ledeBuiltin.hidden = tjs;
  el.ledeTjs.hidden = !tjs;
  el.coldStartRow.hidden = tjs; // it has no published pages: its first reply is cold anyway
  document.body.dataset.engine = setting.engine;
}

async function start() {
  renderEngine();
  el.engine.addEventListener('change', () => switchEngine());
  el.engineForm.addEventListener('submit', switchEngine);
  el.system.value = DEFAULT_SYSTEM_PROMPT;
  updateSystemTokens();
  const asset = useAssetSetting();
  el.coldStart.checked = !asset.value;
  if (asset.fromUrl) el.coldStart.title = 'Set by ?asset= in the address (until you change it here)';
  renderChart();

  el.system.addEventListener('input', updateSystemTokens);
  el.resetSystem.addEventListener('click', () => { el.system.value = DEFAULT_SYSTEM_PROMPT; updateSystemTokens(); });
  el.form.addEventListener('submit', send);
  el.clear.addEventListener('click', clearCache);
  el.reload.addEventListener('click', () => location.reload());
  el.verify.addEventListener('click', verify);
  el.resetChart.addEventListener('click', () => { saveRuns([]); renderChart(); });
  el.coldStart.addEventListener('change', startOver);
  let resizeTimer = 0;
  window.addEventListener('resize', () => { clearTimeout(resizeTimer); resizeTimer = setTimeout(renderChart, 100); });

  try {
    const payload = setting.engine === 'builtin' ? { useAsset: asset.value } : { model: setting.model, dtype: setting.dtype };
    setStatus(setting.engine === 'builtin' ? 'Loading the model and opening the cache…'
      : `Loading transformers.js and ${setting.model} (dtype ${setting.dtype})…`);
    startup = await request('init', payload);
    renderLoadLog(startup.load);
    el.engineName.textContent = startup.modelName;
    el.engineName.dataset.engine = startup.engine;
    renderStartup(startup);
    renderInfo(startup.info);
    const primed = startup.defaultCached || startup.asset.status === 'cached' || startup.asset.status === 'imported';
    setStatus(readyStatus(startup), primed ? 'good' : '');
    setState('ready');
    el.message.focus({ preventScroll: true });
  } catch (err) {
    clearTimeout(loading.timer);
    fail(`Could not start: ${err.message}`);
  }
  setInterval(() => { if (!busy) refreshInfo(); }, 15000);
}

start();
