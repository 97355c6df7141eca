// The chat workload of bench/bench_chat.mjs (Node) and bench/chat_page.js
// (Chromium), through the public API only, as an app would drive it: a
// pinned system prompt, then conversations that grow a turn at a time, each
// turn inserting the whole conversation's KV (as transformers.js's present.*
// tensors give it) and flushing. Plain ESM, no Node or DOM imports.
//
// KV shape: Qwen2.5-0.5B's, 24 layers, 2 KV heads x 64, float16 (Uint16Array
// bits), head-major blocks [heads][tokens][headDim]: 12,288 bytes a token.
// Every value is a function of (position, token id, layer, K or V, head, dim)
// alone, so a prefix's KV is the same whichever chat computes it.

export const LAYERS = 24, HEADS = 2, HEAD_DIM = 64;
export const LAYOUT = { order: 'head-major', heads: HEADS, headDim: HEAD_DIM, layers: LAYERS };
/** Values of one token per K/V block, and per token over all blocks. */
const ROW = HEAD_DIM;
const VALUES_PER_TOKEN = 2 * LAYERS * HEADS * HEAD_DIM; // 6,144
export const BYTES_PER_TOKEN = VALUES_PER_TOKEN * 2; // f16: 12,288
export const SYSTEM_TOKENS = 1000;

function mix32(x) {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}
/** Per value of a token (layer, K/V, head, dim in that order): a salt. */
const SALT = Uint32Array.from({ length: VALUES_PER_TOKEN }, (_, j) => mix32(j * 0x9e3779b1 + 0x1234567));
const seedOf = (pos, tok) => mix32(Math.imul(pos + 1, 0x27d4eb2d) ^ mix32(tok + 0x165667b1));
/** Binary16 bits of value j of (pos, tok): finite (top exponent bit cleared: |x| < 2), sign and mantissa pseudo-random. */
const bitsOf = (seed, j) => {
  let x = Math.imul(seed ^ SALT[j], 0x85ebca6b);
  x ^= x >>> 15;
  return x & 0xbbff;
};
/** Index in a token's values of (layer, kind 0 = K / 1 = V, head, dim). */
const valueIndex = (layer, kind, head, d) => ((layer * 2 + kind) * HEADS + head) * HEAD_DIM + d;
/** The expected binary16 bits of one value: what verify() checks a hit against. */
export const expectedBits = (pos, tok, layer, kind, head, d) => bitsOf(seedOf(pos, tok), valueIndex(layer, kind, head, d));

/** The system prompt's tokens: shared by every chat. */
export const systemTokens = () => Uint32Array.from({ length: SYSTEM_TOKENS }, (_, j) => 1000 + (mix32(j + 1) % 30000));
/** The n new tokens of turn `turn` (1-based) of chat `chat`: each chat's first token is its own, so chats fork right after the system prompt. */
export function turnTokens(chat, turn, n) {
  return Uint32Array.from({ length: n }, (_, j) => (turn === 1 && j === 0 ? 100000 + chat : 1000 + (mix32(Math.imul(chat + 1, 1000003) + turn * 4099 + j) % 30000)));
}

/**
 * One conversation's tokens and the K/V rows of every token, kept per
 * (layer, K/V, head) token-major so that kv() assembles the head-major
 * blocks of the whole conversation with two copies per block.
 */
export class Conversation {
  #n = 0;
  #cap = 0;
  #tokens = new Uint32Array(0);
  #segs = []; // [layer * 2 + kind][head]: Uint16Array [cap][HEAD_DIM]

