// 8-bit pages for the remote tier (FORMATS.md, "8-bit pages"): published
// from f32 and f16 KV (rlxkv publish --dtype q8), fetched by a cache with
// remote: { dtype: 'q8' } and dequantized into its entry. What a hit serves
// is exactly the dequantization of the published bytes (an independent
// reader here computes it), within half a row's scale of the original KV;
// what local storage keeps after is that KV under the f32 or f16 names.
// Clients of other dtypes never ask for a q8 name, and a bad q8 page (a NaN
// scale, a cut body, other tokens, another model's) makes the hit shorter,
// never a rejection.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import init from '../../js/index.js';
import { publishPages } from '../../store/publish.js';
import { narrowF32, widenF16 } from '../../format/f16.js';
import { decodeQ8 } from '../../format/q8.js';
import { encodeQ8 } from '../../format/q8-write.js';
import { storeFiles, tempDir } from './helpers.js';

const rlx = await init();
const cliPath = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
const FP = 0x9e8a11n;
const FP_Q8 = rlx.fingerprintOf('q8 test model remote-q8'); // what its q8 clients open with, and the tree is published under
const HM = { order: 'head-major', heads: 2, headDim: 16, layers: 2 };
const P = 64;
const system = Uint32Array.from({ length: 600 }, (_, i) => 1000 + ((i * 7919) % 5000)); // 9 pages and 24 tokens
const prompt = (user) => Uint32Array.from([...system, ...Array.from({ length: 20 }, (_, i) => user * 100 + i)]);

/**
 * KV of tokens[from..] in `layout`, each row a function of its token's
 * prefix (as a model's), of magnitudes from 2^-30 (subnormal scales) to
 * 2^9, signed, and some rows all zero.
 */
function kvOf(tokens, layout, from = 0) {
  const n = tokens.length - from, { heads: H, headDim: D } = layout, hashes = [];
  let h = 2166136261;
  for (const t of tokens) hashes.push((h = Math.imul(h ^ t, 16777619) >>> 0));
  const block = (side, l) => {
    const out = new Float32Array(H * n * D);
    for (let r = 0; r < n; r++) {
      const hash = hashes[from + r], mag = hash % 23 === 0 ? 0 : hash % 29 === 0 ? 2 ** -30 : 2 ** ((hash >>> 5) % 20 - 10);
      for (let head = 0; head < H; head++) {
        for (let d = 0; d < D; d++) {
          const x = ((Math.imul(hash ^ (side * 977 + l * 131 + head * 31 + d), 2654435761) >>> 0) / 2 ** 32) * 2 - 1;
          out[layout.order === 'head-major' ? (head * n + r) * D + d : (r * H + head) * D + d] = x * mag;
        }
      }
    }
    return out;
  };
  const layers = Array.from({ length: layout.layers }, (_, l) => l);
  return { k: layers.map((l) => block(0, l)), v: layers.map((l) => block(1, l)) };
}
const narrowed = ({ k, v }) => ({ k: k.map((b) => narrowF32(b)), v: v.map((b) => narrowF32(b)) });

/**
 * The deliberately simple reader: the KV of tokens 0..n-1 from the q8
 * pages of `dir` (names: those of the grid and tail, in order), each value
 * q × scale computed from the bytes as FORMATS.md says, rounded to f16 by
 * format/f16.js for an f16 page, placed by the layout's order. Also each
 * value's scale, for the error bound.
 */
function dequantized(dir, names, n, layout) {
  const { heads: H, headDim: D } = layout;
  let out = null, scales = null, dtype;
  for (const name of names) {
    const b = readFileSync(join(dir, name)), dv = new DataView(b.buffer, b.byteOffset, b.length);
    const u64 = (at) => Number(dv.getBigUint64(at, true));
    const start = u64(16), count = u64(24), own = count - start;
    let at = 32 + 8 * count + 24;
    dtype = u64(at) ? 'f16' : 'f32';
    assert.equal(u64(at + 8), D);
    const layers = u64(at + 16);
    at += 24;
    out ??= Array.from({ length: 2 * layers }, () => new Float32Array(H * n * D));
    scales ??= Array.from({ length: 2 * layers }, () => new Float32Array(H * n * D));
    for (let blk = 0; blk < 2 * layers; blk++) {
      assert.equal(u64(at), H * own * D);
      at += 8;
      for (let row = 0; row < H * own; row++) {
        const s = widenF16(Uint16Array.of(dv.getUint16(at, true)))[0];
        at += 2;
        const [head, r] = layout.order === 'head-major' ? [Math.floor(row / own), row % own] : [row % H, Math.floor(row / H)];
        for (let d = 0; d < D; d++) {
          const i = layout.order === 'head-major' ? (head * n + start + r) * D + d : ((start + r) * H + head) * D + d;
          out[blk][i] = dv.getInt8(at + d) * s;
          scales[blk][i] = s;
        }
        at += D;
      }
    }
    assert.equal(at, b.length);
  }
  const values = dtype === 'f16' ? out.map((x) => narrowF32(x)) : out;
  return { dtype, k: values.slice(0, values.length / 2), v: values.slice(values.length / 2), scales };
}

