// BENCHMARKS.md sections for the storage tiers, float16 entries and the
// public insert, from the JSON of bench/bench_tiers.mjs (tiers.json),
// bench/bench_tiers_browser.mjs (tiers_browser.json) and
// bench/bench_insert.mjs (insert.json) in one directory. bench/report.mjs
// calls tiersMarkdown(dir); the benches print tiersTable(data).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sig, ms, us, mb, mib, times, n0 } from './format.mjs';


/** Rows { section, workload, value, reference, ratio } and targets { name, met, measured, why } of whatever data is there. */
function build({ tiers, browser, insert }) {
  const rows = [], targets = [];
  const row = (section, workload, value, reference = '—', ratio = '—') => rows.push({ section, workload, value, reference, ratio });
  const target = (name, met, measured, why) => targets.push({ name, met, measured, why: met ? null : why });

  const NODE = "Storage tiers under Node (storage 'fs', local disk)";
  if (tiers) {
    const e = tiers.config.entry_bytes;
    for (const o of tiers.open) {
      row(NODE, `openCache, ${n0(o.entries)} entries (${mb(o.store_bytes)} of blobs)`, ms(o.open_ms),
        `RSS after: ${mib(o.rss_after_open)} (+${mib(o.rss_open_increase)} by the open)`, `${times(o.rss_open_increase / o.store_bytes)} the store`);
    }
    const h = tiers.hit;
    row(NODE, `Hit-load of one stored-only entry (await cache.match), ${mb(h.file_bytes)}`, ms(h.load_ms), `fs.promises.readFile ${ms(h.readfile_ms)}`, times(h.load_over_readfile));
    row(NODE, 'Hit-load vs readFile + decodeEntry (views) + insert into a memory cache (diagnostic)', ms(h.load_ms), `${ms(h.floor_ms)}`, times(h.load_over_floor));
    target('Node hit-load ≤ 1.1× fs.promises.readFile of the same file', h.load_over_readfile <= 1.1, `${times(h.load_over_readfile)} (${ms(h.load_ms)} vs ${ms(h.readfile_ms)})`,
      `A hit-load opens the file, reads it with one scatter read (preadv) straight into the new entry's wasm memory (with a layout, header and values together; else the head first), checks what it read and looks the entry up again (store/tiers.js #loadDirect); readFile only reads into new memory. The least a load can do through the public API (readFile, decodeEntry to views, insert) takes ${ms(h.floor_ms)} here, ${times(h.floor_ms / h.readfile_ms)} readFile, and the hit-load ${times(h.load_over_floor)} that.`);
    const p = tiers.peak;
    if (p && p.cold) {
      row(NODE, 'Peak RSS increase while one entry loads, wasm heap growing for it', mib(p.cold.peak_increase), `entry ${mib(p.entry_bytes)}; stays: ${mib(p.cold.kept)}`, `${times(p.cold.peak_increase / p.entry_bytes)} the entry`);
      row(NODE, 'Peak RSS increase while one entry loads into heap memory already resident', mib(p.warm.peak_increase), `entry ${mib(p.entry_bytes)}; stays: ${mib(p.warm.kept)}`, `${times(p.warm.peak_increase / p.entry_bytes)} the entry`);
      const worst = Math.max(p.cold.peak_increase, p.warm.peak_increase) / p.entry_bytes;
      target('Node peak RSS increase while one entry loads ≤ 1.2× its bytes', worst <= 1.2,
        `${times(p.cold.peak_increase / p.entry_bytes)} with the wasm heap growing, ${times(p.warm.peak_increase / p.entry_bytes)} into resident heap`,
        'The blob is read straight into the entry\'s wasm memory (no copy of it in JS memory): beyond the heap the entry takes, a load holds its header and block headers, a few KB.');
    }
    const f = tiers.flush;
    row(NODE, `Longest event-loop stall during a flush of ${n0(f.entries)} dirty entries (${mb(f.bytes)})`, ms(f.max_stall_ms),
      `monitorEventLoopDelay max ${ms(f.eld_max_ms)}, p99 ${ms(f.eld_p99_ms)}; flush ${ms(f.flush_ms)} (${sig(f.bytes / f.flush_ms / 1e3)} MB/s)`);
    target(`Node flush of ${mb(f.bytes)} keeps event-loop stalls to a few ms (≤ 5 ms)`, f.max_stall_ms <= 5, `${ms(f.max_stall_ms)} (setInterval 1 ms probe; monitorEventLoopDelay max ${ms(f.eld_max_ms)})`,
      `Each blob is written in pieces, one K/V block (with its length) at a time (format/blob.js encodePieces, store/fs-blobs.js write), awaiting each write: a stall is one block's copy out of the heap and the call that starts its write.`);
    const c = tiers.check;
    row(NODE, `Every entry of the ${mb(c.entries * e)} store reachable through match, KV intact`, `${n0(c.reachable)} of ${n0(c.entries)}`);
    target(`Every entry of the largest Node store (${mb(c.entries * e)}) reachable through match`, c.reachable === c.entries, `${n0(c.reachable)} of ${n0(c.entries)}`, `entries not found: ${c.bad.join(', ')}`);
  }

  const BR = "Storage tiers in Chromium (storage 'idb', on-disk profile)";
  if (browser) {
    const b = browser;
    row(BR, `openCache on a fresh page, ${n0(b.open.entries)} entries (${n0(b.config.large_entries)} of ${mb(b.config.large_bytes)}, the rest small), ${mb(b.build.bytes)}`, ms(b.open.ms), `origin quota ${mb(b.build.quota)}`);
    row(BR, `Hit-load of one stored-only entry (await cache.match), ${mb(b.hit.record_bytes)}`, ms(b.hit.load_ms), `raw IndexedDB get ${ms(b.hit.get_ms)}`, times(b.hit.load_over_get));
    row(BR, 'Every large entry reachable through match', `${b.check.reachable} of ${b.check.large}`);
    target(`IndexedDB open ≤ 20 ms for ${n0(b.open.entries)} entries (${mb(b.build.bytes)})`, b.open.ms <= 20, ms(b.open.ms),
      'Opening gets the index record (every entry\'s tokens, one record) and a census of the store (a count and the newest timestamp) in one transaction, parses the index and records its entries in the C tree in bulk calls. What is left is mostly the get of the index record itself, whose size grows with the tokens of every entry (Chromium keeps values over 64 KiB in separate files); sharing the tokens of common prefixes in the index would shrink it for real stores, not for this one (its small entries share no prefix).');
    target('IndexedDB hit-load ≤ 1.1× a raw get of the same record', b.hit.load_over_get <= 1.1, `${times(b.hit.load_over_get)} (${ms(b.hit.load_ms)} vs ${ms(b.hit.get_ms)})`,
      `Beyond the get, a load checks the blob's structure and copies its ${mb(b.hit.record_bytes)} into the wasm heap: the one copy there is, as IndexedDB hands the record over as a new ArrayBuffer (the raw get does not touch its bytes).`);
  }

  const F16 = 'float16 entries vs the same KV widened to float32 (Node)';
  if (tiers && tiers.f16) {
    const { f16, f32, ratio } = tiers.f16;
    row(F16, `cache.bytes, ${f16.entries} entries each`, mb(f16.cache_bytes), `f32 ${mb(f32.cache_bytes)}`, times(ratio.cache_bytes));
    row(F16, 'wasm memory growth (rlx.memoryBytes, a module instance each)', mb(f16.wasm_growth), `f32 ${mb(f32.wasm_growth)}`, times(ratio.wasm_growth));
    const storedOk = f16.restored_exact;
    row(F16, 'Stored bytes (the blobs; an IndexedDB record holds the same bytes)', storedOk ? mb(f16.stored_bytes) : `not measured: ${f16.flush_error || f16.restore_error}`,
      f32.stored_bytes ? `f32 ${mb(f32.stored_bytes)}` : '—', storedOk ? times(ratio.stored_bytes) : '—');
    row(F16, 'Hit-load of one stored-only entry', storedOk ? ms(f16.hit_load_ms) : 'not measured', f32.hit_load_ms ? `f32 ${ms(f32.hit_load_ms)}` : '—', storedOk ? times(ratio.hit_load) : '—');
    target('f16 memory ≤ 0.55× f32 (cache.bytes, wasm memory growth)', Math.max(ratio.cache_bytes, ratio.wasm_growth) <= 0.55, `${times(ratio.cache_bytes)} cache.bytes, ${times(ratio.wasm_growth)} wasm memory`, '—');
    if (storedOk) {
      target('f16 stored bytes and hit-load ≤ 0.55× f32', Math.max(ratio.stored_bytes, ratio.hit_load) <= 0.55, `${times(ratio.stored_bytes)} bytes, ${times(ratio.hit_load)} hit-load`,
        `The bytes are half; a hit's costs that do not grow with them (opening the file, checking the blob's structure, the tree, the lookups: 2 × f16 − f32 = ${ms(2 * f16.hit_load_ms - f32.hit_load_ms)} here) weigh on half the bytes.`);
    } else {
      targets.push({ name: 'f16 stored bytes and hit-load ≤ 0.55× f32', met: null, measured: `not measured: ${f16.flush_error ? `flush failed (${f16.flush_error})` : `the f16 blobs did not load back (${f16.restore_error})`}` });
    }
  }
  const F16B = "float16 entries vs the same KV widened to float32 (Chromium, storage 'idb')";
  if (browser && browser.f16) {
    const { f16, f32, ratio, reps } = browser.f16;
    row(F16B, 'IndexedDB record of one entry (bytes)', mb(f16.record_bytes), `f32 ${mb(f32.record_bytes)}`, times(ratio.record_bytes));
    row(F16B, `Hit-load of the stored-only entry (await cache.match), median of ${reps} alternating pairs`, ms(f16.load_ms), `f32 ${ms(f32.load_ms)}`, times(ratio.hit_load));
    target('f16 IndexedDB bytes and hit-load ≤ 0.55× f32 (Chromium)', Math.max(ratio.record_bytes, ratio.hit_load) <= 0.55,
      `${times(ratio.record_bytes)} bytes, ${times(ratio.hit_load)} hit-load`,
      `The record is half; what a get and a load cost whatever their size (the transaction, the structure check, the tree: 2 × f16 − f32 = ${ms(2 * f16.load_ms - f32.load_ms)} here) weighs on half the bytes.`);
  }

  const INS = 'The public insert vs the reference (Node, wasm)';
  if (insert) {
    const i = insert;
    const c = i.config;
    const what = `${n0(c.n)} entries of ${n0(c.tokens)} tokens (${n0(c.shared)} shared), KV 2 × ${n0(c.tokens)} floats, into an empty cache (per entry)`;
    row(INS, `cache.insert, ${what}: steady state, the median of ${c.reps} fills in one process`,
      us(i.rlxkv_us), `reference ${us(i.baseline_us)} (bench/baseline.c, cc -O2)`, times(i.speedup));
    const f = i.first_fill, pg = i.fresh_page;
    if (f) {
      row(INS, `The same, first fill of a fresh process: each side one fill in a new process of its own (median of ${f.runs} pairs)`,
        us(f.rlxkv_us), `reference ${us(f.baseline_us)}`, times(f.speedup));
      row(INS, 'Page faults per entry in that first fill (process.resourceUsage; the reference: getrusage)', sig(f.rlxkv_faults_per_entry), `reference ${sig(f.baseline_faults_per_entry)}`);
    }
    if (pg) {
      row(INS, 'A fresh 4 KiB page of memory on this machine: the first write to it (a page fault)', us(pg.us_first_write),
        `written again ${us(pg.us_written_again)}`);
    }
    for (const p of i.profile.rows) row(INS, `Profile (node --cpu-prof, self time over ${i.profile.reps} fills in one process): ${p.where}`, us(p.us_per_entry), '—', `${Math.round(100 * p.share)}%`);
    target(`Public insert ≥ 10× the reference (${n0(c.n)} entries of ${n0(c.tokens)} tokens, ${n0(c.shared)} shared, ${n0(c.kv_floats)} floats of KV), steady state`, i.speedup >= 10, times(i.speedup),
      `see the profile rows: the time is the token and KV copies into the heap and the C walk over the ${n0(c.shared)} shared tokens.`);
    if (f) {
      const entryBytes = 4 * (c.tokens + c.kv_floats);
      let why = 'The first fill pays what later fills do not: code not yet optimized, and memory never touched.';
      if (pg) {
        const jsFaults = f.rlxkv_faults_per_entry * pg.us_first_write, refFaults = f.baseline_faults_per_entry * pg.us_first_write;
        const floor = (entryBytes / 4096) * pg.us_first_write; // the entry's own bytes, each page faulted once
        why = `A first fill puts every entry (${n0(entryBytes)} bytes of tokens and KV, copied) in memory the process has never written: rlxkv took ${sig(f.rlxkv_faults_per_entry)} page faults an entry, the reference ${sig(f.baseline_faults_per_entry)}, and a first write to a fresh 4 KiB page costs ${us(pg.us_first_write)} on this machine (${us(pg.us_written_again)} once mapped). At that price the faults alone come to about ${us(jsFaults)} of rlxkv's ${us(f.rlxkv_us)} an entry and ${us(refFaults)} of the reference's ${us(f.baseline_us)}` +
          (floor * 10 > f.baseline_us
            ? `; the entry's own bytes take ${us(floor)} of faults, more than a tenth of the reference's first fill (${us(f.baseline_us / 10)}), so no insert that copies the entry into fresh memory can be 10× here.`
            : '.') +
          ` Without the faults (an estimate: the faults times that price taken away) it would be ${us(Math.max(0, f.rlxkv_us - jsFaults))} against ${us(Math.max(0, f.baseline_us - refFaults))}.`;
      }
      target(`Public insert ≥ 10× the reference in the first fill of a fresh process (the same workload)`, f.speedup >= 10,
        `${times(f.speedup)} (${us(f.rlxkv_us)} vs ${us(f.baseline_us)} an entry)`, why);
    }
  }
  return { rows, targets };
}

