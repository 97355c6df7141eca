// The page store through the public API: a chat app's turns are written as
// pages (each turn's new tokens only), a restarted app reads a hit's pages
// back exactly, and pages that lost their parent or were replaced behind
// the index never serve.
import 'fake-indexeddb/auto';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import init from 'rlxkv';
import { legacyBlobName, modelKv, storeFiles, tempDir } from './helpers.js';

const rlx = await init();
const cliPath = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
const FP = 0x9a9en;
const layout = { order: 'head-major', heads: 2, headDim: 4, layers: 2 };
const TOKEN_BYTES = 2 * 2 * 2 * 4 * 4; // K and V, 2 layers, 2 heads x 4 floats
let dbs = 0;
const where = (kind) => (kind === 'fs' ? tempDir() : `/page-store-${++dbs}`);
const open = async (kind, path, opts = {}) => (await init({ newInstance: true }))
  .openCache({ capBytes: 1 << 24, fingerprint: FP, storage: kind, path, layout, ...opts });

const kvOf = (tokens, from = 0) => modelKv(tokens, layout, from);

const system = Array.from({ length: 60 }, (_, i) => 500 + i);
const conversation = (chat, turns) => [...system, ...Array.from({ length: 10 * turns }, (_, i) => chat * 1000 + i)];

/** Bytes written by a flush: the sizes of a directory's files that are new or changed. */
function snapshot(dir) {
  return new Map(readdirSync(dir).filter((f) => f.endsWith('.rlxkv')).map((f) => {
    const st = statSync(join(dir, f));
    return [f, `${st.size}:${st.mtimeMs}`];
  }));
}
function written(dir, before) {
  let bytes = 0;
  for (const [f, sig] of snapshot(dir)) if (before.get(f) !== sig) bytes += Number(sig.split(':')[0]);
  return bytes;
}

test('fs: each turn writes only its new tokens, and a restarted app reads its pages back exactly', async () => {
  const dir = where('fs');
  const cache = await open('fs', dir);
  cache.insert(system, kvOf(system));
  cache.pin(system);
  await cache.flush();
  for (let turn = 1; turn <= 4; turn++) {
    for (const chat of [1, 2, 3]) {
      const tokens = conversation(chat, turn);
      const before = snapshot(dir);
      cache.insert(tokens, kvOf(tokens)); // the whole conversation's KV, as a model hands it back
      await cache.flush();
      const bytes = written(dir, before);
      // The turn's 10 tokens' KV, and a page's header and its tokens (4 per token... 8 in the file).
      assert.ok(bytes >= 10 * TOKEN_BYTES && bytes < 10 * TOKEN_BYTES + 8 * tokens.length + 200, `turn ${turn} of chat ${chat} wrote ${bytes} bytes`);
    }
  }
  await cache.close();
  const again = await open('fs', dir);
  assert.equal(again.restoreReport.indexed, 1 + 3 * 4);
  for (const chat of [1, 2, 3]) {
    const tokens = conversation(chat, 4);
    const hit = await again.match([...tokens, 7]);
    assert.equal(hit.matched, tokens.length);
    assert.deepEqual(hit.k, kvOf(tokens).k);
    assert.deepEqual(hit.v, kvOf(tokens).v);
  }
  // Each token's KV once in memory, whatever number of pages it took.
  assert.equal(again.bytes, (60 + 3 * 4 * 10) * TOKEN_BYTES);
  await again.close();
});

for (const kind of ['fs', 'idb']) {
  test(`${kind}: after a restart a conversation's pages are read into one entry, and its next turn writes only its new tokens`, async () => {
    const path = where(kind);
    const cache = await open(kind, path);
    cache.insert(system, kvOf(system));
    for (let turn = 1; turn <= 5; turn++) for (const chat of [1, 2]) cache.insert(conversation(chat, turn), kvOf(conversation(chat, turn)));
    await cache.close();
    const again = await open(kind, path);
    const five = conversation(1, 5);
    const hit = await again.match([...five, 7], { view: true });
    assert.equal(hit.matched, five.length);
    assert.deepEqual([...hit.k[1]], [...kvOf(five).k[1]]);
    // Six pages, one entry: the hit lies in it, no gather, each byte read once.
    assert.equal(again.stats.entries, 1);
    assert.equal(again.bytes, five.length * TOKEN_BYTES);
    // The other chat shares the system prompt with it: read from its first turn on, the prompt held once.
    const other = conversation(2, 5);
    assert.deepEqual((await again.match(other)).v, kvOf(other).v);
    assert.equal(again.bytes, (60 + 2 * 50) * TOKEN_BYTES);
    // A sixth turn over the entry read whole is a page of its own 10 tokens, whose parent is the fifth turn's page.
    const six = conversation(1, 6);
    again.insert(six, kvOf(six));
    const before = kind === 'fs' ? snapshot(path) : null;
    await again.flush();
    if (before) {
      // New files only: reading a page touches its file time, as a use.
      const added = [...snapshot(path).keys()].filter((f) => !before.has(f));
      assert.equal(added.length, 1);
      assert.ok(statSync(join(path, added[0])).size < 10 * TOKEN_BYTES + 8 * six.length + 200);
    }
    await again.close();
    const third = await open(kind, path);
    assert.deepEqual((await third.match([...six, 1])).k, kvOf(six).k);
    assert.equal(third.restoreReport.indexed, 1 + 2 * 5 + 1);
    await third.close();
    // preload: each conversation read as one entry, the system prompt once.
    const preloaded = await open(kind, path, { preload: true });
    assert.equal(preloaded.restoreReport.resident, 2);
    assert.equal(preloaded.stats.entries, 2);
    assert.equal(preloaded.bytes, (60 + 60 + 50) * TOKEN_BYTES);
    assert.deepEqual(preloaded.lookup(five, { partial: true }).v, kvOf(five).v);
    await preloaded.close();
  });
}

