// What the stores on one store tell each other of their saves and
// removals (a BroadcastChannel per store), only ever a hint: the message's
// shape, and its channel.

/** The shape of what stores tell each other (store/state.js tell); others are ignored. */
export const NEWS_VERSION = 2;
/** A saved blob as told: its name (a listener reads the rest from the store). */
export const newsOf = (r) => ({ name: r.name });
/** Whether a told name can be a blob's (a file name of the store: *.rlxkv, no separator). */
export const isBlobName = (n) => typeof n === 'string' && n.length <= 255 && n.endsWith('.rlxkv') && !/[/\\\0]/.test(n) && n !== '.rlxkv';

/** The BroadcastChannel name of a store (a directory by its resolved path). */
export const channelOf = (kind, blobs, path) => `rlxkv:${kind}:${blobs.root ?? path}`;

/** Posts news on a channel of its own (best effort: where there is no BroadcastChannel, nobody watches). */
export function tellOnce(channelName, news) {
  if (typeof BroadcastChannel !== 'function') return;
  const once = new BroadcastChannel(channelName);
  once.postMessage(news);
  once.close();
}
