// The backends by kind (store/backend.js states their contract), and
// deleteStore over them (copyStore's copy is store/copy.js).
import { FsBlobs } from './fs-blobs.js';
import { IdbBlobs } from './idb-blobs.js';
import { loadPart } from '../wasm/core.js';
import { NEWS_VERSION, channelOf, tellOnce } from './news.js';

// OPFS is loaded when a store first uses it: an app on IndexedDB (and the
// browser bundle's main file) does without its code. While it loads, the
// store's directory and index file are asked for (opfsEarly; not by a
// caller that passes null).
export const BACKENDS = { fs: FsBlobs, idb: IdbBlobs, opfs: { open: (path, early = opfsEarly(path)) => loadPart(import('./opfs-blobs.js'), 'OPFS').then((m) => m.OpfsBlobs.open(path, early)) } };

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

