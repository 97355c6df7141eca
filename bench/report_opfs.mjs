// The BENCHMARKS.md section for storage 'opfs' in Chromium, from the JSON of
// bench/bench_opfs.mjs (opfs.json) in one directory: a table of times and
// one of ratios per entry size, and the targets of issue #16 judged from
// them. bench/report.mjs calls opfsMarkdown(dir); bench_opfs.mjs prints
// opfsTable(data).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ms, mib, times } from './format.mjs';


/** Columns of the two tables: [heading, (row) => text]. */
const TIMES = [
  ['KV', (r) => `${r.mib} MiB`],
  ['Worker hit-load, new instance', (r) => ms(r.opfs_worker_hit_ms)],
  ['Worker hit-load, warm heap', (r) => ms(r.opfs_worker_hit_warm_ms)],
  ['Window hit-load', (r) => ms(r.opfs_window_hit_ms)],
  ['Raw IndexedDB get', (r) => ms(r.idb_get_ms)],
  ["'idb' hit-load", (r) => ms(r.idb_hit_ms)],
  ['Bare OPFS read, new buffer', (r) => ms(r.bare_read_ms)],
  ['Bare OPFS read, touched buffer', (r) => ms(r.bare_read_warm_ms)],
  ['read() alone', (r) => ms(r.read_call_ms)],
  ['Worker File read', (r) => ms(r.worker_file_read_ms)],
  ['Window File read', (r) => ms(r.file_read_ms)],
  ['memory.grow in the hit', (r) => (r.opfs_worker_hit_grew_bytes ? `${ms(r.opfs_worker_hit_grow_ms)} (${mib(r.opfs_worker_hit_grew_bytes)})` : 'none')],
];
const RATIOS = [
  ['KV', (r) => `${r.mib} MiB`],
  ['Worker hit / IDB get', (r) => times(r.worker_over_idb_get)],
  ['Worker hit, warm / IDB get', (r) => times(r.worker_warm_over_idb_get)],
  ['Window hit / IDB get', (r) => times(r.window_over_idb_get)],
  ['Bare read / IDB get', (r) => times(r.bare_read_over_idb_get)],
  ['Window File read / IDB get', (r) => times(r.file_read_over_idb_get)],
  ['Worker hit / bare read (new memory)', (r) => times(r.worker_over_bare_read)],
  ['Warm hit / bare read (touched memory)', (r) => times(r.worker_warm_over_bare_read_warm)],
  ['Window hit / window File read', (r) => times(r.window_over_file_read)],
  ['Window hit / bare read (new memory)', (r) => times(r.window_over_bare_read)],
  ['Worker File read / bare read', (r) => times(r.worker_file_read_over_bare_read)],
  ["'idb' hit / IDB get", (r) => times(r.idb_hit_over_idb_get)],
];

