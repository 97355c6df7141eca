// Store: the blobs of a store without a cache, for tools (rlx.openStore,
// the CLI): a Node directory, IndexedDB or OPFS through the tiered store
// (store/tiers.js asToolStore), judged as a cache's open judges them.
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
    return storage.prune(fp, { maxBytes: budget(maxBytes), stale: stale && !any, dryRun, anyFingerprint: any });
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

/**
 * A byte budget as a number the store compares with its sizes (numbers,
 * exact below 2^53): a bigint one exactly where it is below 2^53, and as
 * Infinity past it, where no store's bytes reach (8 PiB).
 */
function budget(maxBytes) {
  if (typeof maxBytes !== 'bigint') return maxBytes;
  return maxBytes > BigInt(Number.MAX_SAFE_INTEGER) ? Infinity : Number(maxBytes);
}
