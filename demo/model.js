// A small but real decoder-only transformer in plain JS, for the rlxkv demo.
//
// Byte-level tokens (UTF-8 bytes 0..255, plus BOS = 256), pre-norm blocks of
// multi-head causal self-attention with rotary position embeddings (RoPE) and
// a GELU MLP, RMSNorm, separate input and output embeddings. The weights are random
// but deterministic: drawn from a seeded PRNG (mulberry32), so the model is
// untrained (it generates noise) but its compute is the real thing:
// O(n^2 d) attention and O(n d^2) projections per layer.
//
// Bit-identical everywhere: only +, -, *, /, Math.sqrt (all IEEE-exact in
// double precision), Math.round / Math.imul and Float32Array stores are
// used, in a fixed order. exp, sin and cos are computed here from
// polynomials instead of Math.exp/sin/cos, whose last bits may differ between
// engines. So the same text gives the same KV bytes in Node and any browser,
// and prefill(all) === prefill(rest, prefill(prefix).kv), bit for bit: the
// K/V row of token i only reads the (float32) K/V rows 0..i, computed by the
// same code whichever call computes them.
//
// KV layout: per layer, K is n_tokens rows of dModel floats (the heads
// concatenated, RoPE applied), row-major; V likewise.
//
// No dependencies; works in Node, a page or a Web Worker.

export const BOS = 256;
export const VOCAB = 257;
export const MODEL_VERSION = 'rlxkv-demo-transformer/1';

/* ---------------------------------------------------------------------
 * Deterministic math
 * ------------------------------------------------------------------- */

