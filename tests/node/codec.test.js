// Blobs: the RLXKV001 reference vectors both ways, malformed input, and
// the f16 variant RLXKVF16 with its exact widening (format/blob.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import init, { RlxkvError } from 'rlxkv';
import { vectorsDir } from './helpers.js';
import { encodeBlob, decodeBlob, blobSize, widenF16, MAX_LAYERS } from '../../format/blob.js';

const rlx = await init();

function manifest() {
  const rows = readFileSync(join(vectorsDir, 'MANIFEST'), 'utf8').trim().split('\n');
  return rows.map((line) => {
    const [name, ...fields] = line.trim().split(/\s+/);
    const f = Object.fromEntries(fields.map((kv) => kv.split('=')));
    return {
      name,
      fingerprint: BigInt(f.fp),
      pastLen: Number(f.past_len),
      tokens: Number(f.tokens),
      layers: Number(f.layers),
      kLens: f.k_lens.split(',').map(Number),
      vLens: f.v_lens.split(',').map(Number),
      tokenSum: Number(f.token_sum),
    };
  });
}

test('every reference vector decodes to its MANIFEST line and re-encodes to the same bytes', () => {
  const rows = manifest();
  assert.equal(rows.length, readdirSync(vectorsDir).filter((f) => f.endsWith('.rlxkv')).length);
  for (const m of rows) {
    const bytes = readFileSync(join(vectorsDir, `${m.name}.rlxkv`));
    const e = rlx.decodeEntry(bytes);
    assert.equal(e.fingerprint, m.fingerprint, m.name);
    assert.equal(e.pastLen, m.pastLen);
    assert.equal(e.tokens.length, m.tokens);
    assert.equal(e.tokens.reduce((s, t) => s + t, 0), m.tokenSum);
    assert.deepEqual(e.k.map((b) => b.length), m.kLens);
    assert.deepEqual(e.v.map((b) => b.length), m.vLens);
    const again = rlx.encodeEntry(e, e.fingerprint);
    assert.deepEqual(Buffer.from(again), bytes, `${m.name} re-encodes byte-exact`);
  }
});

test('floats survive bit-exact: NaN payloads, -0, subnormals', () => {
  const bits = new Uint32Array([0x7fc00001, 0xffa5a5a5, 0x80000000, 0x00000001, 0x7f800000, 0x3f800000]);
  const k = [new Float32Array(bits.buffer.slice(0))];
  const blob = rlx.encodeEntry({ tokens: [1, 2, 3], k, v: [new Float32Array(3)] }, 0xffffffffffffffffn);
  const back = rlx.decodeEntry(blob);
  assert.deepEqual(new Uint32Array(back.k[0].buffer, back.k[0].byteOffset, 6), bits);
  assert.equal(back.fingerprint, 0xffffffffffffffffn);
});

test('a blob of another fingerprint decodes to null when one is expected', () => {
  const bytes = readFileSync(join(vectorsDir, 'seed_small.rlxkv'));
  assert.equal(rlx.decodeEntry(bytes, { fingerprint: 0x9999n }), null);
  assert.ok(rlx.decodeEntry(bytes, { fingerprint: 0xabcd }));
});

test('malformed blobs throw RlxkvError with a code', () => {
  const good = readFileSync(join(vectorsDir, 'seed_small.rlxkv'));
  const code = (bytes) => {
    try { rlx.decodeEntry(bytes); } catch (e) { assert.ok(e instanceof RlxkvError); return e.code; }
    return 'decoded';
  };
  const bad = Buffer.from(good); bad[0] = 0x58;
  assert.equal(code(bad), 'BAD_MAGIC');
  for (let n = 0; n < good.length; n++) assert.equal(code(good.subarray(0, n)), 'TRUNCATED', `cut at ${n}`);
  assert.equal(code(Buffer.concat([good, Buffer.from([0])])), 'CORRUPT', 'trailing bytes');
  const pastLen = Buffer.from(good); pastLen.writeBigUInt64LE(4n, 16);
  assert.equal(code(pastLen), 'CORRUPT');
  const wideToken = Buffer.from(good); wideToken.writeBigUInt64LE(1n << 32n, 32);
  assert.equal(code(wideToken), 'CORRUPT');
  const hugeLen = Buffer.from(good); hugeLen.writeBigUInt64LE(0xffffffffffffffffn, 24);
  assert.match(code(hugeLen), /TRUNCATED|CORRUPT/);
});

