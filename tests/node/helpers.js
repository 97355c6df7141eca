// Shared by the Node tests: deterministic KV and paths.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const vectorsDir = fileURLToPath(new URL('../../../shared/vectors/', import.meta.url));

/** Row-major KV for n tokens: `layers` layers, `width` floats per row, values from seed. */
export function kvFor(n, { layers = 2, width = 4, seed = 1 } = {}) {
  const block = (side, l) => Float32Array.from({ length: n * width }, (_, i) => seed * 1000 + side * 100 + l * 10 + i / 8);
  return {
    k: Array.from({ length: layers }, (_, l) => block(1, l)),
    v: Array.from({ length: layers }, (_, l) => block(2, l)),
  };
}

/** Bytes of a KV: 4 per float. */
export const kvBytes = (kv) => [...kv.k, ...kv.v].reduce((s, b) => s + b.length * 4, 0);

export const range = (from, n) => Array.from({ length: n }, (_, i) => from + i);

// Every tempDir() of this process, removed when it exits (node --test runs
// each test file in a process of its own, so once that file is done).
const tempDirs = [];
process.on('exit', () => {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

/** A fresh directory under the system temp dir, removed at exit. */
export function tempDir(name = 'rlxkv-test-') {
  const dir = mkdtempSync(join(tmpdir(), name));
  tempDirs.push(dir);
  return dir;
}
