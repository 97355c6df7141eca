// What a cache learns of other writers to its store (other tabs, workers,
// processes): told at once while it watches (a BroadcastChannel: the
// message's shape in store/news.js), or by reading the store again (for a
// budget's prune or a wipe, which must count every blob). Only the store
// itself is believed: a message names blobs, which are then looked up.
import { parseIndex } from '../format/store-index.js';
import { NEWS_VERSION, isBlobName } from './news.js';
import { headRecords } from './records.js';

const NEWS_NAMES = 4096; // names taken from one message of another store; more is junk

/** Starts watching the store of state `s` (store/state.js) on its channel. */
export function watch(s) {
  s.channel = new BroadcastChannel(s.channelName);
  s.channel.onmessage = (ev) => {
    try {
      heard(s, ev.data);
    } catch {
      // Only a hint, from anyone of the origin: what cannot be used is
      // dropped (the next open reads the store itself).
    }
  };
  // Node: a watching cache does not keep the process alive by itself.
  if (typeof s.channel.unref === 'function') s.channel.unref();
}

/** Stops watching. */
export function unwatch(s) {
  if (s.channel) s.channel.close();
  s.channel = null;
}

/**
 * What another cache says it saved or deleted: only a hint, from anyone
 * of the origin. The names it gives are looked up in the store itself
 * (storeRecords: a Node blob's own first bytes, the IndexedDB or OPFS
 * index, which every writer updates before it tells): blobs found there
 * become known here (stored-only entries, if they are of this cache) as
 * the store describes them, and only those found gone are forgotten
 * (NativeCache.blobGone). Nothing a message says of a blob's size,
 * fingerprint or tokens is taken, so no message makes a prune delete.
 * Messages are taken one at a time, in the order heard.
 */
function heard(s, news) {
  if (!s.channel || !news || news.rlxkv !== NEWS_VERSION) return;
  const { saved, removed } = news;
  if (!Array.isArray(saved) || !Array.isArray(removed) || saved.length + removed.length > NEWS_NAMES) return;
  const said = new Set([...saved.map((r) => r && r.name), ...removed].filter(isBlobName));
  if (!said.size) return;
  s.hearing = s.hearing.then(async () => {
    const found = await storeRecords(s, [...said]);
    if (!s.channel || s.native.closed) return;
    const forgotten = [...found].filter(([name, r]) => !r && s.known.has(name)).map(([name]) => name);
    for (const name of forgotten) s.drop(name);
    const learnt = [...found.values()].filter((r) => r && s.known.get(r.name) !== r);
    s.learn(learnt);
    if (forgotten.length || learnt.length) s.onEvent?.({ type: 'heard', saved: learnt.length, removed: forgotten.length });
  }).catch(() => {}); // unreadable now: the next open reads the store
}

/**
 * The store's own record of each name (null: it holds no such blob),
 * as a Map: from the index where it is complete (store/backend.js
 * indexComplete; null for a name it does not describe), else from each
 * blob's first bytes.
 */
async function storeRecords(s, names) {
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