/** Each value of `got` (f32, or f16 bits) within half its scale of `want`'s (and f16's rounding). */
function assertWithinBound(got, want, scales, dtype) {
  const wide = (b) => (dtype === 'f16' ? widenF16(b) : b);
  got.forEach((g, blk) => {
    const x = wide(g), y = wide(want[blk]);
    for (let i = 0; i < x.length; i++) {
      const bound = scales[blk][i] / 2 + (dtype === 'f16' ? Math.abs(y[i]) * 2 ** -10 + 2 ** -24 : 0);
      if (!(Math.abs(x[i] - y[i]) <= bound * (1 + 1e-12))) assert.fail(`block ${blk} value ${i}: ${x[i]} vs ${y[i]}, past ${bound}`);
    }
  });
}
const bitsOf = (b) => [...new Uint32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength))];
const sameBits = (got, want, label) => got.forEach((g, i) => assert.deepEqual(bitsOf(g), bitsOf(want[i]), `${label} block ${i}`));

/** Names of the grid pages of `tokens` up to `end`, then a tail to `end` if it is off the grid. */
function pageNamesOf(tokens, end, fp, dtype) {
  const ends = Array.from({ length: Math.floor(end / P) }, (_, i) => (i + 1) * P);
  if (end % P) ends.push(end);
  return rlx.pageNames(tokens, ends, fp, dtype);
}

// ---- a static server of published trees -----------------------------------

