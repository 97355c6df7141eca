// What the build ships to browsers: a bundle a bundler takes without
// warnings (no node: imports, no new URL but its wasm's) and a wasm of its
// own, without the folds the universal build has (wasm/wasm.cmake).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const dist = new URL('../../wasm/dist/', import.meta.url);
const bundle = readFileSync(new URL('rlxkv.browser.js', dist), 'utf8');
/** The bundle's chunks (wasm/bundle.mjs): those its main file imports statically, and the others (loaded when first used). */
const chunks = readdirSync(dist).filter((f) => /^rlxkv-[\w-]+\.js$/.test(f));
const staticChunks = [...bundle.matchAll(/\bfrom\s*"\.\/(rlxkv-[\w-]+\.js)"/g)].map((m) => m[1]);

test('the browser bundle imports no node: module, in no chunk', () => {
  for (const file of ['rlxkv.browser.js', ...chunks]) {
    assert.doesNotMatch(readFileSync(new URL(file, dist), 'utf8'), /\bimport\s*\(\s*["']node:|\bfrom\s*["']node:|\brequire\(\s*["']node:/, file);
  }
});

test('OPFS is a chunk of its own, imported only when a store first uses it', () => {
  const opfs = chunks.filter((f) => f.startsWith('rlxkv-opfs-blobs-'));
  assert.equal(opfs.length, 1);
  assert.ok(!staticChunks.includes(opfs[0]));
  assert.match(bundle, new RegExp(`import\\("\\./${opfs[0].replace('.', '\\.')}"\\)`));
  assert.doesNotMatch(bundle, /createSyncAccessHandle/, 'no OPFS code in the main file');
});

test('the universal glue loads rlxkv_core.wasm; the browser bundle its own smaller wasm, of the same exports', () => {
  assert.deepEqual(readdirSync(dist).filter((f) => f.endsWith('.wasm')).sort(), ['rlxkv_core.wasm', 'rlxkv_core_web.wasm']);
  assert.deepEqual([...new Set(readFileSync(new URL('rlxkv_core.mjs', dist), 'utf8').match(/"rlxkv_core[\w]*\.wasm"/g))], ['"rlxkv_core.wasm"']);
  for (const glue of [bundle, readFileSync(new URL('rlxkv_core_web.mjs', dist), 'utf8')]) {
    assert.deepEqual([...new Set(glue.match(/"rlxkv_core[\w]*\.wasm"/g))], ['"rlxkv_core_web.wasm"']);
  }
  const functionsOf = (file) => WebAssembly.Module.exports(new WebAssembly.Module(readFileSync(new URL(file, dist))))
    .filter((e) => e.kind === 'function' && e.name.startsWith('rlxkv_')).map((e) => e.name).sort();
  assert.deepEqual(functionsOf('rlxkv_core_web.wasm'), functionsOf('rlxkv_core.wasm'));
  assert.ok(readFileSync(new URL('rlxkv_core_web.wasm', dist)).length < readFileSync(new URL('rlxkv_core.wasm', dist)).length, 'folds left out');
});

test('the bundle names its wasm beside itself and as the package export, nothing else (no Node path for bundlers to resolve)', () => {
  const urls = [...bundle.matchAll(/new URL\(\s*("[^"]*"|'[^']*'|`[^`]*`)\s*,\s*import\.meta\.url\s*\)/g)].map((m) => m[1].slice(1, -1));
  assert.deepEqual(urls.sort(), ['rlxkv/rlxkv_core_web.wasm', 'rlxkv_core_web.wasm']);
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
  assert.equal(pkg.exports['./rlxkv_core.wasm'], './wasm/dist/rlxkv_core.wasm');
  assert.equal(pkg.exports['./rlxkv_core_web.wasm'], './wasm/dist/rlxkv_core_web.wasm');
});

test('the browser bundle, wasm and JS an app loads (the main file and the chunks it imports), is at most 40 KB gzipped (bench/size.mjs measures it the same way)', () => {
  const gz = (file) => gzipSync(readFileSync(new URL(file, dist)), { level: 9 }).length;
  const total = gz('rlxkv_core_web.wasm') + gz('rlxkv.browser.js') + staticChunks.reduce((n, f) => n + gz(f), 0);
  assert.ok(total <= 40000, `${total} B gzipped`);
});

test("the browser loader (wasm/web-glue.mjs) names every C function of wasm/exports.txt, and the memory it grows stays readable", async () => {
  const { default: create } = await import(new URL('rlxkv_core_web.mjs', dist));
  const M = await create({ wasmBinary: readFileSync(new URL('rlxkv_core_web.wasm', dist)) });
  const names = readFileSync(new URL('../../wasm/exports.txt', import.meta.url), 'utf8').split('\n').filter((l) => l.startsWith('_'));
  for (const name of names) assert.equal(typeof M[name], 'function', name);
  const before = M.HEAPU8.length;
  const p = M._malloc(before) >>> 0; // more than is free: memory grows
  assert.ok(p && M.HEAPU8.length > before && M.HEAPU32.buffer === M.HEAPU8.buffer);
  M.HEAPU8[p + before - 1] = 7;
  assert.equal(M.HEAPU8[p + before - 1], 7);
  M._free(p);
});
