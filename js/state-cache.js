// The cache of a model whose cache holds fixed-size state as well as KV:
// hybrid models with conv, linear-attention or Mamba layers (LFM2, Qwen3.5,
// Granite-4 hybrid...). Loaded only when a layout lists `state`.
//
// Two kinds of tensor, kept two ways:
//
//   KV of the attention layers   per token: cut at any token, paged, as
//                                any model's (the Cache this class is)
//   state (past_conv.N, ...)     valid only after exactly the tokens it was
//                                taken at: a checkpoint, a whole entry of a
//                                companion Cache, keyed by those tokens
//
//   tokens  0 ......... 256 ........ 512 ..... 601
//   KV      [================== pages ===========]
//   state            ckpt@256      ckpt@512   ckpt@601
//
// A hit is the longest prefix at which a checkpoint is held and the KV
// covers it: never KV without its state, never state without its KV.
// The checkpoints persist beside the KV, in `${path}/state` of the same
// kind of storage, under a fingerprint made from the cache's and the state
// layout's: a store of another layout's state is foreign, never served.
//
// It imports nothing of the main bundle (index.js passes Cache and the
// argument checks in), so a browser build loads it as one small chunk.
import { RlxkvError } from '../wasm/errors.js';

/** Share of capBytes (and storageCapBytes) the checkpoints get when stateCapBytes is not given. */
const STATE_SHARE = 0.25;

/**
 * The state part of a layout, checked: { state: [{ name, shape, values }],
 * attention: [model layer index of each KV layer] | null }.
 */
export function toStateLayout(layout) {
  const { state, attention } = layout;
  if (!Array.isArray(state) || !state.length) throw new TypeError('layout.state must be a non-empty array of { name, shape }');
  const names = new Set();
  const tensors = state.map((s, i) => {
    if (!s || typeof s.name !== 'string' || !s.name) throw new TypeError(`layout.state[${i}].name must be a non-empty string`);
    if (names.has(s.name)) throw new RangeError(`layout.state: ${s.name} is listed twice`);
    names.add(s.name);
    if (!Array.isArray(s.shape) || !s.shape.length || !s.shape.every((d) => Number.isSafeInteger(d) && d >= 1)) {
      throw new RangeError(`layout.state[${i}].shape must be an array of positive integers (without the batch), got ${JSON.stringify(s.shape)}`);
    }
    const values = s.shape.reduce((a, d) => a * d, 1);
    if (values > 0xffffffff) throw new RangeError(`layout.state[${i}] (${s.name}) has ${values} values, more than an entry's block holds`);
    return Object.freeze({ name: s.name, shape: Object.freeze([...s.shape]), values });
  });
  let layers = null;
  if (attention !== undefined) {
    if (!Array.isArray(attention) || !attention.every((l) => Number.isSafeInteger(l) && l >= 0) || new Set(attention).size !== attention.length) {
      throw new RangeError('layout.attention must list distinct non-negative layer indices');
    }
    if (layout.layers && attention.length !== layout.layers) {
      throw new RangeError(`layout.attention lists ${attention.length} layers, but layout.layers is ${layout.layers}`);
    }
    layers = Object.freeze([...attention]);
  }
  return { state: Object.freeze(tensors), attention: layers };
}

/** The text a state store's fingerprint is made from: the cache's fingerprint and what the state is. */
export function stateFingerprintText(fingerprint, { state }) {
  return `rlxkv state ${fingerprint.toString(16)} ${state.map((s) => `${s.name}[${s.shape.join(',')}]`).join(' ')}`;
}

