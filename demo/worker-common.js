// What the demo's two engine workers (worker.js: the built-in transformer;
// worker-transformers.js: transformers.js) share: opening the IndexedDB
// cache, where each cached entry came from, the cache panel's numbers,
// clearing, and the one-request-at-a-time message loop.

export const now = () => performance.now();
export const round = (ms) => Math.round(ms * 10) / 10;
export const keyOf = (tokens) => Array.prototype.join.call(tokens, ',');
export const hex = (fp) => '0x' + fp.toString(16).padStart(16, '0');

/**
 * Where each cached entry came from, for the cache panel: 'IndexedDB'
 * (found stored at open), 'server' (its published pages, fetched at load by
 * the cache's remote tier) or 'computed'
 * (in this tab). An imported entry is also "unused" until its first hit,
 * which is labelled 'server' rather than 'memory'.
 */
export class Origins {
  constructor() { this.map = new Map(); }

  /** Records an entry's origin; an entry already recorded keeps its first. */
  remember(tokens, born) {
    const key = keyOf(tokens);
    if (!this.map.has(key)) this.map.set(key, { tokens: Uint32Array.from(tokens), born, unused: born === 'server' });
  }

  bornOf(tokens) { return this.map.get(keyOf(tokens))?.born ?? 'computed'; }

  /**
   * The source of a hit of `hit.tokens` (the `matched` first tokens of
   * `tokens`) that the cache reported as `event` (onEvent's 'hit'):
   * 'storage' (its blob read now), 'server' (the first hit on the
   * imported entry) or 'memory'.
   */
  sourceOf(event, tokens) {
    if (event.source === 'storage') return 'storage';
    for (const e of this.map.values()) {
      if (!e.unused || e.tokens.length !== event.entryTokens) continue;
      let same = true;
      for (let i = 0; i < event.tokens && same; i++) same = e.tokens[i] === tokens[i];
      if (same) {
        e.unused = false;
        return 'server';
      }
    }
    return 'memory';
  }

  /** Forgets entries the cache no longer holds. */
  keepOnly(entries) {
    const live = new Set(entries.map((e) => keyOf(e.tokens)));
    for (const key of this.map.keys()) if (!live.has(key)) this.map.delete(key);
  }

  clear() { this.map.clear(); }
}

/**
 * The cache's onEvent, keeping what the demo reports: the last lookup's
 * 'hit' or 'miss' (take() hands it over once).
 */
export function watchCache() {
  let last = null;
  return {
    onEvent(event) {
      if (event.type === 'hit' || event.type === 'miss') last = event;
    },
    take() {
      const e = last;
      last = null;
      return e;
    },
  };
}

/**
 * What a reply reports of its prompt's prefix, from the lookup's onEvent
 * (null or a 'miss': none, so 'computed'): its source (Origins.sourceOf),
 * the tokens and KV bytes it restored and the lookup's time, which for a
 * 'storage' hit is the blob's read.
 */
export function prefixOf(event, origins, tokens) {
  if (!event || event.type !== 'hit') return { source: 'computed', ms: 0, bytes: 0, tokens: 0, entryTokens: 0 };
  return { source: origins.sourceOf(event, tokens), ms: round(event.ms), bytes: event.bytes, tokens: event.tokens, entryTokens: event.entryTokens };
}

/** The cached entry that starts with `prefix` (the shortest), as the ready message tells it, or null. */
export function entryOf(cache, prefix) {
  const found = cache.entries()
    .filter((e) => e.tokens.length >= prefix.length && prefix.every((t, i) => e.tokens[i] === t))
    .sort((a, b) => a.tokens.length - b.tokens.length)[0];
  return found ? { tokens: found.tokens.length, bytes: found.bytes, resident: found.resident } : null;
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

/**
 * The cache panel's numbers. `describe`: { fingerprint, fingerprintKey,
 * decode(tokens) → text, isDefault(tokens) → bool }.
 */
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
    residentEntries: stats.entries,
    storedOnlyEntries: stats.storedEntries,
    storedOnlyBytes: stats.storedBytes,
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
      resident: e.resident,
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
