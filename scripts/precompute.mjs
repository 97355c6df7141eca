#!/usr/bin/env node
// Precomputes the KV of the demo's default system prompt with the demo model
// and writes it as an RLXKV001 blob to demo/assets/system.rlxkv, the asset
// the demo page imports on a first visit instead of prefilling.
//
//   node scripts/precompute.mjs [--out FILE] [--check]
//
// The model is deterministic (demo/model.js), so these are exactly the bytes
// the page would compute. --check compares with the existing file instead of
// writing it (exit 1 if it differs or is missing). Needs the wasm build.
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import init from '../js/index.js';
import { createModel } from '../demo/model.js';
import { MODEL_OPTIONS, DEFAULT_SYSTEM_PROMPT } from '../demo/system-prompt.js';

const args = process.argv.slice(2);
let out = fileURLToPath(new URL('../demo/assets/system.rlxkv', import.meta.url));
let check = false;
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--out' && i + 1 < args.length) out = resolve(args[++i]);
  else if (args[i] === '--check') check = true;
  else {
    console.error('usage: node scripts/precompute.mjs [--out FILE] [--check]');
    process.exit(2);
  }
}

const rlx = await init();
const model = createModel(MODEL_OPTIONS);
const fingerprint = rlx.fingerprintOf(model.fingerprintKey);
const tokens = model.encode(DEFAULT_SYSTEM_PROMPT);

const t0 = performance.now();
const { kv } = model.prefill(tokens);
const ms = performance.now() - t0;
const blob = rlx.encodeEntry({ tokens, k: kv.k, v: kv.v }, fingerprint);

const fp = `0x${fingerprint.toString(16).padStart(16, '0')}`;
if (check) {
  let old = null;
  try { old = new Uint8Array(await readFile(out)); } catch { /* missing */ }
  const same = old && old.length === blob.length && old.every((b, i) => b === blob[i]);
  console.log(`${out}: ${same ? 'up to date' : old ? 'DIFFERS from the model' : 'missing'} (${tokens.length} tokens, fingerprint ${fp})`);
  process.exit(same ? 0 : 1);
}

await mkdir(dirname(out), { recursive: true });
const tmp = `${out}.${process.pid}.tmp`;
await writeFile(tmp, blob);
await rename(tmp, out);
console.log(`wrote ${out}: ${tokens.length} tokens, ${blob.length} bytes, fingerprint ${fp}, prefill ${ms.toFixed(0)} ms`);
