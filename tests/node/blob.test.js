// The JS codec (encodeEntry, decodeEntry, exportBlob, importBlob) against
// the C one: the same bytes both ways, the same verdict on damaged blobs.
// The C codec is reached through the tests' own wasm (build/wasm/test/: the
// universal build plus wasm/exports-test.txt, which no shipped wasm
// exports); the JS one is what a cache's storage reads and writes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import init, { RlxkvError } from 'rlxkv';
import { encodeBlob, decodeBlob } from '../../format/blob.js';
import { storeFiles, tempDir, vectorsDir } from './helpers.js';
import { Core } from '../../wasm/core.js';
import { NativeCache, DTYPE } from '../../wasm/native-cache.js';
import createTestCore, { wasmUrls as testWasmUrls } from '../../build/wasm/test/rlxkv_core_test.mjs';

const core = new Core(await createTestCore({ wasmBinary: readFileSync(testWasmUrls()[0]) }));
const cCodec = () => new NativeCache(core, { capBytes: 1 << 24, fingerprint: FP, layout: null, f16As: 'Uint16Array' });

/** The blob the C codec (rlxkv_encode) writes for the entry of these tokens in a cCodec() cache, or null. */
function encodeWithC(cache, tokens) {
  const { w } = cache.leakRecord, M = core.M;
  core.u32.set(tokens, M._rlxkv_web_scratch(w, tokens.length) >>> 2);
  const buf = M._rlxkv_web_encode(w, tokens.length, FP, core.cell) >>> 0;
  if (!buf) return null;
  const out = core.u8.slice(buf, buf + core.u32[core.cell >>> 2]);
  core.free(buf);
  return out;
}

/** The C codec's verdict on bytes (rlxkv_inspect, every check of rlxkv_decode): its status. */
function inspectWithC(bytes) {
  const p = core.alloc(Math.max(1, bytes.length));
  try {
    core.u8.set(bytes, p);
    return core.M._rlxkv_inspect(p, bytes.length, 0);
  } finally {
    core.free(p);
  }
}

/** A blob decoded by the C codec (rlxkv_decode) and put in a cCodec() cache: the C status. */
function decodeWithC(cache, bytes) {
  const p = core.alloc(bytes.length);
  try {
    core.u8.set(bytes, p);
    return core.M._rlxkv_web_decode_put(cache.leakRecord.w, p, bytes.length, FP);
  } finally {
    core.free(p);
  }
}

const rlx = await init();
const FP = 0xfeedfacecafebeefn;

function rng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}
const SPECIAL = [0x7fc00001, 0xffa5a5a5, 0x80000000, 0x00000001, 0x807fffff, 0x7f800000];

/** A random entry: 0-4 layers, blocks of differing lengths (some empty), tokens up to 2^32-1, odd float bits. */
function randomEntry(rand) {
  const layers = Math.floor(rand() * 5);
  const n = 1 + Math.floor(rand() * 9);
  const tokens = Uint32Array.from({ length: n }, (_, i) => (i === 0 ? 0xffffffff : rand() * 2 ** 32));
  const block = () => {
    const bits = Uint32Array.from({ length: Math.floor(rand() * 4) * n }, () => (rand() < 0.2 ? SPECIAL[Math.floor(rand() * 6)] : rand() * 2 ** 32));
    return new Float32Array(bits.buffer);
  };
  return { tokens, k: Array.from({ length: layers }, block), v: Array.from({ length: layers }, block) };
}

const bitsOf = (blocks) => blocks.map((b) => [...new Uint32Array(b.buffer, b.byteOffset, b.length)]);
function assertSameEntry(got, want, label) {
  assert.deepEqual([...got.tokens], [...want.tokens], `${label}: tokens`);
  assert.deepEqual(bitsOf(got.k), bitsOf(want.k), `${label}: K bits`);
  assert.deepEqual(bitsOf(got.v), bitsOf(want.v), `${label}: V bits`);
}

/** bytes copied to offset `at` of a fresh buffer. */
function at(bytes, offset) {
  const u8 = new Uint8Array(bytes.length + offset).subarray(offset);
  u8.set(bytes);
  return u8;
}

const vectors = () => readdirSync(vectorsDir).filter((f) => f.endsWith('.rlxkv')).map((f) => [f, readFileSync(join(vectorsDir, f))]);

