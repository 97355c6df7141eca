// `npm start` on a built checkout: the build makes nothing again (the
// wasm, the bundle, the demo's asset and models, the hybrid test models are
// newer than their sources), so the demo is served at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const MADE = ['wasm/dist/rlxkv_core.wasm', 'wasm/dist/rlxkv.browser.js', 'demo/assets/kv/index.json', 'build/models/rlxkv-demo-f16kv/config.json',
  'build/models/rlxkv-granite4h-f16kv/config.json'];

test('a second build rebuilds nothing that is up to date', () => {
  const before = MADE.map((f) => statSync(root + f).mtimeMs);
  const out = execFileSync('bash', ['scripts/build.sh'], { cwd: root, encoding: 'utf8' });
  assert.deepEqual(MADE.map((f) => statSync(root + f).mtimeMs), before, out);
});
