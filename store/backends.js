// The backends by kind (store/backend.js states their contract), and the
// whole-store operations over them: copyStore and deleteStore.
import { FsBlobs } from './fs-blobs.js';
import { IdbBlobs } from './idb-blobs.js';
import { blobHead } from '../format/blob.js';
import { mergeIndex, parseIndex } from '../format/store-index.js';
import { recordOf } from './records.js';
import { NEWS_VERSION, channelOf, tellOnce } from './news.js';

// OPFS is loaded when a store first uses it: an app on IndexedDB (and the
// browser bundle's main file) does without its code. While it loads, the
// store's directory and index file are asked for (opfsEarly; not by a
// caller that passes null).
export const BACKENDS = { fs: FsBlobs, idb: IdbBlobs, opfs: { open: (path, early = opfsEarly(path)) => import('./opfs-blobs.js').then((m) => m.OpfsBlobs.open(path, early)) } };

/**
 * OpfsBlobs.open's head start: { dir, index }, promises of the OPFS
 * directory `path` (made if missing) and its index file's bytes (a File
 * read without the lock: across a replace it fails, and the open reads
 * again); none without OPFS. A rejection is for the open to meet again.
 */
function opfsEarly(path) {
  if (!globalThis.navigator?.storage?.getDirectory) return;
  const dir = path.split('/').filter(Boolean).reduce((d, seg) => d.then((x) => x.getDirectoryHandle(seg, { create: true })), navigator.storage.getDirectory());
  const index = dir.then((d) => d.getFileHandle('.rlxkv-index')).then((h) => h.getFile()).then((f) => f.arrayBuffer());
  dir.catch(() => {});
  index.catch(() => {});
  return { dir, index };
}

/**
 * Copies every blob of store `from` into store `to` ({ kind, path }, kinds
 * of BACKENDS), bytes unchanged, least recently used first (by the source
 * index's last uses, else the blobs' times; so that a directory's file
 * times keep their order), one blob in memory at a time but for
 * IndexedDB's batches, each with the index records of its blobs (a
 * backend's commit: store/backend.js). isOwn(record) judges a valid
 * blob's name (ownName). Resolves to { copied, bytes }; rejects with
 * QUOTA / IO, what was copied before staying.
 */
export async function copyBlobs(from, to, isOwn) {
  const src = await BACKENDS[from.kind].open(from.path);
  let dst = null;
  try {
    dst = await BACKENDS[to.kind].open(to.path, null); // (null: its index is not read)
    const uses = parseIndex(await src.readIndex()) ?? new Map();
    const { blobs: names } = await src.names({ sweep: false });
    // A directory records uses in its files' times too (touch), more often
    // than in its index: the later of the two. Elsewhere the index's, and
    // the blob's time where the index lacks it.
    const timed = src.touch ? names : names.filter((n) => !uses.has(n));
    const times = new Map(timed.length ? (await src.list(timed)).blobs.map((b) => [b.name, b.mtimeMs]) : []);
    const order = names.map((n) => [n, Math.max(uses.get(n)?.lastUse ?? 0, times.get(n) ?? 0)]).sort((a, b) => a[1] - b[1]);
    let copied = 0, bytes = 0;
    const items = async function* () {
      for (const [name, lastUse] of order) {
        const blob = await src.read(name);
        if (!blob) continue; // gone meanwhile
        const record = recordOf(name, blob.length, lastUse || Date.now(), blobHead(blob, blob.length));
        // A blob under a name not its own stays foreign in the copy's index (never counted, never served).
        if (record.status === 'ok' && !isOwn(record)) record.status = 'foreign';
        yield { name, parts: [blob], bytes: blob.length, record };
      }
    };
    await dst.commit({
      items: items(),
      update: (cur, present, saved) => (saved.length ? mergeIndex(parseIndex(cur), { set: saved.map((it) => it.record), present }) : undefined),
    }, {
      onSaved: (item) => {
        copied++;
        bytes += item.bytes;
      },
    });
    return { copied, bytes };
  } finally {
    await src.close();
    if (dst) await dst.close();
  }
}

/**
 * Deletes store `place` ({ kind, path }, a kind of BACKENDS) and tells the
 * caches that watch it (they forget its blobs once they find them gone).
 * Resolves to { removed: the blobs it held }.
 */
export async function deleteBlobs(place) {
  const blobs = await BACKENDS[place.kind].open(place.path, null);
  let names;
  try {
    names = await blobs.destroy();
  } finally {
    await blobs.close();
  }
  tellOnce(channelOf(place.kind, blobs, place.path), { rlxkv: NEWS_VERSION, saved: [], removed: names });
  return { removed: names.length };
}

