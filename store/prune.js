// What leaves a store: a cache's prune (least recently used first:
// stored-only entries before resident ones, pinned ones never; of other
// fingerprints, never unless asked), a tool store's prune (rlx.openStore,
// the CLI: by fingerprint, or every valid blob), and the blobs given up
// (forget, clear), deleted at the next flush. Either prune takes pages
// that others need only after them (leaves first).
import { rescan } from './rescan.js';
import { childCounts, infoOf, leavesFirst } from './records.js';

/**
 * Removes blobs of store state `s` (store/state.js): corrupt ones, other
 * fingerprints' when `stale`, then this fingerprint's least recently used
 * until they total at most maxBytes. Blobs of pinned entries stay, and
 * unless `resident` those of resident entries too. A removed stored-only
 * entry leaves the cache; a resident one stays in memory, no longer
 * stored. dryRun: report only. budget: the cache's storageCapBytes (the
 * store read again first, so that every blob counts; a failure does not
 * reject).
 */
export async function prune(s, { maxBytes = Infinity, stale = false, dryRun = false, resident = false, budget = false } = {}) {
  const native = s.native;
  if (budget) await rescan(s);
  const gone = [];
  let kept = 0, keptBytes = 0;
  const mine = [];
  for (const r of s.known.values()) {
    if (r.status === 'corrupt' || (stale && r.status === 'stale') || isOrphan(s, r)) gone.push(r);
    else if (r.status === 'ok') mine.push(r);
    else { kept++; keptBytes += r.bytes; }
  }
  const byName = new Map(mine.map((r) => [r.name, r]));
  let total = mine.reduce((n, r) => n + r.bytes, 0);
  // Within budget (every flush asks): no walk of the cache's entries.
  const order = [];
  const pinned = new Set();
  if (total > maxBytes) {
    const entries = native.entries();
    for (const e of entries) if (e.pinned) pinned.add(s.nameOf(e.tokens, e.dtype));
    // Stored-only entries, then (if asked) resident ones, least recent first.
    for (const tier of resident ? [false, true] : [false]) {
      for (const e of entries.filter((x) => x.resident === tier).reverse()) order.push([s.nameOf(e.tokens, e.dtype), e.tokens]);
    }
  }
  const drop = [];
  const picked = leavesFirst(order.map(([name, tokens]) => ({ r: byName.get(name), tokens })).filter((d) => d.r && !pinned.has(d.r.name)),
    total - maxBytes, childCounts(s.known.values()));
  for (const d of picked) {
    drop.push(d);
    byName.delete(d.r.name);
    total -= d.r.bytes;
  }
  for (const r of byName.values()) { kept++; keptBytes += r.bytes; }
  const removing = [...gone, ...drop.map((d) => d.r)];
  const report = { removed: removing.length, removedBytes: removing.reduce((n, r) => n + r.bytes, 0), kept, keptBytes };
  if (dryRun || !removing.length) return report;
  const { gone: deleted, failure } = await s.removeNames(removing.map((r) => r.name));
  const isGone = new Set(deleted);
  for (const { r, tokens } of drop) {
    if (budget || isGone.has(r.name)) native.blobGone(tokens);
  }
  s.onEvent?.({ type: 'prune', reason: budget ? 'storageCapBytes' : 'prune', ...report, error: failure });
  if (failure) {
    // A budget's prune (at open, after a flush) goes on: what it could not
    // delete is given up all the same and tried again at each flush.
    if (!budget) throw failure;
    const left = removing.map((r) => r.name).filter((n) => !isGone.has(n));
    for (const n of left) s.giveUp(n);
    failedRemovals(s, left, failure);
  }
  return report;
}

/** A page whose parent the store no longer holds (or holds as something else): it can never be served. */
function isOrphan(s, r) {
  if (!r.start || r.status !== 'ok') return false;
  const p = s.known.get(r.parent);
  return !p || (p.status !== 'ok' && p.status !== 'stale') || p.tokens?.length !== r.parentN;
}

/**
 * Gives up the blob of these tokens: it is deleted at the next flush.
 * Whether there was one not given up already.
 */
export function forget(s, tokens) {
  let given = false;
  const children = childCounts(s.known.values());
  for (const name of s.namesOf(tokens)) {
    const r = s.known.get(name);
    if ((!r || r.status !== 'ok') && !s.saving.has(name)) continue;
    // A page others stored after it need stays, for them (as a hidden entry in memory).
    if (children.get(name)) continue;
    given = s.giveUp(name) || given;
  }
  return given;
}

