// init() that cannot load the wasm rejects with RlxkvError 'WASM_LOAD',
// naming where it looked; locateFile works in Node (it gets the glue's
// directory, as the glue would pass it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import init from 'rlxkv';

const dist = fileURLToPath(new URL('../../wasm/dist/', import.meta.url));

test('bytes that are not wasm reject WASM_LOAD, naming wasmBinary', async () => {
  const html = new TextEncoder().encode('<!doctype html><title>app</title>');
  await assert.rejects(init({ wasmBinary: html }), { name: 'RlxkvError', code: 'WASM_LOAD', message: /wasmBinary.*magic word/ });
});

test('a locateFile path that is missing rejects WASM_LOAD, naming the path', async () => {
  await assert.rejects(init({ locateFile: () => '/nonexistent/rlxkv_core.wasm' }),
    { name: 'RlxkvError', code: 'WASM_LOAD', message: /\/nonexistent\/rlxkv_core\.wasm/ });
});

test("locateFile gets the wasm's name and the glue's directory, and its path is read", async () => {
  const asked = [];
  const rlx = await init({ locateFile: (name, prefix) => { asked.push([name, prefix]); return prefix + name; } });
  assert.deepEqual(asked, [['rlxkv_core.wasm', dist]]);
  assert.equal(typeof rlx.fingerprintOf('x'), 'bigint');
});
