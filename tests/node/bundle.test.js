// What the build ships to browsers: a bundle a bundler takes without
// warnings (no node: imports, no new URL but its wasm's) and one wasm for
// both glues.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';

const dist = new URL('../../web/dist/', import.meta.url);
const bundle = readFileSync(new URL('rlxkv.browser.js', dist), 'utf8');

test('the browser bundle imports no node: module', () => {
  assert.doesNotMatch(bundle, /\bimport\s*\(\s*["']node:|\bfrom\s*["']node:|\brequire\(\s*["']node:/);
});

test('one wasm file serves the universal glue and the browser bundle', () => {
  assert.deepEqual(readdirSync(dist).filter((f) => f.endsWith('.wasm')), ['rlxkv_core.wasm']);
  for (const glue of [bundle, readFileSync(new URL('rlxkv_core.mjs', dist), 'utf8'), readFileSync(new URL('rlxkv_core_web.mjs', dist), 'utf8')]) {
    assert.deepEqual([...new Set(glue.match(/"rlxkv_core[\w]*\.wasm"/g))], ['"rlxkv_core.wasm"']);
  }
});

test('the bundle names its wasm beside itself and as the package export, nothing else (no Node path for bundlers to resolve)', () => {
  const urls = [...bundle.matchAll(/new URL\(\s*("[^"]*"|'[^']*'|`[^`]*`)\s*,\s*import\.meta\.url\s*\)/g)].map((m) => m[1].slice(1, -1));
  assert.deepEqual(urls.sort(), ['rlxkv/rlxkv_core.wasm', 'rlxkv_core.wasm']);
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
  assert.equal(pkg.exports['./rlxkv_core.wasm'], './web/dist/rlxkv_core.wasm');
});
