// A chat app's use of a paging cache on a Node directory (and IndexedDB), as random steps
// from fixed seeds: conversations over a few system prompts, each turn
// inserted whole or as its new tokens only, lookups and matches (partial,
// views, copies), flushes, removes, pins, a shrinking and growing capBytes,
// prunes, closes and reopens, a second cache on the same store; and, in
// the hostile runs, files damaged (their structure: values carry no
// checksum), cut short or deleted behind the cache.
// Every value of a token's KV is a function of its whole prefix (as a
// model's is), so any hit can be checked on its own: a hit never holds KV
// other than its tokens'. Clean runs also check that nothing flushed is
// lost: after a reopen every conversation flushed is matched whole.
import 'fake-indexeddb/auto';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import init from 'rlxkv';
import { modelKv, tempDir } from './helpers.js';

const LAYOUT = { order: 'head-major', heads: 2, headDim: 4, layers: 2 };
const BYTES_PER_TOKEN = 2 * LAYOUT.layers * LAYOUT.heads * LAYOUT.headDim * 4;
const FP = 0x5eedn;
const STEPS = Number(process.env.RLXKV_STEPS || 500);
const TRACE = !!process.env.RLXKV_TRACE;

/** A small PRNG (mulberry32): the same steps for a seed on every machine. */
function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (n) => Math.floor(next() * n), pick: (xs) => xs[Math.floor(next() * xs.length)], chance: (p) => next() < p };
}

/** Why hit does not hold exactly the KV of its tokens, a prefix of query (null when it does). */
function wrongKv(hit, query) {
  const m = hit.matched;
  if (!(m >= 1 && m <= query.length)) return `matched ${m} of a ${query.length}-token query`;
  if (hit.tokens.length !== m || hit.tokens.some((t, i) => t !== query[i])) return 'its tokens are not the query\'s first ones';
  if (hit.dtype !== 'f32') return `dtype ${hit.dtype}`;
  const want = modelKv(query.slice(0, m), LAYOUT);
  for (const side of ['k', 'v']) {
    if (hit[side].length !== LAYOUT.layers) return `${hit[side].length} ${side} blocks`;
    for (let l = 0; l < LAYOUT.layers; l++) {
      const got = hit[side][l], exp = want[side][l];
      if (got.length !== exp.length) return `${side}[${l}] has ${got.length} values, not ${exp.length}`;
      for (let i = 0; i < exp.length; i++) {
        if (!Object.is(got[i], exp[i])) return `${side}[${l}][${i}] is ${got[i]}, not ${exp[i]} (${m} tokens)`;
      }
    }
  }
  return null;
}

/**
 * Runs STEPS random steps from seed on a fresh directory. hostile: files
 * are damaged or deleted behind the caches, and the check is only that no
 * hit is wrong and nothing throws but an RlxkvError of a documented code.
 */
