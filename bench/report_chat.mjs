// The BENCHMARKS.md section for chat sessions (growing conversations), from
// the JSON of bench/bench_chat.mjs (chat.json, Node 'fs') and
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
    const w = (r) => (ok(r) ? r.written_ratio : null);
    target(`Node: written ≤ ${times(T.written)} the new tokens' KV, 100-token turns`, w(chats), T.written, ok(chats) ? `${times(chats.written_ratio)} (${shape(chats.config)})` : 'not measured');
    target(`Node: written ≤ ${times(T.written_small)} the new tokens' KV, 10-token turns`, w(small), T.written_small, ok(small) ? `${times(small.written_ratio)} (${shape(small.config)})` : 'not measured');
    target(`Node: stored ≤ ${times(T.stored)} the unique tokens' KV`, ok(chats) ? chats.stored_ratio : null, T.stored, ok(chats) ? `${times(chats.stored_ratio)} (${shape(chats.config)})` : 'not measured');
    target(`Node: resident ≤ ${times(T.resident)} the unique tokens' KV`, ok(chats) ? chats.resident_ratio : null, T.resident, ok(chats) ? `${times(chats.resident_ratio)} (${shape(chats.config)})` : 'not measured');
    target(`Node: flush at ~8,000 tokens ≤ ${times(T.flush_growth)} the flush at ~1,000`, node.flush_growth ? node.flush_growth.ratio : null, T.flush_growth,
      node.flush_growth ? `${times(node.flush_growth.ratio)} (${ms(node.flush_growth.at_8000_ms)} vs ${ms(node.flush_growth.at_1000_ms)})` : 'not measured');
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
  if (browser) {
    how.push(`Chromium ${browser.config.chromium} (headless, on-disk profile, page ${browser.config.entry}): the same workload, smaller (the runs' shapes are in the rows), each run on a fresh page load with the origin's IndexedDB databases and OPFS files deleted first. Bytes written: for 'idb', the byte sizes of ArrayBuffer, typed-array and Blob values (and of such fields of object values) passed to IDBObjectStore put and add; for 'opfs', the bytes given to FileSystemSyncAccessHandle.write and to FileSystemWritableFileStream write (and its writers' write), wrapped in the page and the bench's worker before the library is imported, and in the workers the library starts from blob: URLs (its OPFS helper), whose scripts get the counting prepended (URL.createObjectURL wrapped) and report back over a BroadcastChannel, awaited after each flush. Stored: ${browser.config.stored_how}. Resident: cache.stats.bytes.`);
  }
  md.push(`How these are measured: ${how.join(' ')}`);
  md.push('');
  return md.join('\n');
}
