// close() is the way to free a cache; a cache dropped without it is freed
// when garbage-collected (FinalizationRegistry), so the wasm heap stays bounded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';

test('caches dropped without close() are freed by the garbage collector', () => {
  const src = `
    import init from 'rlxkv';
    const rlx = await init();
    const kv = { k: [new Float32Array(1 << 18)], v: [new Float32Array(1 << 18)] }; // 2 MiB per cache
    const step = async () => {
      for (let i = 0; i < 20; i++) rlx.createCache({ capBytes: 1 << 30 }).insert([i], kv); // never closed
      await new Promise((r) => setTimeout(r, 0));
      globalThis.gc();
      await new Promise((r) => setTimeout(r, 0));
    };
    for (let r = 0; r < 5; r++) await step();
    const warm = rlx.memoryBytes;
    for (let r = 0; r < 50; r++) await step(); // 2 GiB allocated in all
    console.log(JSON.stringify({ warm, after: rlx.memoryBytes }));
  `;
  const out = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', src], {
    cwd: new URL('../..', import.meta.url), encoding: 'utf8',
  });
  const { warm, after } = JSON.parse(out);
  assert.ok(after <= warm * 2, `wasm memory ${after} bytes after 2 GiB of unclosed caches (was ${warm})`);
  assert.ok(after < 512 * 1024 * 1024);
});
