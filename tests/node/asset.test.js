// KV as a shipped asset: export an entry as a blob, import it elsewhere.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import init, { RlxkvError } from 'rlxkv';
import { kvFor, range, tempDir, vectorsDir } from './helpers.js';

const rlx = await init();
const FP = rlx.fingerprintOf('demo-model');

test('exportBlob → importBlob moves an entry byte-exact, pinned on request', async () => {
  const system = range(1000, 300);
  const kv = kvFor(300, { layers: 4, width: 16 });
  const builder = rlx.createCache({ capBytes: 1 << 24, fingerprint: FP });
  builder.insert(system, kv);
  const blob = builder.exportBlob(system);
  assert.equal(builder.exportBlob(range(1000, 299)), null, 'only an exact entry is exported');
  await builder.close();

  const app = rlx.createCache({ capBytes: 1 << 24, fingerprint: FP });
  assert.deepEqual(await app.importBlob(blob, { pin: true }), { tokens: 300, bytes: 300 * 16 * 8 * 4, cached: true });
  assert.deepEqual(app.entries().map((e) => e.pinned), [true]);
  const hit = app.lookup([...system, 5, 6]);
  assert.equal(hit.matched, 300);
  assert.deepEqual(hit.k, kv.k);
  assert.deepEqual(app.exportBlob(system), blob);
  await app.close();
});

test('importBlob reads a file path, a file: URL, an http URL and a Response', async () => {
  const dir = tempDir();
  const blob = rlx.encodeEntry({ tokens: [1, 2, 3], ...kvFor(3) }, FP);
  const file = join(dir, 'system.rlxkv');
  writeFileSync(file, blob);
  const server = createServer((req, res) => {
    if (req.url === '/system.rlxkv') res.end(Buffer.from(blob));
    else res.writeHead(404).end();
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${server.address().port}`;
  try {
    for (const source of [file, pathToFileURL(file).href, `${base}/system.rlxkv`, await fetch(`${base}/system.rlxkv`)]) {
      const cache = rlx.createCache({ capBytes: 1 << 20, fingerprint: FP });
      await cache.importBlob(source);
      assert.ok(cache.lookup([1, 2, 3, 4]), String(source));
      await cache.close();
    }
    const cache = rlx.createCache({ capBytes: 1 << 20, fingerprint: FP });
    await assert.rejects(cache.importBlob(`${base}/missing.rlxkv`), (e) => e instanceof RlxkvError && e.code === 'IO' && /404/.test(e.message));
    await assert.rejects(cache.importBlob(join(dir, 'nope.rlxkv')), (e) => e.code === 'IO');
    await cache.close();
  } finally {
    server.close();
  }
});

test('a blob of another model is refused as STALE; a corrupt one by its code; nothing changes', async () => {
  const cache = rlx.createCache({ capBytes: 1 << 20, fingerprint: FP });
  cache.insert([9], kvFor(1));
  const before = cache.entries();
  await assert.rejects(cache.importBlob(readFileSync(join(vectorsDir, 'seed_small.rlxkv'))), (e) => e.code === 'STALE' && /0xabcd/.test(e.message));
  const blob = rlx.encodeEntry({ tokens: [1, 2], ...kvFor(2) }, FP);
  await assert.rejects(cache.importBlob(blob.subarray(0, 40)), (e) => e.code === 'TRUNCATED');
  await assert.rejects(cache.importBlob(42), TypeError);
  assert.deepEqual(cache.entries(), before);
  await cache.close();
});
