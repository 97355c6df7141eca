// One contract for every backend (store/backend.js): the same calls give
// the same result shapes over a Node directory and IndexedDB (OPFS keeps
// it too; tests/browser/opfs.test.js uses it through caches). What the
// tiered store and copyStore rely on, checked on the backends themselves.
import 'fake-indexeddb/auto';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FsBlobs } from '../../store/fs-blobs.js';
import { IdbBlobs } from '../../store/idb-blobs.js';
import { RlxkvError } from '../../wasm/errors.js';
import { tempDir } from './helpers.js';

let dbCount = 0;
const BACKENDS = {
  fs: () => FsBlobs.open(tempDir()),
  idb: () => IdbBlobs.open(`/contract-${++dbCount}`),
};
const NAME_A = `${'a'.repeat(32)}.rlxkv`, NAME_B = `${'b'.repeat(32)}.rlxkv`;
const bytes = (n, fill) => new Uint8Array(n).fill(fill);
const item = (name, n, fill) => ({ name, bytes: n, parts: [bytes(n, fill)] });
const sorted = (a) => [...a].sort();

for (const [kind, open] of Object.entries(BACKENDS)) {
  test(`${kind}: commit writes, tells and indexes; names, list, head and read give them back`, async () => {
    const b = await open();
    try {
      assert.equal(typeof b.direct, 'boolean');
      assert.equal(typeof b.pieces, 'boolean');
      assert.equal(typeof b.indexComplete, 'boolean');
      assert.equal(b.readOnly, false);
      const saved = [], told = [];
      await b.commit({
        items: [item(NAME_A, 10, 1), item(NAME_B, 20, 2)],
        update: (cur, present, written) => {
          told.push(written.map((it) => it.name));
          return new TextEncoder().encode(`index of ${written.length}`);
        },
      }, { onSaved: (it) => saved.push(it.name) });
      assert.deepEqual(saved, [NAME_A, NAME_B], 'each item told once it is written, in order');
      assert.deepEqual(told.flat(), [NAME_A, NAME_B], 'the index update is told what was written');
      assert.equal(new TextDecoder().decode(await b.readIndex()), 'index of 2');
      const { blobs, temporaries, swept } = await b.names();
      assert.deepEqual(sorted(blobs), [NAME_A, NAME_B]);
      assert.deepEqual(temporaries, []);
      assert.equal(swept, 0);
      const listed = (await b.list()).blobs;
      assert.deepEqual(sorted(listed.map((s) => `${s.name}:${s.bytes}`)), [`${NAME_A}:10`, `${NAME_B}:20`]);
      assert.ok(listed.every((s) => Number.isFinite(s.mtimeMs)));
      assert.deepEqual((await b.list([NAME_B, 'gone.rlxkv'])).blobs.map((s) => s.name), [NAME_B], 'a name gone is left out');
      assert.deepEqual([...await b.head(NAME_B, 4)], [2, 2, 2, 2]);
      assert.deepEqual([...await b.read(NAME_A)], [...bytes(10, 1)]);
      assert.equal(await b.read('gone.rlxkv'), null);
      assert.equal(await b.head('gone.rlxkv', 4), null);
      const { bytes: index, describes } = await b.openIndex();
      assert.equal(new TextDecoder().decode(index), 'index of 2');
      assert.equal(typeof describes(2), 'boolean');
    } finally {
      await b.close();
    }
  });

  test(`${kind}: commit removes and tells; a failing item's commit rejects and keeps what came before`, async () => {
    const b = await open();
    try {
      await b.commit({ items: [item(NAME_A, 8, 1)] });
      const removed = [];
      await b.commit({ removes: [NAME_A], update: () => undefined }, { onRemoved: (n) => removed.push(n) });
      assert.deepEqual(removed, [NAME_A]);
      assert.deepEqual((await b.names()).blobs, []);
      // An item whose parts fail: the commit rejects with that error; a backend
      // that writes item by item keeps those before it, one with transactions
      // keeps none of that batch. Either way nothing torn is left under a name.
      const failing = { name: NAME_B, bytes: 8, parts: { [Symbol.iterator]() { throw new RlxkvError('IO', 'the disk went away'); } } };
      await assert.rejects(b.commit({ items: [item(NAME_A, 8, 3), failing] }), /disk went away|IO/);
      const left = (await b.names()).blobs;
      assert.ok(!left.includes(NAME_B), 'the failed item was not written');
      if (left.includes(NAME_A)) assert.deepEqual([...await b.read(NAME_A)], [...bytes(8, 3)], 'what was written is whole');
    } finally {
      await b.close();
    }
  });
}

test('fs: names() sweeps the temporary files of writers that are gone and counts them', async () => {
  const dir = tempDir();
  // A dead writer's save: pid 0x7ffffffe is no process here.
  writeFileSync(join(dir, `${NAME_A}.7ffffffe-1-0.tmp`), bytes(4, 0));
  const b = await FsBlobs.open(dir);
  try {
    const { blobs, temporaries, swept } = await b.names();
    assert.deepEqual(blobs, []);
    assert.deepEqual(temporaries, []);
    assert.equal(swept, 1);
  } finally {
    await b.close();
  }
});