test('fingerprintOf is a stable 64-bit hash of a model id', () => {
  const a = rlx.fingerprintOf('my-model@1 q4 ctx=4096');
  assert.equal(typeof a, 'bigint');
  assert.equal(a, rlx.fingerprintOf(new TextEncoder().encode('my-model@1 q4 ctx=4096')));
  assert.notEqual(a, rlx.fingerprintOf('my-model@2 q4 ctx=4096'));
  assert.ok(a >= 0n && a < 1n << 64n);
});

// ---- the f16 variant (RLXKVF16, FORMATS.md) and the exact widening ----

/** The f32 bits of binary16 h, computed from its value (not from the codec's bit shuffle). */
function widenOracle(h) {
  const sign = h >> 15, exp = (h >> 10) & 31, man = h & 1023;
  if (exp === 31) return ((sign << 31) | 0x7f800000 | (man << 13)) >>> 0;
  const v = exp ? (1024 + man) * 2 ** (exp - 25) : man * 2 ** -24;
  const f = new Float32Array([sign ? -v : v]);
  return (new Uint32Array(f.buffer)[0] | (sign << 31)) >>> 0; // -0 keeps its sign
}

test('widenF16 gives every binary16 pattern its exact f32, at any alignment', () => {
  const all = Uint16Array.from({ length: 65536 }, (_, i) => i);
  const want = Uint32Array.from(all, widenOracle);
  const got = new Uint32Array(widenF16(all).buffer);
  let bad = 0;
  for (let i = 0; i < 65536; i++) bad += got[i] !== want[i];
  assert.equal(bad, 0);
  // 2-byte aligned (not 4): the per-value path, and an odd count
  const odd = new Uint16Array(65538).subarray(1, 65536);
  odd.set(all.subarray(0, 65535));
  const out = new Float32Array(65535);
  assert.equal(widenF16(odd, out), out);
  assert.deepEqual(new Uint32Array(out.buffer), want.subarray(0, 65535));
  const spot = (h) => new Uint32Array(widenF16(Uint16Array.of(h)).buffer)[0];
  assert.equal(spot(0x8000), 0x80000000); // -0
  assert.equal(spot(0x0001), 0x33800000); // 2^-24
  assert.equal(spot(0x7c00), 0x7f800000); // +inf
  assert.equal(spot(0x7c01), 0x7f802000); // signalling NaN, payload shifted
  assert.equal(spot(0xfe55), 0xffcaa000); // negative quiet NaN with payload
  assert.throws(() => widenF16(new Float32Array(2)), TypeError);
  assert.throws(() => widenF16(Uint16Array.of(1), new Float32Array(2)), RangeError);
});

const F16_BITS = [0x7e00, 0x7e01, 0xfe55, 0x7c01, 0xfc01, 0x8000, 0x0000, 0x0001, 0x83ff, 0x0200, 0x7c00, 0xfc00, 0x3c00, 0x7bff];

test('RLXKVF16 blobs round-trip bit-exact (NaN payloads, infinities, subnormals, -0) and views are Uint16Array', () => {
  const k = [Uint16Array.from(F16_BITS), new Uint16Array(0)];
  const v = [Uint16Array.from(F16_BITS.slice(0, 5)), Uint16Array.from(F16_BITS).reverse()];
  const tokens = Uint32Array.of(0, 0xffffffff, 7);
  const blob = encodeBlob(tokens, [...k, ...v], 0xabcdn);
  assert.equal(new TextDecoder().decode(blob.subarray(0, 8)), 'RLXKVF16');
  assert.equal(blob.length, 40 + 8 * 3 + 8 * 4 + 2 * (14 + 0 + 5 + 14));
  assert.equal(blob.length, blobSize(3, [...k, ...v]));
  for (const view of [false, true]) {
    const e = decodeBlob(blob, undefined, view);
    assert.equal(e.dtype, 'f16');
    assert.equal(e.format, 'RLXKVF16');
    assert.ok(e.k[0] instanceof Uint16Array);
    assert.deepEqual([...e.k[0]], F16_BITS);
    assert.deepEqual([...e.v[1]], [...v[1]]);
    assert.deepEqual([...e.tokens], [...tokens]);
    assert.equal(e.k[0].buffer === blob.buffer, view, 'views only when asked');
    assert.deepEqual(encodeBlob(e.tokens, [...e.k, ...e.v], e.fingerprint), blob);
  }
  // the big-endian path writes and reads the same bytes
  assert.deepEqual(encodeBlob(tokens, [...k, ...v], 0xabcdn, undefined, { bytewise: true }), blob);
  assert.deepEqual([...decodeBlob(blob, undefined, false, true).k[0]], F16_BITS);
  assert.throws(() => encodeBlob(tokens, [k[0], new Float32Array(1)], 1n), TypeError, 'mixed value types');
});

