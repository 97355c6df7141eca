// The remote tier in Chromium, as a site uses it: a system prompt's KV
// published as pages (rlx.publishPages, as `rlxkv publish` does) and served
// by the site's own server; a first visit with an empty IndexedDB reuses it
// by name, two prompts share it and differ after it, and after a reload it
// comes from IndexedDB with no request. 8-bit pages of f16 KV (remote:
// { dtype: 'q8' }) come out as the Node client dequantizes them, bit for
// bit: Chromium's Float16Array rounding against format/q8.js's own.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import init from '../../js/index.js';
import { publishPages } from '../../store/publish.js';
import { narrowF32 } from '../../format/f16.js';
import { modelKv, tempDir } from '../node/helpers.js';
import { HARNESS, browserTest, localOnly } from './helpers.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const FP = 0x7e7074n;
const FP_Q8 = 0x7e7075n; // the q8 tree's and its clients' own
const layout = { order: 'head-major', heads: 2, headDim: 4, layers: 2 };
const P = 64;
const system = Array.from({ length: 600 }, (_, i) => 1000 + ((i * 7919) % 5000)); // 9 pages and 24 tokens
const prompt = (user) => [...system, ...Array.from({ length: 20 }, (_, i) => user * 100 + i)];

/** SHA-256 of the K then V blocks' bytes, as the page computes it. */
function digestOf({ k, v }) {
  const h = createHash('sha256');
  for (const b of [...k, ...v]) h.update(new Uint8Array(b.buffer, b.byteOffset, b.byteLength));
  return h.digest('hex');
}

/** In the page: a cache on IndexedDB with the remote tier, a match of `tokens`, what it found, and the hit's digest. */
function visit(page, tokens, kvUrl, { fp = FP, dtype = 'f32', path = '/remote-test' } = {}) {
  return page.evaluate(async ({ tokens, kvUrl, fp, layout, P, dtype, path }) => {
    const rlx = await (await import('/js/index.js')).default();
    const sources = [];
    const cache = await rlx.openCache({
      capBytes: 1 << 24, fingerprint: BigInt(fp), layout, storage: 'idb', path,
      remote: { url: kvUrl, pageTokens: P, dtype }, onEvent: (e) => { if (e.type === 'hit') sources.push(e.source); },
    });
    const hit = await cache.match(Uint32Array.from(tokens), { partial: true, maxMatched: tokens.length - 1 });
    if (!hit) return { matched: 0, sources, remote: cache.stats.remote };
    const bytes = [...hit.k, ...hit.v].map((b) => new Uint8Array(b.buffer, b.byteOffset, b.byteLength));
    const all = new Uint8Array(bytes.reduce((n, b) => n + b.length, 0));
    bytes.reduce((at, b) => (all.set(b, at), at + b.length), 0);
    const digest = [...new Uint8Array(await crypto.subtle.digest('SHA-256', all))].map((x) => x.toString(16).padStart(2, '0')).join('');
    const out = { matched: hit.matched, dtype: hit.dtype, digest, sources, remote: cache.stats.remote };
    await cache.close(); // flushes: the fetched pages are kept in IndexedDB
    return out;
  }, { tokens, kvUrl, fp: String(fp), layout, P, dtype, path });
}

browserTest('a first visit reuses the published system prompt; after a reload it comes from IndexedDB, with no request', async (t, session) => {
  // The site's build step: the system prompt's KV published under /build/test-remote/kv/.
  const rlx = await init();
  const store = tempDir(), out = join(root, 'build/test-remote', `kv-${process.pid}`);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  t.after(() => rmSync(out, { recursive: true, force: true }));
  const author = await rlx.openCache({ capBytes: 1 << 24, fingerprint: FP, layout, storage: 'fs', path: store });
  author.insert(system, modelKv(system, layout));
  await author.close();
  assert.equal((await publishPages(rlx, [{ storage: 'fs', path: store }], out, { layout, pageTokens: P })).pages.length, 10, '9 grid pages and the tail');
  const kvUrl = `/build/test-remote/kv-${process.pid}/`;
  const want = digestOf(modelKv(system, layout));

  const outside = [], seen = [];
  await localOnly(session, outside, seen);
  const page = await session.open(HARNESS);
  const pagesAsked = () => seen.filter((u) => u.startsWith(kvUrl));

  const first = await visit(page, prompt(1), kvUrl);
  assert.equal(first.matched, system.length, 'the grid pages, and the tail to the published end');
  assert.equal(first.digest, want, 'the published KV, byte-exact');
  assert.deepEqual(first.sources, ['remote']);
  assert.equal(first.remote.pages, 10);
  assert.equal(pagesAsked().length, 11, '10 pages and the last grid point\'s hint file');

  // After a reload: another user turn over the same system prompt, from IndexedDB.
  seen.length = 0;
  await session.reload(page);
  const second = await visit(page, prompt(2), kvUrl);
  assert.equal(second.matched, system.length);
  assert.equal(second.digest, want);
  assert.deepEqual(second.sources, ['storage']);
  assert.equal(pagesAsked().length, 0, 'no request after the reload');

  // 8-bit pages of the same prompt's f16 KV: a first visit of its own, as Node's client gets it.
  const q8Out = `${out}-q8`, q8Url = `${kvUrl.slice(0, -1)}-q8/`;
  t.after(() => rmSync(q8Out, { recursive: true, force: true }));
  const kv = modelKv(system, layout), f16 = { k: kv.k.map((b) => narrowF32(b)), v: kv.v.map((b) => narrowF32(b)) };
  await publishPages(rlx, [{ fingerprint: FP, tokens: Uint32Array.from(system), ...f16 }], q8Out, { layout, pageTokens: P, dtype: 'q8', fingerprint: FP, asFingerprint: FP_Q8 });
  const node = await rlx.openCache({ capBytes: 1 << 24, fingerprint: FP_Q8, layout, storage: 'none', remote: { url: 'http://published.invalid/', pageTokens: P, dtype: 'q8', fetch: filesOf(q8Out) } });
  const nodeHit = await node.match(Uint32Array.from(prompt(1)), { partial: true });
  await node.close();
  assert.equal(nodeHit.matched, system.length);
  const q8 = await visit(page, prompt(3), q8Url, { fp: FP_Q8, dtype: 'q8', path: '/remote-test-q8' });
  assert.equal(q8.matched, system.length);
  assert.equal(q8.dtype, 'f16');
  assert.equal(q8.digest, digestOf(nodeHit), 'the dequantization of the same bytes, bit for bit');
  assert.notEqual(q8.digest, digestOf(f16), 'approximate KV, not the published f16');
  assert.deepEqual(outside, []);
});

/** A fetch that answers every URL's last segment from directory `dir`: the Node client's own view of a published tree. */
const filesOf = (dir) => async (url) => {
  try {
    return new Response(readFileSync(join(dir, url.split('/').pop())));
  } catch {
    return new Response(null, { status: 404 });
  }
};
