/** Compares `X.Y.Z` versions (a missing part counts as 0): negative, zero or positive. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < 3; i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** `X.Y` of an `X.Y.Z` version. */
export const minorVersion = (v: string): string => v.split('.').slice(0, 2).join('.');