/** The StateCache class, over index.js's Cache and argument checks (js/args.js, js/cache.js's lookupOptions). */
export function stateCacheClass(Cache, { toKv, toByteCount, toTokens, lookupOptions }) {
return class StateCache extends Cache {
  /** The checkpoints: tokens → the state after them (k: one block per state tensor; v: empty). */
  #states;
  #layout;
  #stateLayout;
  /** The share of budgets the checkpoints get. */
  #share;

  /**
   * @internal use rlx.openCache. opts as Cache's, with layout the whole
   * layout (state included), stateFingerprint the checkpoints' and
   * stateCapBytes their part of capBytes (undefined: a quarter).
   */
  constructor(core, opts, { stateFingerprint, stateCapBytes }) {
    const { layout, capBytes } = opts;
    const stateLayout = toStateLayout(layout);
    if (opts.remote) throw new TypeError('remote: a published tree holds KV pages, not the state a model with layout.state needs');
    const stateCap = stateCapBytes ?? Math.floor(capBytes * STATE_SHARE);
    if (stateCap > capBytes) throw new RangeError(`stateCapBytes (${stateCap}) is more than capBytes (${capBytes}), of which it is a part`);
    const { order, heads, headDim, layers } = layout;
    super(core, { ...opts, capBytes: capBytes - stateCap, layout: Object.freeze({ order, heads, headDim, layers }) });
    this.#states = new Cache(core, { ...opts, capBytes: stateCap, fingerprint: stateFingerprint, layout: null, onEvent: null, remote: null });
    this.#layout = Object.freeze({ ...layout, ...stateLayout, state: stateLayout.state });
    this.#stateLayout = stateLayout;
    this.#share = capBytes ? stateCap / capBytes : STATE_SHARE;
  }

  /** @internal the checkpoints' store is `${path}/state`, of the same kind. */
  async attach(kind, path, storageCapBytes, opts) {
    const stateCap = storageCapBytes === Infinity ? Infinity : Math.floor(storageCapBytes * this.#share);
    await super.attach(kind, path, storageCapBytes === Infinity ? Infinity : storageCapBytes - stateCap, opts);
    await this.#states.attach(kind, statePath(path), stateCap, opts);
    this.restoreReport.state = this.#states.restoreReport;
  }

  /** The layout: the KV's, with `state` (and `attention`) as given. */
  get layout() { return this.#layout; }

  /**
   * Stores the KV of a prefix and the state after exactly its tokens.
   * kv: { k, v, state }: K and V of the attention layers, as any cache's
   * insert takes them (opts.start too), and one block per layout.state
   * tensor, in its order, of its size (f32 or f16; the KV's dtype or not).
   */
  insert(tokens, kv, opts = {}) {
    const state = this.#checkState(kv);
    super.insert(tokens, kv, opts);
    // V: empty blocks of the state's own type (one dtype per entry).
    this.#states.insert(tokens, { k: state, v: state.map((b) => b.subarray(0, 0)) });
  }

  #checkState(kv) {
    if (!kv || typeof kv !== 'object' || !Array.isArray(kv.state)) {
      throw new TypeError('kv.state must be an array of blocks, one per layout.state tensor: this model keeps state as well as KV');
    }
    const { state } = this.#stateLayout;
    if (kv.state.length !== state.length) throw new RangeError(`kv.state has ${kv.state.length} blocks, but layout.state lists ${state.length} tensors`);
    toKv({ k: kv.state, v: kv.state }, 'kv.state');
    kv.state.forEach((b, i) => {
      if (b.length !== state[i].values) {
        throw new RangeError(`kv.state[${i}] (${state[i].name}) has ${b.length} values; its shape [${state[i].shape.join(', ')}] needs ${state[i].values}`);
      }
    });
    return kv.state;
  }

  /**
   * The longest prefix of `tokens` at which a checkpoint is held and the
   * KV covers it, from memory, or null: a hit (as Cache's lookup gives it)
   * with `state`, one block per layout.state tensor (always copies).
   */
  lookup(tokens, opts = {}) {
    return this.#find(tokens, opts, (t) => this.#states.lookup(t), (t, how) => super.lookup(t, how));
  }

  /** As lookup(), in memory or in storage (as Cache's match). */
  async match(tokens, opts = {}) {
    const signal = opts && opts.signal;
    return this.#find(tokens, opts, (t) => this.#states.match(t, { signal }), (t, how) => super.match(t, { ...how, signal }));
  }

  /**
   * 1. The longest checkpoint that is a prefix of the first maxMatched
   *    tokens: c tokens (none: a miss).
   * 2. The KV's longest prefix, at most c (partial as asked).
   * 3. If it covers c: the hit, with the checkpoint's state. Else the KV
   *    ends short of c (evicted, or never stored): go to 1 with maxMatched
   *    the KV's end. Each round lowers maxMatched, so this ends.
   * Works for sync (lookup) and async (match) finders alike: `then` only
   * where the finders gave promises.
   */
  #find(tokens, opts, findState, findKv) {
    const t = toTokens(tokens);
    const { view, partial, maxMatched } = lookupOptions(opts, t);
    let max = maxMatched;
    // A checkpoint is a whole entry: one within the first `max` tokens.
    const round = () => step(findState(t.subarray(0, max)), (checkpoint) => {
      if (!checkpoint) return null;
      return step(findKv(t, { view, partial, maxMatched: checkpoint.matched }), (hit) => {
        if (hit && hit.matched === checkpoint.matched) return Object.assign(hit, { state: checkpoint.k, stateDtype: checkpoint.dtype });
        if (!hit) return null;
        max = hit.matched;
        return round();
      });
    });
    return round();
  }

  /** Pins the entry and its checkpoint. */
  pin(tokens) {
    super.pin(tokens);
    if (this.#states.has(tokens)) this.#states.pin(tokens);
  }

  unpin(tokens) {
    super.unpin(tokens);
    if (this.#states.has(tokens)) this.#states.unpin(tokens);
  }

  remove(tokens) {
    const kv = super.remove(tokens);
    return this.#states.remove(tokens) || kv;
  }

  /** Whether the KV and the state of exactly these tokens are held (a hit on them would restore). */
  has(tokens) { return super.has(tokens) && this.#states.has(tokens); }

  async clear(opts = {}) {
    await super.clear(opts);
    await this.#states.clear(opts);
  }

  set capBytes(n) {
    const total = toByteCount(n, 'capBytes');
    const stateCap = Math.floor(total * this.#share);
    super.capBytes = total - stateCap;
    this.#states.capBytes = stateCap;
  }

  get capBytes() { return this.stats.capBytes; }
  get bytes() { return this.stats.bytes; }

  /**
   * Cache's stats, bytes and budgets counting the checkpoints too, with
   * `state`: the checkpoints' own { entries, bytes, capBytes, storedEntries, storedBytes }.
   */
  get stats() {
    const kv = super.stats, st = this.#states.stats;
    const sum = (name) => kv[name] + st[name];
    return {
      ...kv, bytes: sum('bytes'), capBytes: sum('capBytes'), pinnedBytes: sum('pinnedBytes'), storedBytes: sum('storedBytes'),
      state: { entries: st.entries, bytes: st.bytes, capBytes: st.capBytes, storedEntries: st.storedEntries, storedBytes: st.storedBytes },
    };
  }

  /**
   * A blob holds KV only (exportBlob, inherited, gives the attention
   * layers' KV: no interchange format holds state), so none restores here.
   */
  async importBlob() {
    throw new RlxkvError('SHAPE', 'importBlob: a blob holds KV only, and this cache restores a prefix only with the state taken after it (layout.state)');
  }

  async flush() {
    await super.flush();
    await this.#states.flush();
  }

  async prune(opts = {}) {
    const { maxBytes = Infinity } = opts;
    const stateMax = maxBytes === Infinity ? Infinity : Math.floor(maxBytes * this.#share);
    const kv = await super.prune({ ...opts, maxBytes: maxBytes === Infinity ? Infinity : maxBytes - stateMax });
    const st = await this.#states.prune({ ...opts, maxBytes: stateMax });
    return Object.fromEntries(Object.keys(kv).map((k) => [k, kv[k] + (st[k] ?? 0)]));
  }

  async close({ flush = true } = {}) {
    if (this.closed) return;
    if (flush) await this.flush();
    await this.#states.close({ flush: false });
    await super.close({ flush: false });
  }
};
}

/** Where a store keeps its checkpoints: a directory (fs, OPFS) or database (IndexedDB) named state under its own. */
export const statePath = (path) => `${path.replace(/\/+$/, '')}/state`;

/** f(value), or for a promise, the promise of it. */
function step(value, f) {
  return value && typeof value.then === 'function' ? value.then(f) : f(value);
}