async function run(seed, { hostile, storage = 'fs' }) {
  const r = rng(seed);
  const dir = storage === 'fs' ? tempDir('rlxkv-random-') : `/rlxkv-random-${seed}`;
  const rlx = await init({ newInstance: true });
  let cap = 64 * 1024;
  const open = (opts = {}) => rlx.openCache({ capBytes: cap, fingerprint: FP, layout: LAYOUT, storage, path: dir, ...opts });
  let cache = await open();
  let other = null; // a second cache on the same store, now and then
  const systems = Array.from({ length: 3 }, (_, s) => Array.from({ length: 20 + r.int(40) }, (_, i) => 1 + s * 1000 + i));
  const convs = [];
  /** Conversations inserted and flushed since the last step that may lose them (clean runs). */
  const durable = new Map();
  let durableOk = !hostile;
  const log = [];
  if (TRACE) log.push = (line) => { const st = cache.stats; console.error(seed, log.length, line, `[entries ${st.entries} bytes ${st.bytes} cap ${st.capBytes} pinned ${st.pinnedBytes} stored ${st.storedEntries}]`); return Array.prototype.push.call(log, line); };
  let hits = 0, checked = 0;
  const check = (hit, query, what) => {
    if (!hit) return;
    hits++;
    const why = wrongKv(hit, query);
    assert.equal(why, null, `seed ${seed}, step ${log.length} (${what}): wrong KV served: ${why}\n${log.slice(-12).join('\n')}`);
  };
  const allowed = (err, what) => {
    if (err && err.name === 'RlxkvError' && ['NOSPACE', 'NOTFOUND', 'CORRUPT', 'IO'].includes(err.code)) return;
    throw new Error(`seed ${seed}, step ${log.length} (${what}): ${err && err.stack}\n${log.slice(-12).join('\n')}`);
  };
  const files = () => readdirSync(dir).filter((n) => n.endsWith('.rlxkv'));

  for (let step = 0; step < STEPS; step++) {
    const roll = r.int(100);
    if (roll < 30 || !convs.length) {
      // A turn: a new conversation over a system prompt, or one extended (now and then a branch: an edit of an earlier turn).
      let base;
      if (!convs.length || r.chance(0.2)) base = r.pick(systems);
      else {
        const c = r.pick(convs);
        base = r.chance(0.15) ? c.slice(0, 1 + r.int(c.length)) : c;
      }
      const turn = Array.from({ length: 1 + r.int(24) }, () => 1 + r.int(5000));
      const tokens = [...base, ...turn];
      convs.push(tokens);
      const suffixOnly = r.chance(0.4);
      log.push(`insert ${tokens.length} tokens${suffixOnly ? ' (new ones only)' : ''}`);
      try {
        if (suffixOnly) {
          const held = cache.lookup(tokens, { partial: true, maxMatched: tokens.length - 1 });
          check(held, tokens, 'lookup before a suffix insert');
          const start = held ? held.matched : 0;
          cache.insert(tokens, modelKv(tokens, LAYOUT, start), { start });
        } else {
          cache.insert(tokens, modelKv(tokens, LAYOUT));
        }
        if (tokens.length * BYTES_PER_TOKEN <= cap / 4 && cache.stats.pinnedBytes === 0) {
          const back = cache.lookup(tokens);
          assert.ok(back && back.matched === tokens.length, `seed ${seed}, step ${step}: an insert of ${tokens.length} tokens is not found right after (${back && back.matched})`);
        }
      } catch (err) { allowed(err, 'insert'); }
    } else if (roll < 55) {
      const tokens = r.pick(convs);
      const query = r.chance(0.3) ? [...tokens, ...Array.from({ length: 1 + r.int(5) }, () => 1 + r.int(5000))] : tokens;
      const opts = { partial: r.chance(0.5), view: r.chance(0.5) };
      if (opts.partial && r.chance(0.5)) opts.maxMatched = 1 + r.int(query.length);
      const viaMatch = r.chance(0.6);
      log.push(`${viaMatch ? 'match' : 'lookup'} ${query.length} tokens ${JSON.stringify(opts)}`);
      let hit = null;
      try {
        hit = viaMatch ? await cache.match(query, opts) : cache.lookup(query, opts);
      } catch (err) { allowed(err, viaMatch ? 'match' : 'lookup'); }
      if (hit && opts.maxMatched) assert.ok(hit.matched <= opts.maxMatched, `seed ${seed}: maxMatched ${opts.maxMatched}, matched ${hit.matched}`);
      check(hit, query, viaMatch ? 'match' : 'lookup');
      checked++;
    } else if (roll < 63) {
      log.push('flush');
      try {
        await cache.flush();
        for (const [k, t] of [...durable]) if (!cache.has(t)) durable.delete(k);
        for (const t of convs) if (cache.has(t)) durable.set(t.join(','), t);
      } catch (err) { allowed(err, 'flush'); }
    } else if (roll < 67) {
      const t = r.pick(convs);
      log.push(`remove ${t.length} tokens`);
      try {
        cache.remove(t);
        durable.delete(t.join(','));
      } catch (err) { allowed(err, 'remove'); }
    } else if (roll < 71) {
      const t = r.pick(convs), pin = r.chance(0.6);
      log.push(`${pin ? 'pin' : 'unpin'} ${t.length} tokens`);
      try {
        if (pin) cache.pin(t); else cache.unpin(t);
      } catch (err) { allowed(err, pin ? 'pin' : 'unpin'); }
    } else if (roll < 75) {
      cap = r.pick([4 * 1024, 16 * 1024, 64 * 1024, 256 * 1024]);
      log.push(`capBytes ${cap}`);
      cache.capBytes = cap;
    } else if (roll < 80) {
      const flush = r.chance(0.7);
      log.push(`close (flush ${flush}) and reopen`);
      try {
        await cache.close({ flush });
      } catch (err) { allowed(err, 'close'); }
      cache = await open({ preload: r.chance(0.3) });
      if (durableOk) {
        // Only where memory can hold a conversation beside the largest blob
        // its pages may be read with (a page of 3 tokens over the first 6 of
        // a 60-token blob needs that blob's 60 in memory while it is read).
        const room = cap - cache.stats.pinnedBytes - Math.max(0, ...cache.listBlobs().map((b) => b.kvBytes));
        for (const t of durable.values()) {
          if (t.length * BYTES_PER_TOKEN > room) continue;
          const hit = await cache.match(t);
          assert.ok(hit && hit.matched === t.length, `seed ${seed}, step ${step}: a flushed conversation of ${t.length} tokens is not matched whole after a reopen (${hit && hit.matched})\n${log.slice(-12).join('\n')}`);
          check(hit, t, 'match after a reopen');
        }
      }
    } else if (roll < 84) {
      // Another tab: its own turns, flushed; this cache finds them at its next open.
      log.push('a second cache inserts and flushes');
      try {
        other ??= await open();
        const base = r.pick(convs);
        const tokens = [...base, ...Array.from({ length: 1 + r.int(10) }, () => 1 + r.int(5000))];
        convs.push(tokens);
        other.insert(tokens, modelKv(tokens, LAYOUT));
        const query = r.pick(convs);
        check(await other.match(query, { partial: true }), query, 'the second cache\'s match');
        await other.flush();
        if (r.chance(0.5)) { await other.close(); other = null; }
      } catch (err) { allowed(err, 'second cache'); }
    } else if (roll < 88 && !hostile) {
      log.push('match every conversation');
      for (const t of convs.slice(-20)) {
        try { check(await cache.match(t, { partial: true }), t, 'sweep'); } catch (err) { allowed(err, 'sweep'); }
      }
    } else if (roll < 92) {
      const maxBytes = r.int(3) * 32 * 1024;
      log.push(`prune maxBytes ${maxBytes}`);
      try {
        await cache.prune({ maxBytes });
        durableOk = false; // what a prune removes is lost on purpose
      } catch (err) { allowed(err, 'prune'); }
    } else if (hostile) {
      const names = files();
      if (!names.length) continue;
      const name = r.pick(names), path = join(dir, name), how = r.int(3);
      log.push(`${['damage', 'truncate', 'delete'][how]} ${name}`);
      if (how === 0) {
        // A bit of the structure: magic, fingerprint, counts, tokens, a
        // page's parent, the layer count. (The values carry no checksum, in
        // RLXKV001 as in the page formats: a flipped value bit is not seen.)
        const bytes = readFileSync(path);
        const n = bytes.length >= 32 ? Number(bytes.readBigUInt64LE(24) & 0xffffn) : 0;
        const page = bytes.subarray(0, 6).toString() === 'RLXKVP';
        const structure = Math.min(bytes.length, 32 + 8 * n + (page ? 24 : 0) + 8);
        bytes[r.int(structure)] ^= 1 << r.int(8);
        writeFileSync(path, bytes);
      } else if (how === 1) {
        truncateSync(path, r.int(statSync(path).size));
      } else {
        rmSync(path);
      }
    } else {
      log.push('look up every conversation');
      for (const t of convs.slice(-20)) check(cache.lookup(t, { partial: true, view: true }), t, 'lookup sweep');
    }
  }
  await other?.close().catch((err) => allowed(err, 'closing the second cache'));
  await cache.close().catch((err) => allowed(err, 'close'));
  return { hits, checked };
}

