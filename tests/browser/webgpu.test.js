// rlxkv/transformers with transformers.js 4.3.x on WebGPU in Chromium
// (--enable-unsafe-webgpu with SwiftShader's adapter: a WebGPU device on the
// CPU, no shader-f16). The demo model (f32 KV) loaded with device 'webgpu'
// keeps its KV on the GPU (preferredOutputLocation 'gpu-buffer'):
// cachedGenerate downloads it to insert and writes hits straight into GPU
// buffers of the model's device (gpuTensorsFromHit). Checked as a user sees it: the greedy tokens
// are the wasm backend's; a turn through the cache, a hit from memory, the
// next chat turn and, after a page reload, a hit from IndexedDB each give
// exactly plain generate's tokens, and its KV (tokens alone are a weak check
// on the demo's random weights: a restore with every K zeroed gives the same
// ones); repeated turns whose past_key_values are disposed (as
// transformers.js asks) leave no GPU buffers behind, and a hit written
// straight into GPU buffers (opts.gpuDevice) gives the same. The
// f16-KV model: on an adapter without shader-f16 ONNX Runtime's WebGPU
// backend cannot run its Cast to float16, so the run fails and nothing is
// inserted; with shader-f16 it must match like the f32 one. No WebGPU
// adapter fails the test: it is not skipped.
import assert from 'node:assert/strict';
import { browserTest, call, localOnly } from './helpers.js';

const PAGE = '/tests/browser/pages/webgpu.html';
const WEBGPU = ['--enable-unsafe-webgpu', '--use-webgpu-adapter=swiftshader'];
const NEW = 6;
/**
 * How far a warm run's KV may be from plain generate's: KV computed one token
 * at a time (after a restore, or a reply's, restored in the next turn) rounds
 * differently from a prefill's (seen: ~2e-6). A hit on the prompt plain
 * generate prefilled the same way restores its prefill's KV: exactly.
 */
const TOLERANCE = 1e-4;
const fmt = (d) => (d.error ? d.error : `${d.restored.toExponential(1)} / ${d.computed.toExponential(1)}`);
function kvClose(d, what, { exact = false } = {}) {
  assert.equal(d.error, undefined, `${what}: ${d.error}`);
  if (exact) assert.equal(d.restored, 0, `${what}: the restored KV differs from plain generate's by up to ${d.restored}`);
  assert.ok(d.restored < TOLERANCE, `${what}: the restored KV differs from plain generate's by up to ${d.restored}`);
  assert.ok(d.computed < TOLERANCE, `${what}: the KV computed after the restore differs from plain generate's by up to ${d.computed}`);
}

