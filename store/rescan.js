// Reading a store again: what a cache knows made to match what its store
// holds now, whoever wrote it (a budget's prune and a wipe count every
// blob: store/prune.js), and the store's own records of some names (a
// watching cache's lookups of what it was told: store/watch.js).
import { parseIndex } from '../format/store-index.js';
import { headRecords } from './records.js';

/**
 * The store's own record of each name (null: it holds no such blob),
 * as a Map: from the index where it is complete (store/backend.js
 * indexComplete; null for a name it does not describe), else from each
 * blob's first bytes.
 */
export async function storeRecords(s, names) {
  const out = new Map();
  if (!s.blobs.indexComplete) {
    const { blobs: files } = await s.blobs.list(names);
    names.forEach((name) => out.set(name, null));
    for (const r of await headRecords(s.blobs, files.filter(Boolean))) out.set(r.name, r);
    return out;
  }
  const index = (await indexRecords(s)) ?? new Map();
  for (const name of names) out.set(name, index.get(name) ?? null);
  return out;
}

/** The index as it is now, parsed (null: none, or damaged). */
async function indexRecords(s) {
  return parseIndex(await s.blobs.readIndex());
}

/**
 * Makes what `s` knows match what the store holds now, whoever wrote it
 * (other processes, tabs that do not watch): blobs it does not know are
 * added (stored-only entries, if of this cache) and blobs gone are
 * forgotten. A complete index (store/backend.js indexComplete) is read
 * (none: unchanged); else the store is listed, and only new or resized
 * blobs read.
 */
export async function rescan(s) {
  // What is known of a blob stands while its size does (a blob's name
  // fixes its tokens and fingerprint): only the others are read or learnt.
  const unchanged = (name, bytes) => {
    const r = s.known.get(name);
    return r && r.bytes === bytes && r.status !== 'unreadable' ? r : null;
  };
  let now;
  if (!s.blobs.indexComplete) {
    const { blobs: files } = await s.blobs.list();
    now = new Map();
    const unknown = [];
    for (const f of files) {
      const r = unchanged(f.name, f.bytes);
      if (r) now.set(f.name, r);
      else unknown.push(f);
    }
    for (const r of await headRecords(s.blobs, unknown)) now.set(r.name, r);
  } else {
    now = await indexRecords(s);
    if (!now) return;
    for (const [name, r] of now) now.set(name, unchanged(name, r.bytes) ?? r);
  }
  for (const name of [...s.known.keys()]) if (!now.has(name)) s.drop(name);
  s.learn([...now.values()].filter((r) => s.known.get(r.name) !== r));
}