for (const kind of ['fs', 'idb']) {
  test(`${kind}: a page whose parent is gone never serves; the longest hit that can is served`, async () => {
    const path = where(kind);
    const cache = await open(kind, path);
    const one = conversation(1, 1), two = conversation(1, 2), three = conversation(1, 3);
    for (const t of [system, one, two, three]) cache.insert(t, kvOf(t));
    await cache.close();
    // Another process deletes the first turn's page (a prune of its own, by hand).
    const deleter = await (await init({ newInstance: true })).openStore({ storage: kind, path });
    const victim = deleter.list().find((b) => b.tokens === one.length);
    await deleter.close();
    if (kind === 'fs') unlinkSync(join(path, victim.name));
    else {
      const raw = await open(kind, path);
      raw.remove(one); // has others after it: kept for them
      await raw.flush();
      await raw.close();
    }
    const again = await open(kind, path);
    const hit = await again.match([...three, 9]);
    if (kind === 'fs') {
      assert.equal(hit.matched, system.length, 'the system prompt, not the turns over a lost page');
      assert.deepEqual(hit.k, kvOf(system).k);
    } else {
      assert.equal(hit.matched, three.length, 'a page others need stays when its entry is removed');
      assert.deepEqual(hit.k, kvOf(three).k);
    }
    await again.close();
  });
}

test('fs: a page replaced behind the index by one of other tokens is refused, and nothing wrong is served', async () => {
  const dir = where('fs');
  const cache = await open('fs', dir);
  const one = conversation(2, 1), other = conversation(3, 1);
  for (const t of [system, one, other]) cache.insert(t, kvOf(t));
  await cache.close();
  const names = readdirSync(dir).filter((f) => f.endsWith('.rlxkv'));
  const bySize = (n) => names.find((f) => readFileSync(join(dir, f)).readUInt32LE(24) === n);
  // Both turns have 70 tokens: the second's page under the first's name.
  const [a, b] = names.filter((f) => readFileSync(join(dir, f)).readUInt32LE(24) === one.length);
  assert.ok(bySize(system.length) && a && b);
  const cacheOpen = await open('fs', dir); // indexes the names as they are now
  writeFileSync(join(dir, a), readFileSync(join(dir, b)));
  for (const t of [one, other]) {
    const hit = await cacheOpen.match([...t, 1]);
    if (hit.matched === t.length) assert.deepEqual(hit.k, kvOf(t).k, 'a full hit is this prompt\'s KV');
    else assert.equal(hit.matched, system.length);
  }
  await cacheOpen.close();
});

test('fs: an index whose tokens of 0x10000 or more lie out of order, or past the tokens, is damaged: rebuilt from the pages', async () => {
  const dir = tempDir();
  // A large vocabulary's tokens: the index packs their high halves apart (FORMATS.md, RLXKVIX4).
  const big = (t) => t.map((x) => x + 0x20000);
  const turns = [system, ...[1, 2, 3].map((n) => conversation(1, n))].map(big);
  const cache = await open('fs', dir);
  for (const t of turns) cache.insert(t, kvOf(t));
  await cache.close();
  const indexFile = join(dir, '.rlxkv-index');
  const index = new Uint8Array(readFileSync(indexFile));
  const [count, total, high] = new Uint32Array(index.buffer, 8, 3);
  assert.deepEqual([count, high], [4, total], 'four pages, every token 0x10000 or more');
  const pad4 = (n) => (n + 3) & ~3;
  const placesAt = pad4(pad4(24 + 57 * count) + 2 * total); // the columns' layout: FORMATS.md
  for (const [what, damage] of [['out of order', (p) => p.reverse()], ['past the tokens', (p) => { p[high - 1] = total; }]]) {
    const b = index.slice();
    damage(new Uint32Array(b.buffer, placesAt, high));
    writeFileSync(indexFile, b);
    const reopened = await open('fs', dir);
    assert.equal(reopened.restoreReport.indexed, 4, what);
    const last = turns.at(-1), hit = await reopened.match([...last, 7]);
    assert.equal(hit?.matched, last.length, `${what}: the whole conversation, its pages read by their own tokens`);
    assert.deepEqual(hit.k, kvOf(last).k, what);
    await reopened.close();
  }
});

