// Node persistence: a directory of .rlxkv files, across separate processes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import init from 'rlxkv';
import { kvFor, storeFiles, tempDir, range, vectorsDir } from './helpers.js';

const rlx = await init();

/** Runs an ES module snippet in a fresh Node process, with `init` in scope. */
function inChild(code) {
  const src = `import init from 'rlxkv'; const rlx = await init(); ${code}`;
  return execFileSync(process.execPath, ['--input-type=module', '-e', src], {
    cwd: new URL('../..', import.meta.url),
    encoding: 'utf8',
  });
}

test('entries flushed by one process are restored by another', () => {
  const dir = tempDir();
  inChild(`
    const cache = await rlx.openCache({ capBytes: 1 << 20, fingerprint: 0xfeedn, storage: 'fs', path: ${JSON.stringify(dir)} });
    const kv = (n, s) => ({ k: [Float32Array.from({ length: n * 4 }, (_, i) => s + i)], v: [Float32Array.from({ length: n * 4 }, (_, i) => -s - i)] });
    cache.insert([10, 11, 12], kv(3, 1));
    cache.insert([10, 11, 12, 13, 14], kv(5, 1)); // as a model's: the same KV of [10, 11, 12]
    await cache.close();
  `);
  assert.equal(readdirSync(dir).filter((f) => f.endsWith('.rlxkv')).length, 2);
  const out = inChild(`
    const cache = await rlx.openCache({ capBytes: 1 << 20, fingerprint: 0xfeedn, storage: 'fs', path: ${JSON.stringify(dir)} });
    const before = cache.lookup([10, 11, 12, 13, 14, 15]); // memory only: nothing read yet
    const hit = await cache.match([10, 11, 12, 13, 14, 15]); // reads the one blob it needs
    console.log(JSON.stringify({ report: cache.restoreReport, before, resident: cache.stats.entries, matched: hit.matched, k: [...hit.k[0]].slice(0, 3), v: [...hit.v[0]].slice(0, 2) }));
    await cache.close();
  `);
  const got = JSON.parse(out);
  assert.equal(got.report.indexed, 2);
  assert.equal(got.before, null);
  assert.equal(got.resident, 2, 'the page of the hit and the one it extends');
  assert.equal(got.matched, 5);
  assert.deepEqual(got.k, [1, 2, 3]);
  assert.deepEqual(got.v, [-1, -2]);
});

test('the files written are RLXKV001 blobs, byte-identical to the reference', async () => {
  const dir = tempDir();
  const reference = readFileSync(join(vectorsDir, 'model_4l_37t.rlxkv'));
  const e = rlx.decodeEntry(reference);
  const cache = await rlx.openCache({ capBytes: 1 << 24, fingerprint: e.fingerprint, storage: 'fs', path: dir });
  cache.insert(e.tokens, e);
  await cache.close();
  const files = storeFiles(dir);
  assert.equal(files.length, 1);
  assert.match(files[0], /^[0-9a-f]{32}\.rlxkv$/); // its page name: 128 bits of (fingerprint, dtype, tokens)
  assert.deepEqual(readFileSync(join(dir, files[0])), reference);
});

test('stale and corrupt blobs: counted, skipped, and the stale ones left untouched', async () => {
  const dir = tempDir();
  const other = await rlx.openCache({ capBytes: 1 << 20, fingerprint: 1n, storage: 'fs', path: dir });
  other.insert([1, 2, 3], kvFor(3));
  await other.close();
  const [otherFile] = storeFiles(dir);
  const otherBytes = readFileSync(join(dir, otherFile));
  const mine = rlx.encodeEntry({ tokens: [7, 8], ...kvFor(2) }, 2n);
  writeFileSync(join(dir, '00000000deadbeef.rlxkv'), mine.subarray(0, mine.length - 3)); // torn
  writeFileSync(join(dir, 'notes.txt'), 'not a blob');

  const cache = await rlx.openCache({ capBytes: 1 << 20, fingerprint: 2n, storage: 'fs', path: dir });
  assert.deepEqual(
    { loaded: cache.restoreReport.indexed, stale: cache.restoreReport.stale, corrupt: cache.restoreReport.corrupt },
    { loaded: 0, stale: 1, corrupt: 1 },
  );
  cache.insert([4, 5], kvFor(2));
  await cache.close();
  assert.deepEqual(readFileSync(join(dir, otherFile)), otherBytes);
  const statuses = (await rlx.openCache({ capBytes: 1 << 20, fingerprint: 2n, storage: 'fs', path: dir }));
  const listed = statuses.listBlobs().map((b) => b.status).sort();
  assert.deepEqual(listed, ['corrupt', 'ok', 'stale']);
  await statuses.close();
});

test('a storage budget prunes the oldest blobs of this fingerprint', async () => {
  const dir = tempDir();
  const cache = await rlx.openCache({ capBytes: 1 << 20, fingerprint: 5n, storage: 'fs', path: dir });
  for (let i = 0; i < 6; i++) {
    cache.insert(range(i * 10, 8), kvFor(8)); // 512 bytes of KV each
    await cache.flush();
  }
  const total = cache.listBlobs().reduce((s, b) => s + b.bytes, 0);
  cache.capBytes = 1200; // keeps the 2 most recent in memory
  const report = await cache.prune({ maxBytes: Math.floor(total / 2) });
  assert.ok(report.removed >= 3, JSON.stringify(report));
  const left = cache.listBlobs();
  assert.ok(left.reduce((s, b) => s + b.bytes, 0) <= total / 2);
  await cache.close();
});

test('storageCapBytes is a real budget, newest kept, the pinned prompt always', async () => {
  const dir = tempDir();
  const cache = await rlx.openCache({ capBytes: 256 << 20, fingerprint: 6n, storage: 'fs', path: dir, storageCapBytes: 4 * 700 }); // 648-byte blobs: 4 fit
  cache.insert(range(0, 8), kvFor(8)); // the system prompt, saved first
  cache.pin(range(0, 8));
  await cache.flush();
  for (let i = 1; i <= 8; i++) {
    cache.insert(range(i * 100, 8), kvFor(8, { seed: i })); // all still in memory
    await cache.flush();
  }
  const blobs = cache.listBlobs();
  assert.equal(blobs.length, 4, JSON.stringify(blobs.map((b) => b.bytes)));
  await cache.close();
  const reopened = await rlx.openCache({ capBytes: 256 << 20, fingerprint: 6n, storage: 'fs', path: dir });
  assert.ok(reopened.has(range(0, 8)), 'the pinned prompt stays stored');
  assert.ok(reopened.has(range(800, 8)) && reopened.has(range(700, 8)), 'the newest stay');
  assert.ok(!reopened.has(range(100, 8)), 'the oldest went');
  await reopened.close();
});