/** mulberry32: a 32-bit seeded PRNG; returns floats in [0, 1). */
export function mulberry32(seed) {
  let a = seed >>> 0;
  return function next() {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// 2^k for k in [-1074.., ...]: only the range exp() needs, built by exact
// doubling and halving.
const POW2_MIN = -160;
const POW2 = (() => {
  const t = new Float64Array(300);
  t[-POW2_MIN] = 1;
  for (let k = -POW2_MIN + 1; k < t.length; k++) t[k] = t[k - 1] * 2;
  for (let k = -POW2_MIN - 1; k >= 0; k--) t[k] = t[k + 1] / 2;
  return t;
})();

const LOG2E = 1.4426950408889634;
const LN2_HI = 6.93147180369123816490e-01; // fdlibm's split of ln 2
const LN2_LO = 1.90821492927058770002e-10;

/** e^x from a degree-13 polynomial after range reduction; 0 below -100. */
export function exp(x) {
  if (x < -100) return 0;
  if (x > 88) x = 88;
  const k = Math.round(x * LOG2E);
  const r = (x - k * LN2_HI) - k * LN2_LO; // |r| <= ~0.35
  // Taylor series of e^r, Horner form.
  let p = 1 / 6227020800;                  // 1/13!
  p = p * r + 1 / 479001600;
  p = p * r + 1 / 39916800;
  p = p * r + 1 / 3628800;
  p = p * r + 1 / 362880;
  p = p * r + 1 / 40320;
  p = p * r + 1 / 5040;
  p = p * r + 1 / 720;
  p = p * r + 1 / 120;
  p = p * r + 1 / 24;
  p = p * r + 1 / 6;
  p = p * r + 0.5;
  p = p * r + 1;
  p = p * r + 1;
  return p * POW2[k - POW2_MIN];
}

export function tanh(x) {
  if (x > 20) return 1;
  if (x < -20) return -1;
  const e = exp(2 * x);
  return (e - 1) / (e + 1);
}

const PIO2_1 = 1.57079632673412561417e+00;  // fdlibm: first 33 bits of pi/2
const PIO2_1T = 6.07710050650619224932e-11; // pi/2 - PIO2_1
const TWO_OVER_PI = 6.36619772367581382433e-01;

function sinPoly(r) {
  const r2 = r * r;
  let p = -1 / 1307674368000;               // -1/15!
  p = p * r2 + 1 / 6227020800;
  p = p * r2 - 1 / 39916800;
  p = p * r2 + 1 / 362880;
  p = p * r2 - 1 / 5040;
  p = p * r2 + 1 / 120;
  p = p * r2 - 1 / 6;
  return r + r * r2 * p;
}
function cosPoly(r) {
  const r2 = r * r;
  let p = 1 / 20922789888000;               // 1/16!
  p = p * r2 - 1 / 87178291200;
  p = p * r2 + 1 / 479001600;
  p = p * r2 - 1 / 3628800;
  p = p * r2 + 1 / 40320;
  p = p * r2 - 1 / 720;
  p = p * r2 + 1 / 24;
  p = p * r2 - 0.5;
  return 1 + r2 * p;
}

/** [sin x, cos x] for 0 <= x < ~1e6 (enough for RoPE angles). */
export function sincos(x) {
  const k = Math.round(x * TWO_OVER_PI);
  const r = (x - k * PIO2_1) - k * PIO2_1T; // |r| <= ~pi/4
  const s = sinPoly(r), c = cosPoly(r);
  switch (k & 3) {
    case 0: return [s, c];
    case 1: return [c, -s];
    case 2: return [-s, -c];
    default: return [-c, s];
  }
}

/** GELU, tanh approximation (as in GPT-2). */
function gelu(x) {
  return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

/* ---------------------------------------------------------------------
 * The model
 * ------------------------------------------------------------------- */

const DEFAULTS = { seed: 20260101, layers: 4, dModel: 128, heads: 4, ffMult: 4, ropeBase: 10000 };

/**
 * @param {{seed?: number, layers?: number, dModel?: number, heads?: number, ffMult?: number, ropeBase?: number}} [opts]
 */
/** FNV-1a (32-bit) over every K then V block's bytes, as 8 hex digits: a
 * fingerprint of KV bits that Node and browsers must agree on. */
/**
 * The model's KV layout as rlxkv takes it (openCache's layout): each
 * block is rows of dModel floats, token after token, cut by token.
 */
export function kvLayoutOf(config) {
  return { order: 'token-major', heads: config.heads, headDim: config.dModel / config.heads, layers: config.layers };
}

export function kvHash(kv) {
  let h = 0x811c9dc5;
  for (const b of [...kv.k, ...kv.v]) {
    const u8 = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
    for (let i = 0; i < u8.length; i++) h = Math.imul(h ^ u8[i], 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, '0');
}

export function createModel(opts = {}) {
  const cfg = { ...DEFAULTS };
  for (const key of Object.keys(DEFAULTS)) if (opts[key] !== undefined) cfg[key] = opts[key];
  const { seed, layers: L, dModel: D, heads: H, ffMult, ropeBase } = cfg;
  for (const key of ['layers', 'dModel', 'heads', 'ffMult']) {
    if (!Number.isInteger(cfg[key]) || cfg[key] < 1) throw new RangeError(`${key} must be a positive integer`);
  }
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new RangeError('seed must be a u32');
  if (D % H !== 0 || (D / H) % 2 !== 0) throw new RangeError('dModel / heads must be an even integer');
  if (D % 4 !== 0) throw new RangeError('dModel must be a multiple of 4');
  const DH = D / H;
  const FF = D * ffMult;
  const HALF = DH / 2;
  const config = Object.freeze({ ...cfg, vocab: VOCAB, headDim: DH, ffDim: FF, bos: BOS, version: MODEL_VERSION });
  const fingerprintKey =
    `${MODEL_VERSION};vocab=${VOCAB};bos=${BOS};seed=${seed};layers=${L};d=${D};heads=${H};` +
    `ff=${FF};rope=${ropeBase};norm=rms;act=gelu-tanh;kv=f32-rowmajor-rope`;

  // ---- weights, in a fixed draw order --------------------------------
  const rand = mulberry32(seed);
  /** rows x cols, uniform with standard deviation `std` (row-major, out-major). */
  const matrix = (rows, cols, std) => {
    const m = new Float32Array(rows * cols);
    const a = std * Math.sqrt(3);
    for (let i = 0; i < m.length; i++) m[i] = (rand() * 2 - 1) * a;
    return m;
  };
  const gains = (n) => {
    const g = new Float32Array(n);
    for (let i = 0; i < n; i++) g[i] = 1 + (rand() * 2 - 1) * 0.1;
    return g;
  };
  const embed = matrix(VOCAB, D, 1);
  const blocks = [];
  for (let l = 0; l < L; l++) {
    blocks.push({
      norm1: gains(D),
      wqkv: matrix(3 * D, D, 1 / Math.sqrt(D)),     // q rows, then k rows, then v rows
      wo: matrix(D, D, 1 / Math.sqrt(D) / Math.sqrt(2 * L)),
      norm2: gains(D),
      w1: matrix(FF, D, 1 / Math.sqrt(D)),
      w2: matrix(D, FF, 1 / Math.sqrt(FF) / Math.sqrt(2 * L)),
    });
  }
  const normF = gains(D);
  const unembed = matrix(VOCAB, D, 1 / Math.sqrt(D)); // untied: logits of unit spread

  // RoPE inverse frequencies, pairs (i, i + HALF) of each head.
  const invFreq = new Float64Array(HALF);
  const lnBase = ropeBase === 10000 ? 9.210340371976184 : lnOf(ropeBase);
  for (let i = 0; i < HALF; i++) invFreq[i] = exp(-lnBase * (2 * i) / DH);
  // cos/sin per position, grown on demand.
  let ropeCos = new Float64Array(0), ropeSin = new Float64Array(0), ropeLen = 0;
  function ropeUpTo(n) {
    if (n <= ropeLen) return;
    let cap = Math.max(n, ropeLen * 2, 1024);
    const c = new Float64Array(cap * HALF), s = new Float64Array(cap * HALF);
    c.set(ropeCos); s.set(ropeSin);
    for (let p = ropeLen; p < cap; p++) {
      for (let i = 0; i < HALF; i++) {
        const [sn, cs] = sincos(p * invFreq[i]);
        c[p * HALF + i] = cs;
        s[p * HALF + i] = sn;
      }
    }
    ropeCos = c; ropeSin = s; ropeLen = cap;
  }

  // ---- scratch -------------------------------------------------------
  const xRow = new Float32Array(D);   // residual stream of the current row
  const nRow = new Float32Array(D);   // normed
  const qkv = new Float32Array(3 * D);
  const att = new Float32Array(D);
  const hid = new Float32Array(FF);
  const accRow = new Float64Array(DH); // attention output of one head, in doubles
  let scores = new Float64Array(1024);

  function rmsnorm(out, x, g) {
    let ss = 0;
    for (let i = 0; i < D; i++) ss += x[i] * x[i];
    const inv = 1 / Math.sqrt(ss / D + 1e-5);
    for (let i = 0; i < D; i++) out[i] = x[i] * inv * g[i];
  }

  /** out[o] = sum_i W[o, i] x[i] for o < rows (W rows x cols). */
  function matvec(out, w, x, rows, cols) {
    for (let o = 0; o < rows; o++) {
      const base = o * cols;
      let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (let i = 0; i < cols; i += 4) {
        s0 += w[base + i] * x[i];
        s1 += w[base + i + 1] * x[i + 1];
        s2 += w[base + i + 2] * x[i + 2];
        s3 += w[base + i + 3] * x[i + 3];
      }
      out[o] = (s0 + s1) + (s2 + s3);
    }
  }

  /** Rotates the pairs (i, i + HALF) of every head of vec (at offset) for position pos. */
  function rope(vec, off, pos) {
    const cb = pos * HALF;
    for (let h = 0; h < H; h++) {
      const hb = off + h * DH;
      for (let i = 0; i < HALF; i++) {
        const c = ropeCos[cb + i], s = ropeSin[cb + i];
        const a = vec[hb + i], b = vec[hb + i + HALF];
        vec[hb + i] = a * c - b * s;
        vec[hb + i + HALF] = a * s + b * c;
      }
    }
  }

  /**
   * Runs `tokens` at positions state.n.. through the model, appending their
   * K/V rows to state (capacity must suffice). Returns the last row's final
   * hidden state (normed) when wantLogits, else null.
   */
  function forward(state, tokens, wantLogits) {
    const p0 = state.n, m = tokens.length, n = p0 + m;
    if (n * D > state.k[0].length) throw new Error('internal: KV capacity');
    ropeUpTo(n);
    if (scores.length < n) scores = new Float64Array(Math.max(n, scores.length * 2));
    // Residual streams of the new rows.
    const xs = new Float32Array(m * D);
    for (let r = 0; r < m; r++) {
      const t = tokens[r];
      if (!(t >= 0 && t < VOCAB)) throw new RangeError(`token ${t} out of range`);
      xs.set(embed.subarray(t * D, t * D + D), r * D);
    }
    const scale = 1 / Math.sqrt(DH);
    for (let l = 0; l < L; l++) {
      const B = blocks[l];
      const K = state.k[l], V = state.v[l];
      for (let r = 0; r < m; r++) {
        const pos = p0 + r;
        const xo = r * D;
        for (let i = 0; i < D; i++) xRow[i] = xs[xo + i];
        // --- attention ---
        rmsnorm(nRow, xRow, B.norm1);
        matvec(qkv, B.wqkv, nRow, 3 * D, D);
        rope(qkv, 0, pos);      // q
        rope(qkv, D, pos);      // k
        const ko = pos * D;
        for (let i = 0; i < D; i++) {
          K[ko + i] = qkv[D + i];
          V[ko + i] = qkv[2 * D + i];
        }
        for (let h = 0; h < H; h++) {
          const qo = h * DH;
          let max = -Infinity;
          for (let j = 0; j <= pos; j++) {
            const kb = j * D + qo;
            let s = 0;
            for (let i = 0; i < DH; i++) s += qkv[qo + i] * K[kb + i];
            s *= scale;
            scores[j] = s;
            if (s > max) max = s;
          }
          let sum = 0;
          for (let j = 0; j <= pos; j++) {
            const e = exp(scores[j] - max);
            scores[j] = e;
            sum += e;
          }
          const inv = 1 / sum;
          const acc = accRow;
          for (let i = 0; i < DH; i++) acc[i] = 0;
          for (let j = 0; j <= pos; j++) {
            const w = scores[j];
            const vb = j * D + qo;
            for (let i = 0; i < DH; i++) acc[i] += w * V[vb + i];
          }
          for (let i = 0; i < DH; i++) att[qo + i] = acc[i] * inv;
        }
        matvec(nRow, B.wo, att, D, D);
        for (let i = 0; i < D; i++) xRow[i] += nRow[i];
        // --- MLP ---
        rmsnorm(nRow, xRow, B.norm2);
        matvec(hid, B.w1, nRow, FF, D);
        for (let i = 0; i < FF; i++) hid[i] = gelu(hid[i]);
        matvec(nRow, B.w2, hid, D, FF);
        for (let i = 0; i < D; i++) xs[xo + i] = xRow[i] + nRow[i];
      }
    }
    state.n = n;
    if (!wantLogits) return null;
    for (let i = 0; i < D; i++) xRow[i] = xs[(m - 1) * D + i];
    rmsnorm(nRow, xRow, normF);
    const logits = new Float32Array(VOCAB);
    matvec(logits, unembed, nRow, VOCAB, D);
    return logits;
  }
  /** A KV state of capacity `cap` tokens holding a copy of `past` (or empty). */
  function stateFrom(past, cap) {
    const p = past ? rowsOf(past) : 0;
    const state = { n: p, k: [], v: [] };
    for (let l = 0; l < L; l++) {
      const k = new Float32Array(cap * D), v = new Float32Array(cap * D);
      if (past) {
        k.set(past.k[l].subarray(0, p * D));
        v.set(past.v[l].subarray(0, p * D));
      }
      state.k.push(k);
      state.v.push(v);
    }
    return state;
  }

  function rowsOf(kv) {
    if (!kv || !Array.isArray(kv.k) || !Array.isArray(kv.v) || kv.k.length !== L || kv.v.length !== L) {
      throw new TypeError(`kv must be { k, v } with ${L} Float32Array blocks each`);
    }
    const len = kv.k[0].length;
    if (len % D !== 0) throw new RangeError(`KV block length ${len} is not a multiple of dModel ${D}`);
    for (let l = 0; l < L; l++) {
      if (kv.k[l].length !== len || kv.v[l].length !== len) throw new RangeError('KV blocks differ in length');
    }
    return len / D;
  }

  function toTokenArray(tokens) {
    return tokens instanceof Uint32Array ? tokens : Uint32Array.from(tokens);
  }

  /**
   * The KV of pastKv's tokens followed by `tokens` (positions p..), and the
   * logits after the last token. pastKv is not changed.
   */
  function prefill(tokens, pastKv = null) {
    const t = toTokenArray(tokens);
    const p = pastKv ? rowsOf(pastKv) : 0;
    if (t.length === 0) throw new RangeError('prefill needs at least one token');
    const state = stateFrom(pastKv, p + t.length);
    const logits = forward(state, t, true);
    return { kv: { k: state.k, v: state.v }, logits, nTokens: state.n };
  }

  /**
   * Decodes `n` tokens after `tokens`, whose first p tokens have the KV `kv`
   * (p = its rows, 0..tokens.length; null for none): the rest is prefilled
   * first. The model is untrained, so the choice is steered: only printable
   * ASCII and newlines, the logits plus an English
   * letter-frequency prior, sampled by a PRNG seeded from the tokens
   * (deterministic). onToken(token, index) is called as each token is
   * chosen. Returns the new tokens.
   */
  function generate(kv, tokens, n, { onToken } = {}) {
    const t = toTokenArray(tokens);
    let p = kv ? rowsOf(kv) : 0;
    if (p > t.length) throw new RangeError(`kv has ${p} rows but only ${t.length} tokens were given`);
    if (t.length === 0) throw new RangeError('generate needs at least one token');
    if (p === t.length) p -= 1; // the last token is fed again for its logits
    const past = kv ? { k: kv.k.map((b) => b.subarray(0, p * D)), v: kv.v.map((b) => b.subarray(0, p * D)) } : null;
    const state = stateFrom(past, t.length + n);
    let logits = forward(state, t.subarray(p), true);
    let h = seed ^ 0x9e3779b9;
    for (let i = 0; i < t.length; i++) h = Math.imul(h ^ t[i], 0x01000193);
    const rand = mulberry32(h >>> 0);
    const out = new Uint32Array(n);
    const one = new Uint32Array(1);
    const prob = new Float64Array(256);
    for (let g = 0; g < n; g++) {
      let max = -Infinity;
      for (let c = 0; c < 256; c++) {
        const s = LOG_PRIOR[c] === -Infinity ? -Infinity : logits[c] + LOG_PRIOR[c];
        prob[c] = s;
        if (s > max) max = s;
      }
      let sum = 0;
      for (let c = 0; c < 256; c++) { prob[c] = exp(prob[c] - max); sum += prob[c]; }
      let u = rand() * sum, best = 32;
      for (let c = 0; c < 256; c++) {
        if (prob[c] === 0) continue;
        best = c;
        u -= prob[c];
        if (u < 0) break;
      }
      out[g] = best;
      if (onToken) onToken(best, g);
      if (g + 1 < n) {
        one[0] = best;
        logits = forward(state, one, true);
      }
    }
    return out;
  }

  const encoder = new TextEncoder();
  const decoder = new TextDecoder('utf-8', { fatal: false });

  /** UTF-8 bytes as tokens, after a BOS token unless opts.bos is false. */
  function encode(text, { bos = true } = {}) {
    const bytes = encoder.encode(text);
    const out = new Uint32Array(bytes.length + (bos ? 1 : 0));
    if (bos) out[0] = BOS;
    out.set(bytes, bos ? 1 : 0);
    return out;
  }

  /** Text of tokens (BOS and out-of-range ids dropped; bad UTF-8 replaced). */
  function decode(tokens) {
    const bytes = [];
    for (const t of tokens) if (t < 256) bytes.push(t);
    return decoder.decode(Uint8Array.from(bytes));
  }

  /**
   * Runs a few tokens over a zero past of `context` rows, so that the JIT has
   * compiled the long-context kernels before anything is timed (the first
   * long prefill is otherwise ~50% slower). Changes no state that matters.
   */
  function warmUp({ context = 1024, rounds = 3 } = {}) {
    const zeros = () => Array.from({ length: L }, () => new Float32Array(context * D));
    const past = { k: zeros(), v: zeros() };
    const probe = Uint32Array.of(BOS, 32, 101, 116);
    for (let i = 0; i < rounds; i++) prefill(probe, past);
    ropeUpTo(2048);
  }

  /** KV bytes per token (4 per float, K and V of every layer). */
  const kvBytesPerToken = 2 * L * D * 4;

  /**
   * Copies of every weight, for exporting the model (scripts/make-model.mjs
   * writes them into an ONNX graph). Matrices are row-major, out-major
   * (rows x cols, out[o] = sum_i W[o, i] x[i]): embed VOCAB x D, wqkv 3D x D
   * (q, k, v rows), wo D x D, w1 FF x D, w2 D x FF, unembed VOCAB x D; norm
   * gains D; invFreq the RoPE inverse frequencies (doubles, HALF of them).
   * The caller owns the copies.
   */
  function weights() {
    return {
      embed: embed.slice(),
      blocks: blocks.map((b) => ({
        norm1: b.norm1.slice(), wqkv: b.wqkv.slice(), wo: b.wo.slice(),
        norm2: b.norm2.slice(), w1: b.w1.slice(), w2: b.w2.slice(),
      })),
      normF: normF.slice(),
      unembed: unembed.slice(),
      invFreq: invFreq.slice(),
    };
  }

  return { config, fingerprintKey, encode, decode, prefill, generate, warmUp, kvBytesPerToken, weights };
}

// log of rough English byte frequencies (per mille), -Infinity for bytes
// never emitted (everything but printable ASCII and newline). Precomputed
// with the exp() above, so no Math.log is needed.
const LOG_PRIOR = (() => {
  const freq = new Float64Array(256);
  for (let c = 32; c < 127; c++) freq[c] = 0.3;
  for (let c = 65; c < 91; c++) freq[c] = 2;
  const common = { ' ': 170, e: 95, t: 70, a: 62, o: 60, i: 55, n: 55, s: 50, h: 48, r: 48, d: 33,
    l: 31, c: 22, u: 21, m: 19, w: 18, f: 17, g: 15, y: 15, p: 14, b: 11, ',': 9, '.': 9, v: 8,
    k: 6, '\n': 3, "'": 2, j: 1, x: 1, q: 1, z: 1 };
  for (const [ch, f] of Object.entries(common)) freq[ch.charCodeAt(0)] = f;
  const out = new Float64Array(256).fill(-Infinity);
  for (let c = 0; c < 256; c++) if (freq[c] > 0) out[c] = lnOf(freq[c] / 1000);
  return out;
})();

function lnOf(x) {
  // ln x by Newton iterations on exp(); x > 0.
  let y = 0;
  for (let m = x; m > 2; m /= 2) y += 0.6931471805599453;
  for (let m = x; m < 0.5; m *= 2) y -= 0.6931471805599453;
  for (let i = 0; i < 60; i++) y -= 1 - x / exp(y);
  return y;
}
