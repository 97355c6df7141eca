// A cache's open of its store: the index read, never the KV, and checked
// against the store's names only when the backend cannot vouch for it
// (openIndex's steps). The index's records go into the C cache in one call
// and are made in JS only when asked for (format/store-index.js
// KnownRecords): an open costs a few passes over its columns.
import { STATUS } from '../wasm/errors.js';
import { FLAG_CORRUPT, FLAG_SKIP, indexColumns, mergeIndex, newestOf, parseIndex } from '../format/store-index.js';
import { headRecords } from './records.js';

/** The restore report's count of a blob left out of the tree, by its status. */
const ADMIT_COUNT = { corrupt: 'corrupt', 'too-large': 'tooLarge', stale: 'stale', foreign: 'foreign', unreadable: 'unreadable' };

/**
 * Opens store state `s` (store/state.js): its records known, those of its
 * cache stored-only entries. What opening found: a RestoreReport
 * (js/index.d.ts) but `resident` and `readOnly`.
 */
export async function openStore(s) {
  await openIndex(s);
  const temporaries = s.temporaryFiles;
  const report = {
    indexed: 0, stale: 0, corrupt: 0, skipped: 0, bytes: 0, foreign: 0, tooLarge: 0, unreadable: 0,
    temporaries: temporaries.length, temporaryBytes: temporaries.reduce((n, t) => n + t.bytes, 0), swept: s.swept,
  };
  // Records an index gave are counted from its columns, not made (KnownRecords).
  s.known.tally(report, (admitted, nValues, dtype, status) => {
    if (admitted) {
      report.indexed++;
      report.bytes += nValues * (dtype === 'f16' ? 2 : 4);
    } else report[ADMIT_COUNT[status] ?? 'skipped']++;
  });
  return report;
}

/**
 * The open, the same over every backend (store/backend.js):
 *   1. the index is read and adopted (adoptIndex); if the backend
 *      vouches that it describes every blob (a directory's stamp,
 *      OPFS's writers' markers, IndexedDB's census), that is all but
 *      the pages whose path breaks in it, read by name;
 *   2. else the names are listed: the records of blobs gone leave, and
 *      the blobs it does not describe (or describes as corrupt or too
 *      large, or whose path breaks in it) are read, their first bytes,
 *      and added;
 *   3. what step 2 found is written back into the index (only a hint: a
 *      store that cannot be written opens all the same);
 *   4. the backend hears how it went (opened(): a directory stamps an
 *      index its listing agreed with, OPFS clears its dead writers'
 *      markers or marks itself behind).
 * A blob rewritten in place under its name is not seen here: the hit that
 * reads it checks it whole.
 */
async function openIndex(s) {
  const blobs = s.blobs;
  // A backend that reads synchronously (a directory) reads the index straight into wasm memory.
  const { bytes, describes, state } = await blobs.openIndex((n) => s.native.holdIndex(n));
  const adopted = adoptIndex(s, bytes);
  if (adopted && describes(adopted.count)) {
    // Pages whose path breaks in it (orphans) are read by name, as they always are: nothing to list.
    if (adopted.unresolved.size) await repair(s, adopted, [...adopted.unresolved]);
    blobs.opened({ listed: false, current: true, written: true, newest: () => adopted.newest, temporaries: 0, state }).catch(() => {}); // a head start, not waited for
    return;
  }
  const { blobs: names, temporaries, swept } = await blobs.names({ sweep: !s.tool });
  s.temporaryFiles = temporaries;
  s.swept = swept;
  const present = new Set(names);
  const dropped = [...s.known.keys()].filter((n) => !present.has(n));
  for (const name of dropped) s.drop(name);
  const bad = adopted?.bad ?? new Map();
  const news = await repair(s, adopted, names.filter((n) => !s.known.has(n) || bad.has(n)));
  const current = !!adopted && !news.length && !dropped.length;
  const written = (!news.length && !dropped.length) || await writeRepairs(s, news, dropped).then(() => true, () => false);
  // newest: every record is made to find it, so only for a backend that asks (OPFS).
  await blobs.opened({ listed: true, current, written, newest: () => newestOf([...s.known.values()]), temporaries: temporaries.length, state });
}

