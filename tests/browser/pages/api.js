// The in-browser half of the browser tests, shared by the page (harness.js)
// and the module worker (worker.js): deterministic KV entries, and the cache
// calls the tests drive through page.evaluate / postMessage. Results are
// plain data (bigints as hex strings) so they cross to Node unchanged.
//
// An entry is named by (id, version): its tokens depend on id only, its KV
// bits on both, so a restored entry can be told to be exactly version A,
// exactly version B, or neither (torn).

export const DEFAULT_SHAPE = { tokens: 16, layers: 2, width: 8 };

/** Tokens of entry `id`: no entry's tokens are a prefix of another's. */
export function tokensOf(id, shape = DEFAULT_SHAPE) {
  const t = new Uint32Array(shape.tokens);
  for (let i = 0; i < t.length; i++) t[i] = ((id + 1) << 16) + i;
  return t;
}

function fnv1a(str) {
  let h = 0x811c9dc5;
  for (let i = 0; i < str.length; i++) h = Math.imul(h ^ str.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/** KV of (id, version): random 32-bit patterns (any float bits, NaNs included). */
export function kvOf(id, version, shape = DEFAULT_SHAPE) {
  let s = fnv1a(`${id}/${version}`) || 1;
  const block = () => {
    const words = new Uint32Array(shape.tokens * shape.width);
    for (let i = 0; i < words.length; i++) {
      s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
      words[i] = s;
    }
    return new Float32Array(words.buffer);
  };
  const k = [], v = [];
  for (let l = 0; l < shape.layers; l++) { k.push(block()); v.push(block()); }
  return { k, v };
}

/** Same bits? Compared as u32 words, so NaN payloads count too. */
function sameBits(a, b) {
  if (a.length !== b.length) return false;
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}

function sameKv(a, b) {
  return a.k.length === b.k.length && a.v.length === b.v.length &&
    a.k.every((blk, i) => sameBits(blk, b.k[i])) && a.v.every((blk, i) => sameBits(blk, b.v[i]));
}

/** SHA-256 (hex) of a KV's bytes, layer by layer, K then V. */
export async function digestKv(kv) {
  const blocks = [...kv.k, ...kv.v];
  const total = blocks.reduce((n, b) => n + b.byteLength, 0);
  const all = new Uint8Array(total);
  let at = 0;
  for (const b of blocks) { all.set(new Uint8Array(b.buffer, b.byteOffset, b.byteLength), at); at += b.byteLength; }
  const h = new Uint8Array(await crypto.subtle.digest('SHA-256', all));
  return [...h].map((x) => x.toString(16).padStart(2, '0')).join('');
}

/** Rejects after ms instead of hanging: a hung promise is a bug to report. */
export function within(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`TIMEOUT: ${what} did not settle within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function errorInfo(e, RlxkvError) {
  return {
    ok: false,
    name: e && e.name,
    code: e && e.code,
    message: String((e && e.message) || e),
    isRlxkvError: e instanceof RlxkvError,
  };
}

function plainReport(r) { return r ? { ...r } : r; }

/** The OPFS directory `path` ('/a/b' under the root), made if missing when create. */
async function opfsDir(path, create = false) {
  let dir = await navigator.storage.getDirectory();
  for (const seg of path.split('/').filter(Boolean)) dir = await dir.getDirectoryHandle(seg, { create });
  return dir;
}

/** The test API over one rlxkv module instance. */
export function makeApi(rlx) {
  let cache = null;
  let flushState = null;
  const api = {
    /** Opens the cache (IndexedDB unless `storage` says otherwise); fingerprint as hex; layout as openCache's. */
    async open({ capBytes = 256 << 20, fingerprint = 'f00d', path = '/rlxkv-test', storage = 'idb', storageCapBytes, watch = false, layout } = {}) {
      if (cache && !cache.closed) throw new Error('a cache is already open here');
      const opts = { capBytes, fingerprint: BigInt('0x' + fingerprint), storage, path, watch };
      if (storageCapBytes !== undefined) opts.storageCapBytes = storageCapBytes;
      if (layout !== undefined) opts.layout = layout;
      cache = await within(rlx.openCache(opts), 30000, 'openCache');
      // Opening reads the index: entries are known (stored-only) until a hit reads them.
      const { entries, storedEntries } = cache.stats;
      return { storage: cache.storage, size: entries, known: entries + storedEntries, restoreReport: plainReport(cache.restoreReport) };
    },

    /** Resolves once the cache knows an entry of every id (or after ms): which it knows. */
    async knows(ids, shape = DEFAULT_SHAPE, ms = 10000) {
      const until = performance.now() + ms;
      const known = () => ids.filter((id) => cache.has(tokensOf(id, shape)));
      while (known().length < ids.length && performance.now() < until) await new Promise((r) => setTimeout(r, 10));
      return known();
    },

    /** Inserts (id, version) for every id; returns the KV digests. */
    async insert(ids, version, shape = DEFAULT_SHAPE) {
      const digests = {};
      for (const id of ids) {
        const kv = kvOf(id, version, shape);
        cache.insert(tokensOf(id, shape), kv);
        digests[id] = await digestKv(kv);
      }
      return digests;
    },

    /** flush(): { ok: true } or the error's { name, code, message, isRlxkvError }. */
    async flush(ms = 30000) {
      try {
        await within(cache.flush(), ms, 'flush()');
        return { ok: true };
      } catch (e) {
        return errorInfo(e, rlx.RlxkvError);
      }
    },

    /** Starts a flush and does not wait for it. */
    flushNoWait() {
      flushState = 'running';
      cache.flush().then(() => { flushState = 'done'; }, (e) => { flushState = errorInfo(e, rlx.RlxkvError); });
      return true;
    },

    /** Starts a hit on entry id (a stored-only entry is read from storage) and does not wait for it. */
    matchNoWait(id, shape = DEFAULT_SHAPE) {
      cache.match(tokensOf(id, shape)).catch(() => {});
      return true;
    },

    /** Where the flushNoWait() flush is: 'running', 'done' or its error. */
    flushState() { return flushState; },

    /**
     * For each id: which version the cache holds (a lookup that must hit
     * the whole entry, bits compared), 'missing', or 'torn' (neither).
     */
    async verify(ids, versions, shape = DEFAULT_SHAPE) {
      const out = {};
      for (const id of ids) {
        const tokens = tokensOf(id, shape);
        const query = new Uint32Array(tokens.length + 3);
        query.set(tokens);
        query.set([1, 2, 3], tokens.length);
        const hit = await cache.match(query); // memory or storage: a stored entry is read now
        if (!hit) { out[id] = { version: 'missing' }; continue; }
        if (hit.matched !== tokens.length || hit.tokens.some((tok, i) => tok !== tokens[i])) {
          out[id] = { version: 'torn', matched: hit.matched };
          continue;
        }
        const candidates = versions.map((ver) => kvOf(id, ver, shape));
        if (candidates.some((c, i) => candidates.slice(i + 1).some((d) => sameKv(c, d)))) {
          throw new Error(`test bug: versions ${versions} of entry ${id} have the same KV`);
        }
        const at = candidates.findIndex((c) => sameKv(hit, c));
        const match = at < 0 ? undefined : versions[at];
        out[id] = { version: match === undefined ? 'torn' : match, digest: await digestKv(hit) };
      }
      return out;
    },

    /** A user's lookup: entry id's tokens plus `extra` new ones → { matched, hits, misses } or null. */
    async lookup(id, extra = 5, shape = DEFAULT_SHAPE) {
      const tokens = tokensOf(id, shape);
      const query = new Uint32Array(tokens.length + extra);
      query.set(tokens);
      const hit = await cache.match(query);
      const { hits, misses } = cache.stats;
      return hit ? { matched: hit.matched, layers: hit.k.length, hits, misses } : null;
    },

    /** Waits until the wall clock enters its next second. */
    nextSecond() { return new Promise((r) => setTimeout(r, 1005 - (Date.now() % 1000))); },

    /** Drops every entry from memory (blobs stay): the next match reads them again. */
    clear() { cache.clear(); return cache.stats.entries; },

    /** Forgets everything of this cache, its stored blobs too: { entries, storedEntries, blobs } after. */
    async clearStored() {
      await cache.clear({ stored: true });
      const { entries, storedEntries } = cache.stats;
      return { entries, storedEntries, blobs: cache.listBlobs().length };
    },

    /** Deletes a whole store ({ storage, path }): deleteStore's { removed }. */
    deleteStore(place) { return rlx.deleteStore(place); },

    /** Stored-only and resident entries this cache knows of. */
    known() { const { entries, storedEntries } = cache.stats; return entries + storedEntries; },

    remove(ids, shape = DEFAULT_SHAPE) { return ids.map((id) => cache.remove(tokensOf(id, shape))); },

    /** listBlobs() as plain data: fingerprint hex, mtime in ms. */
    list() {
      return cache.listBlobs().map((b) => ({ ...b, fingerprint: b.fingerprint.toString(16), mtime: b.mtime.getTime() }));
    },

    /** cache.prune(opts), with a timeout. */
    async prune(opts) { return within(cache.prune(opts), 30000, 'prune()'); },

    /** cache.prune(opts), and after ms a hit on each id while it runs: the prune's report. */
    async pruneWhileMatching(opts, ids, ms, shape = DEFAULT_SHAPE) {
      const pruning = cache.prune(opts);
      await new Promise((r) => setTimeout(r, ms));
      const hits = ids.map((id) => cache.match(tokensOf(id, shape)).catch(() => null));
      const report = await within(pruning, 30000, 'prune()');
      await Promise.all(hits);
      return report;
    },

    /** Replaces entry id by versions L0, L1, ... and flushes each, until the context dies. */
    flushLoop(id, shape = DEFAULT_SHAPE) {
      (async () => {
        for (let i = 0; ; i++) {
          cache.insert(tokensOf(id, shape), kvOf(id, `L${i}`, shape));
          await cache.flush();
          if (i === 0) console.log('rlxkv-test: flush loop running');
        }
      })();
      return true;
    },

    /** Which L<i> (i < max) the stored entry id is: { i }, or { version: 'missing' | 'torn' }. */
    async whichLoop(id, max, shape = DEFAULT_SHAPE) {
      const hit = await cache.match(tokensOf(id, shape));
      if (!hit) return { version: 'missing' };
      for (let i = 0; i < max; i++) if (sameKv(hit, kvOf(id, `L${i}`, shape))) return { i };
      return { version: 'torn' };
    },

    pin(ids, shape = DEFAULT_SHAPE) { for (const id of ids) cache.pin(tokensOf(id, shape)); return true; },

    /** rlx.copyStore(from, to). */
    async copyStore(from, to) { return within(rlx.copyStore(from, to), 60000, 'copyStore()'); },

    /** How many blobs rlx.openStore(place) lists. */
    async storeBlobs(place) {
      const store = await within(rlx.openStore(place), 30000, 'openStore()');
      try {
        return store.list().length;
      } finally {
        await store.close();
      }
    },

    /** Flips bit 0 of byte `at` of the OPFS file path/name, in place (behind any cache's back). */
    async opfsFlip(path, name, at) {
      const dir = await opfsDir(path);
      const fh = await dir.getFileHandle(name);
      const bytes = new Uint8Array(await (await fh.getFile()).arrayBuffer());
      bytes[at] ^= 1;
      const w = await fh.createWritable();
      await w.write(bytes);
      await w.close();
    },

    /**
     * Workers only: opens a read-only sync handle on OPFS file path/name,
     * as a reader does, and closes it after ms. Resolves once it is open;
     * heldUntil() then gives the time of the close (performance.timeOrigin based).
     */
    async opfsHold(path, name, ms) {
      const dir = await opfsDir(path);
      const s = await (await dir.getFileHandle(name)).createSyncAccessHandle({ mode: 'read-only' });
      api.held = new Promise((resolve) => setTimeout(() => { s.close(); resolve(performance.timeOrigin + performance.now()); }, ms));
      return true;
    },
    heldUntil() { return api.held; },

    /**
     * Workers only: whether OPFS file path/name is locked by an open handle
     * somewhere (a read-write one cannot open), asking no one to let go.
     */
    async opfsLocked(path, name) {
      const fh = await (await opfsDir(path)).getFileHandle(name);
      try {
        (await fh.createSyncAccessHandle()).close();
        return false;
      } catch (e) {
        if (e.name === 'NoModificationAllowedError') return true;
        throw e;
      }
    },

    /** Makes the page look hidden (or visible again) to its scripts, as when its tab goes to the background. */
    pretendHidden(hidden) {
      Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => (hidden ? 'hidden' : 'visible') });
      document.dispatchEvent(new Event('visibilitychange'));
      return document.visibilityState;
    },

    /** The time now, comparable between pages and workers (performance.timeOrigin based). */
    now() { return performance.timeOrigin + performance.now(); },

    /**
     * OPFS file path/name behind any cache's back: its bytes (an array of
     * numbers, or null if there is none) as they were, then replaced by
     * `put` (an array of numbers), or removed if put is null.
     */
    async opfsFile(path, name, put) {
      const dir = await opfsDir(path, put !== undefined && put !== null);
      const fh = await dir.getFileHandle(name).catch(() => null);
      const was = fh && [...new Uint8Array(await (await fh.getFile()).arrayBuffer())];
      if (put === null) await dir.removeEntry(name).catch(() => {});
      else if (put !== undefined) {
        const w = await (await dir.getFileHandle(name, { create: true })).createWritable();
        await w.write(new Uint8Array(put));
        await w.close();
      }
      return was;
    },

    /**
     * The file names in OPFS directory `path` (temporary files included),
     * and those of its writers' markers as '.rlxkv-pending/<name>', sorted.
     */
    async opfsNames(path) {
      const dir = await opfsDir(path, true);
      const names = [];
      for await (const [name, h] of dir.entries()) {
        if (h.kind === 'file') names.push(name);
        else if (name === '.rlxkv-pending') for await (const [marker] of h.entries()) names.push(`${name}/${marker}`);
      }
      return names.sort();
    },

    /** Makes the next n moves onto an OPFS index file ('.rlxkv-index') fail with QuotaExceededError. */
    failIndexMoves(n) {
      const move = FileSystemFileHandle.prototype.move;
      FileSystemFileHandle.prototype.move = function (dir, name, ...rest) {
        if (name === '.rlxkv-index' && n > 0) {
          n--;
          return Promise.reject(new DOMException('test: index move refused', 'QuotaExceededError'));
        }
        return move.call(this, dir, name, ...rest);
      };
      return true;
    },

    /**
     * Makes the first OPFS write of a flush log 'rlxkv-test: first OPFS
     * write' and then stall 5 s, so that a test can interrupt it there: a
     * worker's first sync write busy-waits after writing; a window holds
     * back the second piece of a file it sends its helper worker (which
     * holds that file open, its first 4 MiB written: a blob larger than
     * that is needed), or waits after its first stream write.
     */
    watchOpfsWrites() {
      let first = true;
      const Sync = globalThis.FileSystemSyncAccessHandle;
      if (Sync) {
        const write = Sync.prototype.write;
        Sync.prototype.write = function (...args) {
          const n = write.apply(this, args);
          if (first) {
            first = false;
            console.log('rlxkv-test: first OPFS write');
            const until = performance.now() + 5000;
            while (performance.now() < until) { /* the worker holds its temporary file open */ }
          }
          return n;
        };
        return 'sync';
      }
      const post = Worker.prototype.postMessage;
      Worker.prototype.postMessage = function (m, ...rest) {
        if (first && m && m.write !== undefined && m.at > 0) {
          first = false;
          console.log('rlxkv-test: first OPFS write');
          setTimeout(() => post.call(this, m, ...rest), 5000);
          return;
        }
        post.call(this, m, ...rest);
      };
      const Stream = globalThis.FileSystemWritableFileStream;
      const write = Stream.prototype.write;
      Stream.prototype.write = async function (...args) {
        const r = await write.apply(this, args);
        if (first) {
          first = false;
          console.log('rlxkv-test: first OPFS write');
          await new Promise((resolve) => setTimeout(resolve, 5000));
        }
        return r;
      };
      return 'window';
    },

    async close(opts) {
      if (!cache) return;
      await within(cache.close(opts), 30000, 'close()');
      cache = null;
    },
  };
  return api;
}
