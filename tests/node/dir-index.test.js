// A Node directory's index file (store/fs-blobs.js, RLXKVIX4 in format/store-index.js):
// an open reads it and the listing of names, never a blob; what changed
// behind it is found against the listing; stores without one, or with an
// index of an older layout, open with nothing lost; a conversation of
// hundreds of pages round-trips, its index linear in its tokens.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, readFileSync, renameSync, statSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import init from 'rlxkv';
import { FsBlobs } from '../../store/fs-blobs.js';
import { parseIndex } from '../../format/store-index.js';
import { INDEX_FILE, dropIndex, kvFor, modelKv, range, storeFiles, tempDir } from './helpers.js';

const page = () => init({ newInstance: true });
const FP = 0x1de7n;
const kv = (seed) => kvFor(8, { layers: 1, width: 16, seed });
const open = async (path, opts = {}) => (await page()).openCache({ capBytes: 1 << 24, fingerprint: FP, storage: 'fs', path, ...opts });

/** Counts FsBlobs' reads of blobs (first bytes, whole, into memory) while fn runs. */
async function countingReads(fn) {
  const counts = { head: 0, read: 0, readWith: 0 };
  const originals = Object.fromEntries(Object.keys(counts).map((k) => [k, FsBlobs.prototype[k]]));
  for (const k of Object.keys(counts)) {
    FsBlobs.prototype[k] = function (...args) { counts[k]++; return originals[k].apply(this, args); };
  }
  try {
    return { result: await fn(), counts };
  } finally {
    Object.assign(FsBlobs.prototype, originals);
  }
}

async function storeOf(n) {
  const path = tempDir();
  const cache = await open(path);
  for (let i = 0; i < n; i++) cache.insert(range(1000 * i, 8), kv(i));
  await cache.close();
  return path;
}

test('fs: a store opens from its index and the listing, reading no blob; a hit reads its own', async () => {
  const path = await storeOf(12);
  assert.ok(existsSync(join(path, INDEX_FILE)), 'the flush wrote the index');
  const { result: cache, counts } = await countingReads(() => open(path));
  assert.deepEqual(counts, { head: 0, read: 0, readWith: 0 });
  assert.equal(cache.restoreReport.indexed, 12);
  assert.equal(cache.listBlobs().length, 12);
  const { result: hit, counts: after } = await countingReads(() => cache.match(range(5000, 9)));
  assert.deepEqual(hit.k, kv(5).k);
  assert.equal(after.readWith + after.read, 1, 'the one blob of the hit');
  await cache.close();
});

/** The name a store gives the entry of these tokens (what a one-entry store of them holds). */
async function nameOf(tokens) {
  const dir = tempDir();
  const c = await open(dir);
  c.insert(tokens, kv(99));
  await c.close();
  return storeFiles(dir)[0];
}

/**
 * Opens the store at `path` in a new module instance after a memory-only
 * cache there took `filler` bytes of KV, so that the open's allocations
 * meet the end of wasm memory where the filler leaves it: { cache, counts
 * (the blob reads the open made), grewIn: where the heap first grew:
 * 'filler', the NativeCache method under which it grew during the open
 * ('holdIndex', 'putIndex'), 'other', or null }.
 */
async function openAfterFiller(path, filler) {
  const stacks = [];
  const grow = WebAssembly.Memory.prototype.grow;
  WebAssembly.Memory.prototype.grow = function (...args) {
    stacks.push(new Error().stack);
    return grow.apply(this, args);
  };
  try {
    const rlx = await page();
    if (filler) {
      const values = new Float32Array(filler / 8);
      rlx.createCache({ capBytes: 1 << 30, fingerprint: 1n }).insert(range(0, 1), { k: [values], v: [values] });
    }
    const before = stacks.length;
    const { result: cache, counts } = await countingReads(() => rlx.openCache({ capBytes: 1 << 24, fingerprint: FP, storage: 'fs', path }));
    const grewIn = before ? 'filler' : stacks.length
      ? (['holdIndex', 'putIndex'].find((m) => stacks[0].includes(`NativeCache.${m}`)) ?? 'other') : null;
    return { cache, counts, grewIn };
  } finally {
    WebAssembly.Memory.prototype.grow = grow;
  }
}

