// The remote tier as an app meets it: a system prompt's KV published as
// pages (rlx.publishPages / `rlxkv publish`) on a plain HTTP server, and a
// cache that has none of it reusing it by name, from the tokens alone.
// Whatever the server does (404 mid-chain, 500, no answer, a page of other
// tokens under a right name, a cut body, another model's page), match()
// never rejects and never serves wrong KV: the hit is the longest run of
// right pages. Past the last grid point, the published entry's end (its
// tail page, listed in the grid page's hint file) is reused too. The names
// of a prompt's grid come from one pass over it, each the C
// rlxkv_page_name of its prefix.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { readFileSync, readdirSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import init from '../../js/index.js';
import { publishPages } from '../../store/publish.js';
import { modelKv, tempDir } from './helpers.js';
import { narrowF32 } from '../../format/f16.js';
import createTestCore, { wasmUrls as testWasmUrls } from '../../build/wasm/test/rlxkv_core_test.mjs';

const rlx = await init();
const cliPath = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
const FP = 0x7e7073n;
const layout = { order: 'head-major', heads: 2, headDim: 4, layers: 2 };
const P = 64; // tokens a page
const kvOf = (tokens, from = 0) => modelKv(tokens, layout, from);
const system = Uint32Array.from({ length: 600 }, (_, i) => 1000 + ((i * 7919) % 5000)); // 9 pages and 24 tokens
const prompt = (user) => Uint32Array.from([...system, ...Array.from({ length: 20 }, (_, i) => user * 100 + i)]);

