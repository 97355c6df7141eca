// RlxkvError: every failure that is not a wrong argument. `code` is stable.

/** C status (negative) → stable code. */
const CODES = {
  [-1]: 'BAD_MAGIC',
  [-2]: 'TRUNCATED',
  [-3]: 'CORRUPT',
  [-4]: 'NOMEM',
  [-5]: 'NOSPACE',
  [-6]: 'IO',
  [-7]: 'QUOTA',
  [-8]: 'INVALID',
  [-9]: 'NOTFOUND',
};

export class RlxkvError extends Error {
  /**
   * @param {string} code one of BAD_MAGIC, TRUNCATED, CORRUPT, NOSPACE, QUOTA, IO, NOMEM, INVALID, NOTFOUND, STALE
   * @param {string} message
   * @param {{cause?: unknown}} [options]
   */
  constructor(code, message, options) {
    super(message, options);
    this.name = 'RlxkvError';
    this.code = code;
  }
}

/** The error for a negative C status; `what` says what was being done. */
export function statusError(status, what, text) {
  const code = CODES[status] || 'IO';
  return new RlxkvError(code, `${what}: ${text || code.toLowerCase()}`);
}