test('fs: an index opens from itself wherever wasm memory runs out during its open (the heap grown under its columns)', async () => {
  const N = 1000;
  const path = await storeOf(N);
  // Growth moves earlier in the open as the filler grows: search for the
  // largest filler under which the heap still grows inside putIndex (at
  // its scratch area, the first thing it allocates), not before it.
  const phase = async (filler) => {
    const { cache, counts, grewIn } = await openAfterFiller(path, filler);
    // Wherever it grew, the open read the index, no blob, and knows every entry.
    assert.deepEqual(counts, { head: 0, read: 0, readWith: 0 }, `filler ${filler}: grew in ${grewIn}`);
    assert.equal(cache.restoreReport.indexed, N);
    await cache.close({ flush: false });
    return grewIn;
  };
  let lo = 0, hi = 32 << 20; // phase(lo): no growth, or inside putIndex; phase(hi): before it (the filler's own)
  assert.equal(await phase(hi), 'filler');
  while (hi - lo > 2048) {
    const mid = lo + Math.floor((hi - lo) / 2 / 8) * 8;
    const at = await phase(mid);
    if (at === null || at === 'putIndex') lo = mid;
    else hi = mid;
  }
  assert.equal(await phase(lo), 'putIndex', 'the search found a filler under which the heap grows inside putIndex');
  // The index was read into its block, and its columns' views detached when the heap grew at putIndex's scratch area.
  const { cache } = await openAfterFiller(path, lo);
  assert.deepEqual((await cache.match(range(7000, 9))).k, kv(7).k);
  await cache.close({ flush: false });
});

test('fs: files added, removed or rewritten behind the index are found at the open', async () => {
  const path = await storeOf(6);
  const gone = await nameOf(range(1000, 8)), torn = await nameOf(range(2000, 8));
  assert.ok(storeFiles(path).includes(gone) && storeFiles(path).includes(torn));
  unlinkSync(join(path, gone));
  writeFileSync(join(path, torn), new Uint8Array([82, 76, 88, 75, 86])); // torn, in place: the index cannot tell
  // Another writer's blob, its index update lost.
  const other = tempDir(), c = await open(other);
  c.insert(range(9000, 8), kv(9));
  await c.close();
  const extra = storeFiles(other).find((n) => n.endsWith('.rlxkv'));
  copyFileSync(join(other, extra), join(path, extra));
  const { result: cache, counts } = await countingReads(() => open(path));
  assert.equal(counts.head, 1, 'only the file the index lacks is read at the open');
  assert.equal(cache.restoreReport.indexed, 6, '6 - 1 gone + 1 added');
  assert.equal(cache.has(range(1000, 8)), false);
  assert.deepEqual((await cache.match(range(9000, 9))).v, kv(9).v);
  // The rewritten file: trusted at the open, refused at its hit, which reads it whole.
  assert.equal(cache.has(range(2000, 8)), true);
  assert.equal(await cache.match(range(2000, 8)), null);
  assert.equal(cache.listBlobs().find((b) => b.name === torn).status, 'corrupt');
  assert.deepEqual((await cache.match(range(3000, 9))).k, kv(3).k, 'the others are served');
  await cache.close();
  // The index was repaired at the open and told of the corrupt one by the close.
  const index = parseIndex(new Uint8Array(readFileSync(join(path, INDEX_FILE))));
  assert.ok(index.has(extra) && !index.has(gone));
  const { result: again, counts: second } = await countingReads(() => open(path));
  assert.equal(second.head, index.get(torn).status === 'corrupt' ? 1 : 0, 'a blob recorded corrupt is read again (a writer may have mended it)');
  assert.equal(again.restoreReport.indexed + again.restoreReport.corrupt, 6);
  await again.close();
});

