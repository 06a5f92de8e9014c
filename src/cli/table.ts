/** Columns aligned with two spaces between them; the last column is not padded. */
export function table(headers: readonly string[], rows: readonly (readonly (string | number | null | undefined)[])[]): string {
  const cells = [headers, ...rows.map((r) => r.map((c) => (c === null || c === undefined || c === '' ? '-' : String(c))))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** `key:  value` lines, keys aligned; empty values are left out. */
export function fields(pairs: readonly (readonly [string, string | number | boolean | null | undefined])[]): string {
  const shown = pairs.filter(([, v]) => v !== undefined && v !== null && v !== '');
  const width = Math.max(...shown.map(([k]) => k.length)) + 1;
  return shown.map(([k, v]) => `${`${k}:`.padEnd(width)}  ${String(v)}`).join('\n');
}

/** `3.2s`, `1m05s`. */
export function duration(ms: number): string {
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)}s`;
  const m = Math.floor(s / 60);
  return `${m}m${String(Math.floor(s % 60)).padStart(2, '0')}s`;
}
