// What the demo's two engine workers (worker.js: the built-in transformer;
// worker-transformers.js: transformers.js) share: opening the IndexedDB
// cache, where each cached entry came from, the cache panel's numbers,
// clearing, and the one-request-at-a-time message loop.

export const now = () => performance.now();
export const round = (ms) => Math.round(ms * 10) / 10;
export const keyOf = (tokens) => Array.prototype.join.call(tokens, ',');
export const hex = (fp) => '0x' + fp.toString(16).padStart(16, '0');

/**
 * Cached entries by their tokens: `born` is where the entry came from
 * ('IndexedDB', 'shipped asset', 'computed'), `origin` what the next hit on it
 * reports: the same until its first use, then 'memory'.
 */
export class Origins {
  constructor() { this.map = new Map(); }

  remember(tokens, origin, born = origin) {
    const key = keyOf(tokens);
    const old = this.map.get(key);
    this.map.set(key, { tokens: Uint32Array.from(tokens), origin, born: old && born === 'memory' ? old.born : born });
  }

  /** The recorded entry that served a hit of `matched` tokens of `tokens` (the shortest such). */
  of(tokens, matched) {
    let best = null;
    for (const { tokens: t, origin } of this.map.values()) {
      if (t.length < matched) continue;
      let same = true;
      for (let i = 0; i < matched && same; i++) same = t[i] === tokens[i];
      if (same && (!best || t.length < best.tokens.length)) best = { tokens: t, origin };
    }
    return best;
  }

  bornOf(tokens) { return this.map.get(keyOf(tokens))?.born ?? 'computed'; }

  /** Forgets entries the cache no longer holds. */
  keepOnly(entries) {
    const live = new Set(entries.map((e) => keyOf(e.tokens)));
    for (const key of this.map.keys()) if (!live.has(key)) this.map.delete(key);
  }

  clear() { this.map.clear(); }
}

async function storageEstimate() {
  try {
    if (typeof navigator === 'object' && navigator.storage && navigator.storage.estimate) {
      const { usage, quota } = await navigator.storage.estimate();
      return { usage: usage ?? null, quota: quota ?? null };
    }
  } catch { /* not available here */ }
  return { usage: null, quota: null };
}

/** The cache in IndexedDB at `path`; memory-only (with `openError`) where IndexedDB is unavailable. */
export async function openCache(rlx, opts) {
  try {
    return await rlx.openCache({ ...opts, storage: 'idb' });
  } catch (err) {
    // No IndexedDB (some private modes): keep going with a memory-only cache.
    console.warn('rlxkv demo: IndexedDB unavailable, memory-only cache:', err);
    const { path, storageCapBytes, ...rest } = opts;
    const c = await rlx.openCache({ ...rest, storage: 'none' });
    c.openError = String(err && err.message || err);
    return c;
  }
}

/**
 * The cache panel's numbers. `describe`: { fingerprint, fingerprintKey,
 * decode(tokens) → text, isDefault(tokens) → bool }.
 */
/** What both engines report of opening: the timings and what the store held. */
export function openedInfo({ wasmMs, modelMs, openMs, restore, cache }) {
  return {
    wasmMs: round(wasmMs),
    modelMs: round(modelMs),
    openMs: round(openMs),
    restore,
    restoredEntries: restore ? restore.indexed : 0,
    storage: cache.storage,
    openError: cache.openError || null,
  };
}

export async function cacheInfo(rlx, cache, origins, describe) {
  const entries = cache.entries();
  origins.keepOnly(entries);
  const stats = cache.stats;
  let blobs = [];
  try { blobs = cache.listBlobs(); } catch { /* storage gone */ }
  const ok = blobs.filter((b) => b.status === 'ok');
  return {
    entries: entries.length,
    tokens: entries.reduce((s, e) => s + e.tokens.length, 0),
    bytes: stats.bytes,
    capBytes: stats.capBytes,
    pinnedEntries: stats.pinnedEntries,
    hits: stats.hits,
    misses: stats.misses,
    tokensReused: stats.tokensReused,
    fingerprint: hex(describe.fingerprint),
    fingerprintKey: describe.fingerprintKey,
    storage: cache.storage,
    blobs: ok.length,
    blobBytes: ok.reduce((s, b) => s + b.bytes, 0),
    staleBlobs: blobs.length - ok.length,
    estimate: await storageEstimate(),
    wasmMemoryBytes: rlx.memoryBytes,
    list: entries.map((e) => ({
      tokens: e.tokens.length,
      bytes: e.bytes,
      dtype: e.dtype,
      pinned: e.pinned,
      born: origins.bornOf(e.tokens),
      isDefault: describe.isDefault(e.tokens),
      preview: describe.decode(e.tokens.subarray(0, 48)),
    })),
  };
}

/** Forgets everything of this model: every entry, pinned ones too, and its stored blobs; then other models' blobs. */
export async function clearCache(cache, origins) {
  const t0 = now();
  const before = cache.listBlobs();
  await cache.clear({ stored: true });
  await cache.prune({ stale: true });
  const left = new Set(cache.listBlobs().map((b) => b.name));
  const removed = before.filter((b) => !left.has(b.name));
  origins.clear();
  return { ms: round(now() - t0), removed: removed.length, removedBytes: removed.reduce((n, b) => n + b.bytes, 0) };
}

/**
 * The worker's message loop: { type, id, ... } requests handled one at a
 * time, in order, by handlers[type] (which resolve to the reply); 'init'
 * first (ready() says whether it is done). Failures reply { type: 'error' }.
 */
export function serveRequests(handlers, ready) {
  let queue = Promise.resolve();
  self.onmessage = (ev) => {
    const msg = ev.data || {};
    queue = queue.then(async () => {
      const handler = handlers[msg.type];
      try {
        if (!handler) throw new Error(`unknown request ${msg.type}`);
        if (msg.type !== 'init' && !ready()) throw new Error('not initialised: send init first');
        postMessage({ id: msg.id, ...(await handler(msg)) });
      } catch (err) {
        console.error(err);
        postMessage({ type: 'error', id: msg.id, request: msg.type, code: err && err.code, message: String(err && err.message || err) });
      }
    });
  };
}