test("as: 'RLXKV001' widens an f16 entry into the RLXKV001 blob of its f32 values", () => {
  const k = [Uint16Array.from(F16_BITS)], v = [Uint16Array.from(F16_BITS.slice(3))];
  const tokens = Uint32Array.of(5, 6);
  const wide = encodeBlob(tokens, [...k, ...v], 9n, undefined, { as: 'RLXKV001' });
  const ref = encodeBlob(tokens, [widenF16(k[0]), widenF16(v[0])], 9n);
  assert.deepEqual(wide, ref);
  assert.equal(wide.length, blobSize(2, [...k, ...v], { as: 'RLXKV001' }));
  assert.deepEqual(encodeBlob(tokens, [...k, ...v], 9n, undefined, { as: 'RLXKV001', bytewise: true }), ref);
  const back = decodeBlob(wide);
  assert.equal(back.format, 'RLXKV001');
  assert.deepEqual([...new Uint32Array(back.k[0].buffer, back.k[0].byteOffset, back.k[0].length)], F16_BITS.map(widenOracle));
  // an f32 entry 'as' its own format is unchanged; no narrowing
  assert.deepEqual(encodeBlob(tokens, [widenF16(k[0]), widenF16(v[0])], 9n, undefined, { as: 'RLXKV001' }), ref);
  assert.throws(() => encodeBlob(tokens, [widenF16(k[0]), widenF16(v[0])], 9n, undefined, { as: 'RLXKVF16' }), RangeError);
});

test('RLXKVF16 is refused as C refuses it: truncations, odd lengths, trailing bytes, foreign magics', () => {
  const blob = encodeBlob(Uint32Array.of(1, 2), [Uint16Array.from(F16_BITS), Uint16Array.of(1, 2, 3)], 3n);
  const code = (bytes) => {
    try { decodeBlob(bytes); } catch (e) { assert.ok(e instanceof RlxkvError); return e.code; }
    return 'decoded';
  };
  for (let n = 0; n < blob.length; n++) assert.equal(code(blob.subarray(0, n)), 'TRUNCATED', `cut at ${n}`);
  const more = new Uint8Array(blob.length + 1); more.set(blob);
  assert.equal(code(more), 'CORRUPT');
  const longer = Uint8Array.from(blob); new DataView(longer.buffer).setBigUint64(56, 15n, true); // K0: 15 values, 14 there
  assert.equal(code(longer), 'TRUNCATED');
  assert.equal(code(new TextEncoder().encode('RLXKVF32xxxxxxxxxxxxxxxx')), 'BAD_MAGIC');
  assert.equal(code(new TextEncoder().encode('RLXKVF')), 'TRUNCATED');
  assert.equal(code(new TextEncoder().encode('RLXKVG')), 'BAD_MAGIC');
  assert.equal(decodeBlob(blob, 4n), null, 'stale after the head');
});

test('a blob of more than MAX_LAYERS (4096) layers is refused with LIMIT, one at the limit is read', () => {
  assert.equal(MAX_LAYERS, 4096);
  for (const [magic, layers] of [['RLXKV001', 4096], ['RLXKVF16', 4096], ['RLXKV001', 4097], ['RLXKVF16', 4097]]) {
    const bytes = new Uint8Array(48 + 16 * layers);
    bytes.set(new TextEncoder().encode(magic));
    const dv = new DataView(bytes.buffer);
    dv.setBigUint64(16, 1n, true);
    dv.setBigUint64(24, 1n, true);
    dv.setBigUint64(40, BigInt(layers), true);
    if (layers > MAX_LAYERS) {
      assert.throws(() => decodeBlob(bytes), (e) => e instanceof RlxkvError && e.code === 'LIMIT', `${magic} ${layers}`);
      assert.throws(() => decodeBlob(bytes.subarray(0, bytes.length - 1)), (e) => e.code === 'TRUNCATED', 'length checks first');
    } else {
      const e = decodeBlob(bytes);
      assert.equal(e.k.length, layers);
      assert.deepEqual(encodeBlob(e.tokens, [...e.k, ...e.v], 0n), bytes);
    }
  }
  const blocks = Array.from({ length: 2 * 4097 }, () => new Float32Array(0));
  assert.throws(() => encodeBlob(Uint32Array.of(1), blocks, 0n), (e) => e instanceof RlxkvError && e.code === 'LIMIT');
});
