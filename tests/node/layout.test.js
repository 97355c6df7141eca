// A model's KV layout, float16 entries and view safety, as an app using
// ONNX-style head-major [batch, heads, seq, headDim] tensors would meet them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import init from 'rlxkv';
import { kvFor } from './helpers.js';

const rlx = await init();

/** One layer, head-major: value 100 * head + 10 * token + dim (+ 0.5 in V). */
function headMajor(heads, seq, headDim, layers = 1) {
  const block = (extra) => {
    const b = new Float32Array(heads * seq * headDim);
    for (let h = 0; h < heads; h++) for (let t = 0; t < seq; t++) for (let d = 0; d < headDim; d++) {
      b[(h * seq + t) * headDim + d] = 100 * h + 10 * t + d + extra;
    }
    return b;
  };
  return { k: Array.from({ length: layers }, () => block(0)), v: Array.from({ length: layers }, () => block(0.5)) };
}

test('a partial hit on head-major KV takes the first rows of every head', () => {
  const cache = rlx.createCache({ capBytes: 1 << 20, layout: { order: 'head-major', heads: 2, headDim: 2 } });
  cache.insert([1, 2, 3, 4], headMajor(2, 4, 2));
  const hit = cache.lookup([1, 2, 9], { partial: true });
  assert.equal(hit.matched, 2);
  assert.deepEqual([...hit.k[0]], [0, 1, 10, 11, 100, 101, 110, 111]);
  assert.deepEqual([...hit.v[0]], [0.5, 1.5, 10.5, 11.5, 100.5, 101.5, 110.5, 111.5]);
  assert.equal(hit.dtype, 'f32');
  // Its rows are not contiguous: even asked for a view, copies.
  const viewed = cache.lookup([1, 2, 9], { partial: true, view: true });
  assert.equal(viewed.view, false);
  assert.deepEqual([...viewed.k[0]], [...hit.k[0]]);
  // A whole hit is contiguous: a real view.
  const whole = cache.lookup([1, 2, 3, 4, 5], { view: true });
  assert.equal(whole.view, true);
  assert.equal(whole.k[0].length, 16);
  assert.deepEqual(cache.layout, { order: 'head-major', heads: 2, headDim: 2, layers: 0 });
  cache.close();
});

test('token-major and layout-less partial hits cut whole rows', () => {
  for (const layout of [{ order: 'token-major', heads: 2, headDim: 2 }, undefined]) {
    const cache = rlx.createCache({ capBytes: 1 << 20, layout });
    const kv = kvFor(4, { layers: 1, width: 4 });
    cache.insert([1, 2, 3, 4], kv);
    const hit = cache.lookup([1, 2, 3, 7], { partial: true, view: true });
    assert.equal(hit.matched, 3);
    assert.equal(hit.view, true);
    assert.deepEqual([...hit.k[0]], [...kv.k[0].subarray(0, 12)]);
    cache.close();
  }
});

test('a mis-shaped insert is refused naming the layer, and changes nothing', () => {
  const cache = rlx.createCache({ capBytes: 1 << 20, layout: { order: 'head-major', heads: 2, headDim: 4, layers: 2 } });
  const good = headMajor(2, 3, 4, 2);
  cache.insert([1, 2, 3], good);
  const bad = headMajor(2, 3, 4, 2);
  bad.v[1] = new Float32Array(23);
  assert.throws(() => cache.insert([1, 2, 3], bad), { name: 'RangeError', message: /kv\.v\[1\] has 23 values; the head-major layout needs 2 heads × 3 tokens × 4 = 24/ });
  assert.throws(() => cache.insert([1, 2, 3], headMajor(2, 3, 4, 1)), { name: 'RangeError', message: /1 layers, but the layout has 2/ });
  assert.deepEqual([...cache.lookup([1, 2, 3]).k[0]], [...good.k[0]]);
  assert.equal(cache.size, 1);
  assert.throws(() => rlx.createCache({ capBytes: 1, layout: { order: 'rows', heads: 1, headDim: 1 } }), /layout.order/);
  assert.throws(() => rlx.createCache({ capBytes: 1, layout: { order: 'head-major', heads: 0, headDim: 1 } }), /layout.heads/);
  cache.close();
});

