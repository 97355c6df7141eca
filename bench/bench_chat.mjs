// Chat sessions against a storage 'fs' cache (Node): what growing
// conversations cost in bytes written per turn, bytes stored, bytes resident
// and flush time, through the public API only (bench/chat_workload.js).
//
//   node bench/bench_chat.mjs [OUT.json] [--quick] [--dir DIR] [--only RUN,...]
//   (default build/bench/chat.json; DIR: where the stores go, default the OS temp dir;
//   RUN: chats, small, long, mem:chats, mem:long)
//
// KV of Qwen2.5-0.5B (24 layers, 2 KV heads x 64, f16: 12,288 bytes a
// token, head-major). A 1,000-token system prompt is inserted, pinned and
// flushed; then chats take turns round-robin, each turn adding new tokens
// to its conversation, inserting the whole conversation's KV and awaiting
// cache.flush(). Runs (each in a fresh child process, store and module):
//   chats      20 chats x 10 turns x 100 tokens (--quick: 6 x 5)
//   small      4 chats x 50 turns x 10 tokens (--quick: 4 x 20)
//   long       1 chat x 80 turns x 100 tokens (--quick: 72), for the flush
//              time at ~1,000 tokens against ~8,000
// Bytes written, two ways, after every flush:
//   calls      bytes passed to node:fs write calls (writeSync, writevSync,
//              write, writev, FileHandle write/writev/writeFile/appendFile,
//              (append|write)File(Sync)), wrapped before the library loads
//              and checked at start against writes of known size
//   directory  the store directory listed recursively: the whole size of
//              each file that is new (name or inode) or whose size or mtime
//              changed since the last listing (files removed counted apart)
// The ratios use the calls' count when the wrap saw any write (else the
// directory's). Stored: the sizes of the files in the directory at the end.
// Resident: cache.stats.bytes (KV bytes in memory). Targets are printed
// beside the figures; nothing asserts.
//
// Memory only (storage 'none', rlx.createCache: cache.paging, so an insert
// that extends a held prefix copies and keeps only the new tokens' KV), the
// same workload, each run in a fresh child process too:
//   mem:chats  20 chats x 10 turns x 100 tokens (--quick: 6 x 5)
//   mem:long   1 chat x 80 turns x 100 tokens (--quick: 72), for insert
//              times near ~1,000 and ~8,000 tokens: median and p90 of the
//              5 turns nearest each. Run once on a fresh heap (each turn's
//              new KV lands on wasm pages never touched: page faults), then
//              MEM_REPS more times (3, --quick 2), each on a fresh cache of
//              the same instance, reusing the memory the last one freed
//              (their turns pooled)
// The memory children run with --expose-gc and collect before each timed
// insert (after its KV is made). Both first chat an untimed 10 turns on a throwaway module instance (the
// code warm, the measured heap untouched). pageProbe: a turn's KV bytes
// written to fresh wasm pages and again, the floor under a growing heap.
// capBytes: twice the unique tokens' KV plus one conversation's, as for 'fs'
// (a paging cache holds the unique tokens once: nothing is evicted, and the
// evictions are counted to show it). After every turn: cache.stats.bytes
// over the KV of the unique tokens so far. At the end every conversation
// (and the system prompt, and for mem:long every 8th turn's prefix) is
// looked up (cache.lookup, copies) and its values checked at a few places,
// turn boundaries included. cache.paging is recorded for every run. The
// bytes an insert copies are not observable through the API: not reported.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  BYTES_PER_TOKEN, LAYOUT, SYSTEM_TOKENS, TARGETS, flushNear, median, quantile, runChats, summarize, verify, verifyReopened,
} from './chat_workload.js';

const here = dirname(fileURLToPath(import.meta.url));
const self = fileURLToPath(import.meta.url);
const args = process.argv.slice(2);
const quick = args.includes('--quick');
const opt = (name) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : null; };
const FP = 0x0c4a7b0e5cn;

const RUNS = {
  chats: { chats: quick ? 6 : 20, turns: quick ? 5 : 10, perTurn: 100 },
  small: { chats: 4, turns: quick ? 20 : 50, perTurn: 10 },
  long: { chats: 1, turns: quick ? 72 : 80, perTurn: 100 },
};
const MEM_RUNS = {
  'mem:chats': { ...RUNS.chats },
  'mem:long': { ...RUNS.long },
};
/** Repetitions of the memory-only long chat (fresh cache each), pooled for the insert times. */
const MEM_REPS = quick ? 2 : 3;
/** Where the long chat's flush times are compared (conversation tokens), and how many turns each median takes. */
const NEAR = [1000, 8000], AROUND = 5;

