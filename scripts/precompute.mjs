#!/usr/bin/env node
// Precomputes the KV of the demo's default system prompt with the demo model
// and publishes it as pages (store/publish.js, as `rlxkv publish` does) into
// demo/assets/kv/: what the demo page fetches through its cache's remote
// tier on a first visit instead of prefilling. demo/assets/kv/index.json
// lists the pages (the build's stamp).
//
//   node scripts/precompute.mjs [--out DIR] [--check]
//
// The model is deterministic (demo/model.js), so these are exactly the bytes
// the page would compute. --check compares the pages in DIR with freshly
// published ones instead of writing them (exit 1 if any differs or is
// missing). Needs the wasm build.
import { mkdir, mkdtemp, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import init from '../js/index.js';
import { publishPages } from '../store/publish.js';
import { createModel, kvLayoutOf } from '../demo/model.js';
import { MODEL_OPTIONS, DEFAULT_SYSTEM_PROMPT } from '../demo/system-prompt.js';

const args = process.argv.slice(2);
let out = fileURLToPath(new URL('../demo/assets/kv/', import.meta.url));
let check = false;
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--out' && i + 1 < args.length) out = resolve(args[++i]);
  else if (args[i] === '--check') check = true;
  else {
    console.error('usage: node scripts/precompute.mjs [--out DIR] [--check]');
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
const work = await mkdtemp(join(tmpdir(), 'rlxkv-precompute-'));
try {
  const fresh = join(work, 'kv');
  const report = await publishPages(rlx, [{ fingerprint, tokens, k: kv.k, v: kv.v }], fresh, { layout: kvLayoutOf(model.config) });
  const index = { fingerprint: `0x${fingerprint.toString(16).padStart(16, '0')}`, tokens: tokens.length, pages: report.pages.map(({ name, tokens: n, bytes }) => ({ name, tokens: n, bytes })) };
  await writeFile(join(fresh, 'index.json'), `${JSON.stringify(index, null, 2)}\n`);
  const summary = `${report.pages.length} pages of the ${tokens.length}-token prompt (${report.pages.at(-1)?.tokens ?? 0} tokens, ${report.bytes} bytes), fingerprint ${index.fingerprint}`;
  if (check) {
    let same = true;
    for (const name of await readdir(fresh)) {
      const a = await readFile(join(fresh, name));
      const b = await readFile(join(out, name)).catch(() => null);
      if (!b || !a.equals(b)) same = false;
    }
    console.log(`${out}: ${same ? 'up to date' : 'DIFFERS from the model, or missing'} (${summary})`);
    process.exit(same ? 0 : 1);
  }
  await mkdir(resolve(out, '..'), { recursive: true });
  await rm(out, { recursive: true, force: true });
  await rename(fresh, out).catch(async () => {
    // Another file system: copy.
    await mkdir(out, { recursive: true });
    for (const name of await readdir(fresh)) await writeFile(join(out, name), await readFile(join(fresh, name)));
  });
  console.log(`wrote ${out}: ${summary}, prefill ${ms.toFixed(0)} ms`);
} finally {
  await rm(work, { recursive: true, force: true });
}
