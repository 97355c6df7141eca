#!/usr/bin/env node
// Exports the demo's transformer (demo/model.js, MODEL_OPTIONS of
// demo/system-prompt.js) as ONNX model folders that transformers.js loads:
//
//   node scripts/make-model.mjs [--out DIR]     (default build/models)
//   node scripts/make-model.mjs --shape smollm2-135m [--out DIR] [--force]
//
//   node scripts/make-model.mjs --hybrid [--out DIR]
//
// writes DIR/rlxkv-demo/ (float32 KV) and DIR/rlxkv-demo-f16kv/ (float16
// past/present KV, same weights). With --hybrid it writes the four tiny
// hybrid decoders of make_onnx_model.py's HYBRID_KINDS instead (random
// weights, no demo weights needed): DIR/rlxkv-lfm2/, rlxkv-qwen3_5/,
// rlxkv-gemma3/ and rlxkv-granite4h/, each with an -f16kv twin (every cache tensor float16). With --shape smollm2-135m it writes
// DIR/rlxkv-smollm2-135m-shape/ instead: SmolLM2-135M's shape (30 layers,
// hidden 576, 9 query heads, 3 KV heads of 64, SwiGLU 1536) with random
// weights made by make_onnx_model.py (~430 MB of float32), only when its
// onnx/model.onnx is missing (--force: always). This script dumps the weights into a
// temporary directory (weights.json: shapes and byte offsets; weights.bin:
// little-endian arrays); scripts/make_onnx_model.py, run with Debian's
// /usr/bin/python3 (which has python3-onnx), builds the graphs from them.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createModel } from '../demo/model.js';
import { MODEL_OPTIONS } from '../demo/system-prompt.js';

const args = process.argv.slice(2);
let out = fileURLToPath(new URL('../build/models', import.meta.url));
let shape = null, force = false, hybrid = false;
/** The folder each --shape is written to (make_onnx_model.py's SHAPES). */
const SHAPE_FOLDERS = { 'smollm2-135m': 'rlxkv-smollm2-135m-shape' };
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--out' && i + 1 < args.length) out = resolve(args[++i]);
  else if (args[i] === '--shape' && i + 1 < args.length && SHAPE_FOLDERS[args[i + 1]]) shape = args[++i];
  else if (args[i] === '--force') force = true;
  else if (args[i] === '--hybrid') hybrid = true;
  else {
    console.error(`usage: node scripts/make-model.mjs [--out DIR] [--shape ${Object.keys(SHAPE_FOLDERS).join('|')} [--force] | --hybrid]`);
    process.exit(2);
  }
}
const py = fileURLToPath(new URL('make_onnx_model.py', import.meta.url));

if (hybrid) {
  execFileSync('/usr/bin/python3', [py, '--kind', 'lfm2', '--kind', 'qwen3_5', '--kind', 'gemma3', '--kind', 'granite4h', '--out', out], { stdio: 'inherit' });
  process.exit(0);
}

if (shape) {
  const onnx = join(out, SHAPE_FOLDERS[shape], 'onnx', 'model.onnx');
  if (existsSync(onnx) && !force) {
    console.error(`make-model: ${onnx} exists (--force rebuilds it)`);
  } else {
    execFileSync('/usr/bin/python3', [py, '--shape', shape, '--out', out], { stdio: 'inherit' });
  }
  process.exit(0);
}

const model = createModel(MODEL_OPTIONS);
const { config } = model;
const w = model.weights();
const D = config.dModel, FF = config.ffDim, V = config.vocab;

// name -> [array, shape]; shapes as in demo/model.js (row-major, out-major).
const tensors = [['embed', w.embed, [V, D]]];
w.blocks.forEach((b, l) => {
  tensors.push(
    [`l${l}.norm1`, b.norm1, [D]],
    [`l${l}.wqkv`, b.wqkv, [3 * D, D]],
    [`l${l}.wo`, b.wo, [D, D]],
    [`l${l}.norm2`, b.norm2, [D]],
    [`l${l}.w1`, b.w1, [FF, D]],
    [`l${l}.w2`, b.w2, [D, FF]],
  );
});
tensors.push(['normF', w.normF, [D]], ['unembed', w.unembed, [V, D]], ['invFreq', w.invFreq, [w.invFreq.length]]);

const manifest = { config, fingerprintKey: model.fingerprintKey, tensors: [] };
const parts = [];
let offset = 0;
for (const [name, arr, shape] of tensors) {
  const dtype = arr instanceof Float64Array ? 'float64' : 'float32';
  manifest.tensors.push({ name, dtype, shape, offset, bytes: arr.byteLength });
  parts.push(new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength));
  offset += arr.byteLength;
}

const tmp = mkdtempSync(join(tmpdir(), 'rlxkv-model-'));
try {
  writeFileSync(join(tmp, 'weights.json'), JSON.stringify(manifest));
  writeFileSync(join(tmp, 'weights.bin'), Buffer.concat(parts));
  execFileSync('/usr/bin/python3', [py, '--weights', tmp, '--out', out], { stdio: 'inherit' });
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