test('every vector, at any alignment, with views or copies, re-encodes to its bytes', () => {
  for (const [name, file] of vectors()) {
    for (const offset of [0, 1, 2, 4]) {
      const bytes = at(file, offset);
      for (const view of [false, true]) {
        const e = rlx.decodeEntry(bytes, { view });
        assert.deepEqual(rlx.encodeEntry(e, e.fingerprint), new Uint8Array(file), `${name} at ${offset}, view ${view}`);
        const shared = [...e.k, ...e.v].filter((b) => b.buffer === bytes.buffer).length;
        const zeroCopy = view && offset % 4 === 0;
        assert.equal(shared, zeroCopy ? e.k.length * 2 : 0, `${name} at ${offset}: views only when asked and aligned`);
        assert.notEqual(e.tokens.buffer, bytes.buffer, 'tokens are always a fresh array');
      }
    }
  }
});

test('the big-endian path (per-float words) gives the same bytes and floats', () => {
  const rand = rng(7);
  for (let i = 0; i < 50; i++) {
    const e = randomEntry(rand);
    const blocks = [...e.k, ...e.v];
    const fast = encodeBlob(e.tokens, blocks, FP);
    assert.deepEqual(encodeBlob(e.tokens, blocks, FP, undefined, { bytewise: true }), fast);
    assertSameEntry(decodeBlob(at(fast, 4), FP, true, true), e, 'bytewise decode');
  }
});

test('views share the input; copies do not', () => {
  const blob = rlx.encodeEntry({ tokens: [1, 2], k: [Float32Array.of(1, 2)], v: [Float32Array.of(3, 4)] }, FP);
  const viewed = rlx.decodeEntry(blob, { view: true });
  const copied = rlx.decodeEntry(blob);
  blob.fill(0);
  assert.deepEqual([...viewed.k[0]], [0, 0], 'a view sees the input change');
  assert.deepEqual([...copied.k[0]], [1, 2]);
  assert.deepEqual([...copied.tokens], [1, 2]);
});

test('a view is never of wasm memory: bytes that live there are copied', () => {
  const cache = rlx.createCache({ capBytes: 1 << 20, fingerprint: FP });
  const blob = rlx.encodeEntry({ tokens: [5, 6], k: [Float32Array.of(7, 8)], v: [Float32Array.of(9, 10)] }, FP);
  // An entry whose K block holds the blob's bytes: a lookup view is then a blob in wasm memory.
  cache.insert([1], { k: [new Float32Array(blob.buffer.slice(0))], v: [new Float32Array(0)] });
  const inWasm = cache.lookup([1], { view: true }).k[0];
  const e = rlx.decodeEntry(inWasm, { view: true });
  assert.notEqual(e.k[0].buffer, inWasm.buffer);
  cache.clear();
  cache.insert([2], { k: [new Float32Array(1 << 18)], v: [new Float32Array(1 << 18)] }); // reuses that memory
  assert.deepEqual([...e.k[0], ...e.v[0]], [7, 8, 9, 10]);
});

test('encodeEntry into a buffer the caller owns, at any offset', () => {
  const rand = rng(3);
  const e = randomEntry(rand);
  const fresh = rlx.encodeEntry(e, FP);
  assert.equal(rlx.encodedSize(e), fresh.length);
  const mine = new Uint8Array(fresh.length + 11).fill(0xee);
  const out = mine.subarray(3);
  const written = rlx.encodeEntry(e, FP, { out });
  assert.equal(written.buffer, mine.buffer);
  assert.equal(written.byteOffset, 3);
  assert.deepEqual(written, fresh, 'dirty memory is fully overwritten');
  assert.equal(mine[3 + fresh.length], 0xee, 'nothing written past the blob');
  assert.throws(() => rlx.encodeEntry(e, FP, { out: new Uint8Array(fresh.length - 1) }), RangeError);
  assert.throws(() => rlx.encodeEntry(e, FP, { out: 'buffer' }), TypeError);
  assert.throws(() => rlx.encodedSize({ tokens: [1], k: [], v: [new Float32Array(1)] }), RangeError);
});

