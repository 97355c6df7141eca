// The demo's transformer (demo/model.js): deterministic weights and KV,
// continuation from a past KV bit-identical to a full prefill, and the
// shipped asset (demo/assets/system.rlxkv) matching what the model computes.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createModel, kvLayoutOf, exp, sincos, tanh, kvHash, BOS, VOCAB } from '../../demo/model.js';
import { MODEL_OPTIONS, DEFAULT_SYSTEM_PROMPT, userTurn } from '../../demo/system-prompt.js';

const small = { seed: 7, layers: 2, dModel: 32, heads: 4 };
const TEXT = 'The quick brown fox jumps over the lazy dog. Ünïcödé too: 日本語 ✓';

/** The bits of a Float32Array, for exact comparison (NaN-safe, -0 distinct). */
const bits = (f) => new Uint32Array(f.buffer, f.byteOffset, f.length);

function assertKvIdentical(a, b, what) {
  assert.equal(a.k.length, b.k.length, `${what}: layers`);
  for (const side of ['k', 'v']) {
    for (let l = 0; l < a[side].length; l++) {
      assert.equal(a[side][l].length, b[side][l].length, `${what}: ${side}[${l}] length`);
      assert.deepEqual(bits(a[side][l]), bits(b[side][l]), `${what}: ${side}[${l}] bits`);
    }
  }
}


test('the deterministic math matches Math.* closely', () => {
  for (let x = -90; x < 80; x += 0.173) {
    assert.ok(Math.abs(exp(x) / Math.exp(x) - 1) < 1e-14, `exp(${x})`);
    assert.ok(Math.abs(tanh(x / 10) - Math.tanh(x / 10)) < 1e-14, `tanh(${x / 10})`);
  }
  for (let x = 0; x < 5000; x += 0.377) {
    const [s, c] = sincos(x);
    assert.ok(Math.abs(s - Math.sin(x)) < 1e-12 && Math.abs(c - Math.cos(x)) < 1e-12, `sincos(${x})`);
  }
  assert.equal(exp(-1000), 0);
});

test('encode/decode: UTF-8 bytes after a BOS', () => {
  const m = createModel(small);
  const t = m.encode('hé');
  assert.deepEqual([...t], [BOS, 0x68, 0xc3, 0xa9]);
  assert.deepEqual([...m.encode('hé', { bos: false })], [0x68, 0xc3, 0xa9]);
  assert.equal(m.decode(t), 'hé');
  assert.equal(m.decode(m.encode(TEXT)), TEXT);
  assert.equal(m.config.vocab, VOCAB);
});

test('same seed and config give bit-identical KV and logits; another seed does not', () => {
  const a = createModel(small), b = createModel(small);
  const tokens = a.encode(TEXT);
  const ra = a.prefill(tokens), rb = b.prefill(tokens);
  assertKvIdentical(ra.kv, rb.kv, 'two instances');
  assert.deepEqual(bits(ra.logits), bits(rb.logits));
  // Running again on the same instance (warm scratch buffers, after a
  // warm-up over a longer context) changes nothing.
  a.warmUp({ context: 64, rounds: 1 });
  assertKvIdentical(a.prefill(tokens).kv, ra.kv, 'second run');
  const c = createModel({ ...small, seed: 8 });
  assert.notEqual(kvHash(c.prefill(tokens).kv), kvHash(ra.kv));
  assert.notEqual(c.fingerprintKey, a.fingerprintKey);
  assert.equal(a.fingerprintKey, b.fingerprintKey);
});

test('KV layout: per layer, n_tokens rows of dModel floats', () => {
  const m = createModel(small);
  const tokens = m.encode('abcdef');
  const { kv, logits, nTokens } = m.prefill(tokens);
  assert.equal(nTokens, tokens.length);
  assert.equal(kv.k.length, small.layers);
  assert.equal(kv.v.length, small.layers);
  for (const b of [...kv.k, ...kv.v]) {
    assert.ok(b instanceof Float32Array);
    assert.equal(b.length, tokens.length * small.dModel);
    assert.ok(b.every(Number.isFinite));
  }
  assert.equal(logits.length, VOCAB);
  assert.ok(logits.every(Number.isFinite));
  assert.equal(m.kvBytesPerToken, 2 * small.layers * small.dModel * 4);
});

test('prefill(rest, prefill(prefix).kv) is bit-identical to prefill(all), at every split', () => {
  const m = createModel(small);
  const tokens = m.encode(TEXT);
  const full = m.prefill(tokens);
  for (let p = 1; p < tokens.length; p++) {
    const head = m.prefill(tokens.subarray(0, p));
    const past = { k: head.kv.k.map((b) => b.slice()), v: head.kv.v.map((b) => b.slice()) };
    const rest = m.prefill(tokens.subarray(p), head.kv);
    assertKvIdentical(rest.kv, full.kv, `split at ${p}`);
    assert.deepEqual(bits(rest.logits), bits(full.logits), `logits, split at ${p}`);
    assertKvIdentical(head.kv, past, `past KV unchanged, split at ${p}`);
  }
  // Token by token, too.
  let kv = null;
  for (let i = 0; i < tokens.length; i++) kv = m.prefill(tokens.subarray(i, i + 1), kv).kv;
  assertKvIdentical(kv, full.kv, 'token by token');
});

