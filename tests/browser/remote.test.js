// The remote tier in Chromium, as a site uses it: a system prompt's KV
// published as pages (rlx.publishPages, as `rlxkv publish` does) and served
// by the site's own server; a first visit with an empty IndexedDB reuses it
// by name, two prompts share it and differ after it, and after a reload it
// comes from IndexedDB with no request.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import init from '../../js/index.js';
import { publishPages } from '../../store/publish.js';
import { modelKv, tempDir } from '../node/helpers.js';
import { HARNESS, browserTest, localOnly } from './helpers.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const FP = 0x7e7074n;
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
function visit(page, tokens, kvUrl) {
  return page.evaluate(async ({ tokens, kvUrl, fp, layout, P }) => {
    const rlx = await (await import('/js/index.js')).default();
    const sources = [];
    const cache = await rlx.openCache({
      capBytes: 1 << 24, fingerprint: BigInt(fp), layout, storage: 'idb', path: '/remote-test',
      remote: { url: kvUrl, pageTokens: P }, onEvent: (e) => { if (e.type === 'hit') sources.push(e.source); },
    });
    const hit = await cache.match(Uint32Array.from(tokens), { partial: true, maxMatched: tokens.length - 1 });
    if (!hit) return { matched: 0, sources, remote: cache.stats.remote };
    const bytes = [...hit.k, ...hit.v].map((b) => new Uint8Array(b.buffer, b.byteOffset, b.byteLength));
    const all = new Uint8Array(bytes.reduce((n, b) => n + b.length, 0));
    bytes.reduce((at, b) => (all.set(b, at), at + b.length), 0);
    const digest = [...new Uint8Array(await crypto.subtle.digest('SHA-256', all))].map((x) => x.toString(16).padStart(2, '0')).join('');
    const out = { matched: hit.matched, digest, sources, remote: cache.stats.remote };
    await cache.close(); // flushes: the fetched pages are kept in IndexedDB
    return out;
  }, { tokens, kvUrl, fp: String(FP), layout, P });
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
  assert.deepEqual(outside, []);
});