test('JS and C write the same bytes, and each reads what the other wrote', async () => {
  const rand = rng(11);
  for (let i = 0; i < 40; i++) {
    const e = randomEntry(rand);
    const c = cCodec();
    assert.equal(c.put(e.tokens, [...e.k, ...e.v], DTYPE.f32), 0);
    const fromC = encodeWithC(c, e.tokens);
    c.free();
    const fromJs = rlx.encodeEntry(e, FP);
    assert.deepEqual(fromJs, fromC, `entry ${i}: encodeEntry`);
    const cache = rlx.createCache({ capBytes: 1 << 24, fingerprint: FP });
    cache.insert(e.tokens, e);
    assert.deepEqual(cache.exportBlob(e.tokens), fromJs, `entry ${i}: exportBlob`);
    cache.close();
    assertSameEntry(rlx.decodeEntry(fromC, { fingerprint: FP }), e, `entry ${i}: C blob decoded in JS`);

    const back = cCodec();
    assert.equal(decodeWithC(back, fromJs), 0, `entry ${i}: rlxkv_decode of the JS blob`);
    assertSameEntry(back.get(e.tokens), e, `entry ${i}: JS blob decoded by C`);
    back.free();
  }
});

/**
 * Mutates a good blob 3000 ways (truncations, trailing bytes, bit flips,
 * u64 fields set to edge values) and compares the JS verdict with the C
 * codec's (rlxkv_inspect: the same error for every invalid one), and with
 * whether a cache over a store holding it (under its name) hits it: exactly
 * the valid blob of its fingerprint does (one of another fingerprint is
 * valid, but under a name not its own). content(m, restoredCache) checks a
 * restored entry's values.
 */
/** The tokens of a blob (as its first bytes hold them). */
function tokensOf(blob, n) {
  const dv = new DataView(blob.buffer, blob.byteOffset);
  return Uint32Array.from({ length: n }, (_, i) => dv.getUint32(32 + 8 * i, true));
}

async function agreeOnDamage(good, name, dir, tokenCount, rand, content, { servedWhenValid = true, layout } = {}) {
  const tokenLow = (i) => i >= 32 && i < 32 + 8 * tokenCount && (i - 32) % 8 < 4;
  const u64s = [0n, 1n, 2n, 3n, BigInt(tokenCount), 2n ** 32n - 1n, 2n ** 32n, 2n ** 53n, 2n ** 64n - 1n];
  const CODES = { [-1]: 'BAD_MAGIC', [-2]: 'TRUNCATED', [-3]: 'CORRUPT', [-12]: 'LIMIT' };
  const verdicts = {};
  let contentChecked = 0;
  for (let i = 0; i < 3000; i++) {
    let m = Uint8Array.from(good);
    const kind = i % 4;
    if (kind === 0) {
      m = m.subarray(0, Math.floor(rand() * m.length));
    } else if (kind === 1) {
      m = Uint8Array.from([...m, ...Array.from({ length: 1 + Math.floor(rand() * 8) }, () => rand() * 256)]);
    } else {
      for (let flips = 1 + Math.floor(rand() * 3); flips > 0; flips--) {
        // A token's low word only renames the blob in the store (its file
        // name hashes the tokens): every other byte is fair game.
        let pos;
        do pos = Math.floor(rand() * m.length); while (tokenLow(pos));
        if (kind === 2) m[pos] ^= 1 << Math.floor(rand() * 8);
        else {
          const field = Math.min(pos - (pos % 4), m.length - 8) & ~3;
          new DataView(m.buffer).setBigUint64(field, u64s[Math.floor(rand() * u64s.length)], true);
          if (tokenLow(field) || tokenLow(field + 4)) m = Uint8Array.from(good); // undo: see above
        }
      }
    }
    let js;
    try {
      const d = decodeBlob(m); // every check, as rlxkv_inspect
      // The JS objects a decode makes are bounded by the input's size (two
      // 8-byte lengths a layer), whatever its fields claim.
      assert.ok(d.k.length + d.v.length <= m.length / 8, `mutant ${i}: ${d.k.length + d.v.length} blocks from ${m.length} bytes`);
      js = 'ok';
    } catch (err) {
      assert.ok(err instanceof RlxkvError, String(err));
      js = err.code;
    }
    writeFileSync(join(dir, name), m);
    const fp = js === 'ok' ? new DataView(m.buffer, m.byteOffset).getBigUint64(8, true) : null;
    const c = inspectWithC(m);
    assert.equal(c === 0 ? 'ok' : CODES[c], js, `mutant ${i} (${m.length} bytes): JS ${js}, C ${c}`);
    // Valid under another fingerprint's name: foreign (the name hashes it).
    const want = js === 'ok' ? (fp === FP ? 'ok' : 'foreign') : js === 'LIMIT' ? 'too-large' : 'corrupt';

    // A cache over the store indexes it at open and reads it whole on a
    // hit: exactly the valid blob of its fingerprint hits.
    // (A page that is valid hits only if the parent it names is its own:
    // with servedWhenValid false, only "never served when invalid" holds.)
    const cache = await rlx.openCache({ capBytes: 1 << 24, fingerprint: FP, storage: 'fs', path: dir, layout });
    const hit = await cache.match(tokensOf(good, tokenCount));
    const full = hit !== null && hit.matched === tokenCount;
    if (servedWhenValid || want !== 'ok') assert.equal(full, want === 'ok', `mutant ${i}: JS ${js}, the cache ${full ? 'hits' : 'misses'}`);
    if (full && content) {
      content(m, cache);
      contentChecked++;
    }
    await cache.close({ flush: false });
    verdicts[js] = (verdicts[js] || 0) + 1;
    verdicts[want] = (verdicts[want] || 0) + 1;
  }
  for (const v of ['ok', 'foreign', 'BAD_MAGIC', 'TRUNCATED', 'CORRUPT']) assert.ok(verdicts[v] > 0, `some ${v} (${JSON.stringify(verdicts)})`);
  return contentChecked;
}