// ---- bytes passed to node:fs write calls -----------------------------------------
const io = { bytes: 0, calls: 0 };
function wrapWrites() {
  let depth = 0; // sync calls made inside a wrapped sync call (writeFileSync -> writeSync) count once
  const lenOf = (data, enc) => (typeof data === 'string'
    ? Buffer.byteLength(data, typeof enc === 'string' ? enc : (enc && enc.encoding) || 'utf8')
    : ArrayBuffer.isView(data) ? data.byteLength : data instanceof ArrayBuffer ? data.byteLength : 0);
  const sumIov = (bufs) => bufs.reduce((n, b) => n + b.byteLength, 0);
  const add = (n) => { if (n > 0) { io.bytes += n; io.calls++; } };
  const sync = (obj, name, count) => {
    const orig = obj[name];
    obj[name] = function (...a) {
      depth++;
      try {
        const r = orig.apply(this, a);
        if (depth === 1) add(count(r, a));
        return r;
      } finally { depth--; }
    };
  };
  sync(fs, 'writeSync', (r) => r);
  sync(fs, 'writevSync', (r) => r);
  sync(fs, 'writeFileSync', (r, a) => lenOf(a[1], a[2]));
  sync(fs, 'appendFileSync', (r, a) => lenOf(a[1], a[2]));
  const callback = (name) => {
    const orig = fs[name];
    fs[name] = function (...a) {
      const cb = a[a.length - 1];
      if (typeof cb === 'function') a[a.length - 1] = function (err, written, ...rest) { if (!err) add(written); return cb.call(this, err, written, ...rest); };
      return orig.apply(this, a);
    };
  };
  callback('write');
  callback('writev');
  const promised = (obj, name, count) => {
    const orig = obj[name];
    obj[name] = async function (...a) { const r = await orig.apply(this, a); add(count(r, a)); return r; };
  };
  for (const p of new Set([fsp, fs.promises])) { // the same object in today's Node
    promised(p, 'writeFile', (r, a) => lenOf(a[1], a[2]));
    promised(p, 'appendFile', (r, a) => lenOf(a[1], a[2]));
  }
  const fd = fs.openSync(join(tmpdir(), `rlxkv-chat-probe-${process.pid}`), 'w');
  fs.closeSync(fd);
  return (async () => {
    const fh = await fsp.open(join(tmpdir(), `rlxkv-chat-probe-${process.pid}`), 'r');
    const proto = Object.getPrototypeOf(fh);
    await fh.close();
    promised(proto, 'write', (r) => r.bytesWritten);
    promised(proto, 'writev', (r) => r.bytesWritten);
    promised(proto, 'writeFile', (r, a) => lenOf(a[0], a[1]));
    promised(proto, 'appendFile', (r, a) => lenOf(a[0], a[1]));
    syncBuiltinESMExports();
  })();
}
/** Writes of known size through each wrapped call: what the wrap counted of each. */
async function checkWrap() {
  const f = join(tmpdir(), `rlxkv-chat-probe-${process.pid}`);
  const b = Buffer.alloc(1000, 1);
  const cases = {
    writeSync: () => { const fd = fs.openSync(f, 'w'); fs.writeSync(fd, b); fs.closeSync(fd); },
    writevSync: () => { const fd = fs.openSync(f, 'w'); fs.writevSync(fd, [b, b]); fs.closeSync(fd); return 2000; },
    writeFileSync: () => fs.writeFileSync(f, b),
    appendFileSync: () => fs.appendFileSync(f, b),
    write: () => new Promise((res, rej) => fs.open(f, 'w', (e, fd) => (e ? rej(e) : fs.write(fd, b, (e2) => fs.close(fd, () => (e2 ? rej(e2) : res())))))),
    writeFile: () => new Promise((res, rej) => fs.writeFile(f, b, (e) => (e ? rej(e) : res()))),
    'promises.writeFile': () => fsp.writeFile(f, b),
    'FileHandle.write': async () => { const fh = await fsp.open(f, 'w'); await fh.write(b); await fh.close(); },
    'FileHandle.writev': async () => { const fh = await fsp.open(f, 'w'); await fh.writev([b, b]); await fh.close(); return 2000; },
    'FileHandle.writeFile': async () => { const fh = await fsp.open(f, 'w'); await fh.writeFile(b); await fh.close(); },
    createWriteStream: () => new Promise((res, rej) => { const s = fs.createWriteStream(f); s.on('error', rej); s.end(b, res); }),
  };
  const out = {};
  for (const [name, fn] of Object.entries(cases)) {
    const before = io.bytes;
    const expected = (await fn()) || 1000;
    out[name] = { counted: io.bytes - before, expected };
  }
  fs.rmSync(f, { force: true });
  return { ok: Object.values(out).every((c) => c.counted === c.expected), calls: out };
}