/** Targets { name, met, measured, why } judged on every size of the run. */
function targets({ rows }) {
  const out = [];
  const each = (f) => rows.map((r) => `${r.mib} MiB ${times(f(r))}`).join(', ');
  const missedAt = (f, limit) => rows.filter((r) => f(r) > limit);
  const sizes = (rs) => rs.map((r) => `${r.mib} MiB`).join(', ');
  const grew = (r) => `${r.mib} MiB: ${r.opfs_worker_hit_grew_bytes ? `memory.grow() ${ms(r.opfs_worker_hit_grow_ms)} for ${mib(r.opfs_worker_hit_grew_bytes)}` : 'no growth'}`;
  const target = (name, f, limit, why) => {
    const missed = missedAt(f, limit);
    out.push({ name, met: !missed.length, measured: each(f), why: missed.length ? why(missed) : null });
  };

  target('OPFS hit-load in a worker ≤ 0.5× the raw IndexedDB get of the same bytes', (r) => r.worker_over_idb_get, 0.5, (missed) => {
    const floor = missed.filter((r) => r.bare_read_over_idb_get > 0.5);
    const fixed = missed.map((r) => `${ms(r.bare_read_warm_ms - r.read_call_ms)} at ${r.mib} MiB`).join(', ');
    return `Missed at ${sizes(missed)} (on a new module instance; with a warm heap ${missed.map((r) => times(r.worker_warm_over_idb_get)).join(', ')}). ` +
      (floor.length ? `At ${sizes(floor)} even a bare read of the file, into new memory in a fresh worker, takes ${floor.map((r) => times(r.bare_read_over_idb_get)).join(', ')} the get: a read that opens its handles pays for a file handle, a sync access handle and its close (the bare read into a touched buffer minus its read(): ${fixed}), and a get of a record that small costs little more. ` : '') +
      `Reading the File instead (getFile().arrayBuffer() in a worker, copied once) takes ${missed.map((r) => times(r.worker_file_read_over_bare_read)).join(', ')} the bare read. ` +
      `A warm hit takes ${missed.map((r) => times(r.worker_warm_over_bare_read_warm)).join(', ')} the bare read into touched memory; a new instance's first hit ${missed.map((r) => ms(r.opfs_worker_hit_ms - r.opfs_worker_hit_warm_ms)).join(', ')} more than its warm one (next targets).`;
  });
  target('OPFS hit-load in a window ≤ 0.5× the raw IndexedDB get of the same bytes', (r) => r.window_over_idb_get, 0.5, (missed) =>
    `Missed at ${sizes(missed)}. A window has no sync access handles: its helper worker reads the file with one (as the bare read does, but for the handles, kept open since the open readied the blob used last), transfers the bytes back, and the window copies them into the heap; the hit takes ${missed.map((r) => times(r.window_over_bare_read)).join(', ')} the worker's bare read into new memory, which alone takes ${missed.map((r) => times(r.bare_read_over_idb_get)).join(', ')} the get. Reading the File in the window instead (what a page whose CSP forbids blob: workers gets) takes ${missed.map((r) => times(r.file_read_over_idb_get)).join(', ')} the get alone.`);
  target('OPFS hit-load in a worker ≤ 1.2× a bare OPFS read of the file (both into new memory: a new module instance, a new buffer)', (r) => r.worker_over_bare_read, 1.2, (missed) =>
    `Missed at ${sizes(missed)}: the hit takes ${missed.map((r) => `${ms(r.opfs_worker_hit_ms - r.bare_read_ms)} more at ${r.mib} MiB`).join(', ')}. ` +
    `What a hit does beside the read (the lock, the structure check, the entry, the lookup) is not it: with a warm heap the hit takes ${missed.map((r) => times(r.worker_warm_over_bare_read_warm)).join(', ')} the bare read into a touched buffer. ` +
    `It is a new instance's first calls (its code compiled as it first runs) and its fresh heap pages: its first hit takes ${missed.map((r) => ms(r.opfs_worker_hit_ms - r.opfs_worker_hit_warm_ms)).join(', ')} more than its second, where the bare read into a new buffer takes ${missed.map((r) => ms(r.bare_read_ms - r.bare_read_warm_ms)).join(', ')} more than into a touched one (fresh wasm memory is slower to fill than a new buffer). Growing wasm memory is not it (${missed.map(grew).join('; ')}).`);
  target('OPFS hit-load in a worker ≤ 1.2× a bare OPFS read of the file (both into memory already touched: a warm heap, a touched buffer)', (r) => r.worker_warm_over_bare_read_warm, 1.2, (missed) =>
    `Missed at ${sizes(missed)}: the hit takes ${missed.map((r) => `${ms(r.opfs_worker_hit_warm_ms - r.bare_read_warm_ms)} more at ${r.mib} MiB`).join(', ')} (the lock, the structure check, the entry, the lookup).`);
  return out;
}

const FLUSH_COLS = [
  ['KV', (r) => `${r.mib} MiB`],
  ["'opfs', window (helper)", (r) => ms(r.opfs_window_ms)],
  ["'opfs', window without a helper (streams)", (r) => ms(r.opfs_window_streams_ms)],
  ["'opfs', worker", (r) => ms(r.opfs_worker_ms)],
  ["'idb', window", (r) => ms(r.idb_window_ms)],
  ['Helper / streams', (r) => times(r.opfs_window_ms / r.opfs_window_streams_ms)],
];

/** The flush table's lines, markdown (md) or text; none if the run has no flushes. */
function flushLines(data, md = false) {
  if (!data.flush || !data.flush.length) return [];
  const row = (cells) => (md ? `| ${cells.join(' | ')} |` : cells.join(' | '));
  const out = ['', md ? '### Flush of one entry' : `flush of one new entry, ms (medians of ${data.flush[0].reps.length}):`];
  if (md) {
    out.push('', `cache.flush() of one new entry (its blob, the index's update), on fresh page loads, medians of ${data.flush[0].reps.length}, the order rotating. A window writes through its helper worker's sync access handles; a page whose CSP forbids blob: workers has none and writes through createWritable() streams. No target: for comparison.`, '');
  }
  out.push(row(FLUSH_COLS.map(([h]) => h)));
  if (md) out.push(`|${FLUSH_COLS.map((_, i) => (i ? '---:' : '---')).join('|')}|`);
  for (const r of data.flush) out.push(row(FLUSH_COLS.map(([, g]) => g(r))));
  return out;
}

/** The text table bench_opfs.mjs prints. */
export function opfsTable(data) {
  const out = [`ms and ratios, medians of ${data.config.reps_by_size ? Object.values(data.config.reps_by_size).join('/') : data.config.reps} page loads (Chromium ${data.config.chromium})`];
  for (const cols of [TIMES, RATIOS]) {
    out.push('', cols.map(([h]) => h).join(' | '));
    for (const r of data.rows) out.push(cols.map(([, g]) => g(r)).join(' | '));
  }
  if (data.open) {
    const o = data.open;
    out.push('', `open of ${o.entries} entries: 'opfs' window ${ms(o.opfs_window_ms)}, worker ${ms(o.opfs_worker_ms)}; 'idb' window ${ms(o.idb_window_ms)}`);
  }
  for (const line of flushLines(data)) out.push(line);
  out.push('', 'Targets');
  for (const t of targets(data)) out.push(`  [${t.met ? 'met' : 'MISSED'}] ${t.name}: ${t.measured}`);
  return out.join('\n');
}

