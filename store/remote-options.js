// The `remote` option of openCache (the remote tier, store/remote.js): checked
// when a cache is made, apart from the tier itself, which a cache loads on
// its first match.

/** Tokens a published page holds, by default (LMCache's chunk). */
export const PAGE_TOKENS = 256;
/** 'q8': 8-bit pages (FORMATS.md), restored to the dtype they were published from. */
const DTYPES = ['f32', 'f16', 'q8'];

/**
 * The `remote` option of openCache, checked: { url (a base URL, ending
 * with '/'), fetch, timeoutMs, maxPages, maxInFlight, signal, dtype,
 * pageTokens }.
 */
export function remoteOptions(remote, layout) {
  if (remote === undefined || remote === null) return null;
  if (typeof remote !== 'object') throw new TypeError('remote must be an object { url, ... }');
  if (!layout) throw new TypeError('remote needs a layout (openCache({ layout })): pages are cut by token');
  let url;
  try {
    url = new URL(remote.url, globalThis.location?.href);
  } catch {
    throw new TypeError(`remote.url must be a URL, got ${String(remote.url)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`remote.url must be http(s), got ${url.protocol}`);
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  url.search = '';
  url.hash = '';
  const fetchFn = remote.fetch ?? globalThis.fetch;
  if (typeof fetchFn !== 'function') throw new TypeError('remote.fetch must be a function (this environment has no fetch)');
  const count = (name, dflt, min = 1) => {
    const v = remote[name] ?? dflt;
    if (!Number.isSafeInteger(v) || v < min) throw new RangeError(`remote.${name} must be an integer >= ${min}, got ${String(v)}`);
    return v;
  };
  const dtype = remote.dtype ?? 'f32';
  if (!DTYPES.includes(dtype)) throw new RangeError(`remote.dtype must be 'f32', 'f16' or 'q8', got ${String(dtype)}`);
  if (remote.signal !== undefined && !(remote.signal instanceof AbortSignal)) throw new TypeError('remote.signal must be an AbortSignal');
  return {
    url: url.href, fetch: fetchFn, timeoutMs: count('timeoutMs', 10000), maxPages: count('maxPages', 64),
    maxInFlight: count('maxInFlight', 6), signal: remote.signal ?? null, dtype, pageTokens: count('pageTokens', PAGE_TOKENS),
  };
}

/** A remote tier's counts before its first request: cache.stats.remote. */
export const remoteStats = () => ({ requests: 0, pages: 0, bytes: 0, notFound: 0, failed: 0, refused: 0, lastError: null });
