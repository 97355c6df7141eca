// Store: the blobs of a store without a cache, for tools: a Node directory
// through the C store (wasm/storage.js), IndexedDB or OPFS through the
// tiered store's backends (store/tiers.js), judged the same way.
import { toFingerprint, toByteCount } from './args.js';

export class Store {
  #storage;
  #release;
  /** @internal use rlx.openStore */
  constructor(storage, release = () => {}) {
    this.#storage = storage;
    this.#release = release;
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
   * and stale: true), then the least recently used (of that fingerprint,
   * or of all) until they total at most maxBytes (a number, or a bigint
   * for a budget past 2^53 that must arrive exact). Durable when it resolves.
   * @returns {Promise<import('./index.js').PruneReport>}
   */
  async prune(fingerprint, { maxBytes = Infinity, stale = false, dryRun = false } = {}) {
    const storage = this.#live();
    toByteCount(maxBytes, 'maxBytes', { infinite: true, u64: true });
    const any = fingerprint === undefined;
    const fp = any ? 0n : toFingerprint(fingerprint);
    return storage.prune(fp, { maxBytes, stale: stale && !any, dryRun, anyFingerprint: any });
  }

  /** Kept for callers of 0.1.0's sync(): prune() is durable by itself now. */
  async flush() { this.#live(); }

  async close() {
    if (!this.#storage) return;
    const s = this.#storage;
    this.#storage = null;
    await s.close();
    this.#release();
  }
}
