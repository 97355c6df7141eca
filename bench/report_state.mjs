// The BENCHMARKS.md section for models with state (issue #25), from the JSON
// of bench/bench_state.mjs (state.json): the warm start's restore against a
// bare lookup plus copy of the same bytes, and what checkpoints cost a cold
// prefill. bench/report.mjs calls stateTargets(state) and stateMarkdown(dir).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { kb, ms, n0, sig, times as x } from './format.mjs';

const pct = (r) => `${sig(r * 100, 2)}%`;

const LIMIT = 1.2;

/** The Targets rows: one per model, the restore ≤ 1.2× a bare lookup + copy. */
export function stateTargets(state) {
  const name = (label) => `A warm start's restore ≤ ${LIMIT}× a bare lookup + copy of the same bytes, ${label}`;
  if (!state) return [{ name: name('models with state'), met: null, measured: 'not measured' }];
  return state.rows.map((r) => ({
    name: name(r.label), met: r.restore_over_bare <= LIMIT,
    measured: `${x(r.restore_over_bare)} (${ms(r.restore_ms)} against ${ms(r.bare_ms)})`,
    why: 'The restore of a model with state is two lookups (the checkpoint, then the KV up to it) and a copy of the state; the KV of a prompt kept in checkpoint runs lies in several pages, gathered in one copy.',
    fix: 'Hand the state back as views (it is copied now), and keep a prompt\'s KV in one entry where no edit needs the pages.',
  }));
}

const COLS = [
  ['Model', (r) => r.label],
  ['KV / state restored', (r) => `${kb(r.kv_bytes)} / ${kb(r.state_bytes)}`],
  ['Cold, checkpoints every 256', (r) => (r.cold_ms.every === undefined ? '—' : ms(r.cold_ms.every))],
  ['Cold, one checkpoint (the last 256 before the end)', (r) => (r.cold_ms.last === undefined ? '—' : ms(r.cold_ms.last))],
  ['Cold, no checkpoint in the prompt', (r) => ms(r.cold_ms.none)],
  ['Warm (tokens reused)', (r) => `${ms(r.warm_ms)} (${n0(r.warm_reused)} of ${n0(r.prompt_tokens)})`],
  ['Restore / bare lookup + copy', (r) => `${ms(r.restore_ms)} / ${ms(r.bare_ms)} = ${x(r.restore_over_bare)}`],
];

/** The BENCHMARKS.md section, from state.json in dir (saying so if it is missing). */
export function stateMarkdown(dir) {
  let state = null;
  try { state = JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')); } catch { /* not run */ }
  const md = ['## Models with state (issue #25)', ''];
  if (!state) {
    md.push(`Not measured in this run: no ${join(dir, 'state.json')} from bench/bench_state.mjs.`, '');
    return md.join('\n');
  }
  const c = state.config;
  md.push(`Time to first token through cachedGenerate (transformers.js ${c.transformers}, ${c.runtime}, Node ${c.node}) on the demo's prompt, cold (an empty cache) and warm (the same prompt again, its checkpoints held), medians (bench/bench_state.mjs). ` +
    `A model with state restores only where its state was taken, so cachedGenerate runs a cold prompt in pieces ending at each multiple of checkpointEvery (${c.every}) and keeps the state there: the three cold columns are that, one piece to the last multiple before the prompt's end and then the rest, and the prompt in one piece (the reply's end is kept either way; Gemma3-like keeps KV only and is run in one piece). ` +
    'Restore: cache.match as cachedGenerate asks it for CPU tensors (the checkpoint, then the KV up to it, copies) and the tensors (tensorsFromHit, DynamicCache), alternating with a bare lookup and copy of the same KV from a KV-only cache plus a copy of the state\'s bytes, made into the same tensors (so that the collection a large copy sets off at the next allocations falls in both times). The tiny models are those of the tests (hidden 64): their prefill is cheap, so per-run costs weigh more in them than in a real model, and their restore (a third of a millisecond) is mostly fixed costs, the tensors\' construction among them.', '');
  md.push('| Target | Status | Measured |', '|---|---|---|');
  for (const t of stateTargets(state)) md.push(`| ${t.name} | ${t.met ? '**met**' : '**missed**'} | ${t.measured} |`);
  md.push('', `| ${COLS.map(([h]) => h).join(' | ')} |`, `|---|${COLS.slice(1).map(() => '---:').join('|')}|`);
  for (const r of state.rows) md.push(`| ${COLS.map(([, f]) => f(r)).join(' | ')} |`);
  const big = state.rows.find((r) => r.every_over_none !== undefined);
  if (big) {
    md.push('', `Checkpoints' cost on ${big.label}: a cold prefill with one every ${c.every} tokens takes ${x(big.every_over_none)} the prefill in one piece; one checkpoint (the last before the end) ${x(big.last_over_none)}.`);
  }
  md.push('', ...webgpuMarkdown(dir), '');
  return md.join('\n');
}

/** The WebGPU lines, from webgpu.json (bench/bench_webgpu.mjs), or a line saying it was not run. */
function webgpuMarkdown(dir) {
  let g = null;
  try { g = JSON.parse(readFileSync(join(dir, 'webgpu.json'), 'utf8')); } catch { /* not run */ }
  if (!g) return ['### WebGPU', '', `Not measured in this run: no ${join(dir, 'webgpu.json')} from bench/bench_webgpu.mjs.`];
  const a = g.adapter ?? {};
  return ['### WebGPU', '',
    `The demo model (${g.model}) on device 'webgpu' in Chromium ${g.config?.chromium ?? ''} (adapter: ${a.vendor || '?'} ${a.architecture || ''}${a.shader_f16 ? '' : ', no shader-f16'}; SwiftShader runs WebGPU on the CPU, so a real GPU's forward is far shorter and these transfers a larger share of it), ${n0(g.prompt_tokens)}-token prompt, ${kb(g.kv_bytes_entry)} of f32 KV, medians of ${g.reps} turns (bench/bench_webgpu.mjs, bench/webgpu_page.js). transformers.js keeps the KV on the GPU (present.* on '${g.present_location}'); cachedGenerate downloads it after generate (kvFromTensors, which frees the GPU buffers) and writes a hit straight into GPU buffers of the model's device (gpuTensorsFromHit; gpuDevice: false restores CPU tensors, which ONNX Runtime uploads).`, '',
    '| | Time | Share |', '|---|---:|---:|',
    `| Cold start (time to first token) | ${ms(g.cold_ttft_ms)} | |`,
    `| Warm start (cachedGenerate, all but the last prompt token restored) | ${ms(g.warm_ttft_ms)} | |`,
    `| Download after generate (kvFromTensors) | ${ms(g.download.ms)} | ${pct(g.download.share_of_warm_turn)} of a warm turn, ${pct(g.download.share_of_cold_turn)} of a cold one |`,
    `| Upload on restore, by ONNX Runtime from CPU tensors | ${ms(g.upload.ort_cpu_tensors_ms)} | ${pct(g.upload.ort_share_of_warm_ttft)} of a warm start |`,
    `| Upload written straight to GPU buffers (queue.writeBuffer) | ${ms(g.upload.write_buffer_ms)} | ${pct(g.upload.write_buffer_share_of_warm_ttft)} of a warm start |`,
    '', `Restored straight to the GPU, a warm start took ${x(g.warm.gpu_over_cpu_ttft)} the one restored from CPU tensors in this run (the warm starts themselves ranged ${ms(g.warm_ttft_min_ms)} to ${ms(g.warm_ttft_max_ms)}).`];
}
