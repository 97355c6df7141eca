// Chat sessions against a storage 'fs' cache (Node): what growing
// conversations cost in bytes written per turn, bytes stored, bytes resident
// and flush time, through the public API only (bench/chat_workload.js).
//
//   node bench/bench_chat.mjs [OUT.json] [--quick] [--dir DIR]
//   (default build/bench/chat.json; DIR: where the stores go, default the OS temp dir)
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
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  BYTES_PER_TOKEN, LAYOUT, SYSTEM_TOKENS, TARGETS, flushNear, runChats, summarize, verify,
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
  const longest = SYSTEM_TOKENS + cfg.turns * cfg.perTurn;
  // Room for twice the unique tokens' KV and one more conversation: enough for
  // a store that keeps each token once; an entry per turn gets evicted (it stays stored).
  const capBytes = Math.ceil((2 * unique + longest) * BYTES_PER_TOKEN / 2 ** 20) * 2 ** 20;
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
    const reopenBad = [];
    for (const c of [0, run.conversations.length - 1]) {
      const why = await verify(again, run.conversations[c]);
      if (why) reopenBad.push(`chat ${c}: ${why}`);
    }
    const sysWhy = await verify(again, run.systemTokens);
    if (sysWhy) reopenBad.push(`system prompt: ${sysWhy}`);
    const reopened = { indexed: again.restoreReport.indexed, stored_entries: again.stats.storedEntries, bad: reopenBad };
    await again.close({ flush: false });
    const result = {
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

if (args.includes('--child')) {
  const name = opt('--child');
  const result = await child(name, opt('--dir'));
  fs.writeFileSync(opt('--result'), JSON.stringify(result));
  process.exit(0);
}

// ---- parent: each run in a child, then the table --------------------------------------
const out = args.find((a, i) => !a.startsWith('--') && args[i - 1] !== '--dir') || join(here, '../build/bench/chat.json');
const base = opt('--dir') || tmpdir();
const results = {
  config: {
    quick, node: process.version, storage: 'fs', dir: base, layout: LAYOUT, dtype: 'f16', bytes_per_token: BYTES_PER_TOKEN,
    system_tokens: SYSTEM_TOKENS, runs: RUNS, flush_near: { at: NEAR, turns: AROUND }, targets: TARGETS,
    fs_type: (() => { try { return execFileSync('stat', ['-f', '-c', '%T', base], { encoding: 'utf8' }).trim(); } catch { return null; } })(),
  },
};
const tmpResult = join(base, `rlxkv-bench-chat-result-${process.pid}.json`);
for (const name of Object.keys(RUNS)) {
  const c = RUNS[name];
  console.error(`chat: ${name}, ${c.chats} chats x ${c.turns} turns x ${c.perTurn} tokens after a ${SYSTEM_TOKENS}-token pinned system prompt`);
  try {
    execFileSync(process.execPath, [self, '--child', name, '--dir', base, '--result', tmpResult, ...(quick ? ['--quick'] : [])], { stdio: ['ignore', 'inherit', 'inherit'] });
    results[name] = JSON.parse(fs.readFileSync(tmpResult, 'utf8'));
  } catch (err) {
    results[name] = { error: String(err.message || err).split('\n')[0] };
  } finally {
    fs.rmSync(tmpResult, { force: true });
  }
}
const L = results.long;
if (L && L.flush_near) {
  const [a, b] = L.flush_near;
  results.flush_growth = { at_1000_ms: a.median_ms, at_8000_ms: b.median_ms, ratio: b.median_ms / a.median_ms };
}
fs.mkdirSync(dirname(out), { recursive: true });
fs.writeFileSync(out, JSON.stringify(results, null, 2) + '\n');

const { chatTable } = await import('./report_chat.mjs');
console.log(chatTable(results));
console.log(`wrote ${out}`);
