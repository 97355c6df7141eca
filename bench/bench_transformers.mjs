// Time to first token through rlxkv/transformers in Node: transformers.js 4.x
// on onnxruntime-node running the demo transformer's ONNX export
// (build/models/), cold vs warm, and the adapter's share of a warm start
// (bench/transformers_workload.js does the work; a restart is a new cache
// opened on the 'fs' store the entry was flushed to).
//
//   node bench/bench_transformers.mjs OUT.json [--quick]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tf from '@huggingface/transformers';
import init from '../js/index.js';
import * as adapter from '../js/transformers.js';
import { measure, WORKLOADS } from './transformers_workload.js';
import { summarize } from './transformers_summary.js';

const out = process.argv[2];
const quick = process.argv.includes('--quick');
if (!out) {
  console.error('usage: node bench/bench_transformers.mjs OUT.json [--quick]');
  process.exit(2);
}
tf.env.allowRemoteModels = false;
tf.env.localModelPath = fileURLToPath(new URL('../build/models/', import.meta.url));
const rlx = await init();
const dir = mkdtempSync(join(tmpdir(), 'rlxkv-bench-tjs-'));
const open = (fingerprint, layout, phase) => {
  if (phase === 'write') rmSync(join(dir, 'store'), { recursive: true, force: true });
  return rlx.openCache({ capBytes: 256 << 20, fingerprint, layout, storage: 'fs', path: join(dir, 'store') });
};
const results = { config: { quick, runtime: 'onnxruntime-node', transformers: tf.env.version, node: process.version }, rows: [] };
try {
  for (const w of WORKLOADS) {
    const r = await measure({ tf, rlx, adapter, device: 'cpu', open }, { ...w, coldReps: quick ? 2 : 5, warmReps: quick ? 3 : 15 });
    const s = summarize(r, w.label);
    results.rows.push(s);
    console.error(`  node ${w.label}: TTFT cold ${s.cold_ttft_ms.toFixed(1)} ms, warm ${s.warm_ttft_ms.toFixed(1)} ms; restore ${s.loop_restore_ms.toFixed(2)} ms = lookup + copy ${s.loop_lookup_ms.toFixed(2)} ms x${s.loop_restore_over_lookup.toFixed(3)}; vs a bare lookup + copy ${s.loop_bare_lookup_ms.toFixed(2)} ms x${s.loop_restore_over_bare.toFixed(2)} (in the run x${s.restore_over_bare.toFixed(2)})`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
