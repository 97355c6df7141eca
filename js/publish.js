// Publishing KV for a remote tier (js/remote.js): every entry of stores
// (Node directories) and whole blobs, cut on a fixed grid of pageTokens
// tokens into pages named by their tokens (FORMATS.md, Pages and Names),
// written into one directory that any static server can serve. A page
// ends at every multiple of pageTokens an entry reaches: the tokens past
// the last one are not published (a client asks for grid points only).
// Pages that two entries share are written once.
import { mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { decodeBlob, encodeBlob } from './blob.js';
import { cutRows } from './chain.js';
import { PAGE_TOKENS } from './remote.js';
import { keyOfName } from './store-index.js';

/**
 * Writes the pages of `sources` into directory `outDir`: { storage: 'fs',
 * path } stores, paths of blob files, or entries { fingerprint, tokens, k,
 * v } already in memory. layout: the KV's (pages are cut by token);
 * fingerprint: only entries of this one (default: every one). Resolves to
 * { pages: [{ name, tokens, bytes, fingerprint }], bytes, skipped }
 * (skipped: entries shorter than one page).
 */
export async function publishPages(rlx, sources, outDir, { layout, fingerprint = null, pageTokens = PAGE_TOKENS }) {
  if (!layout || (layout.order !== 'head-major' && layout.order !== 'token-major')) {
    throw new TypeError("publish needs a layout whose order is 'head-major' or 'token-major': pages are cut by token");
  }
  if (!Number.isSafeInteger(pageTokens) || pageTokens < 1) throw new RangeError(`pageTokens must be a positive integer, got ${pageTokens}`);
  await mkdir(outDir, { recursive: true });
  const written = new Map();
  let skipped = 0;
  // blocks(): the entry's K then V blocks, all its tokens' (asked again for
  // each page: a view hit's arrays are re-derived if the heap moved).
  const publish = async ({ fingerprint: fp, tokens, dtype, blocks }) => {
    if (tokens.length < pageTokens) {
      skipped++;
      return;
    }
    let parent = null; // the name of the page before this one
    for (let end = pageTokens; end <= tokens.length; end += pageTokens) {
      const path = tokens.subarray(0, end), start = end - pageTokens;
      const name = rlx.pageName(path, fp, dtype);
      if (!written.has(name)) {
        const page = start ? { start, parentN: start, parent: keyOfName(parent) } : undefined;
        const bytes = encodeBlob(path, cutRows(blocks(), layout, tokens.length, start, end), fp, undefined, { page });
        await writeAtomically(join(outDir, name), bytes);
        written.set(name, { name, tokens: end, bytes: bytes.length, fingerprint: fp });
      }
      parent = name;
    }
  };
  const publishDecoded = (e) => (fingerprint === null || e.fingerprint === fingerprint
    ? publish({ fingerprint: e.fingerprint, tokens: e.tokens, dtype: e.dtype ?? (e.k[0]?.BYTES_PER_ELEMENT === 2 ? 'f16' : 'f32'), blocks: () => [...e.k, ...e.v] })
    : undefined);
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
        for (const tokens of leaves(cache.entries().map((e) => e.tokens))) {
          const hit = await cache.match(tokens, { view: true }); // one entry read back (or a copy): no second copy here
          if (hit && hit.matched === tokens.length) await publish({ fingerprint: fp, tokens, dtype: hit.dtype, blocks: () => [...hit.k, ...hit.v] });
        }
      } finally {
        await cache.close({ flush: false });
      }
    }
  }
  const pages = [...written.values()];
  return { pages, bytes: pages.reduce((n, p) => n + p.bytes, 0), skipped };
}

/** The token arrays of `all` that are no other's prefix (sorted, a prefix comes right before what extends it). */
function leaves(all) {
  const sorted = [...all].sort((a, b) => {
    for (let i = 0; i < a.length && i < b.length; i++) if (a[i] !== b[i]) return a[i] - b[i];
    return a.length - b.length;
  });
  return sorted.filter((t, i) => {
    const next = sorted[i + 1];
    return !next || next.length <= t.length || t.some((x, j) => x !== next[j]);
  });
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
