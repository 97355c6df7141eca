// What a watching cache learns of other writers to its store (other tabs,
// workers, processes) at once: a BroadcastChannel's news (the message's
// shape in store/news.js). Only the store itself is believed: a message
// names blobs, which are then looked up. A chunk of its own in the browser
// bundle, loaded by the caches that watch (store/tiers.js); a cache that
// does not learns at its next open, or reads the store again
// (store/rescan.js).
//
// It imports nothing: the main file's modules it uses come in as `reads`
// (so that the bundle's split shares no module between them).

const NEWS_NAMES = 4096; // names taken from one message of another store; more is junk

/**
 * Starts watching the store of state `s` (store/state.js) on its channel.
 * reads: [storeRecords (store/rescan.js), NEWS_VERSION and isBlobName
 * (store/news.js)], in that order (an array, as store/copy.js's uses).
 */
export function watch(s, reads) {
  s.channel = new BroadcastChannel(s.channelName);
  s.channel.onmessage = (ev) => {
    try {
      heard(s, ev.data, reads);
    } catch {
      // Only a hint, from anyone of the origin: what cannot be used is
      // dropped (the next open reads the store itself).
    }
  };
  // Node: a watching cache does not keep the process alive by itself.
  if (typeof s.channel.unref === 'function') s.channel.unref();
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
function heard(s, news, [storeRecords, NEWS_VERSION, isBlobName]) {
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
