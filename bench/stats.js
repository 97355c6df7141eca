// The statistics every bench reports (plain ESM: Node and the bench pages).
/** The median of an array of numbers. */
export function median(a) {
  const s = [...a].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
/** The median of per-repetition ratios num[i] / den[i]: two things timed back to back. */
export const pairRatio = (num, den) => median(num.map((n, i) => n / den[i]));