test('importBlob refuses a blob of another layout with SHAPE', async () => {
  const src = rlx.createCache({ capBytes: 1 << 20 });
  src.insert([1, 2, 3], kvFor(3, { layers: 1, width: 5 }));
  const blob = src.exportBlob([1, 2, 3]);
  const cache = rlx.createCache({ capBytes: 1 << 20, layout: { order: 'head-major', heads: 2, headDim: 2 } });
  await assert.rejects(cache.importBlob(blob), { code: 'SHAPE', message: /blob\.k\[0\] has 15 values/ });
  assert.equal(cache.size, 0);
  const off = rlx.createCache({ capBytes: 0 });
  assert.deepEqual(await off.importBlob(blob, { pin: true }), { tokens: 3, bytes: 120, cached: false });
  src.close(); cache.close(); off.close();
});

/** float16 bit patterns worth keeping exactly: NaN payloads, ±Inf, −0, subnormals, max. */
const F16_BITS = [0x7e01, 0x7c01, 0xfe00, 0x7c00, 0xfc00, 0x8000, 0x0000, 0x0001, 0x83ff, 0x7bff, 0x3c00, 0xc000];

test('f16 entries keep their bits, count two bytes a value and mix with f32', () => {
  const cache = rlx.createCache({ capBytes: 1 << 20, f16As: 'Uint16Array', layout: { order: 'head-major', heads: 2, headDim: 3 } });
  const k = Uint16Array.from(F16_BITS), v = Uint16Array.from(F16_BITS).reverse();
  cache.insert([5, 6], { k: [k], v: [v] });
  assert.equal(cache.bytes, 2 * 2 * 12);
  const hit = cache.lookup([5, 6, 7]);
  assert.equal(hit.dtype, 'f16');
  assert.ok(hit.k[0] instanceof Uint16Array);
  assert.deepEqual([...hit.k[0]], F16_BITS);
  assert.deepEqual([...hit.v[0]], [...v]);
  // Cut head-major, like f32: the first row of each head.
  const cut = cache.lookup([5, 9], { partial: true });
  assert.deepEqual([...cut.k[0]], [...F16_BITS.slice(0, 3), ...F16_BITS.slice(6, 9)]);
  // An f32 entry beside it, one budget.
  cache.insert([8, 8], { k: [new Float32Array(12)], v: [new Float32Array(12)] });
  assert.equal(cache.bytes, 48 + 96);
  assert.deepEqual(cache.entries().map((e) => [e.dtype, e.bytes]), [['f32', 96], ['f16', 48]]);
  assert.throws(() => cache.insert([9], { k: [new Float32Array(6)], v: [new Uint16Array(6)] }), { name: 'TypeError', message: /kv\.v\[0\] is f16 but earlier blocks are f32/ });
  cache.close();
});

test('Float16Array is taken as f16 where the engine has it', { skip: typeof Float16Array !== 'function' && 'no Float16Array in this engine' }, () => {
  const cache = rlx.createCache({ capBytes: 1 << 20 });
  const k = new Float16Array(new Uint16Array(F16_BITS).buffer);
  cache.insert([1], { k: [k], v: [k] });
  const hit = cache.lookup([1]);
  assert.ok(hit.k[0] instanceof Float16Array);
  assert.deepEqual([...new Uint16Array(hit.k[0].buffer, hit.k[0].byteOffset, 12)], F16_BITS);
  cache.close();
});

test('a view hit tells when it went stale instead of reading other entries', () => {
  const cache = rlx.createCache({ capBytes: 200 });
  const kv = kvFor(2, { layers: 1, width: 4 }); // 64 bytes
  cache.insert([1, 2], kv);
  const hit = cache.lookup([1, 2], { view: true });
  assert.equal(hit.valid, true);
  cache.insert([3, 4], kv);          // nothing freed: still valid
  cache.pin([3, 4]);
  assert.equal(hit.valid, true);
  assert.deepEqual([...hit.k[0]], [...kv.k[0]]);
  cache.remove([3, 4]);              // an entry freed: may be anything now
  assert.equal(hit.valid, false);
  assert.throws(() => hit.k, { code: 'STALE_VIEW' });
  cache.close();
  assert.equal(hit.valid, false);
});

