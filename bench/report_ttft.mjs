// The BENCHMARKS.md section for time to first token on a SmolLM2-135M-shaped
// model (issue #23), from the JSON of bench/bench_ttft.mjs (ttft.json) in one
// directory. bench/report.mjs calls ttftMarkdown(dir); every figure comes
// from the JSON, and the target is printed beside, not asserted.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { mib, ms, n0, times } from './format.mjs';

export function ttftMarkdown(dir) {
  let d;
  try { d = JSON.parse(readFileSync(join(dir, 'ttft.json'), 'utf8')); } catch { d = null; }
  const md = ['## Time to first token on a SmolLM2-135M-shaped model (Chromium)', ''];
  if (!d) {
    md.push('Not measured in this run (bench/bench_ttft.mjs failed or did not run).', '');
    return md.join('\n');
  }
  const c = d.config, m = c.model;
  const met = (r) => (r <= d.target.limit ? 'met' : 'missed');
  md.push(`bench/bench_ttft.mjs: a decoder of SmolLM2-135M's shape (${m.layers} layers, hidden ${m.hidden}, ${m.heads} query heads and ${m.kv_heads} KV heads of ${m.head_dim}, SwiGLU ${m.intermediate}, vocab ${m.vocab}: the byte-level tokenizer's; ${m.weights}; ${mib(m.onnx_bytes)} of ONNX) through transformers.js ${c.transformers} on ${c.runtime} in Chromium ${c.chromium}, in a ${c.realm}, with a ${n0(c.system_tokens)}-token system prompt and a short user turn (${n0(c.prompt_tokens)} tokens in all), through rlxkv/transformers' cachedGenerate with max_new_tokens 1; TTFT is from the call to the streamer's first token. ${c.profile[0].toUpperCase()}${c.profile.slice(1)}. Medians of ${c.reps} repetitions${c.quick ? ' (**quick run**: not for publishing)' : ''}.`);
  md.push('');
  md.push(`- **Cold**: an empty cache. **Memory**: the same worker, a new user turn over the system prompt the last cold run cached. **After a reload**: the page reloaded (a new worker, wasm memory and ORT session; the model loaded and run once on a 2-token prompt, untimed), a cache opened on the store (timed apart: "open"), holding only that entry, and the same kind of request, whose match reads the entry from storage; then a second new turn in the same worker, from memory.`);
  md.push(`- Every warm run reused ${n0(d.reused_tokens)} tokens: ${mib(d.kv_restored_bytes)} of float32 KV (${n0(d.kv_bytes_per_token)} B a token); the stored entry is ${n0(d.stored_entry_tokens)} tokens, ${mib(d.stored_entry_bytes)}. Greedy tokens of the warm runs against the cold run of the same prompt: ${d.tokens_match ? 'all equal' : `**${d.mismatches.length} differ** (${d.mismatches.map((x) => `${x.where}, message ${x.msg}: ${x.token} vs ${x.cold}`).join('; ')})`}.`);
  md.push('');
  md.push(`| Start | TTFT | Open | Read from storage, in the TTFT (the hit event's ms, bytes) | Then from memory, same worker | vs warm from memory | Target (≤ ${times(d.target.limit)}) |`);
  md.push('|---|---:|---:|---:|---:|---:|---|');
  md.push(`| Cold (empty cache) | ${ms(d.cold_ttft_ms)} | — | — | — | ${times(d.cold_over_memory)} | — |`);
  md.push(`| Warm from memory | ${ms(d.memory_ttft_ms)} | — | — | — | ${times(1)} | — |`);
  const KINDS = [
    ['idb', "Warm after a reload, IndexedDB ('idb'), read on the request"], ['opfs', "Warm after a reload, OPFS ('opfs'), read on the request"],
    ['idb_preload', "Warm after a reload, IndexedDB, preload: true while the model loads"], ['opfs_preload', 'Warm after a reload, OPFS, preload: true while the model loads'],
  ].filter(([key]) => d[key]);
  for (const [key, name] of KINDS) {
    const s = d[key];
    const open = s.preload ? `${ms(s.open_ms)} beside the model's load (waited ${ms(s.wait_ms)})` : ms(s.open_ms);
    const read = s.preload ? 'none (read at open)' : `${ms(s.read_ms)} (${mib(s.read_bytes)})`;
    const withOpen = s.preload ? '' : ` (with the open ${times(s.open_plus_ttft_over_memory)})`;
    md.push(`| ${name} | ${ms(s.ttft_ms)} | ${open} | ${read} | ${ms(s.then_memory_ttft_ms)} | ${times(s.over_memory)}${withOpen} | ${met(s.over_memory)} |`);
  }
  md.push('');
  md.push(`"vs warm from memory": the median TTFT over the memory run's median (measured before the reloads, in the worker that ran the cold runs). With preload, the TTFT counts any wait for the open after the model had loaded. Within each reloaded worker, the first run over the memory run after it: ${KINDS.map(([key]) => `${key.replace('_', ' with ')} ${times(d[key].over_same_page_memory)}`).join(', ')} (median of per-reload ratios). The same read by a second cache in that worker after both runs, outside generate: IndexedDB ${ms(d.idb.read_again_ms)}, OPFS ${ms(d.opfs.read_again_ms)}. Loading the model took ${ms(d.model_load_ms)} on the first visit, ${ms(d.idb.model_load_ms)} and ${ms(d.opfs.model_load_ms)} (medians) after the reloads, not counted in any TTFT; writing the entry took ${ms(d.flush_ms.idb)} ('idb') and ${ms(d.flush_ms.opfs)} ('opfs').`);
  md.push('');
  if (d.remote) md.push(...remoteSection(d, '### A first visit through the remote tier'));
  // The demo model's first visits (bench/bench_ttft.mjs --model rlxkv-demo --remote-only).
  let demo = null;
  try { demo = JSON.parse(readFileSync(join(dir, 'ttft_demo.json'), 'utf8')); } catch { /* not run */ }
  if (demo?.remote) md.push(...remoteSection(demo, `### A first visit through the remote tier: the demo model (${demo.config.model.layers} layers, ${demo.config.model.kv_heads} KV heads of ${demo.config.model.head_dim}; cold ${ms(demo.cold_ttft_ms)}, warm from memory ${ms(demo.memory_ttft_ms)})`));
  else md.push('The demo model\'s first visits through the remote tier: not measured in this run.', '');
  return md.join('\n');
}