test('fs: a store without an index (written before it) opens with nothing lost, and gets one', async () => {
  const layout = { order: 'head-major', heads: 2, headDim: 4, layers: 2 };
  const path = tempDir();
  const writer = await open(path, { layout });
  const tokens = range(1, 40);
  for (let n = 8; n <= 40; n += 8) {
    writer.insert(tokens.slice(0, n), modelKv(tokens.slice(0, n), layout, n - 8), { start: n - 8 });
    await writer.flush();
  }
  await writer.close();
  dropIndex(path);
  const { result: cache, counts } = await countingReads(() => open(path, { layout }));
  assert.equal(counts.head, 5, 'each blob\'s first bytes, once');
  assert.equal(cache.restoreReport.indexed, 5);
  const hit = await cache.match([...tokens, 99]);
  assert.equal(hit.matched, 40);
  assert.deepEqual(hit.k, modelKv(tokens, layout).k);
  await cache.close();
  assert.ok(existsSync(join(path, INDEX_FILE)), 'the open wrote the index');
  const { counts: next } = await countingReads(async () => (await open(path, { layout })).close());
  assert.equal(next.head, 0);
});

test('fs: a conversation of 300 pages round-trips, and its index holds each page\'s own tokens only', async () => {
  const layout = { order: 'head-major', heads: 1, headDim: 2, layers: 1 };
  const path = tempDir();
  const cache = await open(path, { layout, capBytes: 1 << 26 });
  const TURN = 4, TURNS = 300, tokens = Uint32Array.from({ length: TURN * TURNS }, (_, i) => (i * 7919 + 13) % 200000);
  for (let t = 1; t <= TURNS; t++) {
    const upto = tokens.subarray(0, TURN * t);
    cache.insert(upto, modelKv(upto, layout, TURN * (t - 1)), { start: TURN * (t - 1) });
    if (t % 50 === 0) await cache.flush();
  }
  await cache.close();
  assert.equal(storeFiles(path).length, TURNS);
  // Own tokens only: about a hundred bytes a page, not each page's path
  // again (at 2 to 6 bytes a token, 180,600 tokens in all: 360 KB or more).
  const indexBytes = statSync(join(path, INDEX_FILE)).size;
  assert.ok(indexBytes < TURNS * 200, `${indexBytes} bytes of index for ${TURNS} pages`);
  const { result: back, counts } = await countingReads(() => open(path, { layout }));
  assert.equal(counts.head, 0);
  assert.equal(back.restoreReport.indexed, TURNS);
  const hit = await back.match([...tokens, 1]);
  assert.equal(hit.matched, tokens.length);
  assert.deepEqual(hit.k, modelKv(tokens, layout).k);
  assert.deepEqual(hit.v, modelKv(tokens, layout).v);
  // A hit in the middle of the conversation: its own path, rebuilt from its parents.
  const mid = tokens.subarray(0, TURN * 123);
  const again = await open(path, { layout });
  assert.deepEqual((await again.match([...mid, 1])).k, modelKv(mid, layout).k);
  assert.equal(again.listBlobs().length, TURNS, 'every record made, each with its path');
  assert.ok(again.listBlobs().every((b) => b.status === 'ok' && b.tokens % TURN === 0));
  await back.close();
  await again.close();
});

/**
 * RLXKVIX3 as stores with pages wrote it before (every record's whole
 * path, parents by key), or with v2 RLXKVIX2 (stores before pages: no page
 * columns): a fixture, from the records parseIndex gives.
 */
