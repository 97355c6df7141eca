// The BENCHMARKS.md section for the page store's hit-load and assembly
// (issue #23), from the JSON of bench/bench_pages.mjs (pages.json, Node)
// and bench/bench_pages_browser.mjs (pages_browser.json, Chromium) in one
// directory: the targets judged from them, then the tables. bench/report.mjs
// calls pagesMarkdown(dir); the benches print pagesTable({ node } or { browser }).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ms, mb, times } from './format.mjs';

const LIMITS = { fs: 1.1, idb: 1.2, opfs: 0.5, gather: 0.8 };

/** Copies from the stored bytes to the arrays a hit hands out, per path (from the code: store/fs-blobs.js, store/hits.js, store/direct-read.js, store/opfs-blobs.js, wasm/native-cache.js). */
export const COPIES = {
  fs: { copy: 2, view_whole: 1, note: "readv() from the file straight into the entry's wasm memory (1), then match's arrays gathered out of it (2); view: true on a hit in one entry hands out views (1 in all)" },
  idb_window: { copy: 3, view_whole: 2, note: "the get's ArrayBuffer (1), decoded and put into wasm memory (2), gathered out (3); view: true on a one-entry hit: 2" },
  idb_worker: { copy: 3, view_whole: 2, note: 'as in a window' },
  opfs_worker: { copy: 2, view_whole: 1, note: "read() of a sync access handle straight into wasm memory (1), gathered out (2); view: true on a one-entry hit: 1" },
  opfs_window: { copy: 3, view_whole: 2, note: "the helper worker's read into a new buffer (1), transferred (no copy), copied into wasm memory (2), gathered out (3); view: true on a one-entry hit: 2" },
  raw: { note: 'a raw IndexedDB get or readFile: 1 (into a new ArrayBuffer or Buffer), which is bytes, not arrays an app can hand to a tensor' },
};

const mode = (view) => (view ? 'view: true' : 'copies');

/** Targets { name, met, measured } from whichever JSON there is. */
function targets(node, browser) {
  const out = [];
  const target = (name, rows, f, limit, above = false) => {
    if (!rows.length) return;
    const vals = rows.map((r) => [r.label, f(r)]);
    out.push({ name, met: vals.every(([, v]) => (above ? v >= limit : v <= limit)), measured: vals.map(([l, v]) => `${l}: ${times(v)}`).join('; ') });
  };
  if (node) {
    const rows = (view) => node.shapes.map((s) => ({ label: `${s.shape}, ${mode(view)}`, ...s.hit[`paged_${view ? 'view' : 'copy'}`] }));
    target(`Node 'fs': a 1,000-token hit read from 7 pages (openCache → match's arrays) ≤ ${LIMITS.fs}× readFile of the same bytes`, [...rows(false), ...rows(true)], (r) => r.over_readfile, LIMITS.fs);
    target(`Assembly: a hit gathered from 7 pages (resident; lookup's new arrays) ≥ ${LIMITS.gather}× the speed of memcpy of the same bytes into new arrays`,
      node.shapes.map((s) => ({ label: s.shape, ...s.gather })), (r) => r.gather_speed_vs_memcpy_fresh, LIMITS.gather, true);
    target(`Assembly, against memcpy into arrays touched beforehand (not like for like: lookup cannot gather into an app's arrays) ≥ ${LIMITS.gather}×`,
      node.shapes.map((s) => ({ label: s.shape, ...s.gather })), (r) => r.gather_speed_vs_memcpy_ready, LIMITS.gather, true);
  }
  if (browser) {
    for (const [storage, limit] of [['idb', LIMITS.idb], ['opfs', LIMITS.opfs]]) {
      for (const where of ['window', 'worker']) {
        const rows = (view) => browser.shapes.map((s) => ({ label: `${s.shape}, ${mode(view)}`, ...s.hit[`${storage}_${where}_paged_${view ? 'view' : 'copy'}`] }));
        target(`Chromium '${storage}' in a ${where}: a 1,000-token hit read from 7 pages (openCache → match's arrays) ≤ ${limit}× a raw IndexedDB get of the same bytes as one record`,
          [...rows(false), ...rows(true)], (r) => r.over_get, limit);
      }
    }
  }
  return out;
}

const grew = (h) => (h.match_grew_bytes ? `${ms(h.match_grow_ms)} for ${mb(h.match_grew_bytes)}` : 'none (the heap had room)');