/** The BENCHMARKS.md section, from opfs.json in dir (saying so when it is not there). */
export function opfsMarkdown(dir) {
  const md = ["## Storage 'opfs' in Chromium: hit-load against IndexedDB and a bare read; the open", ''];
  let data = null;
  try { data = JSON.parse(readFileSync(join(dir, 'opfs.json'), 'utf8')); } catch { /* not run, or it failed */ }
  if (!data || !data.rows || !data.rows.length || !('bare_read_warm_ms' in data.rows[0])) {
    md.push(`Not measured in this run: no ${join(dir, 'opfs.json')} from bench/bench_opfs.mjs.`, '');
    return md.join('\n');
  }
  const c = data.config;
  md.push(`From bench/bench_opfs.mjs (bench/opfs_page.js), in the same run as the rest: Chromium ${c.chromium}, the page importing ${c.entry}, one entry of ${c.sizes_mib.map((m) => `${m}`).join(', ')} MiB of KV (256 tokens, pseudo-random floats), flushed to 'opfs' and to 'idb' and put as one record in a separate IndexedDB database. Each of ${c.reps_by_size ? c.sizes_mib.map((m) => c.reps_by_size[m]).join(', ') : c.reps} repetitions${c.reps_by_size ? ' (by size)' : ''} is a fresh page load, which times, in this order, the raw get of that record, a File read of the OPFS file, a hit-load from 'idb' and one from 'opfs' (the window), then two fresh workers, which of them goes first alternating: one times the bare read and the File read there, the other the hit-load on a new module instance and again on the same instance (warm heap). Times are medians; each ratio is the median of the repetitions' own ratios.`);
  md.push('');
  md.push('| Target | Status | Measured |');
  md.push('|---|---|---|');
  const ts = targets(data);
  for (const t of ts) md.push(`| ${t.name} | ${t.met ? '**met**' : '**missed**'} | ${t.measured} |`);
  const missed = ts.filter((t) => !t.met);
  if (missed.length) {
    md.push('');
    for (const t of missed) md.push(`- **${t.name}**. ${t.why}`);
  }
  for (const [title, cols] of [['Times', TIMES], ['Ratios', RATIOS]]) {
    md.push('', `### ${title}`, '', `| ${cols.map(([h]) => h).join(' | ')} |`, `|${cols.map((_, i) => (i ? '---:' : '---')).join('|')}|`);
    for (const r of data.rows) md.push(`| ${cols.map(([, g]) => g(r)).join(' | ')} |`);
  }
  if (data.open) {
    const o = data.open;
    md.push('', '### Open of a store of many entries', '');
    md.push(`openCache of a store of ${o.entries.toLocaleString('en-US')} entries (512 tokens and 32 KiB of KV each), on a fresh page load (medians of ${o.reps.length}); it reads no KV. OPFS reads its index file and its writers' markers (a directory it lists only if one of them died mid-save); IndexedDB reads its index record and a census of the store.`, '');
    md.push("| 'opfs', window | 'opfs', worker | 'idb', window |", '|---:|---:|---:|');
    md.push(`| ${ms(o.opfs_window_ms)} | ${ms(o.opfs_worker_ms)} | ${ms(o.idb_window_ms)} |`);
  }
  md.push(...flushLines(data, true));
  md.push('');
  md.push("What each is: a hit-load is `await cache.match(tokens)` on a cache just opened (openCache untimed; it reads no KV) whose one entry is only stored: the blob read, checked and put in wasm memory. In a worker rlxkv reads each K/V block through a read-only sync access handle straight into the new entry's heap memory; in a window its helper worker (started by openCache) reads the file through one into a new buffer, transfers it to the window, which copies it in (one copy either way). Either way the handle is already open: openCache opens the handle of the blob used last and keeps it open (until unused for 30 s, or a writer asks for it), as it keeps those of the blobs it reads, so the hit does not wait for its opening. The bare OPFS read is what the least code does to get the file's bytes: getFileHandle, createSyncAccessHandle, read() of the whole file, close — into a new buffer (its pages fresh, as a new instance's heap is), then into a buffer touched beforehand (as a warm heap is); \"read() alone\" is that last read() without the handles. The worker File read is getFileHandle, getFile().arrayBuffer() and one copy into a new buffer; the window File read the same without the copy. The raw IndexedDB get is one get of the blob's record in a readonly transaction (the database opened untimed). \"memory.grow in the hit\" is the time spent in WebAssembly.Memory.grow() during the hit on a new instance, and how much it grew.");
  md.push('');
  return md.join('\n');
}
