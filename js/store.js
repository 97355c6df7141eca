// Store: the blobs of a store without a cache, for tools (rlx.openStore,
// the CLI): a Node directory, IndexedDB or OPFS through the tiered store
// (store/tiers.js asToolStore, store/prune.js), judged as a cache's open judges them.
// A chunk of its own in the browser bundle, loaded by rlx.openStore: it
// imports nothing, the main file's functions it uses come in as `uses`
// (as store/copy.js's).

export class Store {
  #storage;
  #release;
  /** One call at a time, as a cache's are: a prune's removals and its index update are one step. */
  #serial;
  #toFingerprint;
  #toByteCount;
  /**
   * @internal use rlx.openStore. uses: [toFingerprint, toByteCount
   * (js/args.js), serialQueue (store/queue.js)], in that order.
   */
  constructor(storage, release, [toFingerprint, toByteCount, serialQueue]) {
    this.#storage = storage;
    this.#release = release;
    this.#serial = serialQueue();
    this.#toFingerprint = toFingerprint;
    this.#toByteCount = toByteCount;
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
    const fp = fingerprint === undefined ? 0n : this.#toFingerprint(fingerprint);
    return storage.listAll(fp, fingerprint === undefined);
  }

  /**
   * Removes corrupt blobs, blobs of other fingerprints (with a fingerprint
   * and stale: true), then the least recently used (of that fingerprint,
   * or of all) until they total at most maxBytes (a number, or a bigint up
   * to 2^64 - 1: the CLI's). Durable when it resolves.
   * @returns {Promise<import('./index.js').PruneReport>}
   */
  async prune(fingerprint, { maxBytes = Infinity, stale = false, dryRun = false } = {}) {
    const storage = this.#live();
    this.#toByteCount(maxBytes, 'maxBytes', { infinite: true, u64: true });
    const any = fingerprint === undefined;
    const fp = any ? 0n : this.#toFingerprint(fingerprint);
    // A number, as the store's sizes are: exact below 2^53, past which no store's bytes reach.
    return this.#serial(() => storage.pruneAll(fp, { maxBytes: Number(maxBytes), stale: stale && !any, dryRun, any }));
  }

  /** Kept for callers of 0.1.0's sync(): prune() is durable by itself now. */
  async flush() { this.#live(); }

  async close() {
    if (!this.#storage) return;
    const s = this.#storage;
    this.#storage = null;
    await this.#serial(() => s.close());
    this.#release();
  }
}