test('continuation from a trimmed longer KV (a partial cache hit) is bit-identical', () => {
  const m = createModel(small);
  const a = m.encode('shared prefix, then one ending');
  const b = m.encode('shared prefix, then another ending');
  let common = 0;
  while (a[common] === b[common]) common++;
  const kvA = m.prefill(a).kv;
  const trimmed = { k: kvA.k.map((x) => x.slice(0, common * small.dModel)), v: kvA.v.map((x) => x.slice(0, common * small.dModel)) };
  const viaHit = m.prefill(b.subarray(common), trimmed);
  assertKvIdentical(viaHit.kv, m.prefill(b).kv, 'partial hit');
});

test('the demo config: continuation and generation agree with a cold run', () => {
  const m = createModel(MODEL_OPTIONS);
  const sys = m.encode(DEFAULT_SYSTEM_PROMPT.slice(0, 200));
  const turn = m.encode(userTurn('What can you do?'), { bos: false });
  const all = new Uint32Array(sys.length + turn.length);
  all.set(sys);
  all.set(turn, sys.length);
  const cold = m.prefill(all);
  const warm = m.prefill(turn, m.prefill(sys).kv);
  assertKvIdentical(warm.kv, cold.kv, 'system + turn');
  assert.deepEqual(bits(warm.logits), bits(cold.logits));

  const seen = [];
  const g1 = m.generate(null, all, 12, { onToken: (t, i) => seen.push([t, i]) });
  const g2 = m.generate(m.prefill(sys).kv, all, 12);
  const g3 = m.generate(cold.kv, all, 12); // KV of every token: the last is fed again
  assert.equal(g1.length, 12);
  assert.deepEqual([...g2], [...g1]);
  assert.deepEqual([...g3], [...g1]);
  assert.deepEqual(seen, [...g1].map((t, i) => [t, i]));
  for (const t of g1) assert.ok((t >= 32 && t < 127) || t === 10, `printable token ${t}`);
  assert.equal(typeof m.decode(g1), 'string');
});

test('golden KV hash: the same bits in every engine', () => {
  // If this changes, the model changed: bump MODEL_VERSION and rerun
  // scripts/precompute.mjs. The browser computes the same hash.
  const m = createModel(MODEL_OPTIONS);
  const { kv } = m.prefill(m.encode('Hello, rlxkv!'));
  assert.equal(kvHash(kv), GOLDEN_HELLO);
});
const GOLDEN_HELLO = 'ed3a58ed';

test('rejects bad input', () => {
  const m = createModel(small);
  assert.throws(() => m.prefill([]), RangeError);
  assert.throws(() => m.prefill([300]), RangeError);
  assert.throws(() => m.prefill([1], { k: [], v: [] }), TypeError);
  assert.throws(() => createModel({ dModel: 30, heads: 4 }), RangeError);
});

const pagesUrl = new URL('../../demo/assets/kv/', import.meta.url);
const haveWasm = existsSync(new URL('../../wasm/dist/rlxkv_core.wasm', import.meta.url));

test('demo/assets/kv/ holds the pages of exactly the KV the model computes, named by their tokens', {
  skip: !existsSync(new URL('index.json', pagesUrl)) ? 'no published pages (run node scripts/precompute.mjs)' : !haveWasm ? 'wasm not built' : false,
}, async () => {
  const { default: init } = await import('../../js/index.js');
  const rlx = await init();
  const m = createModel(MODEL_OPTIONS);
  const fp = rlx.fingerprintOf(m.fingerprintKey);
  const tokens = m.encode(DEFAULT_SYSTEM_PROMPT);
  const { kv } = m.prefill(tokens);
  const index = JSON.parse(readFileSync(new URL('index.json', pagesUrl), 'utf8'));
  assert.deepEqual(index.pages.map((p) => p.tokens), [256, 512, 768, 1024, tokens.length], 'the grid pages, and the tail to the prompt\'s end');
  // Read back through a cache with the pages as its remote tier, served as files.
  const cache = rlx.createCache({
    capBytes: 1 << 26, fingerprint: fp, layout: kvLayoutOf(m.config),
    remote: { url: 'http://pages.invalid/', fetch: async (url) => new Response(readFileSync(new URL(url.split('/').pop(), pagesUrl))) },
  });
  const hit = await cache.match(tokens, { partial: true });
  assert.ok(hit, `no hit: ${JSON.stringify(cache.stats.remote)}`);
  assert.equal(hit.matched, tokens.length);
  const rows = (b) => b.subarray(0, tokens.length * m.config.dModel);
  assertKvIdentical({ k: hit.k, v: hit.v }, { k: kv.k.map(rows), v: kv.v.map(rows) }, 'published KV');
  for (const p of index.pages) assert.equal(p.name, rlx.pageName(tokens.subarray(0, p.tokens), fp));
  await cache.close();
});