/** The remote tier's first visits (issue #28): from the same run's JSON. */
function remoteSection(d, title) {
  const r = d.remote, cdn = r.cdn, q8 = Object.values(r.trees).some((t) => t.dtype === 'q8');
  const md = [title, ''];
  md.push(`The same model and prompts, on a first visit: a fresh worker and an empty IndexedDB store. The KV of the system prompt's cached entry was published as pages (store/publish.js, as \`rlxkv publish\` cuts entries) on a loopback server standing for a CDN: ${n0(cdn.delayMs)} ms before each answer, every body through one ${n0(cdn.bitsPerSecond / 1e6)} Mbit/s link shared by all of them; the cache opened with \`remote: { url, dtype, pageTokens }\`, and its match fetched the pages past what it held (none), at most 6 at once. "Computed" is the same first visit with no remote tier. "Fetched while the model loads": as an app that knows its system prompt before its model is ready, the worker opened the cache and started \`cache.match(systemPromptTokens, { view: true })\` before loading the model (its tokenizer and config first, both small), awaited that match after the load, and then ran the request, whose own match found those pages in memory (and fetched any page its prompt reaches past them, a grid page that ends in its user turn's shared start); its TTFT counts that, and any wait for the prefetch after the model had loaded. Medians of ${d.config.reps}.`);
  md.push('');
  md.push('| First visit | TTFT | Tokens reused | Fetched (pages, bytes) | Fetch, in the TTFT | vs computed | Target (≤ 0.2×) | Greedy token as computed |');
  md.push('|---|---:|---:|---:|---:|---:|---|---|');
  md.push(`| Computed (no remote tier) | ${ms(r.cold_ttft_ms)} | 0 | — | — | ${times(1)} | — | — |`);
  for (const [run, t] of Object.entries(r.trees)) {
    const asCold = t.runs === undefined ? '—' : `${t.tokens_as_cold} of ${t.runs}`;
    const tree = t.tree ?? run; // runs before prefetch rows were keyed by tree
    const what = t.prefetch ? `Remote, ${t.dtype} pages of ${n0(t.page_tokens)} tokens (${tree}), fetched while the model loads` : `Remote, ${t.dtype} pages of ${n0(t.page_tokens)} tokens (${tree})`;
    const fetch = t.prefetch ? `${ms(t.fetch_ms)} beside the model's load (waited ${ms(t.wait_ms)} after it)` : ms(t.fetch_ms);
    md.push(`| ${what} | ${ms(t.ttft_ms)} | ${n0(t.reused)} | ${n0(t.pages)}, ${mib(t.bytes)} | ${fetch} | ${times(t.over_cold)} | ${t.target_met ? 'met' : 'missed'} | ${asCold} |`);
  }
  md.push('');
  md.push(`A client finds pages by the names of its tokens at grid points, and past the last grid point a published entry's end through its hint file (a tail page). The entry published here is the first visit's whole prompt (the system prompt and a user turn): another user's prompt parts from it inside its user turn, before that end, so the tokens past the last grid point before the parting are computed: with the default 256-token grid, 768 of the 1,000-token system prompt. A publisher that keeps the system prompt as an entry of its own (as the demo's does) has it reused whole. At ${n0(cdn.bitsPerSecond / 1e6)} Mbit/s the fetch takes about the bytes over the link's speed: f32 KV of this shape is ${n0(d.kv_bytes_per_token)} B a token, f16 half that${q8 ? `, and q8 (one int8 a value and one f16 scale a row of ${d.config.model.head_dim}) ${n0(Math.round((d.kv_bytes_per_token / 4) * (1 + 2 / d.config.model.head_dim)))} B` : ''}.`);
  if (q8) md.push('', `q8 pages are lossy (\`rlxkv publish --dtype q8\`, \`remote: { dtype: 'q8' }\`): the KV restored is each value within half its row's scale (about 1/254 of the row's largest magnitude) of the model's, published and opened under the model's fingerprint folded with "remote-q8" so that it never mixes with computed KV. Its greedy tokens are not held to the computed run's (every other first visit's and warm run's are): "Greedy token as computed" counts the runs whose first token is the same.`);
  md.push('');
  return md;
}