browserTest('transformers.js 4.x on WebGPU: cachedGenerate gives the cold tokens from memory and after a reload, and leaves no GPU buffers', async (t, session) => {
  const outside = [];
  await localOnly(session, outside);
  const page = await session.open(PAGE);
  const gpu = await call(page, 'gpu');
  assert.ok(gpu.webgpu, `no WebGPU adapter (${gpu.why}); this test needs Chromium with ${WEBGPU.join(' ')}`);
  t.diagnostic(`transformers.js ${await page.evaluate(() => window.T.tjsVersion)}, adapter ${gpu.vendor}/${gpu.architecture}, shader-f16: ${gpu.shaderF16}`);

  const first = await call(page, 'first', 'rlxkv-demo');
  await session.reload(page);
  const again = await call(page, 'again', 'rlxkv-demo');
  const f16 = await call(page, 'f16', 'rlxkv-demo-f16kv');
  assert.deepEqual(outside, [], 'nothing requested from other origins');

  const n = first.miss.prompt;
  await t.test('f32 KV: plain generate on WebGPU keeps the KV on the GPU and gives the wasm backend\'s tokens', () => {
    assert.equal(first.device, 'webgpu');
    assert.equal(first.kvDtype, 'float32');
    assert.deepEqual(first.generateKvLocation, ['gpu-buffer']);
    assert.equal(first.expected.length, NEW);
    assert.deepEqual(first.expected, first.wasmExpected);
  });

  await t.test('f32 KV: a miss, a hit from memory and the next turn give plain generate\'s tokens and KV', () => {
    assert.equal(first.storage, 'idb');
    assert.equal(first.restored, 0);
    assert.equal(first.miss.reused, 0, 'nothing cached on a first visit');
    assert.deepEqual(first.miss.tokens, first.expected, 'cachedGenerate = generate on a miss');
    // Downloaded to be inserted, the KV is on the CPU and its GPU buffers are freed.
    assert.deepEqual(first.miss.where, ['cpu']);
    assert.deepEqual(first.entriesAfterMiss, [{ tokens: n + NEW - 1, dtype: 'f32' }]);
    assert.equal(first.hit.reused, n - 1, 'all but the last prompt token restored');
    assert.deepEqual(first.hit.tokens, first.expected, 'warm tokens = cold tokens');
    assert.equal(first.second.reused, first.hit.sequences.length - 1, 'the next turn reuses the whole first turn');
    assert.deepEqual(first.second.tokens, first.secondExpected);
    t.diagnostic(`KV vs plain generate's, largest difference restored / computed: hit ${fmt(first.hitKv)}, next turn ${fmt(first.secondKv)}, miss ${fmt(first.missKv)}`);
    kvClose(first.missKv, 'the miss', { exact: true });
    kvClose(first.hitKv, 'the hit', { exact: true });
    kvClose(first.secondKv, 'the next turn');
  });

  await t.test('f32 KV: after a reload the turn is restored from IndexedDB and still equals the cold run', () => {
    assert.equal(again.storage, 'idb');
    assert.ok(again.restored >= 1, `entries indexed at open: ${again.restored}`);
    assert.deepEqual(again.entriesAtOpen, first.entries);
    assert.equal(again.hit.reused, n - 1);
    assert.deepEqual(again.hit.tokens, first.expected, 'warm tokens after a reload = cold tokens');
    assert.deepEqual(again.expected, first.expected);
    // The second turn, inserted on the first visit, is restored whole too.
    assert.equal(again.second.reused, again.second.prompt - 1);
    assert.deepEqual(again.second.tokens, first.secondExpected);
    assert.deepEqual(again.secondExpected, first.secondExpected);
    t.diagnostic(`after the reload, largest KV difference restored / computed: hit ${fmt(again.hitKv)}, next turn ${fmt(again.secondKv)}`);
    kvClose(again.hitKv, 'the hit after the reload', { exact: true });
    kvClose(again.secondKv, 'the next turn after the reload');
  });

  await t.test('f32 KV: a hit written straight into GPU buffers (opts.gpuDevice) gives the same tokens and KV, and leaves no buffer', () => {
    assert.equal(again.gpuHit.reused, n - 1);
    assert.deepEqual(again.gpuHit.tokens, first.expected);
    kvClose(again.gpuHitKv, 'the hit restored on the GPU', { exact: true });
    assert.equal(again.gpuBytesLeft, 0, 'the restore\'s buffers destroyed once the run replaced them');
  });

  await t.test('f32 KV: turns whose past_key_values are disposed leave no GPU buffers behind', () => {
    for (const tokens of first.leakTokens) assert.deepEqual(tokens, first.expected);
    // A leak keeps each turn's KV buffers (at least one entry's bytes a turn).
    const grown = first.live.at(-1) - first.live[0];
    const entry = Math.min(...first.entryBytes);
    assert.ok(grown < entry, `live GPU buffer bytes after each turn: ${first.live.join(', ')} (grew ${grown} B; one entry is ${entry} B)`);
  });

  await t.test(`f16 KV: ${gpu.shaderF16 ? 'matches like f32 (shader-f16)' : 'fails without shader-f16, and nothing is inserted'}`, () => {
    assert.equal(f16.kvDtype, 'float16');
    if (gpu.shaderF16) {
      assert.equal(f16.generateError, undefined, f16.generateError);
      assert.equal(f16.turnError, undefined, f16.turnError);
      assert.deepEqual(f16.expected, f16.wasmExpected);
      assert.deepEqual(f16.miss.tokens, f16.expected);
      assert.equal(f16.hit.reused, f16.hit.prompt - 1);
      assert.deepEqual(f16.hit.tokens, f16.expected);
      assert.ok(f16.entries.length > 0 && f16.entries.every((e) => e.dtype === 'f16'), JSON.stringify(f16.entries));
    } else {
      const why = /Cast requires f16 but the device does not support it/;
      assert.match(f16.generateError ?? '(generate did not fail)', why);
      assert.match(f16.turnError ?? '(cachedGenerate did not fail)', why);
      assert.deepEqual(f16.entries, [], 'a failed run inserts nothing');
    }
  });
}, { timeout: 300_000, chromiumArgs: WEBGPU });
