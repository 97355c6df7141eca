// RlxkvError: every failure that is not a wrong argument. `code` is stable.

/**
 * rlxkv_status (src/rlxkv.h), by name without the RLXKV_ / RLXKV_ERR_
 * prefix. tests/node/abi.test.js checks it against the header.
 */
export const STATUS = Object.freeze({
  OK: 0, STALE: 1, HIT: 2, MISS: 3,
  BAD_MAGIC: -1, TRUNCATED: -2, CORRUPT: -3, NOMEM: -4, NOSPACE: -5, IO: -6, QUOTA: -7,
  INVALID: -8, NOTFOUND: -9, SHAPE: -10, CHANGED: -11, LIMIT: -12,
});

/** C status (negative) → stable code. */
const CODES = Object.fromEntries(Object.entries(STATUS).filter(([, v]) => v < 0).map(([k, v]) => [v, k]));

export class RlxkvError extends Error {
  /**
   * @param {string} code one of BAD_MAGIC, TRUNCATED, CORRUPT, NOSPACE, QUOTA, IO, NOMEM, INVALID, NOTFOUND, SHAPE, CHANGED, LIMIT, STALE, STALE_VIEW, WASM_LOAD
   * @param {string} message
   * @param {{cause?: unknown}} [options]
   */
  constructor(code, message, options) {
    super(message, options);
    this.name = 'RlxkvError';
    this.code = code;
  }
}

/**
 * A browser storage failure (a DOMException of IndexedDB or OPFS) as an
 * RlxkvError: QUOTA when storage is full, else IO; `what` says what was
 * being done, `store` names the storage for an error without a message.
 */
export function storageError(err, what, store) {
  const quota = !!err && err.name === 'QuotaExceededError';
  const detail = quota ? 'storage quota exceeded' : (err && (err.message || err.name)) || `unknown ${store} error`;
  return new RlxkvError(quota ? 'QUOTA' : 'IO', `${what}: ${detail}`, { cause: err });
}

/** The error for a negative C status; `what` says what was being done. */
export function statusError(status, what, text) {
  const code = CODES[status] || 'IO';
  return new RlxkvError(code, `${what}: ${text || code.toLowerCase()}`);
}
