// Argument checks for the public API. Each throws a TypeError or RangeError
// naming the argument, before anything is changed.

export { checkShape } from '../format/layout.js';

const U32_LIMIT = 2 ** 32;
const U64_LIMIT = 2n ** 64n;

function isDetached(buffer) {
  if (typeof buffer.detached === 'boolean') return buffer.detached;
  if (buffer.byteLength !== 0) return false;
  try { new Uint8Array(buffer); return false; } catch { return true; }
}

/** Tokens as a Uint32Array (the input itself when it already is one). */
export function toTokens(tokens, name = 'tokens') {
  if (tokens instanceof Uint32Array) {
    if (isDetached(tokens.buffer)) throw new TypeError(`${name}: buffer is detached`);
    return tokens;
  }
  if (!Array.isArray(tokens) && !ArrayBuffer.isView(tokens)) {
    throw new TypeError(`${name} must be a Uint32Array or an array of integers`);
  }
  if (ArrayBuffer.isView(tokens) && (tokens instanceof DataView || isDetached(tokens.buffer))) {
    throw new TypeError(`${name} must be a Uint32Array or an array of integers`);
  }
  const out = new Uint32Array(tokens.length);
  for (let i = 0; i < tokens.length; i++) {
    const t = typeof tokens[i] === 'bigint' ? Number(tokens[i]) : tokens[i];
    if (typeof t !== 'number') throw new TypeError(`${name}[${i}] must be an integer, got ${typeof tokens[i]}`);
    if (!Number.isInteger(t) || t < 0 || t >= U32_LIMIT) {
      throw new RangeError(`${name}[${i}] must be an integer in [0, 2^32), got ${tokens[i]}`);
    }
    out[i] = t;
  }
  return out;
}

const F16 = globalThis.Float16Array;
/** The dtype of one KV block: 'f32' (Float32Array) or 'f16' (Uint16Array bits, or Float16Array). */
function dtypeOf(b) {
  if (b instanceof Float32Array) return 'f32';
  if (b instanceof Uint16Array || (F16 && b instanceof F16)) return 'f16';
  return null;
}

/**
 * { k, v } with one K and one V block per layer, as many K as V, every block
 * of one dtype: Float32Array (f32) or 16-bit (f16: Uint16Array of IEEE
 * binary16 bits, or Float16Array). Returns { k, v, dtype }.
 */
export function toKv(kv, name = 'kv') {
  if (!kv || typeof kv !== 'object') throw new TypeError(`${name} must be an object { k, v }`);
  const { k, v } = kv;
  let dtype = null;
  for (const [side, blocks] of [['k', k], ['v', v]]) {
    if (!Array.isArray(blocks)) throw new TypeError(`${name}.${side} must be an array of Float32Array or Uint16Array (one per layer)`);
    for (let i = 0; i < blocks.length; i++) {
      const b = blocks[i];
      const t = b == null ? null : dtypeOf(b);
      if (!t) throw new TypeError(`${name}.${side}[${i}] must be a Float32Array, or a Uint16Array/Float16Array of float16 bits`);
      if (isDetached(b.buffer)) throw new TypeError(`${name}.${side}[${i}]: buffer is detached`);
      if (dtype && t !== dtype) throw new TypeError(`${name}.${side}[${i}] is ${t} but earlier blocks are ${dtype}: one dtype per entry`);
      dtype = t;
    }
  }
  if (k.length !== v.length) {
    throw new RangeError(`${name}: ${k.length} K layers but ${v.length} V layers`);
  }
  return { k, v, dtype: dtype || 'f32' };
}

const ORDERS = ['head-major', 'token-major'];
const positive = (n) => Number.isInteger(n) && n >= 1 && n <= 0xffffffff;

/**
 * A model's KV layout: { order: 'head-major' | 'token-major', heads, headDim,
 * layers? }, or null when undefined.
 */
export function toLayout(layout, name = 'layout') {
  if (layout === undefined || layout === null) return null;
  if (typeof layout !== 'object') throw new TypeError(`${name} must be an object { order, heads, headDim, layers? }`);
  const { order, heads, headDim, layers = 0 } = layout;
  if (!ORDERS.includes(order)) throw new RangeError(`${name}.order must be 'head-major' or 'token-major', got ${String(order)}`);
  if (!positive(heads)) throw new RangeError(`${name}.heads must be a positive integer, got ${heads}`);
  if (!positive(headDim)) throw new RangeError(`${name}.headDim must be a positive integer, got ${headDim}`);
  if (layers !== 0 && !positive(layers)) throw new RangeError(`${name}.layers must be a positive integer, got ${layers}`);
  if (heads * headDim > 0xffffffff) throw new RangeError(`${name}: heads * headDim is too large`);
  return Object.freeze({ order, heads, headDim, layers });
}

/** A u64 fingerprint as a bigint: a bigint in [0, 2^64) or a safe integer. */
export function toFingerprint(fp, name = 'fingerprint') {
  if (fp === undefined) return 0n;
  if (typeof fp === 'number') {
    if (!Number.isSafeInteger(fp) || fp < 0) throw new RangeError(`${name} must be a non-negative safe integer or a bigint`);
    return BigInt(fp);
  }
  if (typeof fp !== 'bigint') throw new TypeError(`${name} must be a bigint (or a safe integer number)`);
  if (fp < 0n || fp >= U64_LIMIT) throw new RangeError(`${name} must be in [0, 2^64)`);
  return fp;
}

/**
 * A byte count: a non-negative integer (Infinity allowed when `infinite`;
 * with `u64`, a bigint below 2^64 too, for a budget that must reach a C
 * uint64_t exactly).
 */
export function toByteCount(n, name, { infinite = false, u64 = false } = {}) {
  if (u64 && typeof n === 'bigint') {
    if (n < 0n || n >= U64_LIMIT) throw new RangeError(`${name} must be in [0, 2^64), got ${n}`);
    return n;
  }
  if (typeof n !== 'number') throw new TypeError(`${name} must be a number${u64 ? ' or a bigint' : ''}`);
  if (infinite && n === Infinity) return n;
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`${name} must be a non-negative integer, got ${n}`);
  return n;
}

/** Bytes from a Uint8Array, ArrayBuffer or other view. */
export function toBytes(bytes, name = 'bytes') {
  if (bytes instanceof Uint8Array) {
    if (isDetached(bytes.buffer)) throw new TypeError(`${name}: buffer is detached`);
    return bytes;
  }
  if (bytes instanceof ArrayBuffer) {
    if (isDetached(bytes)) throw new TypeError(`${name}: buffer is detached`);
    return new Uint8Array(bytes);
  }
  if (ArrayBuffer.isView(bytes)) {
    if (isDetached(bytes.buffer)) throw new TypeError(`${name}: buffer is detached`);
    return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  throw new TypeError(`${name} must be a Uint8Array or an ArrayBuffer`);
}

/** An options object (null and primitives are refused). */
export function toOptions(opts, name = 'opts') {
  if (opts === null || typeof opts !== 'object') throw new TypeError(`${name} must be an object`);
  return opts;
}