/** What the page hit costs beyond the one-blob hit, per shape: lines of text from the medians. */
function diagnoses(node, browser) {
  const out = [];
  for (const s of node?.shapes || []) {
    const p = s.hit.paged_copy, w = s.hit.whole_copy, pv = s.hit.paged_view, wv = s.hit.whole_view;
    out.push(`Node ${s.shape}: match of 7 pages ${ms(p.match_ms)} against ${ms(w.match_ms)} for the same bytes in one blob (copies), ${ms(pv.match_ms)} against ${ms(wv.match_ms)} with view: true (one blob: views, no gather). ` +
      `The gather alone (the same hit looked up again, in memory: new arrays) takes ${ms(p.relookup_ms)}; the reads and puts of the 7 pages so about ${ms(pv.match_ms - pv.relookup_ms)} against ${ms(wv.match_ms)} for one blob; readFile of the 7 page files one by one ${ms(p.readfile_pages_ms)} against ${ms(p.readfile_ms)} for one file of the blob's bytes. ` +
      `memory.grow() during the match: ${grew(pv)} (7 pages), ${grew(wv)} (one blob). openCache: ${ms(p.open_ms)} (7 blobs) and ${ms(w.open_ms)} (1).`);
  }
  for (const s of browser?.shapes || []) {
    const h = s.hit;
    const per = (k) => `${ms(h[`${k}_paged_view`].match_ms)} against ${ms(h[`${k}_whole_view`].match_ms)}`;
    out.push(`Chromium ${s.shape}, match with view: true, 7 pages against one blob: 'idb' window ${per('idb_window')}, worker ${per('idb_worker')}; 'opfs' window ${per('opfs_window')}, worker ${per('opfs_worker')}. ` +
      `The gather alone (looked up again in memory) ${ms(h.idb_window_paged_copy.relookup_ms)} ('idb' window), ${ms(h.opfs_worker_paged_copy.relookup_ms)} ('opfs' worker). ` +
      `7 raw gets, one transaction each, of the same bytes cut as the pages: ${ms(h.idb_window_paged_copy.get_pages_ms)} against ${ms(h.idb_window_paged_copy.get_ms)} for one get (window). ` +
      `openCache: 'idb' ${ms(h.idb_window_paged_copy.open_ms)}, 'opfs' window ${ms(h.opfs_window_paged_copy.open_ms)} (its helper worker started), worker ${ms(h.opfs_worker_paged_copy.open_ms)}.`);
  }
  return out;
}

const NODE_COLS = [
  ['Shape', (s) => s.shape],
  ['Hit', (s, k) => k.replace('_', ', ').replace('copy', 'copies').replace('view', 'view: true').replace('paged', '7 pages').replace('whole', '1 blob')],
  ['openCache → arrays', (s, h) => ms(h.total_ms)],
  ['openCache', (s, h) => ms(h.open_ms)],
  ['match', (s, h) => ms(h.match_ms)],
  ['readFile, same bytes', (s, h) => ms(h.readfile_ms)],
  ['Hit / readFile', (s, h) => times(h.over_readfile)],
  ['Arrays', (s, h) => (h.view ? 'views' : 'copies')],
  ['Gather again (in memory)', (s, h) => ms(h.relookup_ms)],
  ['readFile of the 7 page files', (s, h) => ms(h.readfile_pages_ms)],
];
const BROWSER_COLS = [
  ['Shape', (s) => s.shape],
  ['Storage', (s, h) => `'${h.storage}', ${h.where}`],
  ['Hit', (s, h) => `${h.variant === 'paged' ? '7 pages' : '1 blob'}, ${mode(h.view)}`],
  ['openCache → arrays', (s, h) => ms(h.total_ms)],
  ['openCache', (s, h) => ms(h.open_ms)],
  ['match', (s, h) => ms(h.match_ms)],
  ['Raw get, same bytes', (s, h) => ms(h.get_ms)],
  ['Hit / get', (s, h) => times(h.over_get)],
  ['Arrays', (s, h) => (h.view_given ? 'views' : 'copies')],
  ['Gather again (in memory)', (s, h) => ms(h.relookup_ms)],
  ['7 raw gets (pages\' sizes)', (s, h) => ms(h.get_pages_ms)],
];
const GATHER_COLS = [
  ['Shape', (g) => g.shape],
  ['Bytes', (g) => mb(g.bytes)],
  ['Gather, 7 pages (lookup)', (g) => ms(g.gather_pages_ms)],
  ['Copy, 1 blob (lookup)', (g) => ms(g.copy_whole_ms)],
  ['memcpy, new arrays', (g) => ms(g.memcpy_fresh_ms)],
  ['ArrayBuffer.slice', (g) => ms(g.slice_fresh_ms)],
  ['memcpy, ready arrays', (g) => ms(g.memcpy_ready_ms)],
  ['Gather speed / memcpy new', (g) => times(g.gather_speed_vs_memcpy_fresh)],
  ['Gather speed / memcpy ready', (g) => times(g.gather_speed_vs_memcpy_ready)],
  ['Gather / 1-blob copy', (g) => times(g.gather_over_copy_whole)],
];

