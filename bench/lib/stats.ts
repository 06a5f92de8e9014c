/** Order statistics over samples. Percentiles use the nearest-rank method (a value that was observed). */

export function sorted(values: readonly number[]): number[] {
  return [...values].sort((a, b) => a - b);
}

/** The p-th percentile (0 < p <= 100) by nearest rank; NaN when there is no sample. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const s = sorted(values);
  const rank = Math.max(1, Math.ceil((p / 100) * s.length));
  return s[Math.min(rank, s.length) - 1]!;
}

/** The median; the mean of the two middle values for an even count. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const s = sorted(values);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** A figure over its rounds: the median, and min and max to show the spread. */
export interface Summary {
  readonly median: number;
  readonly min: number;
  readonly max: number;
  /** One value per round, in the order measured. */
  readonly values: readonly number[];
}

export function summarize(values: readonly number[]): Summary {
  const finite = values.filter((v) => Number.isFinite(v));
  if (finite.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN, values };
  return { median: median(finite), min: Math.min(...finite), max: Math.max(...finite), values };
}

/** Rounds that disagree this much (max / min) are flagged: the machine was busy or the figure is unstable. */
export const WIDE_SPREAD = 1.5;

export function isWide(s: Summary): boolean {
  if (!(s.min > 0) || !Number.isFinite(s.max)) return false;
  return s.max / s.min > WIDE_SPREAD;
}
