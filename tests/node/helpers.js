// Shared by the Node tests: deterministic KV and paths.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadCore } from '../../wasm/core.js';
import { NativeCache } from '../../wasm/native-cache.js';

/** A Node store directory's index file (store/fs-blobs.js): only a cache of its listing and blobs. */
export const INDEX_FILE = '.rlxkv-index';
/** A store directory's files but its index: what a test that counts files means. */
export const storeFiles = (dir) => readdirSync(dir).filter((n) => n !== INDEX_FILE);
/** Removes a store directory's index, as a store written before it has none: the next open reads every blob's first bytes. */
export const dropIndex = (dir) => rmSync(join(dir, INDEX_FILE), { force: true });

/** The 64-bit name (rlxkv_blob_name) a store before pages gave the blob of (fingerprint, tokens). */
export async function legacyBlobName(fingerprint, tokens) {
  const naming = new NativeCache(await loadCore(), { capBytes: 0, fingerprint: 0n, layout: null, f16As: 'Uint16Array' });
  try {
    return naming.blobName(Uint32Array.from(tokens), fingerprint);
  } finally {
    naming.free();
  }
}

export const vectorsDir = fileURLToPath(new URL('../../../shared/vectors/', import.meta.url));

/** Row-major KV for n tokens: `layers` layers, `width` floats per row, values from seed. */
export function kvFor(n, { layers = 2, width = 4, seed = 1 } = {}) {
  const block = (side, l) => Float32Array.from({ length: n * width }, (_, i) => seed * 1000 + side * 100 + l * 10 + i / 8);
  return {
    k: Array.from({ length: layers }, (_, l) => block(1, l)),
    v: Array.from({ length: layers }, (_, l) => block(2, l)),
  };
}

/**
 * A model's KV of tokens[from..] under a head-major layout with layers
 * layers: each token's values a function of its whole prefix, as a real
 * model's are, so a prefix's KV is the same in every entry that holds it.
 */
export function modelKv(tokens, layout, from = 0) {
  const n = tokens.length - from, hashes = [];
  let h = 2166136261;
  for (const t of tokens) hashes.push((h = Math.imul(h ^ t, 16777619) >>> 0));
  const block = (side, l) => {
    const out = new Float32Array(layout.heads * n * layout.headDim);
    for (let head = 0; head < layout.heads; head++) {
      for (let r = 0; r < n; r++) {
        for (let d = 0; d < layout.headDim; d++) {
          out[(head * n + r) * layout.headDim + d] = ((hashes[from + r] >>> 8) % 65536) + side / 2 + l / 4 + head / 8 + d / 64;
        }
      }
    }
    return out;
  };
  const layers = Array.from({ length: layout.layers }, (_, l) => l);
  return { k: layers.map((l) => block(0, l)), v: layers.map((l) => block(1, l)) };
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
