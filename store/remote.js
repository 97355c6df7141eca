// The remote tier: KV pages served over plain HTTP (any static host, a
// CDN), read-only, below memory and local storage. Pages are named by
// their tokens (FORMATS.md, Names), so a client finds every page of its
// prompt from the tokens alone: no listing, no index. A publisher
// (store/publish.js, `rlxkv publish`) cuts each entry on a fixed grid of
// pageTokens tokens; the client asks, after what memory holds, for the
// page ending at each grid point up to its prompt's end, and for the hint
// file of the last grid point it reaches: where published entries end
// past it (a system prompt's end), each a tail page it may ask for next.
//
//   match:  names of the grid pages past the longest local hit (one pass
//           over the tokens), fetched at once (at most maxInFlight in
//           flight, maxPages in all), in order; each checked as a stored
//           page is (format, fingerprint, its tokens, its parent's key,
//           the layout's shape). Each page that arrived whole and right,
//           once every page before it has, is put in memory as an entry
//           over the one before it (dirty: the next flush keeps it in
//           local storage), filled while the rest are on the way. A 404, a
//           failure or a bad page ends the run there: a shorter hit, never
//           a rejected match().
//
// With dtype 'q8' the pages are 8-bit (format/q8.js), each checked whole
// (every scale too) as it arrives, and dequantized straight into the
// entries in the dtype they were published from, by C (rlxkv_q8_dequant:
// wasm runs compiled from its first call, where a JS loop in a worker that
// had just loaded a model ran unoptimized, 15 to 40 ms a page of
// SmolLM2's shape): what memory and local storage then hold is f32 or f16
// KV close to the model's, not equal.
//
// Loaded on a cache's first match with `remote` (a chunk of its own in the
// browser bundle, importing nothing of the main one but format/q8.js: the
// cache passes in the page checks and copies it uses, and NativeCache
// dequantInto does the C call);
// store/remote-options.js checks the option at openCache.
import { decodeQ8 } from '../format/q8.js';

/** Tail pages asked for after one grid point at most: a prompt that parts from the listed entries costs a few 404s. */
const TAIL_TRIES = 3;

export class RemoteTier {
  #o;
  #native;
  #fp;
  #layout;
  /** What the tier did, for cache.stats.remote (remoteStats(), counted here). */
  stats;
  /** decodeBlob (format/blob.js), checkShape (format/layout.js), nameOfKey (format/store-index.js), copyPages and entryOfRows (store/chain.js). */
  #checks;

  /** checks: #checks' functions, in that order (an array, as store/copy.js's uses). */
  constructor(options, native, fingerprint, layout, stats, [decodeBlob, checkShape, nameOfKey, copyPages, entryOfRows]) {
    this.#o = options;
    this.stats = stats;
    this.#checks = { decodeBlob, checkShape, nameOfKey, copyPages, entryOfRows };
    this.#native = native;
    this.#fp = fingerprint;
    this.#layout = layout;
  }

