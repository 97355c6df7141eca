// Store: the blobs of a directory or IndexedDB mount, without a cache.
import { toFingerprint, toByteCount } from './args.js';

export class Store {
  #storage;
  /** @internal use rlx.openStore */
  constructor(storage) {
    this.#storage = storage;
  }

  #live() {
    if (!this.#storage) throw new TypeError('store is closed');
    return this.#storage;
  }

  /**
   * The blobs, judged against `fingerprint` (omitted: every valid blob is ok).
   * @returns {import('./index.js').BlobInfo[]}
   */
  list(fingerprint) {
    const storage = this.#live();
    const fp = fingerprint === undefined ? 0n : toFingerprint(fingerprint);
    return storage.list(fp, fingerprint === undefined);
  }

  /**
   * Removes corrupt blobs, blobs of other fingerprints (with a fingerprint
   * and stale: true), then the oldest (of that fingerprint, or of all)
   * until they total at most maxBytes. Synchronous for directories; call
   * sync() to make an IndexedDB prune durable.
   */
  prune(fingerprint, { maxBytes = Infinity, stale = false, dryRun = false } = {}) {
    const storage = this.#live();
    toByteCount(maxBytes, 'maxBytes', { infinite: true });
    const any = fingerprint === undefined;
    const fp = any ? 0n : toFingerprint(fingerprint);
    return storage.prune(fp, { maxBytes, stale: stale && !any, dryRun, anyFingerprint: any });
  }

  /** Makes a prune of an IndexedDB store durable. */
  flush() { return this.#live().flush(); }

  async close() {
    if (!this.#storage) return;
    const s = this.#storage;
    this.#storage = null;
    await s.close();
  }
}
