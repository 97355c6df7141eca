// Number formatting for the benchmark reports: BENCHMARKS.md (bench/report*.mjs)
// and the tables the benches print. Three significant digits, thousands
// separated, units chosen by size.
export const sig = (x, n = 3) => (Math.abs(x) >= 10 ** n ? Math.round(x).toLocaleString('en-US') : Number(x.toPrecision(n)).toString());
/** A duration in seconds, in ns, µs, ms or s. */
export function time(s) {
  if (s < 1e-6) return `${sig(s * 1e9)} ns`;
  if (s < 1e-3) return `${sig(s * 1e6)} µs`;
  if (s < 1) return `${sig(s * 1e3)} ms`;
  return `${sig(s)} s`;
}
export const us = (x) => time(x * 1e-6);
export const ms = (x) => time(x * 1e-3);
export const mbs = (bytes, s) => `${sig(bytes / s / 1e6)} MB/s`;
/** A ratio: 1,234×, 12.3×, 1.23×, 0.12×. */
export function times(r) {
  if (r >= 100) return `${Math.round(r).toLocaleString('en-US')}×`;
  if (r >= 10) return `${r.toFixed(1)}×`;
  if (r >= 0.995) return `${r.toFixed(2)}×`;
  return `${Number(r.toPrecision(2))}×`;
}
export const kb = (b) => `${sig(b / 1000)} KB`;
export const mb = (b) => `${sig(b / 1e6)} MB`;
export const mib = (b) => `${sig(b / 2 ** 20)} MiB`;
export const n0 = (n) => n.toLocaleString('en-US');
