// The BENCHMARKS.md section for chat sessions (growing conversations), from
// the JSON of bench/bench_chat.mjs (chat.json, Node 'fs' and memory only) and
// bench/bench_chat_browser.mjs (chat_browser.json, Chromium 'idb' and
// 'opfs') in one directory. bench/report.mjs calls chatMarkdown(dir); the
// benches print chatTable(data) / chatTable(null, browser).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ms, mb, times, n0 } from './format.mjs';

const shape = (c) => `${n0(c.chats)} chat${c.chats === 1 ? '' : 's'} × ${n0(c.turns)} turns × ${n0(c.perTurn)} tokens`;
const ok = (r) => r && !r.error;

/** Rows { section, workload, value, reference, ratio } and targets { name, met, measured } of whatever data is there. */
function build(node, browser) {
  const rows = [], targets = [];
  const row = (section, workload, value, reference = '—', ratio = '—') => rows.push({ section, workload, value, reference, ratio });
  const target = (name, value, limit, measured) => targets.push({ name, met: value === null || value === undefined ? null : value <= limit, measured });
  const T = (node && node.config.targets) || (browser && browser.config.targets);
  const checks = (r) => {
    const bad = [...r.verify.bad, ...(r.reopened ? r.reopened.bad : [])];
    return bad.length ? `**wrong**: ${bad.join('; ')}` : `${r.verify.checked === 1 ? 'the conversation' : `all ${n0(r.verify.checked)} conversations`} whole${r.reopened ? ', and from a reopened cache' : ''}`;
  };
  /** The rows of one run of one store: written, stored, resident, times. */
  const runRows = (S, r, what) => {
    const c = r.config;
    row(S, `${shape(c)}: bytes written per new token's KV (${{ directory: 'new or changed files', calls: 'node:fs write calls' }[r.written_source] || r.written_source})`,
      mb(r.turns_written_bytes), `new tokens' KV ${mb(r.new_kv_bytes)}`, times(r.written_ratio));
    if (r.written_ratio_directory !== undefined && r.written_source !== 'directory') {
      row(S, `${shape(c)}: the same by listing the directory (whole size of each new or changed file; ${n0(r.files_removed)} files removed)`,
        mb(r.turns_written_bytes_directory), `new tokens' KV ${mb(r.new_kv_bytes)}`, times(r.written_ratio_directory));
    }
    row(S, `${shape(c)}: written, the system prompt's flush included, per unique token's KV`,
      mb(r.turns_written_bytes + r.system_written_bytes), `unique tokens' KV ${mb(r.unique_kv_bytes)}`, times(r.written_ratio_with_system));
    if (what.full) {
      if (r.stored_ratio !== null) row(S, `${shape(c)}: stored at the end (${r.store_files !== undefined ? `${n0(r.store_files)} files` : r.stored_how})`, mb(r.stored_bytes), `unique tokens' KV ${mb(r.unique_kv_bytes)}`, times(r.stored_ratio));
      row(S, `${shape(c)}: resident at the end (cache.stats.bytes; capBytes ${mb(c.cap_bytes)}, ${n0(r.stats.evictions)} evictions)`,
        mb(r.resident_bytes), `unique tokens' KV ${mb(r.unique_kv_bytes)}`, times(r.resident_ratio));
    }
    row(S, `${shape(c)}: flush per turn, median (insert: ${ms(r.insert_ms_median)})`, ms(r.flush_ms_median));
    row(S, `${shape(c)}: KV served back (match)`, checks(r));
  };

  if (node) {
    const S = "Chat sessions under Node (storage 'fs')";
    const { chats, small, long } = node;
    if (ok(chats)) runRows(S, chats, { full: true });
    if (ok(small)) runRows(S, small, { full: false });
    if (ok(long)) {
      for (const p of long.flush_near) row(S, `${shape(long.config)}: flush near ${n0(p.at)} tokens (median of turns ${p.turns.join(', ')}: ${n0(p.tokens[0])}–${n0(p.tokens[p.tokens.length - 1])} tokens)`, ms(p.median_ms));
      row(S, `${shape(long.config)}: flush at ~${n0(long.flush_near[1].at)} tokens over ~${n0(long.flush_near[0].at)}`, ms(long.flush_near[1].median_ms), `${ms(long.flush_near[0].median_ms)}`, times(node.flush_growth.ratio));
      runRows(S, long, { full: true });
    }
    for (const [k, r] of Object.entries({ chats, small, long })) if (r && r.error) row(S, `${k}: failed`, r.error);
    const pg = Object.entries({ chats, small, long }).filter(([, r]) => ok(r) && r.paging !== undefined);
    if (pg.length) row(S, `cache.paging (${pg.map(([k]) => k).join(', ')})`, pg.map(([, r]) => String(r.paging)).join(', '));
    const w = (r) => (ok(r) ? r.written_ratio : null);
    target(`Node: written ≤ ${times(T.written)} the new tokens' KV, 100-token turns`, w(chats), T.written, ok(chats) ? `${times(chats.written_ratio)} (${shape(chats.config)})` : 'not measured');
    target(`Node: written ≤ ${times(T.written_small)} the new tokens' KV, 10-token turns`, w(small), T.written_small, ok(small) ? `${times(small.written_ratio)} (${shape(small.config)})` : 'not measured');
    target(`Node: stored ≤ ${times(T.stored)} the unique tokens' KV`, ok(chats) ? chats.stored_ratio : null, T.stored, ok(chats) ? `${times(chats.stored_ratio)} (${shape(chats.config)})` : 'not measured');
    target(`Node: resident ≤ ${times(T.resident)} the unique tokens' KV`, ok(chats) ? chats.resident_ratio : null, T.resident, ok(chats) ? `${times(chats.resident_ratio)} (${shape(chats.config)})` : 'not measured');
    target(`Node: flush at ~8,000 tokens ≤ ${times(T.flush_growth)} the flush at ~1,000`, node.flush_growth ? node.flush_growth.ratio : null, T.flush_growth,
      node.flush_growth ? `${times(node.flush_growth.ratio)} (${ms(node.flush_growth.at_8000_ms)} vs ${ms(node.flush_growth.at_1000_ms)})` : 'not measured');

    // Memory only (storage 'none'): resident per turn and at the end, insert times, lookups.
    const M = node.memory || {};
    const MS = "Chat sessions under Node, memory only (storage 'none')";
    const served = (r) => (r.verify.bad.length ? `**wrong**: ${r.verify.bad.join('; ')}`
      : `${r.verify.checked === 1 ? 'the conversation' : `all ${n0(r.verify.checked)} conversations`}${r.verify.system ? ', the system prompt' : ''}${r.verify.prefixes ? ` and ${n0(r.verify.prefixes)} earlier turns' prefixes` : ''} whole by ${r.verify.how}`);
    const pms = (x, p90) => `${ms(x)} (p90 ${ms(p90)})`;
    const memRows = (r) => {
      const c = r.config;
      row(MS, `${shape(c)}: cache.paging`, String(r.paging));
      row(MS, `${shape(c)}: resident at the end (cache.stats.bytes; capBytes ${mb(c.cap_bytes)}, ${n0(r.stats.evictions)} evictions, ${n0(r.stats.entries)} entries)`,
        mb(r.resident_bytes), `unique tokens' KV ${mb(r.unique_kv_bytes)}`, times(r.resident_ratio));
      const at = r.resident_ratio_max_at;
      row(MS, `${shape(c)}: resident after each turn over the unique tokens' KV so far: highest (chat ${n0(at.chat)}, turn ${n0(at.turn)}, ${n0(at.unique_tokens)} unique tokens), lowest ${times(r.resident_ratio_min)}`,
        '—', '—', times(r.resident_ratio_max));
      row(MS, `${shape(c)}: insert per turn, median over all turns (heap growing: every turn's new KV on wasm pages not touched before)`, pms(r.insert_ms_median, r.insert_ms_p90));
      row(MS, `${shape(c)}: KV served back (lookup)`, served(r));
    };
    if (ok(M.chats)) memRows(M.chats);
    const ML = M.long;
    if (ok(ML)) {
      memRows(ML);
      const heaps = { fresh: 'heap growing (new KV on fresh pages)', reused: `heap reused (${n0(ML.config.reused_reps)} more runs, each on a fresh cache in the memory the last one freed; pooled)` };
      for (const [heap, label] of Object.entries(heaps)) {
        const near = ML.insert_near[heap], g = M.insert_growth[heap];
        for (const p of near) row(MS, `${shape(ML.config)}: insert near ${n0(p.at)} tokens, ${label}: median and p90 of ${n0(p.samples)} (turns ${p.turns.join(', ')}: ${n0(p.tokens[0])}–${n0(p.tokens[p.tokens.length - 1])} tokens)`, pms(p.median_ms, p.p90_ms));
        row(MS, `${shape(ML.config)}: insert at ~${n0(near[1].at)} tokens over ~${n0(near[0].at)}, ${heap === 'fresh' ? 'heap growing' : 'heap reused'}, medians (p90s: ${times(g.p90_ratio)})`, ms(g.at_8000_ms), ms(g.at_1000_ms), times(g.ratio));
      }
      const pp = ML.page_probe;
      if (pp) row(MS, `Writing one turn's KV (${mb(pp.bytes)}) into wasm memory grown but never written, against the same bytes again (median of ${n0(pp.writes)}): the floor under an insert while the heap grows`, ms(pp.fresh_ms), ms(pp.again_ms), times(pp.fresh_ms / pp.again_ms));
    }
    for (const [k, r] of Object.entries(M)) if (r && r.error) row(MS, `${k}: failed`, r.error);
    if (node.memory) {
      const runs = [M.chats, ML].filter(ok);
      const worst = runs.length ? Math.max(...runs.map((r) => r.resident_ratio_max)) : null;
      target(`Node, memory only: resident ≤ ${times(T.resident)} the unique tokens' KV`, worst, T.resident,
        runs.length ? `highest after any turn ${times(worst)}; at the end ${runs.map((r) => `${times(r.resident_ratio)} (${shape(r.config)}, paging ${r.paging}, ${n0(r.stats.evictions)} evictions)`).join(', ')}` : 'not measured');
      const G = T.insert_growth ?? 1.2;
      for (const heap of ['reused', 'fresh']) {
        const g = M.insert_growth && M.insert_growth[heap];
        target(`Node, memory only: insert at ~8,000 tokens ≤ ${times(G)} the insert at ~1,000, ${heap === 'fresh' ? 'heap growing' : 'heap reused'} (medians)`, g ? g.ratio : null, G,
          g ? `${times(g.ratio)} (${ms(g.at_8000_ms)} vs ${ms(g.at_1000_ms)}; p90 ${ms(g.at_8000_p90_ms)} vs ${ms(g.at_1000_p90_ms)}, ${n0(g.samples)} turns each)` : 'not measured');
      }
    }
  }
  if (browser) {
    for (const [kind, b] of Object.entries(browser.stores || {})) {
      const where = b.label || `storage '${kind}'`;
      const S = `Chat sessions in Chromium (${where})`;
      const { chats, small } = b;
      if (ok(chats)) runRows(S, chats, { full: true });
      if (ok(small)) runRows(S, small, { full: false });
      for (const [k, r] of Object.entries({ chats, small })) if (!ok(r)) row(S, `${k}: failed`, r ? r.error : 'not run');
      target(`Chromium, ${where}: written ≤ ${times(T.written)} the new tokens' KV, 100-token turns`, ok(chats) ? chats.written_ratio : null, T.written,
        ok(chats) ? `${times(chats.written_ratio)} (${shape(chats.config)})` : 'not measured');
      target(`Chromium, ${where}: written ≤ ${times(T.written_small)} the new tokens' KV, 10-token turns`, ok(small) ? small.written_ratio : null, T.written_small,
        ok(small) ? `${times(small.written_ratio)} (${shape(small.config)})` : 'not measured');
      target(`Chromium, ${where}: stored ≤ ${times(T.stored)} the unique tokens' KV`, ok(chats) ? chats.stored_ratio : null, T.stored,
        ok(chats) ? `${times(chats.stored_ratio)} (${shape(chats.config)}; ${chats.stored_how})` : 'not measured');
      target(`Chromium, ${where}: resident ≤ ${times(T.resident)} the unique tokens' KV`, ok(chats) ? chats.resident_ratio : null, T.resident,
        ok(chats) ? `${times(chats.resident_ratio)} (${shape(chats.config)})` : 'not measured');
    }
  }
  return { rows, targets };
}

/** The text table the benches print. */
export function chatTable(node, browser = null) {
  const { rows, targets } = build(node, browser);
  const out = [];
  for (const s of [...new Set(rows.map((r) => r.section))]) {
    out.push(`\n${s}`);
    for (const r of rows.filter((q) => q.section === s)) out.push(`  ${r.workload}\n      ${r.value}  |  ${r.reference}  |  ${r.ratio}`);
  }
  out.push('\nTargets (not asserted)');
  for (const t of targets) out.push(`  [${t.met === null ? 'n/a' : t.met ? 'met' : 'MISSED'}] ${t.name}: ${t.measured}`);
  return out.join('\n');
}

/** The BENCHMARKS.md section, from chat.json and chat_browser.json in dir ('' when neither is there). */
export function chatMarkdown(dir) {
  const load = (name) => { try { return JSON.parse(readFileSync(join(dir, name), 'utf8')); } catch { return null; } };
  const node = load('chat.json'), browser = load('chat_browser.json');
  if (!node && !browser) return '';
  const { rows, targets } = build(node, browser);
  const md = ['## Chat sessions: growing conversations', ''];
  const c = (node || browser).config;
  md.push(`From bench/bench_chat.mjs${browser ? ' and bench/bench_chat_browser.mjs' : ''}, through the public API only (bench/chat_workload.js): KV of ${c.layout.layers} layers, ${c.layout.order}, ${c.layout.heads} KV heads × ${c.layout.headDim}, ${c.dtype} (${n0(c.bytes_per_token)} bytes a token, Qwen2.5-0.5B's shape). A ${n0(c.system_tokens)}-token system prompt is inserted, pinned and flushed; then chats take turns round-robin (turn 1 of every chat, then turn 2...), each turn appending new tokens (their own per chat) to its conversation, inserting the whole conversation's KV (as a model's present.* gives it) and awaiting cache.flush(). Every value is a function of (position, token) alone, so a prefix's KV is the same in every chat. "Written per new token's KV": bytes written by the turns' flushes over the KV bytes of the tokens the turns added; stored and resident are over the KV of the unique tokens (the system prompt's and every turn's). Targets are printed, not asserted.`);
  md.push('');
  md.push('| Target | Status | Measured |');
  md.push('|---|---|---|');
  for (const t of targets) md.push(`| ${t.name} | ${t.met === null ? 'not measured' : t.met ? '**met**' : '**missed**'} | ${t.measured} |`);
  for (const s of [...new Set(rows.map((r) => r.section))]) {
    md.push('', `### ${s}`, '', '| Workload | Measured | Reference | Ratio |', '|---|---:|---:|---:|');
    for (const r of rows.filter((q) => q.section === s)) md.push(`| ${r.workload} | ${r.value} | ${r.reference} | ${r.ratio} |`);
  }
  md.push('');
  const how = [];
  if (node) {
    const w = node.chats && node.chats.write_wrap;
    how.push(`Node: each run in a fresh child process, a fresh module instance and a fresh store directory in ${node.config.fs_type ? `a ${node.config.fs_type} file system` : 'the temporary directory'}; capBytes twice the unique tokens' KV plus one conversation's. Bytes written are counted after every flush two ways: the bytes passed to node:fs's write calls (writeSync, writevSync, write, writev, FileHandle write/writev/writeFile/appendFile, writeFile/appendFile and their Sync forms), wrapped before the library loads${w ? ` (a check at start wrote known sizes through each: ${w.ok ? 'all counted exactly' : `**miscounted**: ${Object.entries(w.calls).filter(([, v]) => v.counted !== v.expected).map(([k, v]) => `${k} ${v.counted} of ${v.expected}`).join(', ')}`})` : ''}, and by listing the store directory (the whole size of every file new since the last listing, by name or inode, or whose size or mtime changed). The ratios use the write calls when they saw any, else the listing. Stored: the sizes of every file in the directory at the end; resident: cache.stats.bytes, which capBytes bounds (a cache that keeps more than the unique tokens shows its cap there, with evictions). The flush comparison is one chat of ${n0(node.long && node.long.config ? node.long.config.turns : 0)} turns of ${n0(node.long && node.long.config ? node.long.config.perTurn : 0)} tokens: the median flush of the ${node.config.flush_near.turns} turns nearest each length. After each run every conversation is matched in full (values checked at a few places) and a cache reopened on the directory matches the first and last chats and the system prompt.`);
  }
  if (node && node.memory && (ok(node.memory.chats) || ok(node.memory.long))) {
    const m = node.memory, L = m.long;
    const R0 = [m.chats, L].find(ok);
    how.push(`Node, memory only: rlx.openCache({ storage: 'none' }) (a memory-only cache; cache.paging ${R0.paging}: with paging, an insert that extends a held prefix copies and keeps only the new tokens' KV), the same workload (its flush has nothing to write), each run in a fresh child process${R0.config.gc_before_insert ? ' run with --expose-gc that collects before every timed insert (after that turn\'s KV is made)' : ''}, with capBytes as for 'fs', room enough for a cache that keeps each token once (the evictions are counted); both runs first chat 10 untimed turns on a throwaway module instance, so the code is warm and the measured heap untouched. Resident: cache.stats.bytes after every turn, over the KV of the unique tokens so far, and at the end. Insert times: one chat of ${L && L.config ? `${n0(L.config.turns)} turns of ${n0(L.config.perTurn)} tokens` : 'many turns'}, the ${node.config.flush_near.turns} turns nearest ~1,000 and ~8,000 tokens (median and p90, nearest rank), first on a heap that grows as the chat does (each turn's new KV written to wasm pages for the first time, which fault in: the probe row times that write alone), then ${L && L.config ? n0(L.config.reused_reps) : 'more'} runs on fresh caches in memory the earlier run freed, pooled. The bytes an insert copies are not observable through the public API and are not reported. Every conversation and the system prompt${L && L.verify && L.verify.prefixes ? ', and for the long chat every 8th turn\'s prefix,' : ''} is looked up with cache.lookup (copies) and must match in full, its values checked at a few places, turn boundaries included.`);
  }
  if (browser) {
    how.push(`Chromium ${browser.config.chromium} (headless, on-disk profile, page ${browser.config.entry}): the same workload, smaller (the runs' shapes are in the rows), each run on a fresh page load with the origin's IndexedDB databases and OPFS files deleted first. Bytes written: for 'idb', the byte sizes of ArrayBuffer, typed-array and Blob values (and of such fields of object values) passed to IDBObjectStore put and add; for 'opfs', the bytes given to FileSystemSyncAccessHandle.write and to FileSystemWritableFileStream write (and its writers' write), wrapped in the page and the bench's worker before the library is imported, and in the workers the library starts from blob: URLs (its OPFS helper), whose scripts get the counting prepended (URL.createObjectURL wrapped) and report back over a BroadcastChannel, awaited after each flush. Stored: ${browser.config.stored_how}. Resident: cache.stats.bytes.`);
  }
  md.push(`How these are measured: ${how.join(' ')}`);
  md.push('');
  return md.join('\n');
}