/** A static server of `dir`, whose answers a test can change: name -> (res) => boolean (handled). */
let server, base, published;
const requests = [];
const behaviour = new Map();
before(async () => {
  published = tempDir();
  const store = tempDir();
  const author = await rlx.openCache({ capBytes: 1 << 24, fingerprint: FP, layout, storage: 'fs', path: store });
  author.insert(system, kvOf(system));
  await author.close();
  const report = await publishPages(rlx, [{ storage: 'fs', path: store }], published, { layout, pageTokens: P });
  assert.equal(report.pages.length, 10, '9 grid pages, and the tail to the system prompt\'s end');
  assert.equal(report.hints, 1);
  server = createServer((req, res) => {
    const name = req.url.split('/').pop();
    requests.push(req.url);
    const special = behaviour.get(name);
    if (special && special(res)) return;
    let bytes;
    try {
      bytes = readFileSync(join(published, name));
    } catch {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'cache-control': 'public, max-age=31536000, immutable' }).end(bytes);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${server.address().port}/kv/`;
});
after(() => server.close());

const nameAt = (end, fp = FP) => rlx.pageName(system.subarray(0, end), fp);
const open = (opts = {}) => rlx.openCache({ capBytes: 1 << 24, fingerprint: FP, layout, storage: 'none', remote: { url: base, pageTokens: P, ...opts } });
function reset() {
  requests.length = 0;
  behaviour.clear();
}

test('a first visit reuses the published system prompt, fetched by name; a second prompt over it fetches nothing', async () => {
  reset();
  const events = [];
  const cache = await rlx.openCache({ capBytes: 1 << 24, fingerprint: FP, layout, storage: 'none', remote: { url: base, pageTokens: P }, onEvent: (e) => events.push(e) });
  assert.equal(requests.length, 0, 'opening asks nothing');
  const hit = await cache.match(prompt(1), { partial: true });
  assert.equal(hit.matched, system.length, 'the whole system prompt: 9 grid pages and the tail past them');
  assert.deepEqual(hit.k, kvOf(system).k);
  assert.deepEqual(hit.v, kvOf(system).v);
  assert.equal(events.at(-1).source, 'remote');
  assert.deepEqual(requests.sort(), [...Array.from({ length: 9 }, (_, i) => `/kv/${nameAt((i + 1) * P)}`),
    `/kv/${nameAt(9 * P).replace('.rlxkv', '.ends')}`, `/kv/${nameAt(system.length)}`].sort());
  assert.equal(cache.stats.remote.pages, 10);
  // Another user's prompt shares the published prefix: from memory, no request.
  requests.length = 0;
  const other = await cache.match(prompt(2), { partial: true });
  assert.equal(other.matched, system.length);
  assert.equal(requests.length, 0);
  assert.equal(cache.lookup(prompt(3), { partial: true }).matched, system.length);
  await cache.close();
});

test('fetched pages are kept in local storage: after a restart they come from there, with no request', async () => {
  reset();
  const dir = tempDir();
  const opts = { capBytes: 1 << 24, fingerprint: FP, layout, storage: 'fs', path: dir, remote: { url: base, pageTokens: P } };
  const cache = await rlx.openCache(opts);
  assert.equal((await cache.match(prompt(1), { partial: true })).matched, system.length);
  await cache.close();
  requests.length = 0;
  const again = await (await init({ newInstance: true })).openCache(opts);
  const hit = await again.match(prompt(4), { partial: true });
  assert.equal(hit.matched, system.length);
  assert.deepEqual(hit.v, kvOf(system).v);
  assert.equal(requests.length, 0);
  await again.close();
});

test('pages past what memory holds are all that is asked for', async () => {
  reset();
  const cache = await open();
  cache.insert(system.subarray(0, 200), kvOf(system.subarray(0, 200)));
  const hit = await cache.match(prompt(1), { partial: true });
  assert.equal(hit.matched, system.length);
  assert.deepEqual(hit.k, kvOf(system).k);
  // 200 tokens held: the grid point before them is 192 (page 3); pages 4..9 asked for, the hint and the tail.
  assert.deepEqual(requests.sort(), [...Array.from({ length: 6 }, (_, i) => `/kv/${nameAt((i + 4) * P)}`),
    `/kv/${nameAt(9 * P).replace('.rlxkv', '.ends')}`, `/kv/${nameAt(system.length)}`].sort());
  await cache.close();
});

/** The hit of a fresh cache under a server changed by `setup`, and the cache's remote stats. */
async function hitWith(setup, opts = {}) {
  reset();
  setup();
  const cache = await open(opts);
  const hit = await cache.match(prompt(1), { partial: true });
  const stats = cache.stats.remote;
  if (hit) {
    const want = kvOf(system.subarray(0, hit.matched));
    assert.deepEqual(hit.k, want.k, 'whatever is served is this prompt\'s KV');
    assert.deepEqual(hit.v, want.v);
  }
  await cache.close();
  return { matched: hit ? hit.matched : 0, stats };
}
const answer = (status, body = '') => (res) => { res.writeHead(status).end(body); return true; };

test('a 404 mid-chain ends the hit before it', async () => {
  const { matched, stats } = await hitWith(() => behaviour.set(nameAt(5 * P), answer(404)));
  assert.equal(matched, 4 * P);
  assert.equal(stats.notFound, 2, 'the page, and the hint file of the grid point before it (none was published)');
});

test('a server error ends the hit before it, counted, and match() does not reject', async () => {
  const { matched, stats } = await hitWith(() => behaviour.set(nameAt(3 * P), answer(500)));
  assert.equal(matched, 2 * P);
  assert.equal(stats.failed, 1);
  assert.match(stats.lastError, /HTTP 500/);
});

test('a server that does not answer in timeoutMs makes a shorter hit, not a hang', async () => {
  const { matched, stats } = await hitWith(() => behaviour.set(nameAt(2 * P), () => true /* never answers */), { timeoutMs: 300 });
  assert.equal(matched, P);
  assert.ok(stats.failed >= 1);
  assert.match(stats.lastError, /no answer within 300 ms/);
});

test('a page of other tokens under a right name, a cut body and another model\'s page are refused', async () => {
  const wrongTokens = await hitWith(() => behaviour.set(nameAt(4 * P), (res) => {
    res.writeHead(200).end(readFileSync(join(published, nameAt(3 * P))));
    return true;
  }));
  assert.equal(wrongTokens.matched, 3 * P);
  assert.equal(wrongTokens.stats.refused, 1);
  const cut = await hitWith(() => behaviour.set(nameAt(6 * P), (res) => {
    const bytes = readFileSync(join(published, nameAt(6 * P)));
    res.writeHead(200).end(bytes.subarray(0, bytes.length - 100));
    return true;
  }));
  assert.equal(cut.matched, 5 * P);
  assert.equal(cut.stats.refused, 1);
  // Another model's KV of the same tokens, served under this model's name.
  const otherDir = tempDir(), otherStore = tempDir();
  const other = await rlx.openCache({ capBytes: 1 << 24, fingerprint: FP + 1n, layout, storage: 'fs', path: otherStore });
  other.insert(system, kvOf(system));
  await other.close();
  await publishPages(rlx, [{ storage: 'fs', path: otherStore }], otherDir, { layout, pageTokens: P });
  const foreign = await hitWith(() => behaviour.set(nameAt(P), (res) => {
    res.writeHead(200).end(readFileSync(join(otherDir, nameAt(P, FP + 1n))));
    return true;
  }));
  assert.equal(foreign.matched, 0);
  assert.equal(foreign.stats.refused, 1);
});

test('pages served compressed (Content-Encoding: gzip) are taken as fetch takes them', async () => {
  const { matched, stats } = await hitWith(() => {
    for (let i = 1; i <= 9; i++) {
      behaviour.set(nameAt(i * P), (res) => {
        res.writeHead(200, { 'content-encoding': 'gzip', 'content-type': 'application/octet-stream' }).end(gzipSync(readFileSync(join(published, nameAt(i * P)))));
        return true;
      });
    }
  });
  assert.equal(matched, system.length);
  assert.equal(stats.refused, 0);
});

/** Answers page `name` when the returned release() is called: with its bytes, or with `status`. */
function holdBack(name, status = 200) {
  let release;
  const released = new Promise((resolve) => { release = resolve; });
  behaviour.set(name, (res) => {
    released.then(() => (status === 200 ? res.writeHead(200).end(readFileSync(join(published, name))) : res.writeHead(status).end()));
    return true;
  });
  return release;
}
/** Waits (at most 10 s) until `value()` reaches n; its value then. */
async function reaches(value, n) {
  for (let i = 0; i < 1000 && value() < n; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  return value();
}
/** Waits (at most 10 s) until memory holds `n` tokens of prompt(1); their count then. */
const heldReaches = (cache, n) => reaches(() => cache.lookup(prompt(1), { partial: true })?.matched ?? 0, n);

test('pages are put in memory as they arrive: while the last is held back, the pages before it are already there', async () => {
  reset();
  const release = holdBack(nameAt(9 * P));
  const cache = await open();
  const matching = cache.match(prompt(1), { partial: true });
  assert.equal(await heldReaches(cache, 8 * P), 8 * P);
  assert.deepEqual(cache.lookup(prompt(1), { partial: true }).k, kvOf(system.subarray(0, 8 * P)).k);
  release();
  const hit = await matching;
  assert.equal(hit.matched, system.length);
  assert.deepEqual(hit.v, kvOf(system).v);
  await cache.close();
});

test('a match aborted while pages are on the way rejects, and the pages that arrived before stay', async () => {
  reset();
  const release = holdBack(nameAt(5 * P));
  const cache = await open();
  const stop = new AbortController();
  const matching = cache.match(prompt(1), { partial: true, signal: stop.signal });
  assert.equal(await heldReaches(cache, 4 * P), 4 * P);
  // Every request of the run made (its 9 grid pages and the hint), so that none reaches the server after this test.
  assert.equal(await reaches(() => requests.length, 10), 10);
  stop.abort();
  await assert.rejects(matching, { name: 'AbortError' });
  release();
  const hit = cache.lookup(prompt(1), { partial: true });
  assert.equal(hit.matched, 4 * P, 'pages 1 to 4; none past the one held back');
  assert.deepEqual(hit.k, kvOf(system.subarray(0, 4 * P)).k);
  await cache.close();
});

test('a prompt nothing was published for misses after one round of requests (one a worker in flight)', async () => {
  reset();
  const cache = await open();
  const other = Uint32Array.from({ length: 300 }, (_, i) => 7 + i);
  assert.equal(await cache.match(other, { partial: true }), null);
  assert.equal(requests.length, 5, 'its 4 grid pages and the last one\'s hint asked at once (fewer than maxInFlight); none after the 404s');
  assert.ok(cache.stats.remote.notFound >= 1);
  await cache.close();
});

test('a prompt that parts from the published one after its last grid point reuses up to that point', async () => {
  reset();
  const cache = await open();
  const parted = Uint32Array.from([...system.subarray(0, 590), ...Array.from({ length: 30 }, (_, i) => 50 + i)]);
  const hit = await cache.match(parted, { partial: true });
  assert.equal(hit.matched, 9 * P);
  assert.deepEqual(hit.k, kvOf(system.subarray(0, 9 * P)).k);
  // Its tail's name (its own 600 tokens) was asked for and not found: a prompt's KV is never another's.
  assert.ok(requests.includes(`/kv/${rlx.pageName(parted.subarray(0, 600), FP)}`));
  assert.equal(cache.stats.remote.notFound, 1);
  await cache.close();
});

test('requests go only to the configured URL, and only from match()', async () => {
  reset();
  const seen = [], thisOf = new Set();
  // As a browser's fetch, it is called with no `this` (window.fetch refuses another one).
  const fetchSpy = function (url, init) {
    seen.push(String(url));
    thisOf.add(this);
    return fetch(url, init);
  };
  const cache = await open({ fetch: fetchSpy });
  cache.lookup(prompt(1), { partial: true });
  const unrelated = Uint32Array.from({ length: 30 }, (_, i) => 90000 + i);
  cache.insert(unrelated, kvOf(unrelated));
  await cache.flush();
  assert.equal(seen.length, 0);
  await cache.match(prompt(1), { partial: true });
  assert.ok(seen.length > 0 && seen.every((u) => u.startsWith(base)));
  assert.ok(seen.some((u) => u.endsWith('.ends')), 'the hint file asked for too');
  assert.deepEqual([...thisOf], [undefined], 'fetch called unbound');
  await cache.close();
  // Without remote, nothing touches the network.
  const plain = await rlx.openCache({ capBytes: 1 << 24, fingerprint: FP, layout, storage: 'none' });
  const old = globalThis.fetch;
  globalThis.fetch = () => { throw new Error('fetched'); };
  try {
    assert.equal(await plain.match(prompt(1), { partial: true }), null);
  } finally {
    globalThis.fetch = old;
  }
  await plain.close();
});

test('an entry in memory is published under its values\' dtype, and one that says another is refused', async () => {
  const out = tempDir();
  const { k, v } = kvOf(system);
  const f16 = { fingerprint: FP, tokens: system, k: k.map((b) => narrowF32(b)), v: v.map((b) => narrowF32(b)) };
  const report = await publishPages(rlx, [f16], out, { layout, pageTokens: P });
  assert.equal(report.pages[0].name, rlx.pageName(system.subarray(0, P), FP, 'f16'));
  // A decoded f32 blob's fields spread over narrowed blocks: its names would be the f32 ones.
  await assert.rejects(publishPages(rlx, [{ ...f16, dtype: 'f32' }], tempDir(), { layout, pageTokens: P }), /says dtype f32, but its blocks are f16/);
});

test('rlxkv publish writes the pages of a store and verify checks the published tree', async () => {
  const store = tempDir(), out = tempDir();
  const author = await rlx.openCache({ capBytes: 1 << 24, fingerprint: FP, layout, storage: 'fs', path: store });
  author.insert(system, kvOf(system));
  author.insert(prompt(1), kvOf(prompt(1)));
  await author.close();
  const run = (...args) => spawnSync(process.execPath, [cliPath, ...args], { encoding: 'utf8' });
  const pub = run('publish', store, out, '--layout', 'head-major,2,4', '--page-tokens', String(P), '--fingerprint', FP.toString(16));
  assert.equal(pub.status, 0, pub.stderr);
  const files = readdirSync(out).sort();
  const tail = rlx.pageName(prompt(1), FP), hint = nameAt(9 * P).replace('.rlxkv', '.ends');
  assert.deepEqual(files, [...Array.from({ length: 9 }, (_, i) => nameAt((i + 1) * P)), tail, hint].sort(),
    'the two entries share their 9 pages; the longer one\'s tail, listed in the hint');
  assert.equal(readFileSync(join(out, hint), 'utf8'), `${prompt(1).length}\n`);
  assert.match(pub.stdout, /10 pages/);
  const total = files.filter((f) => f !== hint).reduce((n, f) => n + statSync(join(out, f)).size, 0);
  assert.match(pub.stdout, new RegExp(`${total} bytes`));
  assert.equal(run('verify', out).status, 0);
  // A --layout whose heads do not fit the store's KV publishes nothing, and says so.
  const wrong = run('publish', store, tempDir(), '--layout', 'head-major,3,4', '--page-tokens', String(P));
  assert.equal(wrong.status, 1);
  assert.match(wrong.stderr, /1 entry of the stores could not be read with --layout head-major,3,4/);
  // A hint listing an end no page has.
  const listed = readFileSync(join(out, hint), 'utf8');
  writeFileSync(join(out, hint), `${listed}601\n`);
  assert.match(run('verify', out).stderr, /no page after .* ends at 601/);
  writeFileSync(join(out, hint), listed);
  // A page whose parent is missing: the tree is broken.
  unlinkSync(join(out, nameAt(3 * P)));
  const broken = run('verify', out);
  assert.equal(broken.status, 1);
  assert.match(broken.stdout + broken.stderr, /parent/);
  rmSync(out, { recursive: true, force: true });
});

test('a prompt\'s page names from one pass are the C rlxkv_page_name of each prefix, for f32, f16 and q8', async () => {
  const M = await createTestCore({ wasmBinary: readFileSync(testWasmUrls()[0]) });
  const cName = (tokens, fp, dtype) => {
    const p = M._malloc(4 * tokens.length + 48);
    M.HEAPU32.set(tokens, p >>> 2);
    M._rlxkv_page_name(fp, dtype, p, tokens.length, p + 4 * tokens.length);
    const at = p + 4 * tokens.length, name = new TextDecoder().decode(M.HEAPU8.subarray(at, M.HEAPU8.indexOf(0, at)));
    M._free(p);
    return name;
  };
  const ends = [0, 1, 2, 63, 64, 64, 65, 300, 599, 600];
  for (const [dtype, code] of [['f32', 0], ['f16', 1], ['q8', 2]]) {
    for (const fp of [0n, FP, 2n ** 64n - 1n]) {
      const names = rlx.pageNames(system, ends, fp, dtype);
      assert.deepEqual(names, ends.map((e) => cName(system.subarray(0, e), fp, code)), `${dtype} ${fp}`);
      assert.equal(rlx.pageName(system.subarray(0, 300), fp, dtype), names[7]);
    }
  }
  assert.equal(new Set(['f32', 'f16', 'q8'].map((d) => rlx.pageName(system, FP, d))).size, 3, 'the dtype is in the name');
  assert.throws(() => rlx.pageNames(system, [64, 63], FP), /ascending/);
  assert.throws(() => rlx.pageNames(system, [601], FP), /ascending integers from 0 to the 600 tokens/);
  assert.throws(() => rlx.pageNames(system, [1.5], FP), RangeError);
  assert.throws(() => rlx.pageName(system, FP, 'q4'), /'f32', 'f16' or 'q8'/);
});
