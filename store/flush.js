// A cache's flush to its store: each dirty entry encoded from the heap as
// the backend asks for it and written with the index's update in one
// commit (store/backend.js), then marked clean if it is still the entry
// that was encoded. An entry that extends another is written as a page of
// its own tokens' values, after its parent (FORMATS.md, Pages).
import { RlxkvError } from '../wasm/errors.js';
import { bitsOf, blobSize, encodeBlob, encodePieces } from '../format/blob.js';
import { LITTLE_ENDIAN } from '../format/f16.js';
import { keyOfName, pageOf } from '../format/store-index.js';
import { removePending } from './prune.js';
import { childCounts } from './records.js';

/**
 * Writes every dirty entry of store state `s` (store/state.js). Rejects
 * with QUOTA / IO, nothing flushed before lost; what was saved before a
 * failure is saved all the same, told to the watchers and in the flush
 * event.
 */
export async function flush(s) {
  const t0 = performance.now();
  const saved = [];
  let failure = null;
  try {
    await flushDirty(s, saved);
  } catch (err) {
    failure = err;
    throw err;
  } finally {
    if (saved.length) s.tell({ saved });
    if (s.onEvent && (saved.length || failure)) {
      s.onEvent({
        type: 'flush', saved: saved.length, bytes: saved.reduce((n, r) => n + r.bytes, 0),
        pendingRemovals: s.toRemove.size, ms: performance.now() - t0, error: failure,
      });
    }
  }
}

/**
 * The flush's steps:
 *   1. removals first (their room is free for the saves), but those that
 *      failed before;
 *   2. the dirty entries, least recently used first (so that file times
 *      follow use) and every page after its parent, encoded one at a time
 *      as the backend asks for the next (a directory writes each entry's
 *      parts as they are made; IndexedDB gathers a batch per
 *      transaction), each saved (`saved`) as soon as it is written;
 *   3. the removals asked for while this flush saved (one of an entry
 *      being saved is deleted once written) and those that failed before,
 *      tried again. One that fails does not stop the saves (removePending).
 */
async function flushDirty(s, saved) {
  const failed = new Set(await removePending(s, s.removalFailed));
  const dirty = [];
  s.native.forEachDirty(({ tokens, serial, start }) => dirty.push({ tokens, serial, start }));
  dirty.reverse();
  dirty.sort((a, b) => a.start - b.start);
  const handed = [];
  const items = function* () {
    for (const d of dirty) {
      const item = encode(s, d, s.blobs.pieces && LITTLE_ENDIAN);
      if (!item) continue; // replaced or gone since
      handed.push(item);
      yield item;
    }
  };
  let failure = null;
  if (dirty.length || s.used.size) {
    try {
      // A skipped save (its entry changed while written) is no longer under
      // way: a page after it in this flush then goes whole (encode).
      await s.commit({ items: items() }, { onSaved: (item) => savedItem(s, item, saved), onSkipped: (item) => s.saving.delete(item.name) });
    } catch (err) {
      failure = err;
    } finally {
      for (const it of handed) s.saving.delete(it.name);
    }
  }
  await removePending(s, failed);
  if (failure) throw failure;
}

/**
 * The blob of the dirty entry { tokens, serial } if it is still that
 * entry, else null: for a Node directory (pieces: true) its parts made
 * one block at a time as they are written, each from the entry as it is
 * then (a part asked for after the entry changed stops the save with
 * CHANGED), so no whole copy of it is made and no long task runs; for
 * IndexedDB, whose record is one value, and OPFS, encoded whole. A page
 * (an entry that extends another) is written as a page: its own values,
 * its parent's name; or, with `whole` (its parent is not stored), as a
 * blob of all its values, gathered.
 */
function encode(s, { tokens, serial }, pieces = false, whole = false) {
  // A page: the values the entry holds itself, after its parent's name.
  const own = !whole;
  const e = s.native.get(tokens, { own });
  if (!e || !e.dirty || e.serial !== serial) return null;
  const blocks = [...e.k, ...e.v];
  let page;
  if (own && e.start) {
    // A page needs its parent stored (or being stored, before it, in this
    // flush); else it goes whole, gathered, and needs none.
    const parentName = s.nameOf(e.parent, e.dtype);
    if (s.known.get(parentName)?.status === 'ok' || s.saving.has(parentName)) {
      page = { start: e.start, parentN: e.parent.length, parent: keyOfName(parentName) };
    } else {
      return encode(s, { tokens, serial }, pieces, true);
    }
  }
  // Pieces: each block taken from the entry as it is when it is written:
  // the same views while nothing was freed (the C generation) and the
  // heap did not grow (which detaches them), else the entry again.
  let gen = s.native.generation(), bits = bitsOf(blocks);
  const blocksAt = () => {
    if (s.native.generation() === gen && !(bits.length && bits[0].buffer.byteLength === 0)) return bits;
    const now = s.native.get(tokens, { own });
    if (!now || !now.dirty || now.serial !== serial) throw new RlxkvError('CHANGED', 'the entry changed while it was saved');
    gen = s.native.generation();
    bits = bitsOf([...now.k, ...now.v]);
    return bits;
  };
  const name = s.native.pageName(tokens, e.dtype);
  // Whole: encoded from views of the heap into JS memory (nothing here
  // allocates in wasm, so the views hold).
  const parts = pieces ? encodePieces(tokens, blocksAt, s.fp, page) : [encodeBlob(tokens, bits, s.fp, undefined, { page })];
  const bytes = pieces ? blobSize(tokens.length, bits, { page }) : parts[0].length;
  const rows = tokens.length - (page ? e.start : 0);
  const record = {
    name, bytes, lastUse: Date.now(), fingerprint: s.fp, status: 'ok', dtype: e.dtype, tokens,
    nValues: blocks.reduce((n, b) => n + b.length, 0),
    rowMajor: rows > 0 && blocks.every((b) => b.length % rows === 0), ...pageOf(page),
  };
  const step = ++s.step;
  s.saving.set(name, step);
  return { name, parts, bytes, tokens, serial, record, step };
}

/**
 * Item written: its record known, its entry clean if it still is the one
 * encoded, its record added to `saved`. A removal asked for before the
 * encoding is done with (this blob is the entry inserted after it); one
 * asked for after stays, so the blob goes at the end of the flush.
 */
function savedItem(s, item, saved) {
  s.known.set(item.name, item.record);
  // The same prefix stored under its other name (a store written before
  // pages, or the other dtype): superseded, deleted at the flush's end
  // (unless a page names it its parent). Counting children walks every
  // record: only when there is such a name.
  const others = s.namesOf(item.tokens).filter((n) => n !== item.name && s.known.get(n)?.status === 'ok');
  if (others.length) {
    const children = childCounts(s.known.values());
    for (const other of others) if (!children.get(other)) s.giveUp(other);
  }
  if (s.toRemove.get(item.name) < item.step) {
    s.toRemove.delete(item.name);
    s.removalFailed.delete(item.name);
  }
  s.native.mark(item.tokens, item.serial, 'clean');
  saved.push(item.record);
}
