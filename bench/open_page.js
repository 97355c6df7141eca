// In-page half of bench/bench_open.mjs: the store of bench/open_workload.js
// built in 'idb' or 'opfs' on a first visit, then, on each fresh page
// load, openCache timed from its call to the open cache (the module's load
// is not the cache's: untimed).
import { CAP, CONVERSATIONS, FP, build, check, layout, tokensOf } from './open_workload.js';

const PATH = '/bench-open';
const init = async (entry) => (await import(entry)).default();
const open = (rlx, storage) => rlx.openCache({ capBytes: CAP, fingerprint: FP, storage, path: PATH, layout, f16As: 'Uint16Array' });

/** First visit: the store built (what was there deleted first). { pages, bytes } */
export async function setup({ entry, storage }) {
  const rlx = await init(entry);
  await rlx.deleteStore({ storage, path: PATH });
  const cache = await open(rlx, storage);
  const t0 = performance.now();
  await build(cache, (c) => { if (c % 13 === 12) console.info(`${storage}: ${c + 1} of ${CONVERSATIONS} conversations written (${((performance.now() - t0) / 1000).toFixed(0)} s)`); });
  const blobs = cache.listBlobs();
  await cache.close();
  return { pages: blobs.length, bytes: blobs.reduce((n, b) => n + b.bytes, 0) };
}

/** On a fresh page load: { ms, indexed } of one openCache; with `check`, one whole conversation's hit checked after. */
export async function openPhase({ entry, storage, check: checking = false }) {
  const rlx = await init(entry);
  const t0 = performance.now();
  const cache = await open(rlx, storage);
  const ms = performance.now() - t0;
  const out = { ms, indexed: cache.restoreReport.indexed };
  if (checking) {
    const c = CONVERSATIONS - 2;
    check(await cache.match(tokensOf(c), { view: true }), c);
    out.checked = c;
  }
  await cache.close({ flush: false });
  return out;
}

/** The store deleted. */
export async function remove({ entry, storage }) {
  await (await init(entry)).deleteStore({ storage, path: PATH });
}