  get pageTokens() { return this.#o.pageTokens; }
  get dtype() { return this.#o.dtype; }

  /**
   * The grid pages of `tokens` past the grid point at or before `held`
   * (the tokens memory holds), up to the last grid point at or before
   * `upTo`, then a tail page to where a published entry ends, fetched and
   * checked, each put in memory (#put) as soon as it and every page before
   * it have arrived, so that it is filled while the rest are on the way; a
   * page memory does not take ends the run there. Resolves to how many
   * were put. Never rejects for the network or the server: signal (the
   * match's) aborting does.
   *
   *   1. The names of the grid pages, from one pass over the tokens; the
   *      last grid point's hint file asked for beside them.
   *   2. At most maxInFlight requests at once, in order. A page that fails
   *      (missing, refused, of another dtype than the run's) cuts off the
   *      requests after it; the pages before it stand.
   *   3. Each arrival hands on the pages from the first not yet taken up
   *      to the first still missing.
   *   4. When every grid page was taken, or the run stopped short, the
   *      tail page past its end, if a hint lists one the prompt reaches.
   */
  async fetchRun(tokens, held, upTo, signal) {
    const P = this.#o.pageTokens;
    const start = Math.floor(held / P) * P;
    const end = Math.min(Math.floor(upTo / P), start / P + this.#o.maxPages) * P;
    if (end <= held || end <= start) return 0;
    const wanted = (end - start) / P;
    const grid = Array.from({ length: wanted + 1 }, (_, i) => start + i * P).filter(Boolean);
    const names = [...(start ? [] : [null]), ...this.#native.pageNames(tokens, this.#o.dtype, grid)];
    // One timeout for the whole run; each request its own abort, so that a
    // page that fails cuts off the pages after it, not those before.
    const shared = AbortSignal.any([AbortSignal.timeout(this.#o.timeoutMs), ...[this.#o.signal, signal].filter(Boolean)]);
    // The last grid point's hint, asked beside its pages: the run usually gets there.
    const lastHint = this.#fetchEnds(names.at(-1), shared);
    const cuts = new Array(wanted).fill(null);
    const pages = new Array(wanted).fill(null);
    let stop = wanted; // pages at and past stop are of no use: one before them failed, or was not taken
    let next = 0, taken = 0, dtype = null;
    const cutFrom = (i) => {
      stop = Math.min(stop, i);
      for (let j = i; j < wanted; j++) cuts[j]?.abort();
    };
    const handOn = () => {
      while (taken < stop && pages[taken]) {
        const page = pages[taken], from = start + taken * P;
        if (!this.#sameRun(dtype, page, names[taken + 1]) || !this.#put(tokens, { from, to: from + P, dtype: page.dtype, page })) {
          cutFrom(taken);
          return;
        }
        dtype = page.dtype;
        pages[taken++] = null; // its bytes are the entry's now
      }
    };
    const fetchOne = async (i) => {
      cuts[i] = new AbortController();
      const page = await this.#fetchPage(names[i + 1], tokens, start + i * P, start + (i + 1) * P, names[i],
        AbortSignal.any([cuts[i].signal, shared]), cuts[i].signal);
      if (signal?.aborted || i >= stop) return;
      if (!page) {
        cutFrom(i);
        return;
      }
      pages[i] = page;
      handOn();
    };
    const worker = async () => {
      while (next < stop) await fetchOne(next++);
    };
    await Promise.all(Array.from({ length: Math.min(this.#o.maxInFlight, wanted) }, worker));
    signal?.throwIfAborted();
    if (!taken) return 0;
    const at = start + taken * P;
    const tail = await this.#fetchTail(tokens, at, names[taken], upTo, taken === wanted ? lastHint : this.#fetchEnds(names[taken], shared), shared);
    signal?.throwIfAborted();
    if (tail && this.#sameRun(dtype, tail.page, tail.name) && this.#put(tokens, { from: at, to: tail.to, dtype: tail.page.dtype, page: tail.page })) taken++;
    return taken;
  }

  /**
   * Whether `page` (named `name`) may join a run of pages of `dtype` (null:
   * it is the first): 8-bit pages restore to the dtype they were published
   * from, one for the whole run (a tree published twice, from f32 and f16
   * KV under one fingerprint, is refused where it changes).
   */
  #sameRun(dtype, page, name) {
    if (!dtype || page.dtype === dtype) return true;
    this.stats.refused++;
    this.stats.lastError = `${name}: refused: a q8 page of ${page.dtype} values after ${dtype} ones`;
    return false;
  }

  /**
   * Puts a page of `tokens` that arrived ({ from, to, dtype, page }: its
   * tokens from..to-1, the dtype to restore it to, f32 or f16, and
   * decodeBlob's or decodeQ8's page) in memory, as an entry over the
   * tokens before it, while the cache is open. Whether memory took it
   * (not: too large for it, or it let go of the tokens before `from`
   * meanwhile).
   */
  #put(tokens, { from, to, dtype, page }) {
    const native = this.#native;
    if (native.closed) return false;
    const made = this.#checks.entryOfRows(native, tokens.subarray(0, to), from, this.#layout, dtype, page.k.length);
    if (typeof made === 'number') return false;
    let filled = true;
    try {
      // An 8-bit page's blocks are rows in the entry's order (FORMATS.md): each dequantized straight into its block, in C.
      if (this.#o.dtype === 'q8') filled = native.dequantInto(made, page, dtype);
      else this.#checks.copyPages(native.valuesOf(made), this.#layout, to - from, from, [{ from, to, dtype, blocks: [...page.k, ...page.v] }]);
    } catch (err) {
      native.entryFree(made);
      throw err;
    }
    if (!filled) {
      native.entryFree(made);
      return false;
    }
    return native.entryPut(made, false) >= 0;
  }

  /**
   * The tail page after grid point `at` (its page `atName`) to the
   * longest end the hint `ends` lists that `tokens` reach (at most upTo):
   * { from, to, page, name }, or null. A prompt that parts from a listed
   * entry before its end finds no page under its name (404): the next
   * shorter end is asked, up to TAIL_TRIES.
   */
  async #fetchTail(tokens, at, atName, upTo, ends, signal) {
    const fit = (await ends).filter((e) => e > at && e < at + this.#o.pageTokens && e <= upTo).slice(0, TAIL_TRIES);
    if (!fit.length) return null;
    const names = this.#native.pageNames(tokens, this.#o.dtype, [...fit].reverse()).reverse(); // ascending, in one pass
    for (let i = 0; i < fit.length; i++) {
      const cut = new AbortController();
      const page = await this.#fetchPage(names[i], tokens, at, fit[i], atName, AbortSignal.any([cut.signal, signal]), cut.signal);
      if (page) return { from: at, to: fit[i], page, name: names[i] };
    }
    return null;
  }

  /** The ends grid page `name`'s hint file lists, longest first; [] when there is none or it cannot be read. */
  async #fetchEnds(name, signal) {
    const text = await this.#get(name.replace(/\.rlxkv$/, '.ends'), signal, signal, (res) => res.text());
    return text === null ? [] : text.split('\n').filter((l) => /^\d{1,15}$/.test(l)).map(Number).sort((a, b) => b - a);
  }

  /**
   * The body of file `name` under the URL, read by `body` (a Response's
   * text or arrayBuffer), or null when it is missing (404, 410) or the
   * request failed, each counted in stats; a failure after `cut` was
   * aborted (what followed a failed page) is not counted.
   */
  async #get(name, signal, cut, body) {
    const s = this.stats;
    try {
      s.requests++;
      const fetchFile = this.#o.fetch; // called unbound: a browser's fetch refuses another `this`
      const res = await fetchFile(this.#o.url + name, { signal, credentials: 'same-origin' });
      if (res.status === 404 || res.status === 410) {
        s.notFound++;
        return null;
      }
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const read = await body(res);
      s.bytes += read.length ?? read.byteLength;
      return read;
    } catch (err) {
      const timedOut = err?.name === 'TimeoutError' || signal.reason?.name === 'TimeoutError';
      if (cut.aborted && !timedOut) return null;
      s.failed++;
      s.lastError = `${name}: ${timedOut ? `no answer within ${this.#o.timeoutMs} ms` : (err?.message ?? String(err))}`;
      return null;
    }
  }

  /**
   * Page `name` (tokens from..to-1 of `tokens`, its parent's name
   * `parentName`, null for the first), fetched and checked; null when it
   * is missing, failed or wrong (counted in stats).
   */
  async #fetchPage(name, tokens, from, to, parentName, signal, cut) {
    const s = this.stats;
    const buffer = await this.#get(name, signal, cut, (res) => res.arrayBuffer());
    if (buffer === null) return null;
    const bytes = new Uint8Array(buffer);
    try {
      // Its fingerprint (else null), dtype, tokens, place after its parent and shape: the page its name says.
      const { decodeBlob, checkShape, nameOfKey } = this.#checks;
      const q8 = this.#o.dtype === 'q8';
      const page = q8 ? decodeQ8(bytes, this.#fp) : decodeBlob(bytes, this.#fp, true), p = page?.page, want = tokens.subarray(0, to);
      if (!page || (!q8 && page.dtype !== this.#o.dtype) || page.tokens.length !== to || page.tokens.some((t, i) => t !== want[i]) ||
        (from ? !p || p.start !== from || p.parentN !== from || nameOfKey(p.parent) !== parentName : p)) {
        throw new Error(`not the ${this.#o.dtype} page of tokens ${from}..${to - 1} after ${parentName ?? 'none'} its name says`);
      }
      // A q8 page's scales are per row: one a head_dim of values.
      if (q8 && page.group !== this.#layout.headDim) throw new Error(`rows of ${page.group} values a scale, but the layout's head_dim is ${this.#layout.headDim}`);
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

