// The contract every backend keeps: a Node directory (store/fs-blobs.js),
// IndexedDB (store/idb-blobs.js) and the Origin Private File System
// (store/opfs-blobs.js). The tiered store (store/tiers.js) and copyStore
// call only what is written here, and branch on the capabilities it names,
// never on a backend's kind. Bytes only: no backend knows a format.
//
// A blob is a name (`<hex>.rlxkv`, FORMATS.md "Names") and its bytes,
// written whole and atomically: a reader finds it old or new, never torn.
// The index (FORMATS.md, RLXKVIX4) is a hint that an open reads instead of
// every blob; a backend keeps its bytes, never parses them.
//
// @typedef {object} BlobStat
// @property {string} name
// @property {number} bytes
// @property {number} mtimeMs  when it was last written (or, in a directory, used)
//
// @typedef {object} Item  a blob to write
// @property {string} name
// @property {number} bytes
// @property {Iterable<Uint8Array>} parts  written one after another; for a
//   `pieces` backend, an iterator that throws RlxkvError CHANGED skips its
//   item (nothing is written under its name; onSkipped hears it)
//
// @typedef {object} Backend
// @property {'fs'|'idb'|'opfs'} kind  for messages and channel names only
// @property {boolean} readOnly  blobs can be read, never written or removed
// @property {boolean} direct  readWith() exists: reads go straight into
//   memory the caller gives (the wasm heap), no copy in JS memory
// @property {boolean} pieces  write() takes parts made as it writes them,
//   so an entry is never encoded whole in JS memory
// @property {boolean} indexComplete  every writer records each save and
//   removal in the index before it tells anyone of it: a rescan may read
//   the index instead of the blobs (IndexedDB, OPFS; not a directory, whose
//   writers of other processes update it last one winning)
// @property {(into?: (size: number) => Uint8Array) => Promise<{bytes: Uint8Array|null, describes: (count: number) => boolean, state?: any}>} openIndex
//   an open's first read: the index's bytes (null: none, or unreadable;
//   a backend that reads synchronously reads them into into(size), wasm
//   memory where the open uses them in place; others return their own),
//   whether the backend vouches, by its own evidence (a directory's
//   stamp, OPFS's writers' markers, IndexedDB's census), that an index of
//   `count` records describes every blob, and that evidence (state), which
//   the open hands back to opened()
// @property {() => Promise<Uint8Array|null>} readIndex  the index as it is now
// @property {(opts?: {sweep?: boolean}) => Promise<{blobs: string[], temporaries: BlobStat[], swept: number}>} names
//   every blob's name; temporary files of writers that are gone are deleted
//   (swept), those of live writers listed (a directory with sweep: false,
//   a tool store's, deletes none and lists every one; OPFS always removes
//   the strays whose writer's lock is free, and lists none)
// @property {(names?: string[]) => Promise<{blobs: BlobStat[]}>} list  these blobs (or every one), those gone left out
// @property {(name: string, n: number) => Promise<Uint8Array|null>} head  up to n bytes from the start; null: gone
// @property {(name: string) => Promise<Uint8Array|null>} read  the whole blob; null: gone
// @property {(name: string, fn: Function) => Promise<any>} [readWith]  (direct only)
// @property {number} headReads  how many head() calls may run at once (files: each holds one
//   open; IndexedDB reads a whole record for each, so one)
// @property {(name: string) => Promise<void>} [touch]  records a use in the blob's own time (a
//   directory, whose file times an open that rebuilds its index reads)
// @property {Function} [toolStore]  a directory's wrap of a tool store (rlx.openStore), which
//   adds its temporary files to the listing and the prune
// @property {(changes: {items?: Iterable<Item>|AsyncIterable<Item>, removes?: string[], update?: Function|null, names?: string[]},
//   calls?: {onSaved?: (item: Item) => void, onRemoved?: (name: string) => void,
//   onSkipped?: (item: Item) => void, retry?: boolean}) => Promise<void>} commit
//   removes the names, writes the items, and replaces the index with
//   update(current bytes or null, the set of the changed names and of
//   `names` that are present now, or null where the index is written with
//   the blobs in one transaction, the items written) (nothing if it returns nothing). IndexedDB:
//   one transaction per batch of items, all or nothing. Files: removals,
//   then writes, one at a time, each told as it is done, then one index
//   update for what was done, even after a failure (a name whose removal
//   failed stays in it). Rejects with the first
//   failure (QUOTA or IO). retry: these removals failed before, so they
//   wait less for readers to let go (OPFS).
// @property {(open: {listed: boolean, current: boolean, written: boolean, newest: () => string|null,
//   temporaries: number, state?: any}) => Promise<void>} opened
//   an open's end: listed (it listed the names), current (the listing
//   agreed with the index), written (the index describes the store now),
//   newest() (the most recently used blob, the likeliest first hit: asked
//   only by a backend that readies it), temporaries (live writers' files
//   the listing found), state (openIndex()'s)
// @property {() => Promise<string[]>} destroy  deletes the store; the blob names it held
// @property {() => Promise<void>} close

/**
 * commit() of a backend whose blobs are files, over its remove(), write()
 * and updateIndex(): see Backend.commit.
 */
export async function commitFiles(files, { items = [], removes = [], update = null, names = [] }, { onSaved, onRemoved, onSkipped, retry = false } = {}) {
  const saved = [], removed = [];
  let failure = null;
  try {
    await files.remove(removes, (name) => {
      removed.push(name);
      onRemoved?.(name);
    }, { retry });
    await files.write(items, (item) => {
      saved.push(item);
      onSaved?.(item);
    }, onSkipped);
  } catch (err) {
    failure = err;
  }
  if (update && (!failure || saved.length || removed.length)) {
    try {
      // Every name asked to go is looked up, not only those that went: one
      // whose removal failed (or was never tried) stays in the index.
      await files.updateIndex((cur, present) => update(cur, present, saved), [...saved.map((it) => it.name), ...removes, ...names]);
    } catch (err) {
      failure ??= err;
    }
  }
  if (failure) throw failure;
}
