// RLXKV001 blobs: the reference vectors both ways, and malformed input.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import init, { RlxkvError } from 'rlxkv';
import { vectorsDir } from './helpers.js';

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