function encodeIndexV3(records, v2 = false) {
  records = [...records].sort((a, b) => a.lastUse - b.lastUse);
  const count = records.length, pad4 = (x) => (x + 3) & ~3, pages = v2 ? 0 : 32;
  let total = 0, high = 0;
  for (const r of records) for (const t of r.tokens ?? []) { total++; if (t > 0xffff) high++; }
  const names = new TextEncoder().encode(records.map((r) => `${r.name}/`).join(''));
  const cols = 24, tokensAt = pad4(cols + (37 + pages) * count), highAt = pad4(tokensAt + 2 * total), namesAt = pad4(highAt + 6 * high);
  const out = new Uint8Array(namesAt + names.length);
  out.set(new TextEncoder().encode(v2 ? 'RLXKVIX2' : 'RLXKVIX3'));
  new Uint32Array(out.buffer, 8, 4).set([count, total, high, names.length]);
  const f64 = new Float64Array(out.buffer, cols, 3 * count), fps = new BigUint64Array(out.buffer, cols + 24 * count, count);
  const scratch = new ArrayBuffer(48 * count); // v2: the page columns go nowhere
  const starts = v2 ? new Float64Array(scratch, 0, 2 * count) : new Float64Array(out.buffer, cols + 32 * count, 2 * count);
  const keys = v2 ? new BigUint64Array(scratch, 16 * count, 2 * count) : new BigUint64Array(out.buffer, cols + 48 * count, 2 * count);
  const ns = new Uint32Array(out.buffer, cols + (32 + pages) * count, count), flags = new Uint8Array(out.buffer, cols + (36 + pages) * count, count);
  const low = new Uint16Array(out.buffer, tokensAt, total);
  const places = new Uint32Array(out.buffer, highAt, high), highs = new Uint16Array(out.buffer, highAt + 4 * high, high);
  out.set(names, namesAt);
  let k = 0, h = 0;
  records.forEach((r, i) => {
    f64[i] = r.bytes; f64[count + i] = r.nValues ?? 0; f64[2 * count + i] = r.lastUse;
    fps[i] = r.fingerprint ?? 0n;
    starts[i] = r.start ?? 0; starts[count + i] = r.parentN ?? 0;
    if (r.start) {
      const hex = r.parent.slice(0, -6);
      [keys[i], keys[count + i]] = hex.length === 32 ? [BigInt(`0x${hex.slice(0, 16)}`), BigInt(`0x${hex.slice(16)}`)] : [0n, BigInt(`0x${hex}`)];
    }
    flags[i] = (r.dtype === 'f16' ? 2 : 0) | (r.rowMajor ? 4 : 0);
    ns[i] = r.tokens.length;
    for (const t of r.tokens) {
      low[k] = t;
      if (t > 0xffff) { places[h] = k; highs[h++] = t >>> 16; }
      k++;
    }
  });
  return out;
}

test('fs: an index of the layout before (RLXKVIX3, whole paths) is read as it is: nothing lost, no blob read', async () => {
  const layout = { order: 'head-major', heads: 1, headDim: 2, layers: 1 };
  const path = tempDir();
  const cache = await open(path, { layout });
  const tokens = Uint32Array.from({ length: 24 }, (_, i) => 70000 + i * 3); // high halves too
  for (let n = 6; n <= 24; n += 6) {
    cache.insert(tokens.subarray(0, n), modelKv(tokens.subarray(0, n), layout, n - 6), { start: n - 6 });
    await cache.flush();
  }
  cache.insert(range(5, 3), modelKv(range(5, 3), layout));
  await cache.close();
  const records = [...parseIndex(new Uint8Array(readFileSync(join(path, INDEX_FILE)))).values()];
  assert.equal(records.length, 5);
  writeFileSync(join(path, INDEX_FILE), encodeIndexV3(records));
  const { result: back, counts } = await countingReads(() => open(path, { layout }));
  assert.equal(counts.head, 0);
  assert.equal(back.restoreReport.indexed, 5);
  assert.deepEqual((await back.match([...tokens, 1])).k, modelKv(tokens, layout).k);
  assert.deepEqual((await back.match(range(5, 3))).k, modelKv(range(5, 3), layout).k);
  // Its next write is RLXKVIX4.
  back.insert(range(50, 3), modelKv(range(50, 3), layout));
  await back.close();
  assert.equal(readFileSync(join(path, INDEX_FILE)).subarray(0, 8).toString(), 'RLXKVIX4');
  const again = await open(path, { layout });
  assert.equal(again.restoreReport.indexed, 6);
  await again.close();
});

test('fs: an index of stores before pages (RLXKVIX2) is read as it is: nothing lost, no blob read', async () => {
  const path = await storeOf(5);
  const records = [...parseIndex(new Uint8Array(readFileSync(join(path, INDEX_FILE)))).values()];
  writeFileSync(join(path, INDEX_FILE), encodeIndexV3(records, true));
  const { result: back, counts } = await countingReads(() => open(path));
  assert.equal(counts.head, 0);
  assert.equal(back.restoreReport.indexed, 5);
  assert.deepEqual((await back.match(range(4000, 9))).k, kv(4).k);
  await back.close();
});