/**
 * Gives up every blob of the cache's fingerprint, and those of saves
 * under way (for Cache.clear({ stored: true })): deleted by wipe() or
 * the next flush.
 */
export function forgetAll(s) {
  for (const r of s.known.values()) if (r.fingerprint === s.fp) s.giveUp(r.name);
  for (const name of s.saving.keys()) s.giveUp(name);
}

/**
 * Deletes every blob of the cache's fingerprint now, those saved by
 * others since the open included (the store is read again first):
 * Cache.clear({ stored: true }) after forgetAll(). Rejects with the
 * first failure (what failed stays given up, tried at each flush).
 */
export async function wipe(s) {
  await rescan(s);
  for (const r of s.known.values()) {
    // An entry learnt just now leaves the cache too.
    if (r.fingerprint === s.fp && s.giveUp(r.name)) s.native.blobGone(r.tokens);
  }
  await removePending(s);
  if (s.toRemove.size) throw s.removalError;
}

/**
 * Deletes the blobs given up (toRemove), but those of `skip`. Never
 * rejects: what could not be deleted stays given up, tried again at the
 * next flush, so that a blob that cannot go (a file made immutable, one
 * another worker holds) does not stop saves. The names that failed.
 */
export async function removePending(s, skip = new Set()) {
  const names = [...s.toRemove.keys()].filter((n) => !skip.has(n));
  if (!names.length) return [];
  const fresh = names.filter((n) => !s.removalFailed.has(n)), retried = names.filter((n) => s.removalFailed.has(n));
  let failure = null;
  for (const [batch, retry] of [[fresh, false], [retried, true]]) {
    if (!batch.length) continue;
    const done = await s.removeNames(batch, { retry });
    for (const n of done.gone) s.toRemove.delete(n);
    failure ??= done.failure;
  }
  const left = names.filter((n) => s.toRemove.has(n));
  for (const n of names) if (!s.toRemove.has(n)) s.removalFailed.delete(n);
  failedRemovals(s, left, failure);
  return left;
}

/** Given-up blobs whose deletion failed (with `failure`): tried again, briefly, after each flush's saves. */
function failedRemovals(s, names, failure) {
  for (const n of names) s.removalFailed.add(n);
  s.removalError = s.toRemove.size ? failure ?? s.removalError : null;
}

// ---- a store without a cache (rlx.openStore, the CLI) --------------------

/** Every blob judged against fingerprint (any: every valid blob is ok): its record's status, then its name, then its fingerprint. */
function judged(s, fingerprint, any) {
  return [...s.known.values()].map((r) => {
    if (r.status === 'corrupt' || r.status === 'too-large' || r.status === 'unreadable') return [r, r.status];
    if (!s.ownName(r)) return [r, 'foreign'];
    return [r, any || r.fingerprint === fingerprint ? 'ok' : 'stale'];
  });
}

/** Every blob as the API lists them (BlobInfo), judged against fingerprint. */
export function listAll(s, fingerprint, any) { return judged(s, fingerprint, any).map(([r, status]) => infoOf(r, status)); }

/**
 * Store.prune over these blobs: corrupt ones, stale ones when `stale`,
 * then the least recently used of those that count (the fingerprint's,
 * or with `any` every valid one) until they total at most maxBytes (a
 * number).
 */
export async function pruneAll(s, fingerprint, { maxBytes = Infinity, stale = false, dryRun = false, any = false } = {}) {
  const gone = [], counted = [];
  let kept = 0, keptBytes = 0;
  for (const [r, status] of judged(s, fingerprint, any)) {
    if (status === 'corrupt' || (stale && status === 'stale')) gone.push(r);
    else if (status === 'ok') counted.push(r);
    else { kept++; keptBytes += r.bytes; }
  }
  counted.sort((a, b) => a.lastUse - b.lastUse);
  const total = counted.reduce((n, r) => n + r.bytes, 0);
  const picked = new Set(leavesFirst(counted.map((r) => ({ r })), total - maxBytes, childCounts(s.known.values())).map((d) => d.r));
  for (const r of counted) {
    if (picked.has(r)) gone.push(r);
    else {
      kept++;
      keptBytes += r.bytes;
    }
  }
  const report = { removed: gone.length, removedBytes: gone.reduce((n, r) => n + r.bytes, 0), kept, keptBytes };
  if (!dryRun && gone.length) {
    const { failure } = await s.removeNames(gone.map((r) => r.name));
    if (failure) throw failure;
  }
  return report;
}