// RLXKV_SEEDS=FROM-TO runs more (a longer search: npm test runs these eight).
const more = /^(\d+)-(\d+)$/.exec(process.env.RLXKV_SEEDS || '');
const seeds = (fixed) => (more ? Array.from({ length: more[2] - more[1] + 1 }, (_, i) => Number(more[1]) + i + fixed[0] * 1000) : fixed);

for (const seed of seeds([1, 2, 3, 4])) {
  test(`a random chat workload (seed ${seed}) never serves wrong KV, and loses nothing flushed until it is pruned`, async () => {
    const { hits } = await run(seed, { hostile: false });
    assert.ok(hits > 50, `only ${hits} hits: the workload does not exercise the cache`);
  });
}

for (const seed of seeds([21, 22])) {
  test(`a random chat workload on IndexedDB (seed ${seed}) never serves wrong KV, and loses nothing flushed until it is pruned`, async () => {
    const { hits } = await run(seed, { hostile: false, storage: 'idb' });
    assert.ok(hits > 50, `only ${hits} hits: the workload does not exercise the cache`);
  });
}

for (const seed of seeds([11, 12, 13, 14])) {
  test(`a random chat workload (seed ${seed}) with files damaged, cut short and deleted behind it never serves wrong KV`, async () => {
    const { hits } = await run(seed, { hostile: true });
    assert.ok(hits > 50, `only ${hits} hits: the workload does not exercise the cache`);
  });
}