  constructor(initial) { this.append(initial); }
  get length() { return this.#n; }
  get tokens() { return this.#tokens.subarray(0, this.#n); }

  append(tokens) {
    const n = this.#n + tokens.length;
    if (n > this.#cap) {
      const cap = Math.max(n, this.#cap * 2, 256);
      const grow = (old) => { const a = new Uint16Array(cap * ROW); a.set(old.subarray(0, this.#n * ROW)); return a; };
      const t = new Uint32Array(cap); t.set(this.#tokens.subarray(0, this.#n)); this.#tokens = t;
      this.#segs = this.#segs.length
        ? this.#segs.map((heads) => heads.map(grow))
        : Array.from({ length: LAYERS * 2 }, () => Array.from({ length: HEADS }, () => new Uint16Array(cap * ROW)));
      this.#cap = cap;
    }
    for (let i = 0; i < tokens.length; i++) {
      const pos = this.#n + i, tok = tokens[i];
      this.#tokens[pos] = tok;
      const seed = seedOf(pos, tok);
      let j = 0;
      for (let lk = 0; lk < LAYERS * 2; lk++) {
        const heads = this.#segs[lk];
        for (let h = 0; h < HEADS; h++) {
          const seg = heads[h];
          const base = pos * ROW;
          for (let d = 0; d < HEAD_DIM; d++, j++) seg[base + d] = bitsOf(seed, j);
        }
      }
    }
    this.#n = n;
  }

  /** The conversation's KV in fresh arrays, { k, v } of head-major Uint16Array blocks (what present.* would hold). */
  kv() {
    const n = this.#n;
    const k = [], v = [];
    for (let l = 0; l < LAYERS; l++) {
      for (let kind = 0; kind < 2; kind++) {
        const block = new Uint16Array(HEADS * n * ROW);
        for (let h = 0; h < HEADS; h++) block.set(this.#segs[l * 2 + kind][h].subarray(0, n * ROW), h * n * ROW);
        (kind ? v : k).push(block);
      }
    }
    return { k, v };
  }

  /** A copy holding the same tokens and rows (a chat starts as a copy of the system prompt's). */
  clone() {
    const c = new Conversation(new Uint32Array(0));
    c.#n = this.#n; c.#cap = this.#cap; c.#tokens = this.#tokens.slice();
    c.#segs = this.#segs.map((heads) => heads.map((s) => s.slice()));
    return c;
  }
}

/**
 * Whether `cache` serves all of `tokens` (match of tokens + 1 more, so
 * the entry itself is the hit) with the right values at a few positions.
 * Returns a string saying what is wrong, or null. opts.lookup: ask
 * cache.lookup(tokens) instead (synchronous, copies: what an app of a
 * memory-only cache does); opts.positions: more token positions to check
 * (e.g. where one turn's KV ends and the next begins).
 */
export async function verify(cache, tokens, { lookup = false, positions = [] } = {}) {
  let hit;
  if (lookup) {
    hit = cache.lookup(tokens);
  } else {
    const q = new Uint32Array(tokens.length + 1);
    q.set(tokens); q[tokens.length] = 7;
    hit = await cache.match(q, { view: true, partial: true, maxMatched: tokens.length });
  }
  if (!hit) return 'no hit';
  if (hit.matched !== tokens.length) return `matched ${hit.matched} of ${tokens.length}`;
  if (hit.dtype !== 'f16') return `dtype ${hit.dtype}`;
  const n = tokens.length;
  const bitsAt = (arr, i) => (arr instanceof Uint16Array ? arr[i] : new Uint16Array(arr.buffer, arr.byteOffset, arr.length)[i]);
  for (const [b, block] of [...hit.k, ...hit.v].entries()) {
    if (block.length !== HEADS * n * HEAD_DIM) return `block ${b}: ${block.length} values, not ${HEADS * n * HEAD_DIM}`;
  }
  for (const pos of [0, SYSTEM_TOKENS - 1, SYSTEM_TOKENS, n >> 1, n - 1, ...positions]) {
    if (pos < 0 || pos >= n) continue;
    for (const [layer, kind, head, d] of [[0, 0, 0, 0], [LAYERS - 1, 1, HEADS - 1, HEAD_DIM - 1], [11, 0, 1, 17], [5, 1, 0, 40]]) {
      const block = (kind ? hit.v : hit.k)[layer];
      const got = bitsAt(block, head * n * HEAD_DIM + pos * HEAD_DIM + d);
      const want = expectedBits(pos, tokens[pos], layer, kind, head, d);
      if (got !== want) return `value at token ${pos}, layer ${layer}, ${kind ? 'V' : 'K'}, head ${head}, dim ${d}: ${got}, not ${want}`;
    }
  }
  return null;
}

/**
 * The workload on an open cache: the system prompt inserted, pinned and
 * flushed, then `chats` conversations of `turns` turns of `perTurn` new
 * tokens, interleaved round-robin (turn 1 of every chat, then turn 2...),
 * each turn an insert of the whole conversation and an awaited flush.
 * `measure()` is awaited after every flush (untimed) and returns what the
 * caller counts since its last call (bytes written, files...); it is called
 * once before the system prompt, to start from the open's state.
 * `beforeInsert()`, if given, runs before each turn's timed insert, after
 * its KV is made (untimed: e.g. a garbage collection).
 * Returns { system, turns: [{ chat, turn, tokens, new_tokens, insert_ms, flush_ms, ...measure() }], conversations }.
 */
/**
 * A reopened cache's check: the first and last chats and the system prompt
 * match with their KV; what failed, as strings (empty when all did).
 */
export async function verifyReopened(again, run) {
  const bad = [];
  for (const c of [0, run.conversations.length - 1]) {
    const why = await verify(again, run.conversations[c]);
    if (why) bad.push(`chat ${c}: ${why}`);
  }
  const sysWhy = await verify(again, run.systemTokens);
  if (sysWhy) bad.push(`system prompt: ${sysWhy}`);
  return bad;
}

export async function runChats(cache, { chats, turns, perTurn, measure = async () => ({}), now = () => performance.now(), onTurn = null, beforeInsert = null }) {
  const sys = new Conversation(systemTokens());
  await measure();
  let t0 = now();
  cache.insert(sys.tokens, sys.kv());
  const sysInsert = now() - t0;
  cache.pin(sys.tokens);
  t0 = now();
  await cache.flush();
  const system = { tokens: sys.length, insert_ms: sysInsert, flush_ms: now() - t0, ...(await measure()) };
  const convs = Array.from({ length: chats }, () => sys.clone());
  const out = [];
  for (let turn = 1; turn <= turns; turn++) {
    for (let chat = 0; chat < chats; chat++) {
      const c = convs[chat];
      c.append(turnTokens(chat, turn, perTurn));
      const kv = c.kv(); // the model's present.*: made before the timing starts
      if (beforeInsert) beforeInsert();
      t0 = now();
      cache.insert(c.tokens, kv);
      const insertMs = now() - t0;
      t0 = now();
      await cache.flush();
      const flushMs = now() - t0;
      const r = { chat, turn, tokens: c.length, new_tokens: perTurn, insert_ms: insertMs, flush_ms: flushMs, ...(await measure()) };
      out.push(r);
      if (onTurn) onTurn(r);
    }
  }
  return { system, turns: out, conversations: convs.map((c) => c.tokens.slice()), systemTokens: sys.tokens.slice() };
}

/** The median of an array of numbers (null for none). */
export function median(a) {
  if (!a.length) return null;
  const s = [...a].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** The q-quantile of an array of numbers, nearest rank (0.9: the value 90% of them do not exceed; null for none). */
export function quantile(a, q) {
  if (!a.length) return null;
  const s = [...a].sort((x, y) => x - y);
  return s[Math.min(s.length, Math.max(1, Math.ceil(q * s.length))) - 1];
}

/**
 * Ratios of one run, from its turns and the end state: written (bytes
 * written by the turns' flushes over the KV bytes of their new tokens; and
 * with the system prompt's flush, over the unique tokens' KV), stored and
 * resident over the unique tokens' KV.
 */
export function summarize({ system, turns }, { storedBytes, residentBytes, writtenKey = 'written' }) {
  const newTokens = turns.reduce((n, r) => n + r.new_tokens, 0);
  const unique = SYSTEM_TOKENS + newTokens;
  const turnWritten = turns.reduce((n, r) => n + r[writtenKey], 0);
  const allWritten = turnWritten + system[writtenKey];
  return {
    unique_tokens: unique,
    unique_kv_bytes: unique * BYTES_PER_TOKEN,
    new_tokens: newTokens,
    new_kv_bytes: newTokens * BYTES_PER_TOKEN,
    system_written_bytes: system[writtenKey],
    turns_written_bytes: turnWritten,
    written_ratio: turnWritten / (newTokens * BYTES_PER_TOKEN),
    written_ratio_with_system: allWritten / (unique * BYTES_PER_TOKEN),
    stored_bytes: storedBytes,
    stored_ratio: storedBytes === null ? null : storedBytes / (unique * BYTES_PER_TOKEN),
    resident_bytes: residentBytes,
    resident_ratio: residentBytes / (unique * BYTES_PER_TOKEN),
    flush_ms_median: median(turns.map((r) => r.flush_ms)),
    insert_ms_median: median(turns.map((r) => r.insert_ms)),
  };
}

/**
 * Flush times of a single long chat near two conversation lengths: the
 * median of the `around` turns whose conversations are nearest `at` tokens.
 */
export function flushNear(turns, at, around = 5) {
  const near = [...turns].sort((a, b) => Math.abs(a.tokens - at) - Math.abs(b.tokens - at)).slice(0, around).sort((a, b) => a.tokens - b.tokens);
  return { at, turns: near.map((r) => r.turn), tokens: near.map((r) => r.tokens), flush_ms: near.map((r) => r.flush_ms), median_ms: median(near.map((r) => r.flush_ms)) };
}

/** The targets of the issue, judged on a run's figures (printed beside them; nothing asserts). */
export const TARGETS = {
  written: 1.1, // bytes written per new token's KV, 100-token turns
  written_small: 2, // the same, 10-token turns
  stored: 1.05, // stored bytes over the unique tokens' KV
  resident: 1.05, // resident KV bytes over the unique tokens' KV
  flush_growth: 1.2, // flush at ~8,000 tokens over flush at ~1,000
  insert_growth: 1.2, // memory only: insert at ~8,000 tokens over insert at ~1,000 (medians)
};