function tables(node, browser, md) {
  const out = [];
  const table = (title, cols, rows, text = 2) => {
    out.push('', md ? `### ${title}` : `${title}:`, '');
    out.push(md ? `| ${cols.map(([h]) => h).join(' | ')} |` : cols.map(([h]) => h).join(' | '));
    if (md) out.push(`|${cols.map((_, i) => (i < text ? '---' : '---:')).join('|')}|`);
    for (const cells of rows) out.push(md ? `| ${cells.join(' | ')} |` : cells.join(' | '));
  };
  if (node) {
    table(`Node 'fs': hit-load after a reload (medians of ${node.config.reps} fresh processes each)`, NODE_COLS,
      node.shapes.flatMap((s) => Object.entries(s.hit).map(([k, h]) => NODE_COLS.map(([, g], i) => (i === 1 ? g(s, k) : g(s, h))))));
    table(`Assembly: a resident hit copied out (Node, medians of ${node.config.gather_reps} rotations)`, GATHER_COLS,
      node.shapes.map((s) => GATHER_COLS.map(([, g]) => g({ shape: s.shape, ...s.gather }))));
  }
  if (browser) {
    table(`Chromium: hit-load on a fresh page load (medians of ${browser.config.reps})`, BROWSER_COLS,
      browser.shapes.flatMap((s) => Object.values(s.hit).map((h) => BROWSER_COLS.map(([, g]) => g(s, h)))), 3);
  }
  return out;
}

/** The text the benches print. */
export function pagesTable({ node = null, browser = null }) {
  const out = tables(node, browser, false);
  out.push('', 'Targets');
  for (const t of targets(node, browser)) out.push(`  [${t.met ? 'met' : 'MISSED'}] ${t.name}: ${t.measured}`);
  out.push('', ...diagnoses(node, browser));
  return out.join('\n');
}

const load = (dir, name) => { try { return JSON.parse(readFileSync(join(dir, name), 'utf8')); } catch { return null; } };

/** The BENCHMARKS.md section, from pages.json and pages_browser.json in dir (saying which is missing). */
export function pagesMarkdown(dir) {
  const node = load(dir, 'pages.json'), browser = load(dir, 'pages_browser.json');
  const md = ['## Pages: a hit read from pages, and its assembly (issue #23)', ''];
  if (!node && !browser) {
    md.push(`Not measured in this run: no ${join(dir, 'pages.json')} from bench/bench_pages.mjs nor ${join(dir, 'pages_browser.json')} from bench/bench_pages_browser.mjs.`, '');
    return md.join('\n');
  }
  const c = (node || browser).config;
  md.push(`A 1,000-token prompt's f16 KV (head-major; ${Object.entries(c.shapes).map(([n, s]) => `${n}'s shape: ${s.layers} layers, ${s.heads} KV heads × ${s.headDim}`).join('; ')}) stored as pages: a ${c.steps.paged[0]}-token system prompt, then ${c.steps.paged.length - 1} turns of ${c.steps.paged[1] - c.steps.paged[0]} tokens, each inserted and flushed in turn, so a hit on the 1,000 tokens reads ${c.steps.paged.length} pages, parents first; beside it the same tokens stored whole (1 blob). ` +
    `A hit-load is timed as an app sees it after a reload: from the call of openCache to \`await cache.match(query)\` returning the arrays it hands to a tensor (copies; or view: true, which gives views only for a hit in one entry: over 7 pages it gathers all the same). ` +
    `Node (bench/bench_pages.mjs, Node ${node ? node.config.node : '—'}): each measurement a fresh process, against fs.promises.readFile of a file of the one blob's bytes in the same process (the files in the OS page cache). ` +
    `Chromium (bench/bench_pages_browser.mjs, ${browser ? `Chromium ${browser.config.chromium}, the page importing ${browser.config.entry}` : 'not run'}): each measurement a fresh page load (and a fresh worker in it for a worker), against a raw IndexedDB get of the one blob's bytes as one record of a database of its own, in the same window or worker (the database opened untimed). The other of the pair goes first alternating; times are medians, each ratio the median of the pairs' own ratios.`);
  if (!node) md.push('', `Node not measured in this run: no ${join(dir, 'pages.json')}.`);
  if (!browser) md.push('', `Chromium not measured in this run: no ${join(dir, 'pages_browser.json')}.`);
  md.push('', '| Target | Status | Measured |', '|---|---|---|');
  for (const t of targets(node, browser)) md.push(`| ${t.name} | ${t.met ? '**met**' : '**missed**'} | ${t.measured} |`);
  md.push('', 'Where the time goes (medians of the same runs):', '');
  for (const d of diagnoses(node, browser)) md.push(`- ${d}`);
  md.push('', 'Copies from the stored bytes to the arrays a hit hands out (from the code):', '');
  for (const [k, v] of Object.entries(COPIES)) md.push(`- ${k}: ${v.copy ? `${v.copy} (copies); ` : ''}${v.note}.`);
  md.push(...tables(node, browser, true));
  if (node) md.push('', 'Assembly: the same KV resident in two memory-only caches, one built as 7 pages, one whole; `cache.lookup(query)` (copies: new arrays, each block gathered from 7 pages × 2 heads of runs, or one slice() per block for the whole entry) against a TypedArray set() of the same bytes from wasm memory (views of the whole entry), block by block, into new arrays (the destination lookup has: fresh memory) and into arrays touched beforehand; ArrayBuffer.slice is memcpy as a one-piece copy does it. Speed ratios are memcpy\'s time over the copy\'s; gc() before each, the order rotating.');
  md.push('');
  return md.join('\n');
}