let server, base;
const trees = new Map(); // tree -> directory
const requests = [];
const behaviour = new Map(); // file name -> (res) => handled
before(async () => {
  server = createServer((req, res) => {
    const [tree, name] = req.url.split('/').slice(-2);
    requests.push(name);
    if (behaviour.get(name)?.(res)) return;
    let bytes;
    try {
      bytes = readFileSync(join(trees.get(tree), name));
    } catch {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(bytes);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${server.address().port}/`;
  // The model's store (f32, head-major): the system prompt, published three ways.
  const store = tempDir();
  const author = await rlx.openCache({ capBytes: 1 << 26, fingerprint: FP, layout: HM, storage: 'fs', path: store });
  author.insert(system, kvOf(system, HM));
  await author.close();
  for (const [tree, dtype, asFingerprint] of [['q8', 'q8', FP_Q8], ['f32', null, null], ['f16', 'f16', null]]) {
    trees.set(tree, tempDir());
    await publishPages(rlx, [{ storage: 'fs', path: store }], trees.get(tree), { layout: HM, pageTokens: P, fingerprint: FP, dtype, asFingerprint });
  }
});
after(() => server.close());

const open = (tree, opts = {}, layout = HM, fingerprint = FP_Q8) => rlx.openCache({
  capBytes: 1 << 26, fingerprint, layout, storage: 'none', ...opts, remote: { url: `${base}${tree}/`, pageTokens: P, dtype: 'q8', ...opts.remote },
});
function reset() {
  requests.length = 0;
  behaviour.clear();
}

// ---- the format -------------------------------------------------------------

/**
 * The KV a cache restores from one q8 page of token 5 (pageTokens 1, its
 * only request that finds anything), fetched through remote.fetch: the
 * hit on [5], from remote.
 */
async function restored(bytes, layout) {
  const cache = await rlx.openCache({
    capBytes: 1 << 20, fingerprint: FP, layout, storage: 'none', f16As: 'Uint16Array',
    remote: { url: 'https://kv.test/', pageTokens: 1, dtype: 'q8', fetch: async (url) => new Response(url.endsWith('.rlxkv') ? bytes : null, { status: url.endsWith('.rlxkv') ? 200 : 404 }) },
  });
  const hit = await cache.match(Uint32Array.of(5));
  assert.equal(hit?.matched, 1, `stats ${JSON.stringify(cache.stats.remote)}`);
  await cache.close();
  return hit;
}

test('q8 rows: every value comes back within half its row\'s scale, the scale at most one f16 step over max/127', async () => {
  const rows = [[0, 0, 0, 0], [1, -1, 0.5, 127], [2 ** -30, -(2 ** -31), 0, 2 ** -32], [65504 * 127, 1, -2, 3], [-3.3, 1e-3, 2.2, 0.1]];
  const block = Float32Array.from(rows.flat());
  const bytes = encodeQ8(Uint32Array.of(5), [block, block], FP, { dtype: 'f32', group: 4 });
  const page = decodeQ8(bytes, FP);
  assert.equal(page.page, null);
  assert.deepEqual(page.k.map((b) => b.length), [20]);
  // One token of 5 heads of 4: the block's rows are the heads'.
  const hit = await restored(bytes, { order: 'head-major', heads: 5, headDim: 4, layers: 1 });
  for (const out of [hit.k[0], hit.v[0]]) {
    assert.ok(out instanceof Float32Array && out.length === 20);
    rows.forEach((row, r) => {
      const s = widenF16(Uint16Array.of(bytes[page.k[0].at + 6 * r] | (bytes[page.k[0].at + 6 * r + 1] << 8)))[0];
      const max = Math.max(...row.map(Math.abs));
      assert.ok(s >= max / 127 && s <= Math.max((max / 127) * (1 + 2 ** -10), 2 ** -24), `row ${r}: scale ${s} for max ${max}`);
      row.forEach((x, d) => {
        assert.equal(out[4 * r + d], Math.fround(new Int8Array(bytes.buffer)[page.k[0].at + 6 * r + 2 + d] * s), `row ${r} value ${d}: q × scale, exactly`);
        assert.ok(Math.abs(out[4 * r + d] - Math.fround(x)) <= s / 2, `row ${r} value ${d}: ${out[4 * r + d]} for ${x}`);
      });
    });
    assert.deepEqual([...out.subarray(0, 4)], [0, 0, 0, 0]);
  }
  assert.throws(() => encodeQ8(Uint32Array.of(5), [Float32Array.of(1, NaN, 0, 0), new Float32Array(0)], FP, { dtype: 'f32', group: 4 }), /not finite/);
  assert.throws(() => encodeQ8(Uint32Array.of(5), [Float32Array.of(1, 2, 3), new Float32Array(0)], FP, { dtype: 'f32', group: 4 }), /not rows of 4/);
});

test('q8 into f16 rounds each q × scale to nearest even, and saturates at ±65504 instead of overflowing', async () => {
  const block = Float32Array.from({ length: 64 }, (_, i) => (i - 32) * 0.37 + (i % 3) * 1e-3);
  const bytes = encodeQ8(Uint32Array.of(5), [block, block], FP, { dtype: 'f16', group: 64 });
  const page = decodeQ8(bytes, FP);
  assert.equal(page.dtype, 'f16');
  const layout = { order: 'head-major', heads: 1, headDim: 64, layers: 1 };
  const hit = await restored(bytes, layout);
  assert.equal(hit.dtype, 'f16');
  const s = widenF16(Uint16Array.of(bytes[page.k[0].at] | (bytes[page.k[0].at + 1] << 8)))[0];
  const exact = Float32Array.from({ length: 64 }, (_, i) => new Int8Array(bytes.buffer)[page.k[0].at + 2 + i] * s);
  assert.deepEqual([...hit.k[0]], [...narrowF32(exact)]);
  // A scale of 600 (bits 0x60b0): 127 × 600 is past the largest f16.
  const big = Uint8Array.from(bytes);
  big[page.k[0].at] = 0xb0;
  big[page.k[0].at + 1] = 0x60;
  big[page.k[0].at + 2] = 127;
  big[page.k[0].at + 3] = -127 & 0xff;
  big[page.k[0].at + 4] = 3;
  assert.deepEqual([...(await restored(big, layout)).k[0].subarray(0, 3)], [0x7bff, 0xfbff, narrowF32(Float32Array.of(1800))[0]]);
});

test('a q8 page of no layers, for a layout that names none, restores a hit of no values', async () => {
  const bytes = encodeQ8(Uint32Array.of(5), [], FP, { dtype: 'f32', group: 4 });
  assert.equal(decodeQ8(bytes, FP).k.length, 0);
  const hit = await restored(bytes, { order: 'head-major', heads: 1, headDim: 4 });
  assert.deepEqual([hit.k.length, hit.v.length], [0, 0]);
});

test('a q8 page is checked whole: every cut is truncated; bad scales, counts and parents are corrupt; another fingerprint is stale', () => {
  const name = pageNamesOf(system, 2 * P, FP_Q8, 'q8')[1];
  const good = readFileSync(join(trees.get('q8'), name));
  const page = decodeQ8(good, FP_Q8);
  assert.deepEqual(page.page, { start: P, parentN: P, parent: page.page.parent });
  assert.equal(decodeQ8(good, FP), null, 'another fingerprint: null, as decodeBlob\'s stale');
  for (let n = 0; n < good.length; n += n < 400 ? 1 : 97) {
    assert.throws(() => decodeQ8(good.subarray(0, n)), (e) => e.code === 'TRUNCATED', `cut at ${n}`);
  }
  const tokensEnd = 32 + 8 * 2 * P;
  const bad = (what, edit, code = 'CORRUPT') => {
    const b = Uint8Array.from(good);
    edit(b, new DataView(b.buffer));
    assert.throws(() => decodeQ8(b), (e) => e.code === code, what);
  };
  const scaleAt = page.v[1].at; // the last block's first row
  for (const bits of [0x7e00, 0x7c00, 0xbc00, 0x8000]) bad(`scale bits ${bits.toString(16)}`, (b, dv) => dv.setUint16(scaleAt, bits, true));
  assert.throws(() => decodeQ8(Uint8Array.from([...good, 0])), (e) => e.code === 'CORRUPT');
  bad('start at n_tokens', (b, dv) => dv.setUint32(16, 2 * P, true));
  bad('a token of 2^32', (b, dv) => dv.setUint32(36, 1, true));
  bad('parent_n under start', (b, dv) => dv.setUint32(tokensEnd, P - 1, true));
  bad('dtype 2', (b, dv) => dv.setUint32(tokensEnd + 24, 2, true));
  bad('group 0', (b, dv) => dv.setUint32(tokensEnd + 32, 0, true));
  bad('group 3: blocks not whole rows', (b, dv) => dv.setUint32(tokensEnd + 32, 3, true));
  bad('bad magic', (b) => { b[7] = 0x39; }, 'BAD_MAGIC');
  bad('a first page that names a parent', (b, dv) => dv.setUint32(16, 0, true));
  bad('more layers than the bytes hold', (b, dv) => dv.setUint32(tokensEnd + 40, 1e6, true), 'TRUNCATED');
  // 4097 layers of empty blocks: room for them all, one past the limit.
  const none = encodeQ8(Uint32Array.of(1), [], FP, { dtype: 'f32', group: 4 }), many = new Uint8Array(none.length + 4097 * 16);
  many.set(none);
  new DataView(many.buffer).setUint32(none.length - 8, 4097, true);
  assert.throws(() => decodeQ8(many), (e) => e.code === 'LIMIT');
});

// ---- the remote tier ----------------------------------------------------------

test('a q8 client reuses the published system prompt: exactly the dequantized bytes, within the error bound of the model\'s KV, in a quarter of f32\'s bytes', async () => {
  reset();
  const events = [];
  const cache = await open('q8', { onEvent: (e) => events.push(e) });
  const hit = await cache.match(prompt(1), { partial: true });
  assert.equal(hit.matched, system.length, '9 grid pages and the tail');
  assert.equal(hit.dtype, 'f32', 'restored to the dtype it was published from');
  assert.equal(events.at(-1).source, 'remote');
  const names = pageNamesOf(system, system.length, FP_Q8, 'q8');
  const want = dequantized(trees.get('q8'), names, system.length, HM);
  sameBits(hit.k, want.k, 'K');
  sameBits(hit.v, want.v, 'V');
  const model = kvOf(system, HM);
  assertWithinBound([...hit.k, ...hit.v], [...model.k, ...model.v], want.scales, 'f32');
  const stats = cache.stats.remote;
  assert.equal(stats.pages, 10);
  assert.equal(stats.refused, 0);
  // The pages and the hint, nothing else; against the f32 tree's, whose pages hold the same tokens (8 bytes each).
  const sizes = (tree) => readdirSync(trees.get(tree)).reduce((n, f) => n + readFileSync(join(trees.get(tree), f)).length, 0);
  assert.equal(stats.bytes, sizes('q8'));
  const tokenBytes = 8 * names.reduce((n, _, i) => n + Math.min((i + 1) * P, system.length), 0);
  const ratio = (stats.bytes - tokenBytes) / (sizes('f32') - tokenBytes);
  assert.ok(ratio > 0.28 && ratio < 0.29, `q8 over f32, past the tokens: ${ratio} ((1 + 2 / 16) / 4 = 0.281, and a few headers)`);
  await cache.close();
});

test('q8 pages published from f16 KV restore f16 entries: the dequantization rounded to f16, exactly', async () => {
  const dir = tempDir();
  trees.set('q8-of-f16', dir);
  const f16 = narrowed(kvOf(system, HM));
  await publishPages(rlx, [{ fingerprint: FP, tokens: system, ...f16 }], dir, { layout: HM, pageTokens: P, dtype: 'q8', fingerprint: FP, asFingerprint: FP_Q8 });
  reset();
  const cache = await open('q8-of-f16');
  const hit = await cache.match(prompt(2), { partial: true });
  assert.equal(hit.matched, system.length);
  assert.equal(hit.dtype, 'f16');
  const want = dequantized(dir, pageNamesOf(system, system.length, FP_Q8, 'q8'), system.length, HM);
  assert.equal(want.dtype, 'f16');
  sameBits(hit.k, want.k, 'K');
  sameBits(hit.v, want.v, 'V');
  assertWithinBound([...hit.k, ...hit.v], [...f16.k, ...f16.v], want.scales, 'f16');
  await cache.close();
});

test('a token-major layout is dequantized by its own row order', async () => {
  const TM = { ...HM, order: 'token-major' }, dir = tempDir();
  trees.set('q8-tm', dir);
  await publishPages(rlx, [{ fingerprint: FP, tokens: system, ...kvOf(system, TM) }], dir, { layout: TM, pageTokens: P, dtype: 'q8', fingerprint: FP, asFingerprint: FP_Q8 });
  reset();
  const cache = await open('q8-tm', {}, TM);
  const hit = await cache.match(prompt(3), { partial: true });
  assert.equal(hit.matched, system.length);
  const want = dequantized(dir, pageNamesOf(system, system.length, FP_Q8, 'q8'), system.length, TM);
  sameBits([...hit.k, ...hit.v], [...want.k, ...want.v], 'KV');
  await cache.close();
});

test('pages past what memory holds join it: the q8 run after 200 held tokens', async () => {
  reset();
  const cache = await open('q8');
  const held = system.subarray(0, 200), model = kvOf(system, HM);
  cache.insert(held, kvOf(held, HM));
  const hit = await cache.match(prompt(1), { partial: true });
  assert.equal(hit.matched, system.length);
  const want = dequantized(trees.get('q8'), pageNamesOf(system, system.length, FP_Q8, 'q8'), system.length, HM);
  // Tokens 0..199 are memory's own KV, the model's; 200.. the pages', past grid point 192.
  hit.k.forEach((b, l) => {
    for (let head = 0; head < HM.heads; head++) {
      const row = (t) => (head * system.length + t) * HM.headDim;
      assert.deepEqual([...b.subarray(row(0), row(200))], [...model.k[l].subarray(row(0), row(200))]);
      assert.deepEqual([...b.subarray(row(200), row(600))], [...want.k[l].subarray(row(200), row(600))]);
    }
  });
  assert.deepEqual(requests.filter((r) => r.endsWith('.rlxkv')).sort(), [...pageNamesOf(system, system.length, FP_Q8, 'q8').slice(3)].sort());
  await cache.close();
});

test('clients of f32 and f16 never ask for a q8 name, and a q8 client never for theirs', async () => {
  const q8Names = new Set(readdirSync(trees.get('q8')));
  for (const dtype of ['f32', 'f16']) {
    reset();
    const cache = await open('q8', { remote: { dtype } }, HM, FP_Q8);
    assert.equal(await cache.match(prompt(1), { partial: true }), null, 'a q8 tree holds nothing under their names');
    assert.ok(requests.length > 0);
    assert.deepEqual(requests.filter((r) => q8Names.has(r)), [], `${dtype}: no q8 name asked`);
    await cache.close();
    // And a tree of theirs serves them: published from the f32 store as it is, and narrowed to f16.
    const own = await open(dtype, { remote: { dtype } }, HM, FP);
    const hit = await own.match(prompt(1), { partial: true });
    assert.equal(hit.matched, system.length);
    const model = dtype === 'f16' ? narrowed(kvOf(system, HM)) : kvOf(system, HM);
    sameBits([...hit.k, ...hit.v], [...model.k, ...model.v], `${dtype} tree`);
    await own.close();
  }
  reset();
  const cache = await open('f32', {}, HM, FP);
  assert.equal(await cache.match(prompt(1), { partial: true }), null);
  const others = new Set([...readdirSync(trees.get('f32')), ...readdirSync(trees.get('f16'))]);
  assert.deepEqual(requests.filter((r) => others.has(r)), []);
  await cache.close();
});

/** A fresh q8 client's hit under a server changed by `setup`: tokens matched, remote stats; what is served is the pages' dequantization. */
async function hitWith(setup) {
  reset();
  setup();
  const cache = await open('q8');
  const hit = await cache.match(prompt(1), { partial: true });
  const stats = cache.stats.remote;
  if (hit) {
    const names = pageNamesOf(system, hit.matched, FP_Q8, 'q8');
    const want = dequantized(trees.get('q8'), names, hit.matched, HM);
    sameBits([...hit.k, ...hit.v], [...want.k, ...want.v], 'served');
  }
  await cache.close();
  return { matched: hit ? hit.matched : 0, stats };
}
const q8Name = (end) => pageNamesOf(system, end, FP_Q8, 'q8').at(-1);
const serve = (name, edit) => behaviour.set(name, (res) => {
  res.writeHead(200).end(edit(Uint8Array.from(readFileSync(join(trees.get('q8'), name)))));
  return true;
});

test('bad q8 pages are refused and the hit is shorter: a NaN scale, a cut body, other tokens under a right name, another model\'s page', async () => {
  const nan = await hitWith(() => serve(q8Name(5 * P), (b) => {
    const page = decodeQ8(b);
    new DataView(b.buffer).setUint16(page.v[0].at + 10 * (HM.headDim + 2), 0x7e00, true);
    return b;
  }));
  assert.equal(nan.matched, 4 * P);
  assert.equal(nan.stats.refused, 1);
  assert.match(nan.stats.lastError, /refused: decoding q8 page: block 2 row 10: a scale that is negative, infinite or NaN/);
  const cut = await hitWith(() => serve(q8Name(3 * P), (b) => b.subarray(0, b.length - 7)));
  assert.equal(cut.matched, 2 * P);
  assert.match(cut.stats.lastError, /truncated/);
  const wrongTokens = await hitWith(() => behaviour.set(q8Name(7 * P), (res) => {
    res.writeHead(200).end(readFileSync(join(trees.get('q8'), q8Name(6 * P))));
    return true;
  }));
  assert.equal(wrongTokens.matched, 6 * P);
  assert.match(wrongTokens.stats.lastError, /not the q8 page of tokens 384..447/);
  // The model's own fingerprint (not its q8 one): the page of another cache's KV.
  const otherDir = tempDir();
  await publishPages(rlx, [{ fingerprint: FP, tokens: system, ...kvOf(system, HM) }], otherDir, { layout: HM, pageTokens: P, dtype: 'q8' });
  const foreign = await hitWith(() => behaviour.set(q8Name(P), (res) => {
    res.writeHead(200).end(readFileSync(join(otherDir, pageNamesOf(system, P, FP, 'q8')[0])));
    return true;
  }));
  assert.equal(foreign.matched, 0);
  assert.equal(foreign.stats.refused, 1);
  // A q8 page of f16 values in a run of f32 ones (a tree published twice): the run stops before it.
  const f16Dir = tempDir();
  await publishPages(rlx, [{ fingerprint: FP, tokens: system, ...narrowed(kvOf(system, HM)) }], f16Dir, { layout: HM, pageTokens: P, dtype: 'q8', fingerprint: FP, asFingerprint: FP_Q8 });
  const mixed = await hitWith(() => behaviour.set(q8Name(4 * P), (res) => {
    res.writeHead(200).end(readFileSync(join(f16Dir, q8Name(4 * P))));
    return true;
  }));
  assert.equal(mixed.matched, 3 * P);
  assert.match(mixed.stats.lastError, /a q8 page of f16 values after f32 ones/);
  // A q8 page whose rows are not the layout's head_dim.
  const rows = await hitWith(() => serve(q8Name(P), (b) => {
    const page = decodeQ8(b);
    const blocks = [...page.k, ...page.v].map(() => new Float32Array(HM.heads * P * HM.headDim));
    return encodeQ8(page.tokens, blocks, FP_Q8, { dtype: 'f32', group: 8 });
  }));
  assert.equal(rows.matched, 0);
  assert.match(rows.stats.lastError, /rows of 8 values a scale, but the layout's head_dim is 16/);
});

test('local storage keeps the dequantized KV under the f32 names; a restart reads it back with no request', async () => {
  reset();
  const dir = tempDir();
  const opts = { capBytes: 1 << 26, fingerprint: FP_Q8, layout: HM, storage: 'fs', path: dir, remote: { url: `${base}q8/`, pageTokens: P, dtype: 'q8' } };
  const cache = await rlx.openCache(opts);
  const first = await cache.match(prompt(1), { partial: true });
  const kv = [...first.k, ...first.v].map((b) => b.slice());
  await cache.close();
  const stored = storeFiles(dir);
  assert.ok(stored.includes(rlx.pageName(system, FP_Q8, 'f32')), 'an f32 entry, under its f32 name');
  assert.ok(!stored.some((n) => pageNamesOf(system, system.length, FP_Q8, 'q8').includes(n)), 'no q8 name in a store');
  requests.length = 0;
  const again = await (await init({ newInstance: true })).openCache(opts);
  const hit = await again.match(prompt(4), { partial: true });
  assert.equal(hit.matched, system.length);
  sameBits([...hit.k, ...hit.v], kv, 'restored');
  assert.equal(requests.length, 0);
  await again.close();
});

test('rlxkv publish --dtype q8 --as-fingerprint writes a tree that verify checks, every scale read', async () => {
  const store = tempDir(), out = tempDir();
  const author = await rlx.openCache({ capBytes: 1 << 26, fingerprint: FP, layout: HM, storage: 'fs', path: store });
  author.insert(system, kvOf(system, HM));
  await author.close();
  const run = (...args) => spawnSync(process.execPath, [cliPath, ...args], { encoding: 'utf8' });
  const pub = run('publish', store, out, '--layout', 'head-major,2,16', '--page-tokens', String(P), '--dtype', 'q8',
    '--fingerprint', FP.toString(16), '--as-fingerprint', FP_Q8.toString(16));
  assert.equal(pub.status, 0, pub.stderr);
  const names = pageNamesOf(system, system.length, FP_Q8, 'q8');
  assert.deepEqual(readdirSync(out).filter((f) => f.endsWith('.rlxkv')).sort(), [...names].sort());
  assert.equal(run('verify', out).status, 0);
  assert.match(run('verify', join(out, names[1])).stdout, /ok \(RLXKVPQ8\)/);
  assert.equal(run('verify', '--fingerprint', FP.toString(16), join(out, names[1])).status, 1, 'published under the q8 fingerprint');
  const bytes = readFileSync(join(out, names[2]));
  new DataView(bytes.buffer, bytes.byteOffset).setUint16(decodeQ8(bytes).k[1].at, 0xfc00, true);
  writeFileSync(join(out, names[2]), bytes);
  const bad = run('verify', out);
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, new RegExp(`${names[2]}: decoding q8 page: block 1 row 0: a scale that is negative, infinite or NaN`));
  assert.match(run('publish', store, tempDir(), '--layout', 'head-major,2,16', '--dtype', 'q4').stderr, /--dtype: f32, f16 or q8/);
  assert.match(run('publish', store, tempDir(), '--layout', 'head-major,2,16', '--dtype', 'q8', '--as-fingerprint', '1').stderr, /--as-fingerprint needs --fingerprint/);
});