test('idb: a store of pages bounded by storageCapBytes keeps every page a stored page needs', async () => {
  const path = where('idb');
  const cache = await open('idb', path);
  cache.insert(system, kvOf(system));
  for (let turn = 1; turn <= 6; turn++) cache.insert(conversation(4, turn), kvOf(conversation(4, turn)));
  await cache.close();
  const bounded = await open('idb', path, { storageCapBytes: (60 + 30) * TOKEN_BYTES + 8192 });
  const store = await (await init({ newInstance: true })).openStore({ storage: 'idb', path });
  const left = store.list().map((b) => b.tokens).sort((x, y) => x - y);
  await store.close();
  // The newest turns went first: what is left is a chain from the system prompt.
  assert.deepEqual(left, left.map((_, i) => 60 + 10 * i));
  assert.ok(left.length >= 2 && left.length < 7);
  const tokens = conversation(4, left.length - 1);
  const hit = await bounded.match([...tokens, 5]);
  assert.equal(hit.matched, tokens.length);
  assert.deepEqual(hit.v, kvOf(tokens).v);
  await bounded.close();
});

test('a store written with whole entries (before pages) opens and extends with pages', async () => {
  const dir = where('fs');
  const one = conversation(5, 1);
  // A blob written whole under its 64-bit name, as 0.1 wrote every entry.
  writeFileSync(join(dir, await legacyBlobName(FP, one)), encodeWhole(one));
  const cache = await open('fs', dir);
  const two = conversation(5, 2);
  const hit = await cache.match(two);
  assert.equal(hit.matched, one.length);
  cache.insert(two, kvOf(two, hit.matched), { start: hit.matched });
  await cache.close();
  const again = await open('fs', dir);
  assert.deepEqual((await again.match([...two, 3])).k, kvOf(two).k);
  await again.close();
  // The page names the old blob as its parent by its 64-bit name.
  const names = storeFiles(dir).sort((a, b) => a.length - b.length);
  assert.deepEqual(names.map((n) => n.length), [16 + 6, 32 + 6]);
});

/** The RLXKV001 blob of these tokens' KV, as 0.1 wrote every entry. */
function encodeWhole(tokens) {
  return rlx.encodeEntry({ tokens, ...kvOf(tokens) }, FP);
}

test('the CLI reads a page store: ls lists pages, verify passes them, prune takes leaves first', async () => {
  const dir = where('fs');
  const cache = await open('fs', dir);
  cache.insert(system, kvOf(system));
  const turns = [1, 2, 3, 4, 5].map((t) => conversation(6, t));
  for (const t of turns) {
    cache.insert(t, kvOf(t));
    await cache.flush(); // one turn at a time: the newest is the most recently written
  }
  await cache.close();
  const cli = (...args) => spawnSync(process.execPath, [cliPath, ...args], { encoding: 'utf8' });
  const ls = cli('ls', dir, '--fingerprint', `0x${FP.toString(16)}`);
  assert.equal(ls.status, 0, ls.stderr);
  assert.equal((ls.stdout.match(/ ok$/gm) ?? []).length, 6, ls.stdout);
  // The system prompt is a whole blob, each turn a page of its own tokens.
  assert.equal((ls.stdout.match(/ RLXKV001 /g) ?? []).length, 1, ls.stdout);
  assert.equal((ls.stdout.match(/ RLXKVPG1 /g) ?? []).length, 5, ls.stdout);
  const verify = cli('verify', ...storeFiles(dir).map((f) => join(dir, f)));
  assert.equal(verify.status, 0, verify.stdout + verify.stderr);
  // The system prompt and the oldest turn are the least recently used; the
  // newest turns need them, so the newest go first.
  const sizes = storeFiles(dir).map((f) => statSync(join(dir, f)).size).sort((a, b) => b - a);
  const budget = sizes[0] + sizes[1] + sizes[2];
  const prune = cli('prune', dir, '--fingerprint', `0x${FP.toString(16)}`, '--max-bytes', String(budget));
  assert.equal(prune.status, 0, prune.stderr);
  const again = await open('fs', dir);
  const left = again.restoreReport.indexed;
  assert.ok(left >= 2 && left < 6, `${left} left`);
  const deepest = turns[left - 2];
  const hit = await again.match([...deepest, 1]);
  assert.equal(hit.matched, deepest.length, 'what is left is a chain from the system prompt, every page served');
  assert.deepEqual(hit.k, kvOf(deepest).k);
  await again.close();
});
