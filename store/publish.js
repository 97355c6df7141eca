// Publishing KV for a remote tier (store/remote.js): every entry of stores
// (Node directories) and whole blobs, cut on a fixed grid of pageTokens
// tokens into pages named by their tokens (FORMATS.md, Pages and Names),
// written into one directory that any static server can serve. A page
// ends at every multiple of pageTokens an entry reaches. Past the last one
// a client cannot guess where a prompt ends, so where entries end (the
// store's leaves, and the prefixes after which its entries differ: a
// shared system prompt) a tail page is published too, from that grid
// point to the end, and the end is listed in the grid point's hint file,
// `<its page's key>.ends` (FORMATS.md, A published tree). Pages that two
// entries share are written once. Pages are of the entries' dtype, or of
// another: f32 and f16 convert, and 'q8' quantizes (format/q8-write.js).
import { mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { decodeBlob, encodeBlob } from '../format/blob.js';
import { narrowF32, widenF16 } from '../format/f16.js';
import { encodeQ8 } from '../format/q8-write.js';
import { cutRows } from './chain.js';
import { PAGE_TOKENS } from './remote-options.js';
import { keyOfName } from '../format/store-index.js';

const DTYPES = ['f32', 'f16', 'q8'];

/**
 * Writes the pages of `sources` into directory `outDir`: { storage: 'fs',
 * path } stores, paths of blob files, or entries { fingerprint, tokens, k,
 * v } already in memory. layout: the KV's (pages are cut by token);
 * fingerprint: only entries of this one (default: every one); dtype: the
 * pages' ('f32', 'f16', or 'q8': 8-bit, lossy; default: each entry's
 * own); asFingerprint: the fingerprint the pages are written under, when
 * not the entries' own (with `fingerprint`: one model's entries), such as
 * the one a q8 tree's clients open their caches with (approximate KV
 * under a fingerprint of its own: README). Resolves to { pages: [{ name,
 * tokens, bytes, fingerprint, dtype }], bytes, skipped, hints, unread }
 * (skipped: entries shorter than one page; hints: hint files written;
 * unread: a store's entries that could not be read whole with this layout,
 * or at all). Nothing in a store says its layout's order: pages cut with
 * the wrong one are wrong KV, so give the KV's own. A value q8 cannot hold
 * (not finite, or past 127 × 65504) rejects with a RangeError.
 */
export async function publishPages(rlx, sources, outDir, { layout, fingerprint = null, pageTokens = PAGE_TOKENS, dtype = null, asFingerprint = null }) {
  if (!layout || (layout.order !== 'head-major' && layout.order !== 'token-major')) {
    throw new TypeError("publish needs a layout whose order is 'head-major' or 'token-major': pages are cut by token");
  }
  if (!Number.isSafeInteger(pageTokens) || pageTokens < 1) throw new RangeError(`pageTokens must be a positive integer, got ${pageTokens}`);
  if (dtype !== null && !DTYPES.includes(dtype)) throw new RangeError(`dtype must be 'f32', 'f16' or 'q8', got ${String(dtype)}`);
  if (asFingerprint !== null && fingerprint === null) throw new TypeError('asFingerprint needs fingerprint: one model\'s entries under another fingerprint');
  await mkdir(outDir, { recursive: true });
  const written = new Map();
  /** Grid page name → the ends of tail pages after it. */
  const tails = new Map();
  let skipped = 0, unread = 0;
  /**
   * The page `name` of tokens start..end-1 of the entry `tokens` (of
   * dtype `own`) after page `parent` (a name, null for the first), in
   * dtype `as` under fingerprint fp, written once. blocks(): the entry's K
   * then V blocks, all its tokens' (asked again for each page: a view
   * hit's arrays are re-derived if the heap moved).
   */
  const writePage = async (fp, tokens, own, as, blocks, start, end, name, parent) => {
    if (written.has(name)) return;
    const path = tokens.subarray(0, end), cut = cutRows(blocks(), layout, tokens.length, start, end);
    const page = start ? { start, parentN: start, parent: keyOfName(parent) } : undefined;
    const bytes = as === 'q8' ? encodeQ8(path, own === 'f16' ? cut.map((b) => widenF16(b)) : cut, fp, { dtype: own, group: layout.headDim, page })
      : encodeBlob(path, as === own ? cut : cut.map((b) => (as === 'f16' ? narrowF32(b) : widenF16(b))), fp, undefined, { page });
    await writeAtomically(join(outDir, name), bytes);
    written.set(name, { name, tokens: end, bytes: bytes.length, fingerprint: fp, dtype: as });
  };
  // ends: where entries end within `tokens` (its own end among them), each
  // given a tail page past its last grid point. Every page's name comes
  // from one pass over the tokens.
  const publish = async ({ fingerprint: entryFp, tokens, dtype: own, blocks, ends = [tokens.length] }) => {
    if (tokens.length < pageTokens) {
      skipped++;
      return;
    }
    const fp = asFingerprint ?? entryFp, as = dtype ?? own, last = Math.floor(tokens.length / pageTokens);
    const grid = Array.from({ length: last }, (_, i) => (i + 1) * pageTokens);
    const tailEnds = [...new Set(ends)].filter((e) => e > pageTokens && e % pageTokens);
    const cuts = [...grid, ...tailEnds].sort((a, b) => a - b).filter((e, i, all) => e !== all[i - 1]);
    const names = new Map(rlx.pageNames(tokens, cuts, fp, as).map((name, i) => [cuts[i], name]));
    const nameAt = (end) => names.get(end) ?? null; // null at 0: no parent
    for (const end of grid) await writePage(fp, tokens, own, as, blocks, end - pageTokens, end, nameAt(end), nameAt(end - pageTokens));
    for (const end of tailEnds) {
      const at = Math.floor(end / pageTokens) * pageTokens;
      await writePage(fp, tokens, own, as, blocks, at, end, nameAt(end), nameAt(at));
      if (!tails.has(nameAt(at))) tails.set(nameAt(at), new Set());
      tails.get(nameAt(at)).add(end);
    }
  };
  const publishDecoded = (e) => {
    if (fingerprint !== null && e.fingerprint !== fingerprint) return undefined;
    // The names follow the values' dtype: the blocks', whatever else the entry says.
    const dtype = e.k[0]?.BYTES_PER_ELEMENT === 2 ? 'f16' : 'f32';
    if (e.dtype !== undefined && e.dtype !== dtype) throw new TypeError(`an entry says dtype ${e.dtype}, but its blocks are ${dtype}`);
    return publish({ fingerprint: e.fingerprint, tokens: e.tokens, dtype, blocks: () => [...e.k, ...e.v] });
  };
  for (const source of sources) {
    if (typeof source === 'string') {
      const e = decodeBlob(await readFile(source));
      if (!e) throw new Error(`${source}: not a blob`);
      if (e.page) throw new Error(`${source}: a page, not a whole blob: publish its store`);
      await publishDecoded(e);
      continue;
    }
    if (source.tokens) {
      await publishDecoded({ ...source, tokens: Uint32Array.from(source.tokens) });
      continue;
    }
    const store = await rlx.openStore(source);
    const fps = [...new Set(store.list().filter((b) => b.status === 'ok' || b.status === 'stale').map((b) => b.fingerprint))];
    await store.close();
    for (const fp of fps.filter((f) => fingerprint === null || f === fingerprint)) {
      const cache = await rlx.openCache({ ...source, fingerprint: fp, layout, capBytes: 2 ** 31 });
      try {
        // The entries no other extends: their pages are every page of the store's.
        const entries = cache.entries();
        for (const { tokens, ends } of leaves(entries.map((e) => e.tokens), entries.filter((e) => e.pinned).map((e) => e.tokens))) {
          const hit = await cache.match(tokens, { view: true }); // one entry read back (or a copy): no second copy here
          if (hit && hit.matched === tokens.length) await publish({ fingerprint: fp, tokens, dtype: hit.dtype, blocks: () => [...hit.k, ...hit.v], ends });
          else unread++; // not of the layout given (its heads or head size), or unreadable
        }
      } finally {
        await cache.close({ flush: false });
      }
    }
  }
  for (const [grid, ends] of tails) await writeEnds(join(outDir, grid.replace(/\.rlxkv$/, '.ends')), ends);
  const pages = [...written.values()];
  return { pages, bytes: pages.reduce((n, p) => n + p.bytes, 0), skipped, hints: tails.size, unread };
}

const extends_ = (b, a) => b.length > a.length && a.every((x, j) => x === b[j]);

/**
 * The token arrays of `all` that are no other's prefix, each with `ends`:
 * its own end, and the ends of its prefixes among `all` after which
 * entries differ (two extend it with other next tokens: where prompts
 * that share it part) or that are `pinned` (a system prompt, kept).
 */
function leaves(all, pinned = []) {
  const sorted = [...all].sort((a, b) => {
    for (let i = 0; i < a.length && i < b.length; i++) if (a[i] !== b[i]) return a[i] - b[i];
    return a.length - b.length;
  });
  // Sorted, whatever extends an entry comes right after it.
  const parting = sorted.filter((t, i) => {
    const next = new Set();
    for (let j = i + 1; j < sorted.length && extends_(sorted[j], t); j++) next.add(sorted[j][t.length]);
    return next.size > 1 || pinned.some((p) => p.length === t.length && p.every((x, j) => x === t[j]));
  });
  return sorted.filter((t, i) => !sorted[i + 1] || !extends_(sorted[i + 1], t))
    .map((tokens) => ({ tokens, ends: [tokens.length, ...parting.filter((p) => extends_(tokens, p)).map((p) => p.length)] }));
}

/** A hint file: the ends it lists and those already in it (an earlier publish into the same directory), one a line, longest first. */
async function writeEnds(path, ends) {
  const all = new Set(ends);
  const old = await readFile(path, 'utf8').catch(() => '');
  for (const line of old.split('\n')) if (/^\d+$/.test(line)) all.add(Number(line));
  await writeAtomically(path, new TextEncoder().encode(`${[...all].sort((a, b) => b - a).join('\n')}\n`));
}

async function writeAtomically(to, bytes) {
  const tmp = `${to}.${process.pid.toString(16)}.tmp`;
  try {
    await writeFile(tmp, bytes, { flag: 'w' });
    await rename(tmp, to);
  } catch (err) {
    await unlink(tmp).catch(() => {});
    throw new Error(`writing ${to}: ${err.message}`);
  }
}
