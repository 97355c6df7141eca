// In-page half of bench/bench_chat_browser.mjs: the chat workload
// (bench/chat_workload.js) on an 'idb' or 'opfs' cache, in this window or
// in a dedicated worker (bench/chat_worker.js imports this module), with
// the bytes written counted by bench/chat_counter.js, installed here before
// the library is imported.
import { installWriteCounter } from './chat_counter.js';
import { BYTES_PER_TOKEN, LAYOUT, SYSTEM_TOKENS, runChats, summarize, verify, verifyReopened } from './chat_workload.js';
import { request } from './raw_idb.js';

const counter = installWriteCounter(self);
const FP = 0x0c4a7b0e5cn;


/** Every IndexedDB database and OPFS entry of the origin removed: each run starts from nothing. */
async function wipe() {
  if (indexedDB.databases) for (const { name } of await indexedDB.databases()) await request(indexedDB.deleteDatabase(name));
  if (navigator.storage && navigator.storage.getDirectory) {
    const root = await navigator.storage.getDirectory();
    for await (const name of root.keys()) await root.removeEntry(name, { recursive: true });
  }
}

/** Binary bytes of every record of every IndexedDB database of the origin, read back one record at a time. */
async function idbStored() {
  let bytes = 0, records = 0;
  for (const { name } of await indexedDB.databases()) {
    const db = await request(indexedDB.open(name));
    for (const s of db.objectStoreNames) {
      const keys = await request(db.transaction(s, 'readonly').objectStore(s).getAllKeys());
      for (const k of keys) {
        bytes += counter.sizeOf(await request(db.transaction(s, 'readonly').objectStore(s).get(k)));
        records++;
      }
    }
    db.close();
  }
  return { bytes, records };
}
/** Sizes of every file under the origin's OPFS root. */
async function opfsStored() {
  let bytes = 0, files = 0;
  const walk = async (dir) => {
    for await (const h of dir.values()) {
      if (h.kind === 'directory') await walk(h);
      else { bytes += (await h.getFile()).size; files++; }
    }
  };
  await walk(await navigator.storage.getDirectory());
  return { bytes, files };
}

/** One run of the workload on a fresh store of `storage` here: the figures bench/report_chat.mjs reads. */
export async function runStore({ entry, storage, cfg, path = '/chat-bench' }) {
  await wipe();
  const rlx = await (await import(entry)).default();
  const unique = SYSTEM_TOKENS + cfg.chats * cfg.turns * cfg.perTurn;
  const longest = SYSTEM_TOKENS + cfg.turns * cfg.perTurn;
  const capBytes = Math.ceil((2 * unique + longest) * BYTES_PER_TOKEN / 2 ** 20) * 2 ** 20;
  const opts = { capBytes, fingerprint: FP, storage, path, layout: LAYOUT, f16As: 'Uint16Array' };
  const cache = await rlx.openCache(opts);
  await counter.sync();
  let last = counter.bytes;
  const measure = async () => {
    await counter.sync();
    const n = counter.bytes - last;
    last = counter.bytes;
    return { written: n };
  };
  const t0 = performance.now();
  const run = await runChats(cache, { ...cfg, measure, onTurn: (r) => { if (r.chat === cfg.chats - 1 && r.turn % Math.max(1, cfg.turns >> 2) === 0) console.log(`  ${storage}: turn ${r.turn}/${cfg.turns}, ${r.tokens} tokens, flush ${r.flush_ms.toFixed(1)} ms, wrote ${(r.written / 1e6).toFixed(1)} MB`); } });
  const seconds = (performance.now() - t0) / 1e3;
  const st = cache.stats;
  const bad = [];
  for (let c = 0; c < run.conversations.length; c++) {
    const why = await verify(cache, run.conversations[c]);
    if (why) bad.push(`chat ${c}: ${why}`);
  }
  await cache.close({ flush: false });
  const stored = storage === 'idb' ? await idbStored() : await opfsStored();
  const estimate = navigator.storage && navigator.storage.estimate ? await navigator.storage.estimate() : null;
  const again = await rlx.openCache(opts);
  const reopenBad = await verifyReopened(again, run);
  await again.close({ flush: false });
  const result = {
    config: { ...cfg, unique_tokens: unique, cap_bytes: capBytes, bytes_per_token: BYTES_PER_TOKEN, seconds },
    written_source: storage === 'idb' ? 'IndexedDB put/add values' : 'OPFS writes',
    written_by_kind: { ...counter.byKind },
    remote_workers: counter.remoteWorkers,
    ...summarize(run, { storedBytes: stored.bytes, residentBytes: st.bytes }),
    stored_how: storage === 'idb' ? `${stored.records} IndexedDB records read back` : `${stored.files} OPFS files`,
    origin_usage_bytes: estimate ? estimate.usage : null,
    stats: {
      entries: st.entries, bytes: st.bytes, pinned_entries: st.pinnedEntries, pinned_bytes: st.pinnedBytes,
      stored_entries: st.storedEntries, stored_bytes: st.storedBytes, evictions: st.evictions,
    },
    verify: { checked: run.conversations.length, bad },
    reopened: { bad: reopenBad },
    system: run.system,
    turns: run.turns,
  };
  await wipe();
  return result;
}

/** The same in a dedicated worker of this page (bench/chat_worker.js). */
export function runStoreInWorker(args) {
  return new Promise((resolve, reject) => {
    const w = new Worker(new URL('./chat_worker.js', import.meta.url), { type: 'module' });
    w.onmessage = ({ data }) => {
      if (data && data.log) { console.log(data.log); return; }
      w.terminate();
      if (data && data.error) reject(new Error(data.error)); else resolve(data);
    };
    w.onerror = (e) => { w.terminate(); reject(new Error(e.message || 'worker error')); };
    w.postMessage(args);
  });
}
