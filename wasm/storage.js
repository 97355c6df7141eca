// The C store (src/store.c) on a directory of the Emscripten file system,
// mounted on a real directory (NODEFS): what rlx.openStore and the CLI use
// in Node. Node only: the browser glue has no file system (caches reach
// their stores from JS: store/tiers.js).
import { storeDirectory } from '../store/fs-blobs.js';
import { STATUS, statusError } from './errors.js';

/** rlxkv_store_prune's and rlxkv_store_list's flags (src/rlxkv.h). */
export const PRUNE = { DRY_RUN: 1, KEEP_STALE: 2, ANY_FINGERPRINT: 4, KEEP_PINNED: 8 };
/** rlxkv_blob_status, by value. */
const BLOB_STATUS = ['ok', 'stale', 'corrupt', 'foreign', 'too-large', 'unreadable', 'temp', 'abandoned'];
const DTYPES = ['f32', 'f16'];
/** UINT64_MAX: no byte budget. */
const NO_BUDGET = 2n ** 64n - 1n;

/** n u64 fields at heap address p (8-aligned), as numbers (exact below 2^53). */
function u64s(core, p, n) {
  return Array.from(new BigUint64Array(core.u8.buffer, p, n), Number);
}

/** A byte budget for C: a uint64_t, passed as a BigInt (WASM_BIGINT); a bigint one (below 2^64, js/store.js checks) as it is. */
const toBudget = (n) => (typeof n === 'bigint' ? n : n === Infinity || n >= 2 ** 64 ? NO_BUDGET : BigInt(Math.trunc(n)));

/**
 * Reads a C rlxkv_blob_info array (wasm/boundary.c pins the layout): name
 * (80 bytes), then u64 file_bytes, n_tokens, kv_bytes, i64 mtime, u64
 * fingerprint, i32 mtime_ns, status, error, dtype, page.
 */
function blobInfos(core, p, n, size) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const r = p + i * size;
    const [bytes, tokens, kvBytes] = u64s(core, r + 80, 3);
    const mtime = Number(new BigInt64Array(core.u8.buffer, r + 104, 1)[0]);
    const i32 = new Int32Array(core.u8.buffer, r + 120, 5);
    const [ns, status, error, dtype, page] = [i32[0], i32[1], i32[2], i32[3], i32[4]];
    out.push({
      name: core.cstringAt(r),
      tokens,
      bytes,
      kvBytes,
      mtime: new Date(mtime * 1000 + Math.floor(ns / 1e6)),
      fingerprint: new BigUint64Array(core.u8.buffer, r + 112, 1)[0],
      status: BLOB_STATUS[status] || 'corrupt',
      error,
      dtype: DTYPES[dtype] || null,
      page: page === 1,
    });
  }
  return out;
}

/** A NUL-terminated copy of a JS string in the heap; free it. */
function cstring(core, s) {
  const bytes = new TextEncoder().encode(s);
  const p = core.alloc(bytes.length + 1);
  core.u8.set(bytes, p);
  core.u8[p + bytes.length] = 0;
  return p;
}

/** An errno from C (rlxkv_store_errno) by its name, 'EACCES'. */
function errnoName(core, err) {
  const name = core.M._rlxkv_web_errno_name(err) >>> 0;
  return name ? core.cstringAt(name) : `errno ${err} (as Emscripten numbers them)`;
}

/** Mounts shared by the stores of one module instance, counted. */
const mountsOf = new WeakMap();

function mounts(core) {
  let m = mountsOf.get(core);
  if (!m) mountsOf.set(core, (m = { byKey: new Map(), next: 0 }));
  return m;
}


async function mountFs(core, dir) {
  const root = await storeDirectory(dir);
  const m = mounts(core);
  const key = `fs:${root}`;
  let mnt = m.byKey.get(key);
  if (!mnt) {
    const point = `/rlxkv-fs/${m.next++}`;
    core.M.FS.mkdirTree(point);
    core.M.FS.mount(core.M.NODEFS, { root }, point);
    mnt = { key, point, refs: 0 };
    m.byKey.set(key, mnt);
  }
  mnt.refs++;
  return mnt;
}

async function unmount(core, mnt) {
  if (--mnt.refs > 0) return;
  mounts(core).byKey.delete(mnt.key);
  try { core.M.FS.unmount(mnt.point); } catch { /* already gone */ }
}

/** A C store (rlxkv_store) over a mounted directory. */
export class BlobStore {
  static async open(core, path) {
    const mnt = await mountFs(core, path);
    const dir = cstring(core, mnt.point);
    let store;
    try {
      store = core.M._rlxkv_store_open(dir, 0, core.cell) >>> 0;
    } finally {
      core.free(dir);
    }
    if (!store) {
      const st = core.i32(core.cell);
      await unmount(core, mnt);
      throw core.fail(st, `opening store ${path}`);
    }
    return new BlobStore(core, mnt, store, path);
  }

  constructor(core, mnt, store, path) {
    this.core = core;
    this.kind = 'fs'; // a Node directory, the only kind the C store serves
    this.mnt = mnt;
    this.ptr = store;
    this.path = path; // as the caller named it, for messages
  }

  /** The error for a failed call: what was being done, on which directory, and the errno behind an IO or QUOTA. */
  #fail(status, what) {
    const { core } = this;
    const errno = status === STATUS.IO || status === STATUS.QUOTA ? core.M._rlxkv_store_errno(this.ptr) : 0;
    return statusError(status, `${what} ${this.path}`, core.strerror(status) + (errno ? `: ${errnoName(core, errno)}` : ''));
  }

  /** The blobs and temporary files, judged against fingerprint (any: every valid blob is ok). */
  list(fingerprint, any = false) {
    const { core } = this;
    const outCell = core.cell + 32, nCell = core.cell + 40;
    const st = core.M._rlxkv_store_list(this.ptr, fingerprint, any ? PRUNE.ANY_FINGERPRINT : 0, outCell, nCell);
    if (st < 0) throw this.#fail(st, 'listing the store');
    const p = core.u32[outCell >>> 2], n = core.u32[nCell >>> 2];
    try {
      return blobInfos(core, p, n, core.M._rlxkv_web_blob_info_size());
    } finally {
      core.free(p);
    }
  }

  /**
   * rlxkv_store_prune: corrupt blobs go, stale ones too when `stale`, then
   * the oldest counted ones until maxBytes. anyFingerprint: every valid
   * blob counts.
   */
  prune(fingerprint, { maxBytes = Infinity, stale = false, dryRun = false, anyFingerprint = false } = {}) {
    const { core } = this;
    const flags = (dryRun ? PRUNE.DRY_RUN : 0) | (stale ? 0 : PRUNE.KEEP_STALE) | (anyFingerprint ? PRUNE.ANY_FINGERPRINT : 0);
    const rep = core.alloc(8 * 8);
    try {
      const st = core.M._rlxkv_store_prune(this.ptr, fingerprint, toBudget(maxBytes), flags, 0, rep);
      if (st < 0) throw this.#fail(st, 'pruning the store');
      const [removed, removedBytes, kept, keptBytes, tempsRemoved, tempsRemovedBytes, tempsKept, tempsKeptBytes] = u64s(core, rep, 8);
      return { removed, removedBytes, kept, keptBytes, tempsRemoved, tempsRemovedBytes, tempsKept, tempsKeptBytes };
    } finally {
      core.free(rep);
    }
  }

  async close() {
    if (!this.ptr) return;
    this.core.M._rlxkv_store_close(this.ptr);
    this.ptr = 0;
    await unmount(this.core, this.mnt);
  }
}