test('fs: two writers on one directory: whichever index is written last, the next open finds every blob', async () => {
  const path = tempDir();
  const a = await open(path), b = await open(path);
  a.insert(range(100, 8), kv(1));
  await a.flush();
  const afterA = readFileSync(join(path, INDEX_FILE));
  b.insert(range(200, 8), kv(2));
  await b.flush();
  // b's index is lost to a's older one written over it (a race of two renames).
  writeFileSync(join(path, INDEX_FILE), afterA);
  await a.close();
  await b.close();
  const { result: cache, counts } = await countingReads(() => open(path));
  assert.equal(counts.head, 1, 'the blob the index lost, read from the listing');
  assert.equal(cache.restoreReport.indexed, 2);
  assert.deepEqual((await cache.match(range(200, 9))).k, kv(2).k);
  await cache.close();
});

test('fs: the CLI lists the index\'s temporary by the rule of every temporary file, and a prune removes a dead writer\'s; the index stays', async () => {
  const path = await storeOf(3);
  const cli = (...args) => spawnSync(process.execPath, [join(import.meta.dirname, '../../js/cli.js'), ...args], { encoding: 'utf8' });
  const deadTemp = `${INDEX_FILE}.7fffffff-1-2.tmp`; // no process has that pid
  writeFileSync(join(path, deadTemp), 'RLXKVIX4 half');
  const ls = JSON.parse(cli('ls', '--json', path).stdout);
  assert.equal(ls.blobs.length, 3, 'the index is no blob');
  assert.deepEqual(ls.temps.map((t) => [t.name, t.status]), [[deadTemp, 'abandoned']]);
  assert.equal(cli('verify', ...storeFiles(path).filter((n) => n.endsWith('.rlxkv')).map((n) => join(path, n))).status, 0);
  assert.equal(cli('prune', path, '--max-bytes', '0').status, 0);
  assert.ok(existsSync(join(path, INDEX_FILE)), 'prune leaves the index alone');
  assert.deepEqual(storeFiles(path).filter((n) => n.endsWith('.rlxkv')), []);
  assert.equal(existsSync(join(path, deadTemp)), false);
  // The pruned blobs are gone from what the next open finds.
  const cache = await open(path);
  assert.equal(cache.restoreReport.indexed, 0);
  assert.equal(cache.restoreReport.swept, 0);
  await cache.close();
});

test('fs: an index a listing found right is taken without listing until the directory changes', async () => {
  const path = await storeOf(4);
  // The directory as it is after a while (a stamp needs the directory older than the file system's tick).
  const old = new Date(Date.now() - 60_000);
  utimesSync(path, old, old);
  const listings = () => {
    let n = 0;
    const names = FsBlobs.prototype.names;
    FsBlobs.prototype.names = function (...args) { n++; return names.apply(this, args); };
    return { get n() { return n; }, undo() { FsBlobs.prototype.names = names; } };
  };
  let l = listings();
  try {
    (await open(path)).close({ flush: false });
    assert.equal(l.n, 1, 'listed, found right, stamped');
    const cache = await open(path);
    assert.equal(l.n, 1, 'not listed again');
    assert.equal(cache.restoreReport.indexed, 4);
    assert.deepEqual((await cache.match(range(2000, 9))).k, kv(2).k);
    await cache.close({ flush: false });
  } finally {
    l.undo();
  }
  // Another writer's blob, its index update lost: the directory changed, so the next open lists.
  const stamped = readFileSync(join(path, INDEX_FILE));
  const other = await open(path);
  other.insert(range(7000, 8), kv(7));
  await other.close();
  writeFileSync(join(path, `${INDEX_FILE}.x`), stamped);
  renameSync(join(path, `${INDEX_FILE}.x`), join(path, INDEX_FILE)); // the old index back, as a lost race would leave it
  l = listings();
  try {
    const cache = await open(path);
    assert.equal(l.n, 1);
    assert.equal(cache.restoreReport.indexed, 5);
    await cache.close({ flush: false });
  } finally {
    l.undo();
  }
  // A blob removed behind it (the CLI's prune): listed again, the blob gone.
  utimesSync(path, old, old);
  (await open(path)).close({ flush: false }); // stamps
  unlinkSync(join(path, await nameOf(range(7000, 8))));
  const after = await open(path);
  assert.equal(after.restoreReport.indexed, 4);
  assert.equal(after.has(range(7000, 8)), false);
  await after.close({ flush: false });
});
