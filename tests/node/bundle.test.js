// What the build ships to browsers: a bundle a bundler takes without
// warnings (no node: imports) and one wasm for both glues.
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
