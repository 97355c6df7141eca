// The remote tier: KV pages served over plain HTTP (any static host, a
// CDN), read-only, below memory and local storage. Pages are named by
// their tokens (FORMATS.md, Names), so a client finds every page of its
// prompt from the tokens alone: no listing, no index. A publisher
// (js/publish.js, `rlxkv publish`) cuts each entry on a fixed grid of
// pageTokens tokens; the client asks, after what memory holds, for the
// page ending at each grid point up to its prompt's end.
//
//   match:  names of the grid pages past the longest local hit, fetched at
//           once (at most maxInFlight in flight, maxPages in all), in
//           order; each checked as a stored page is (format, fingerprint,
//           its tokens, its parent's key, the layout's shape). The run
//           from the first that arrived whole and right is put in memory
//           as one entry (dirty: the next flush keeps it in local
//           storage). A 404, a failure or a bad page ends the run there:
//           a shorter hit, never a rejected match().
import { decodeBlob } from './blob.js';
import { checkShape } from './args.js';
import { nameOfKey } from './store-index.js';

/** Tokens a published page holds, by default (LMCache's chunk). */
export const PAGE_TOKENS = 256;
const DTYPES = ['f32', 'f16'];

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
  if (!DTYPES.includes(dtype)) throw new RangeError(`remote.dtype must be 'f32' or 'f16', got ${String(dtype)}`);
  if (remote.signal !== undefined && !(remote.signal instanceof AbortSignal)) throw new TypeError('remote.signal must be an AbortSignal');
  return {
    url: url.href, fetch: fetchFn, timeoutMs: count('timeoutMs', 10000), maxPages: count('maxPages', 64),
    maxInFlight: count('maxInFlight', 6), signal: remote.signal ?? null, dtype, pageTokens: count('pageTokens', PAGE_TOKENS),
  };
}

export class RemoteTier {
  #o;
  #native;
  #fp;
  #layout;
  /** What the tier did, for cache.stats.remote. */
  stats = { requests: 0, pages: 0, bytes: 0, notFound: 0, failed: 0, refused: 0, lastError: null };

  constructor(options, native, fingerprint, layout) {
    this.#o = options;
    this.#native = native;
    this.#fp = fingerprint;
    this.#layout = layout;
  }

  get pageTokens() { return this.#o.pageTokens; }
  get dtype() { return this.#o.dtype; }

  /**
   * The grid pages of `tokens` past the grid point at or before `held`
   * (the tokens memory holds), up to the last grid point at or before
   * `upTo`, fetched and checked: { start, end, pages } (pages: decodeBlob's,
   * in order, tiling start..end), or null when none arrived right.
   * Never rejects for the network or the server: signal (the match's)
   * aborting does.
   */
  async fetchRun(tokens, held, upTo, signal = null) {
    const P = this.#o.pageTokens;
    const start = Math.floor(held / P) * P;
    const end = Math.min(Math.floor(upTo / P), start / P + this.#o.maxPages) * P;
    if (end <= held || end <= start) return null;
    const names = [];
    for (let g = start; g <= end; g += P) names.push(g ? this.#native.pageName(tokens.subarray(0, g), this.#o.dtype) : null);
    const wanted = (end - start) / P;
    // One timeout for the whole run; each request its own abort, so that a
    // page that fails cuts off the pages after it, not those before.
    const shared = AbortSignal.any([AbortSignal.timeout(this.#o.timeoutMs), ...[this.#o.signal, signal].filter(Boolean)]);
    const cuts = new Array(wanted).fill(null);
    const pages = new Array(wanted).fill(null);
    let stop = wanted; // pages at and past stop are of no use: one before them failed
    let next = 0;
    const fetchOne = async (i) => {
      cuts[i] = new AbortController();
      const page = await this.#fetchPage(names[i + 1], tokens, start + i * P, start + (i + 1) * P, names[i],
        AbortSignal.any([cuts[i].signal, shared]), cuts[i].signal);
      pages[i] = page;
      if (!page && i < stop) {
        stop = i;
        for (let j = i + 1; j < wanted; j++) cuts[j]?.abort();
      }
    };
    const worker = async () => {
      while (next < stop) await fetchOne(next++);
    };
    await Promise.all(Array.from({ length: Math.min(this.#o.maxInFlight, wanted) }, worker));
    signal?.throwIfAborted();
    let n = 0;
    while (n < wanted && pages[n]) n++;
    return n ? { start, end: start + n * P, pages: pages.slice(0, n) } : null;
  }

  /**
   * Page `name` (tokens from..to-1 of `tokens`, its parent's name
   * `parentName`, null for the first), fetched and checked; null when it
   * is missing, failed or wrong (counted in stats).
   */
  async #fetchPage(name, tokens, from, to, parentName, signal, cut) {
    const s = this.stats;
    let bytes;
    try {
      s.requests++;
      const fetchPage = this.#o.fetch; // called unbound: a browser's fetch refuses another `this`
      const res = await fetchPage(this.#o.url + name, { signal, credentials: 'same-origin' });
      if (res.status === 404 || res.status === 410) {
        s.notFound++;
        return null;
      }
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      bytes = new Uint8Array(await res.arrayBuffer());
    } catch (err) {
      if (cut.aborted) return null; // a page before it failed: not asked for any more
      s.failed++;
      const timedOut = err?.name === 'TimeoutError' || signal.reason?.name === 'TimeoutError';
      s.lastError = `${name}: ${timedOut ? `no answer within ${this.#o.timeoutMs} ms` : (err?.message ?? String(err))}`;
      return null;
    }
    s.bytes += bytes.length;
    try {
      // Its fingerprint (else null), dtype, tokens, place after its parent and shape: the page its name says.
      const page = decodeBlob(bytes, this.#fp, true), p = page?.page, want = tokens.subarray(0, to);
      if (!page || page.dtype !== this.#o.dtype || page.tokens.length !== to || page.tokens.some((t, i) => t !== want[i]) ||
        (from ? !p || p.start !== from || p.parentN !== from || nameOfKey(p.parent) !== parentName : p)) {
        throw new Error(`not the ${this.#o.dtype} page of tokens ${from}..${to - 1} after ${parentName ?? 'none'} its name says`);
      }
      checkShape(to - from, page, this.#layout, 'page');
      s.pages++;
      return page;
    } catch (err) {
      s.refused++;
      s.lastError = `${name}: refused: ${err.message}`;
      return null;
    }
  }
}