// ---- the store directory ---------------------------------------------------------
/** Every file under root: relative path -> { size, mtime (ns), ino }. */
function listing(root) {
  const files = new Map();
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) { walk(p); continue; }
      let st;
      try { st = fs.lstatSync(p, { bigint: true }); } catch { continue; } // gone meanwhile
      files.set(relative(root, p), { size: Number(st.size), mtime: st.mtimeNs, ino: st.ino });
    }
  };
  walk(root);
  return files;
}
function diff(prev, cur) {
  const r = { written_dir: 0, files_new: 0, files_changed: 0, files_removed: 0 };
  for (const [name, f] of cur) {
    const p = prev.get(name);
    if (!p || p.ino !== f.ino) { r.written_dir += f.size; r.files_new++; } else if (p.size !== f.size || p.mtime !== f.mtime) { r.written_dir += f.size; r.files_changed++; }
  }
  for (const name of prev.keys()) if (!cur.has(name)) r.files_removed++;
  return r;
}
const total = (files) => [...files.values()].reduce((n, f) => n + f.size, 0);

// ---- a run, in a child process --------------------------------------------------------
async function child(name, base) {
  const wrapped = wrapWrites();
  await wrapped;
  const wrap = await checkWrap();
  const { default: init } = await import('../js/index.js');
  const rlx = await init({ newInstance: true });
  const cfg = RUNS[name];
  const unique = SYSTEM_TOKENS + cfg.chats * cfg.turns * cfg.perTurn;
  // Room for twice the unique tokens' KV and one more conversation: enough for
  // a store that keeps each token once; an entry per turn gets evicted (it stays stored).
  const capBytes = capFor(cfg);
  const dir = fs.mkdtempSync(join(base, `rlxkv-bench-chat-${name}-`));
  try {
    const cache = await rlx.openCache({ capBytes, fingerprint: FP, storage: 'fs', path: dir, layout: LAYOUT, f16As: 'Uint16Array' });
    let prev = listing(dir);
    let calls0 = io.bytes;
    const measure = async () => {
      const cur = listing(dir);
      const d = diff(prev, cur);
      prev = cur;
      const c = io.bytes - calls0;
      calls0 = io.bytes;
      return { written_calls: c, ...d };
    };
    const log = (r) => {
      if (r.turn % Math.max(1, Math.floor(cfg.turns / 5)) === 0 && r.chat === cfg.chats - 1) {
        console.error(`  ${name}: turn ${r.turn}/${cfg.turns}, ${r.tokens} tokens, flush ${r.flush_ms.toFixed(1)} ms, wrote ${(r.written_calls / 1e6).toFixed(1)} MB`);
      }
    };
    const t0 = performance.now();
    const run = await runChats(cache, { ...cfg, measure, onTurn: log });
    const seconds = (performance.now() - t0) / 1e3;
    const files = listing(dir);
    const st = cache.stats;
    const callsSeen = run.turns.reduce((n, r) => n + r.written_calls, 0) + run.system.written_calls > 0;
    const source = callsSeen ? 'calls' : 'directory';
    for (const r of [run.system, ...run.turns]) r.written = callsSeen ? r.written_calls : r.written_dir;
    const sum = summarize(run, { storedBytes: total(files), residentBytes: st.bytes });
    const dirSum = summarize(run, { storedBytes: total(files), residentBytes: st.bytes, writtenKey: 'written_dir' });
    // Every conversation served in full from memory, then from storage by a fresh cache on the directory.
    const bad = [];
    for (let c = 0; c < run.conversations.length; c++) {
      const why = await verify(cache, run.conversations[c]);
      if (why) bad.push(`chat ${c}: ${why}`);
    }
    await cache.close({ flush: false });
    const rlx2 = await init({ newInstance: true });
    const again = await rlx2.openCache({ capBytes, fingerprint: FP, storage: 'fs', path: dir, layout: LAYOUT, f16As: 'Uint16Array' });
    const reopenBad = await verifyReopened(again, run);
    const reopened = { indexed: again.restoreReport.indexed, stored_entries: again.stats.storedEntries, bad: reopenBad };
    await again.close({ flush: false });
    const result = {
      paging: cache.paging,
      config: { ...cfg, unique_tokens: unique, cap_bytes: capBytes, bytes_per_token: BYTES_PER_TOKEN, seconds },
      written_source: source,
      write_wrap: wrap,
      ...sum,
      written_ratio_directory: dirSum.written_ratio,
      turns_written_bytes_directory: dirSum.turns_written_bytes,
      written_ratio_calls: summarize(run, { storedBytes: null, residentBytes: st.bytes, writtenKey: 'written_calls' }).written_ratio,
      stats: {
        entries: st.entries, bytes: st.bytes, pinned_entries: st.pinnedEntries, pinned_bytes: st.pinnedBytes,
        stored_entries: st.storedEntries, stored_bytes: st.storedBytes, evictions: st.evictions,
      },
      wasm_memory_bytes: rlx.memoryBytes,
      store_files: files.size,
      files_removed: run.turns.reduce((n, r) => n + r.files_removed, 0),
      verify: { checked: run.conversations.length, bad },
      reopened,
      system: run.system,
      turns: run.turns,
    };
    if (name === 'long') result.flush_near = NEAR.map((at) => flushNear(run.turns, at, AROUND));
    return result;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// ---- a memory-only run (storage 'none'), in a child process --------------------------
/** capBytes for a run: twice the unique tokens' KV and one more conversation, in whole MiB. */
const capFor = (cfg) => Math.ceil((2 * (SYSTEM_TOKENS + cfg.chats * cfg.turns * cfg.perTurn) + SYSTEM_TOKENS + cfg.turns * cfg.perTurn) * BYTES_PER_TOKEN / 2 ** 20) * 2 ** 20;

/** Insert times of the turns nearest `at` tokens in each repetition, pooled: median and p90 (nearest rank). */
function insertNear(reps, at, around = AROUND) {
  const picked = reps.map((turns) => [...turns].sort((a, b) => Math.abs(a.tokens - at) - Math.abs(b.tokens - at)).slice(0, around).sort((a, b) => a.tokens - b.tokens));
  const all = picked.flat().map((r) => r.insert_ms);
  return {
    at, turns: picked[0].map((r) => r.turn), tokens: picked[0].map((r) => r.tokens), reps: reps.length, samples: all.length,
    insert_ms: picked.map((p) => p.map((r) => r.insert_ms)), median_ms: median(all), p90_ms: quantile(all, 0.9),
  };
}

/**
 * What writing one turn's KV (100 tokens, 1,228,800 bytes) costs into
 * wasm memory never touched before (grown, not yet written: the pages are
 * faulted in) and into the same bytes again: the floor of an insert while
 * a cache's heap grows. Medians of 40 writes each, in a WebAssembly.Memory
 * of its own.
 */
function pageProbe(bytes = 100 * BYTES_PER_TOKEN, n = 40) {
  const mem = new WebAssembly.Memory({ initial: 1, maximum: 65536 });
  mem.grow(Math.ceil((n * bytes + 65536) / 65536));
  const u8 = new Uint8Array(mem.buffer);
  const src = new Uint8Array(bytes).fill(0x5a);
  const pass = () => Array.from({ length: n }, (_, i) => { const t0 = performance.now(); u8.set(src, i * bytes); return performance.now() - t0; });
  const fresh = pass(), again = pass();
  return { bytes, writes: n, fresh_ms: median(fresh), again_ms: median(again) };
}

async function memChild(name) {
  const { default: init } = await import('../js/index.js');
  const cfg = MEM_RUNS[name];
  const unique = SYSTEM_TOKENS + cfg.chats * cfg.turns * cfg.perTurn;
  const capBytes = capFor(cfg);
  const openOn = (r) => r.openCache({ capBytes, fingerprint: FP, storage: 'none', layout: LAYOUT, f16As: 'Uint16Array' });
  const long = name === 'mem:long';
  // A collection before each timed insert (the child runs with --expose-gc):
  // the pauses of freeing the last turn's ~100 MB of KV arrays stay out of it.
  const collect = typeof globalThis.gc === 'function' ? () => globalThis.gc() : null;
  const probe = pageProbe();
  // Warm-up on a throwaway module instance (its own wasm memory): the JS and
  // wasm code warm, the measured instance's heap untouched.
  {
    const w = await init({ newInstance: true });
    const warm = await openOn(w);
    await runChats(warm, { chats: 1, turns: 10, perTurn: cfg.perTurn });
    await warm.close();
  }
  const rlx = await init({ newInstance: true });
  // Repetition 0 grows the heap (every turn's new KV lands on pages never
  // touched); the long chat's later repetitions, each on a fresh cache of
  // the same instance, reuse the memory the previous one freed.
  const reps = [];
  let first = null;
  for (let rep = 0; rep < (long ? 1 + MEM_REPS : 1); rep++) {
    const cache = await openOn(rlx);
    // After every turn: what the cache holds against the unique tokens' KV so far.
    let seen = 0;
    const measure = async () => {
      const st = cache.stats;
      const uniq = seen === 0 ? 0 : SYSTEM_TOKENS + (seen - 1) * cfg.perTurn;
      seen++;
      return uniq ? { resident_bytes: st.bytes, entries: st.entries, evictions: st.evictions, unique_tokens: uniq, resident_ratio: st.bytes / (uniq * BYTES_PER_TOKEN) } : {};
    };
    const log = (r) => {
      if (rep === 0 && r.turn % Math.max(1, Math.floor(cfg.turns / 5)) === 0 && r.chat === cfg.chats - 1) {
        console.error(`  ${name}: turn ${r.turn}/${cfg.turns}, ${r.tokens} tokens, insert ${r.insert_ms.toFixed(2)} ms, resident ${(r.resident_bytes / 1e6).toFixed(1)} MB = ${r.resident_ratio.toFixed(3)}x unique`);
      }
    };
    const t0 = performance.now();
    const run = await runChats(cache, { ...cfg, measure, onTurn: log, beforeInsert: collect });
    const seconds = (performance.now() - t0) / 1e3;
    reps.push(run.turns);
    if (rep > 0) { await cache.close(); continue; }
    const st = cache.stats;
    // Every conversation looked up whole, values checked at turn boundaries too.
    const bounds = (n) => { const p = []; for (let at = SYSTEM_TOKENS + cfg.perTurn; at < n; at += cfg.perTurn * Math.max(1, Math.floor(cfg.turns / 4))) p.push(at - 1, at); return p; };
    const bad = [];
    const check = async (what, tokens) => { const why = await verify(cache, tokens, { lookup: true, positions: bounds(tokens.length) }); if (why) bad.push(`${what}: ${why}`); };
    for (let c = 0; c < run.conversations.length; c++) await check(`chat ${c}`, run.conversations[c]);
    await check('system prompt', run.systemTokens);
    let prefixes = 0;
    if (long) {
      for (let t = 8; t < cfg.turns; t += 8, prefixes++) await check(`turn ${t}'s prefix`, run.conversations[0].subarray(0, SYSTEM_TOKENS + t * cfg.perTurn));
    }
    const ratios = run.turns.map((r) => r.resident_ratio);
    const worst = run.turns.reduce((w, r) => (r.resident_ratio > w.resident_ratio ? r : w));
    first = {
      paging: cache.paging,
      storage: cache.storage,
      config: { ...cfg, storage: 'none', unique_tokens: unique, cap_bytes: capBytes, bytes_per_token: BYTES_PER_TOKEN, seconds, reused_reps: long ? MEM_REPS : 0, warmup_turns: 10, gc_before_insert: !!collect },
      unique_tokens: unique,
      unique_kv_bytes: unique * BYTES_PER_TOKEN,
      resident_bytes: st.bytes,
      resident_ratio: st.bytes / (unique * BYTES_PER_TOKEN),
      resident_ratio_max: Math.max(...ratios),
      resident_ratio_max_at: { chat: worst.chat, turn: worst.turn, tokens: worst.tokens, unique_tokens: worst.unique_tokens },
      resident_ratio_min: Math.min(...ratios),
      insert_ms_median: median(run.turns.map((r) => r.insert_ms)),
      insert_ms_p90: quantile(run.turns.map((r) => r.insert_ms), 0.9),
      page_probe: probe,
      stats: {
        entries: st.entries, bytes: st.bytes, pinned_entries: st.pinnedEntries, pinned_bytes: st.pinnedBytes, evictions: st.evictions,
      },
      wasm_memory_bytes: rlx.memoryBytes,
      verify: { checked: run.conversations.length, system: true, prefixes, bad, how: 'cache.lookup (copies)' },
      system: run.system,
      turns: run.turns,
    };
    await cache.close();
  }
  if (long) {
    first.insert_near = {
      fresh: NEAR.map((at) => insertNear(reps.slice(0, 1), at)),
      reused: NEAR.map((at) => insertNear(reps.slice(1), at)),
    };
    first.reused_turns = reps.slice(1).map((turns) => turns.map((r) => ({ turn: r.turn, tokens: r.tokens, insert_ms: r.insert_ms, resident_bytes: r.resident_bytes })));
    first.wasm_memory_bytes_end = rlx.memoryBytes;
  }
  return first;
}

if (args.includes('--child')) {
  const name = opt('--child');
  const result = name.startsWith('mem:') ? await memChild(name) : await child(name, opt('--dir'));
  fs.writeFileSync(opt('--result'), JSON.stringify(result));
  process.exit(0);
}

// ---- parent: each run in a child, then the table --------------------------------------
const out = args.find((a, i) => !a.startsWith('--') && args[i - 1] !== '--dir' && args[i - 1] !== '--only') || join(here, '../build/bench/chat.json');
const base = opt('--dir') || tmpdir();
const results = {
  config: {
    quick, node: process.version, storage: 'fs', dir: base, layout: LAYOUT, dtype: 'f16', bytes_per_token: BYTES_PER_TOKEN,
    system_tokens: SYSTEM_TOKENS, runs: RUNS, flush_near: { at: NEAR, turns: AROUND }, targets: TARGETS,
    memory: { storage: 'none', runs: MEM_RUNS, reused_reps: MEM_REPS, insert_near: { at: NEAR, turns: AROUND } },
    fs_type: (() => { try { return execFileSync('stat', ['-f', '-c', '%T', base], { encoding: 'utf8' }).trim(); } catch { return null; } })(),
  },
};
const tmpResult = join(base, `rlxkv-bench-chat-result-${process.pid}.json`);
const only = opt('--only') ? opt('--only').split(',') : null;
const ALL = { ...RUNS, ...MEM_RUNS };
results.memory = {};
for (const name of Object.keys(ALL)) {
  if (only && !only.includes(name)) continue;
  const c = ALL[name];
  console.error(`chat: ${name}, ${c.chats} chats x ${c.turns} turns x ${c.perTurn} tokens after a ${SYSTEM_TOKENS}-token pinned system prompt`);
  try {
    execFileSync(process.execPath, [...(name.startsWith('mem:') ? ['--expose-gc'] : []), self, '--child', name, '--dir', base, '--result', tmpResult, ...(quick ? ['--quick'] : [])], { stdio: ['ignore', 'inherit', 'inherit'] });
    const r = JSON.parse(fs.readFileSync(tmpResult, 'utf8'));
    if (name.startsWith('mem:')) results.memory[name.slice(4)] = r; else results[name] = r;
  } catch (err) {
    const r = { error: String(err.message || err).split('\n')[0] };
    if (name.startsWith('mem:')) results.memory[name.slice(4)] = r; else results[name] = r;
  } finally {
    fs.rmSync(tmpResult, { force: true });
  }
}
const L = results.long;
if (L && L.flush_near) {
  const [a, b] = L.flush_near;
  results.flush_growth = { at_1000_ms: a.median_ms, at_8000_ms: b.median_ms, ratio: b.median_ms / a.median_ms };
}
const ML = results.memory.long;
if (ML && ML.insert_near) {
  results.memory.insert_growth = {};
  for (const [heap, [a, b]] of Object.entries(ML.insert_near)) {
    results.memory.insert_growth[heap] = {
      at_1000_ms: a.median_ms, at_8000_ms: b.median_ms, ratio: b.median_ms / a.median_ms,
      at_1000_p90_ms: a.p90_ms, at_8000_p90_ms: b.p90_ms, p90_ratio: b.p90_ms / a.p90_ms, samples: a.samples,
    };
  }
}
fs.mkdirSync(dirname(out), { recursive: true });
fs.writeFileSync(out, JSON.stringify(results, null, 2) + '\n');

const { chatTable } = await import('./report_chat.mjs');
console.log(chatTable(results));
console.log(`wrote ${out}`);