/** The text table the benches print. */
export function tiersTable(data) {
  const { rows, targets } = build(data);
  const out = [];
  for (const s of [...new Set(rows.map((r) => r.section))]) {
    out.push(`\n${s}`);
    for (const r of rows.filter((q) => q.section === s)) out.push(`  ${r.workload}\n      ${r.value}  |  ${r.reference}  |  ${r.ratio}`);
  }
  out.push('\nTargets');
  for (const t of targets) out.push(`  [${t.met === null ? 'n/a' : t.met ? 'met' : 'MISSED'}] ${t.name}: ${t.measured}`);
  return out.join('\n');
}

/** The BENCHMARKS.md sections, from tiers.json, tiers_browser.json and insert.json in dir ('' when none of them is there). */
export function tiersMarkdown(dir) {
  const load = (name) => { try { return JSON.parse(readFileSync(join(dir, name), 'utf8')); } catch { return null; } };
  const data = { tiers: load('tiers.json'), browser: load('tiers_browser.json'), insert: load('insert.json') };
  if (!data.tiers && !data.browser && !data.insert) return '';
  const { rows, targets } = build(data);
  const md = ['## Storage tiers, float16 entries and the public insert', ''];
  md.push('From bench/bench_tiers.mjs, bench/bench_tiers_browser.mjs and bench/bench_insert.mjs, in the same run as the rest. Times are medians of repetitions; each ratio compares two things timed back to back in the same process or page (the reference insert: a child process answering one repetition at a time between rlxkv\'s), as the median of per-repetition ratios. The machine is shared with other work: absolute times move between runs, more under load.');
  md.push('');
  md.push('| Target | Status | Measured |');
  md.push('|---|---|---|');
  for (const t of targets) md.push(`| ${t.name} | ${t.met === null ? 'not measured' : t.met ? '**met**' : '**missed**'} | ${t.measured} |`);
  const missed = targets.filter((t) => t.met === false);
  if (missed.length) {
    md.push('');
    for (const t of missed) md.push(`- **${t.name}** (${t.measured}). ${t.why}`);
  }
  for (const s of [...new Set(rows.map((r) => r.section))]) {
    md.push('', `### ${s}`, '', '| Workload | rlxkv | Reference | Ratio |', '|---|---:|---:|---:|');
    for (const r of rows.filter((q) => q.section === s)) md.push(`| ${r.workload} | ${r.value} | ${r.reference} | ${r.ratio} |`);
  }
  md.push('');
  const t = data.tiers && data.tiers.config, ins = data.insert && data.insert.config;
  const entries = t ? `a ${n0(t.tokens)}-token prompt's KV (${t.layers} layers, head-major, ${t.heads} KV heads × ${t.head_dim}, ${n0(t.entry_bytes)} bytes of f32), capBytes ${mib(t.cap_bytes)}` : 'one prompt\'s KV each';
  md.push(`How these are measured: entries are ${entries}. Node: the store is built by one cache (insert, flush, one entry at a time) in a temporary directory; each openCache and each memory figure runs in a fresh \`node --expose-gc\` process (RSS from process.memoryUsage after a collection; the peak from /proc/self/status VmHWM, reset through /proc/self/clear_refs before the load); hit-loads make the entry stored-only with cache.clear(), the file already in the page cache, like readFile's; the flush probe is a setInterval(1 ms) recording the longest gap, next to perf_hooks.monitorEventLoopDelay. The big stores are deleted afterwards. Chromium: a persistent profile in a temporary directory (on-disk IndexedDB), its quota checked (and raised with Storage.overrideQuotaForOrigin if short); each open on a fresh page load. float16: the same pseudo-random binary16 KV inserted as Uint16Array and, widened exactly (format/f16.js widenF16), as Float32Array, each dtype in its own module instance; their hit-loads alternate in one process (one collection before them all), the ratio the median of each pair\'s. In Chromium the same KV is one entry of each dtype in an IndexedDB store of its own, their hit-loads alternating. Insert: ${ins ? `${n0(ins.kv_floats)} floats of KV per entry (one K and one V block)` : 'one K and one V block per entry'}, copied by both sides (the reference through bl_entry_make, as the public insert copies from the caller); both fill an empty cache and the caches' contents are compared by checksum. Steady state: the two sides alternate in one process each (rlxkv's, and the reference's child answering one fill at a time), the first repetition left out. First fill: each side does one fill in a new process of its own (rlxkv: \`node\` with no flags running bench/bench_insert.mjs --first-fill, which builds the token arrays, calls init() and createCache() and inserts; the reference: its binary answering one fill), in pairs back to back, the order alternating; nothing of the insert path runs before the timed fill. The fresh-page row writes one byte to each 4 KiB page of a new 32 MiB ArrayBuffer, then again (median of 5).`);
  md.push('');
  return md.join('\n');
}