/**
 * Takes in an index (its bytes) as the open's first known records, those
 * of this cache as stored-only entries: an RLXKVIX4 one by its columns,
 * in wasm memory (the cache's index block: read there, or copied there
 * once), where one C call (NativeCache.putIndex) reads them in place and
 * the records are made from them only when asked for (KnownRecords); an
 * older one record by record. null if there is
 * no index or it is damaged; else { bad: name -> status of records
 * corrupt or too large (kept, to read again: a writer may have replaced
 * them since), unresolved: names of pages whose path breaks in it (left
 * out, to read), newest: its most recently used name, count: its
 * records }.
 */
function adoptIndex(s, bytes) {
  const bad = new Map(), unresolved = new Set();
  const native = s.native;
  // Read into the index block (bytes is its view, or was: the heap's growth detaches views), or elsewhere and copied into one.
  let held = native.indexBytes();
  if (!bytes || (bytes.buffer !== held?.buffer && bytes.buffer.byteLength)) native.holdIndex(bytes ? bytes.length : 0)?.set(bytes);
  held = native.indexBytes();
  const cols = indexColumns(held);
  if (!cols) {
    const stored = parseIndex(held);
    native.holdIndex(0);
    if (!stored) return null;
    const kept = [...stored.values()];
    for (const r of kept) if (r.status === 'corrupt' || r.status === 'too-large') bad.set(r.name, r.status);
    admit(s, kept);
    return { bad, unresolved, newest: newestOf(kept), count: stored.size };
  }
  const { count } = cols;
  const flags = cols.flags.slice();
  const known = s.known;
  known.adopt(cols, s.fp, flags, () => native.indexBytes());
  const placed = native.putIndex(cols); // (flags still the index's: no record is skipped yet)
  if (typeof placed === 'number') { // a column no index holds: damaged
    known.clear();
    native.holdIndex(0);
    return null;
  }
  // The few records to look at again, as C found them (no pass over all here).
  for (const i of placed.special) {
    if (placed.status[i] === STATUS.NOTFOUND) {
      known.skip(i);
      unresolved.add(known.nameOf(i));
    } else bad.set(known.nameOf(i), flags[i] & FLAG_CORRUPT ? 'corrupt' : 'too-large');
  }
  known.admit(placed.status, placed.counts);
  let newest = null;
  for (let i = count - 1; i >= 0 && !newest; i--) if (!(flags[i] & FLAG_SKIP)) newest = known.nameOf(i); // oldest use first
  return { bad, unresolved, newest, count };
}

/** Records blobs as known, and those of this cache as stored-only entries (admitted). */
function admit(s, records) {
  // Oldest use first, so that the most recently used ends most recent;
  // of pages used together (a chain read as one), the longest.
  records.sort((a, b) => a.lastUse - b.lastUse || (a.tokens?.length ?? 0) - (b.tokens?.length ?? 0));
  s.learn(records, { opening: true });
}

/**
 * The blobs `missing` (the index lacks them, describes them as bad, or
 * their path breaks in it: adopted's) read, their first bytes, and
 * added. The records to write back into the index.
 */
async function repair(s, adopted, missing) {
  const { bad = new Map(), unresolved = new Set() } = adopted ?? {};
  const { blobs: files } = missing.length ? await s.blobs.list(missing) : { blobs: [] };
  const repaired = await headRecords(s.blobs, files);
  admit(s, repaired);
  // A page whose path broke in the index is written back as it was (it breaks again: an orphan, for a prune).
  return repaired.filter((r) => !unresolved.has(r.name) && (!bad.has(r.name) || bad.get(r.name) !== r.status));
}

/**
 * The index updated with what an open repaired: records read again
 * (`news`) and names gone (`dropped`). A record another writer put there
 * since is kept, unless bad.
 */
function writeRepairs(s, news, dropped) {
  const bad = (r) => r.status === 'corrupt' || r.status === 'too-large';
  return s.blobs.commit({
    update: (cur, present) => mergeIndex(parseIndex(cur), { set: news, remove: dropped, keep: (was) => !bad(was), present }),
    names: [...news.map((r) => r.name), ...dropped],
  });
}