test('view arrays fed back into insert are copied safely while the heap grows, and failures free what they took', async () => {
  const mod = await init({ newInstance: true });
  const cache = mod.createCache({ capBytes: 64 << 20 });
  const n = 1 << 16;
  cache.insert([1], { k: [new Float32Array(n).fill(3)], v: [new Float32Array(n).fill(4)] });
  const before = mod.memoryBytes;
  for (let i = 0; i < 40; i++) {
    const hit = cache.lookup([1], { view: true });
    // Each insert allocates its entry before copying: the heap grows under
    // the views it copies from.
    cache.insert([1000 + i], { k: hit.k, v: hit.v });
    assert.equal(cache.lookup([1000 + i]).k[0][n - 1], 3);
  }
  assert.ok(mod.memoryBytes > before, 'the heap grew during the inserts');
  // A pinned entry that fills the budget: every other insert is NOSPACE,
  // and none of them keeps its allocation.
  const full = mod.createCache({ capBytes: 8 * n });
  full.insert([9], { k: [new Float32Array(n)], v: [new Float32Array(n)] });
  full.pin([9]);
  const kv = { k: [new Float32Array(n)], v: [new Float32Array(n)] };
  assert.throws(() => full.insert([10], kv), { code: 'NOSPACE' });
  const settled = mod.memoryBytes;
  for (let i = 0; i < 200; i++) assert.throws(() => full.insert([10, i], kv), { code: 'NOSPACE' });
  assert.equal(mod.memoryBytes, settled);
  cache.close(); full.close();
});

test('a sparse K array names the hole', () => {
  const cache = rlx.createCache({ capBytes: 1 << 20 });
  // eslint-disable-next-line no-sparse-arrays
  assert.throws(() => cache.insert([1], { k: [, new Float32Array(1)], v: [new Float32Array(1), new Float32Array(1)] }), { name: 'TypeError', message: /kv\.k\[0\] must be/ });
  cache.close();
});

test('f16 bits survive a flush and a reopen bit for bit, through a directory and through IndexedDB', async () => {
  await import('fake-indexeddb/auto');
  const { tempDir } = await import('./helpers.js');
  const k = Uint16Array.from(F16_BITS), v = Uint16Array.from(F16_BITS).reverse();
  for (const [storage, path] of [['fs', tempDir()], ['idb', '/f16-round-trip']]) {
    const mod = await init({ newInstance: true });
    const first = await mod.openCache({ capBytes: 1 << 20, fingerprint: 16n, storage, path, f16As: 'Uint16Array' });
    first.insert([4, 5], { k: [k], v: [v] });
    await first.close();
    const again = await (await init({ newInstance: true })).openCache({ capBytes: 1 << 20, fingerprint: 16n, storage, path, f16As: 'Uint16Array' });
    const hit = await again.match([4, 5, 6]);
    assert.equal(hit.dtype, 'f16', storage);
    assert.deepEqual([...hit.k[0]], F16_BITS, `${storage}: K bits`);
    assert.deepEqual([...hit.v[0]], [...v], `${storage}: V bits`);
    assert.equal(again.listBlobs()[0].bytes, 32 + 16 + 8 + 16 + 2 * 2 * 12, `${storage}: stored as RLXKVF16, 2 bytes a value`);
    // Widened for tools that read only RLXKV001: every value exact.
    const wide = rlx.decodeEntry(again.exportBlob([4, 5], { as: 'RLXKV001' }));
    assert.equal(wide.format, 'RLXKV001');
    const { widenF16 } = await import('../../format/f16.js');
    const bits32 = (f) => [...new Uint32Array(f.buffer, f.byteOffset, f.length)];
    assert.deepEqual(bits32(wide.k[0]), bits32(widenF16(k)), `${storage}: widened exactly`);
    await again.close();
  }
});