test('damaged blobs: the JS and C decoders agree on every one, and a cache hits exactly the valid ones', async () => {
  const rand = rng(99);
  const e = randomEntry(rand);
  e.k.push(Float32Array.of(1, 2, 3)); // at least one layer
  e.v.push(new Float32Array(0));
  const dir = tempDir();
  const seed = await rlx.openCache({ capBytes: 1 << 24, fingerprint: FP, storage: 'fs', path: dir });
  seed.insert(e.tokens, e);
  await seed.close();
  const [name] = storeFiles(dir);
  const good = readFileSync(join(dir, name));
  const checked = await agreeOnDamage(good, name, dir, e.tokens.length, rand, (m, cache) =>
    assertSameEntry(cache.lookup(e.tokens), rlx.decodeEntry(m), 'content'));
  assert.ok(checked > 100);
});

test('damaged RLXKVF16 blobs: the JS and C decoders agree on every one, and a cache hits exactly the valid ones', async () => {
  const rand = rng(1616);
  const f16 = (n) => Uint16Array.from({ length: n }, () => rand() * 65536);
  const tokens = Uint32Array.of(0xffffffff, 3, 9, 27);
  const good = encodeBlob(tokens, [f16(8), new Uint16Array(0), f16(3), f16(12)], FP);
  const dir = tempDir();
  const name = rlx.pageName(tokens, FP, 'f16');
  writeFileSync(join(dir, name), good);
  // a store takes the JS blob whole: listed ok as f16
  const store = await rlx.openStore({ storage: 'fs', path: dir });
  const [info] = store.list(FP);
  await store.close();
  assert.deepEqual([info.status, info.dtype, info.tokens, info.kvBytes], ['ok', 'f16', 4, 2 * 23]);
  await agreeOnDamage(good, name, dir, tokens.length, rand);
});

test('damaged pages: the JS and C decoders agree on every one, and a damaged page never serves', async () => {
  const rand = rng(4242);
  const layout = { order: 'head-major', heads: 2, headDim: 3, layers: 2 };
  const row = 2 * 3, parentTokens = Uint32Array.of(5, 6, 7, 8), tokens = Uint32Array.of(5, 6, 7, 8, 9, 10, 11);
  const kvOf = (n) => {
    const block = (s) => Float32Array.from({ length: row * n }, (_, i) => s * 100 + i);
    return { k: [block(1), block(2)], v: [block(3), block(4)] };
  };
  const dir = tempDir();
  const seed = await rlx.openCache({ capBytes: 1 << 24, fingerprint: FP, storage: 'fs', path: dir, layout });
  seed.insert(parentTokens, kvOf(4));
  seed.insert(tokens, kvOf(7));
  await seed.close();
  // The page: the one file of seven tokens (named by its 128-bit page name).
  const name = readdirSync(dir).find((f) => readFileSync(join(dir, f)).readUInt32LE(24) === tokens.length);
  assert.match(name, /^[0-9a-f]{32}\.rlxkv$/);
  const good = readFileSync(join(dir, name));
  assert.equal(String.fromCharCode(...good.subarray(0, 8)), 'RLXKVPG1');
  assert.equal(decodeBlob(good).page.start, 4);
  await agreeOnDamage(good, name, dir, tokens.length, rand, null, { servedWhenValid: false, layout });
});
