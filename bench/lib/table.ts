import type { Row } from './result.js';
import type { Summary } from './stats.js';

function num(v: number, unit: string): string {
  if (!Number.isFinite(v)) return '-';
  if (unit === 'req/s' || unit === 'conn/s' || unit === 'creates/s' || unit === 'inserts/s' || unit === 'requests') {
    return Math.round(v).toLocaleString('en-US');
  }
  if (Math.abs(v) >= 100) return Math.round(v).toLocaleString('en-US');
  if (Math.abs(v) >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

function cell(s: Summary | undefined, unit: string): string {
  if (!s || !Number.isFinite(s.median)) return '-';
  const finite = s.values.filter((v) => Number.isFinite(v));
  if (finite.length < 2) return num(s.median, unit);
  return `${num(s.median, unit)} (${num(s.min, unit)}-${num(s.max, unit)})`;
}

/** Rates read as a fraction of the ceiling (0.85), durations and sizes as a multiple of it (3.2x). */
const HIGHER_IS_BETTER = new Set(['req/s', 'conn/s', 'creates/s', 'inserts/s']);

function ratioCell(r: Row): string {
  if (r.ratio === undefined || !Number.isFinite(r.ratio)) return '-';
  return HIGHER_IS_BETTER.has(r.unit) ? r.ratio.toFixed(2) : `${r.ratio >= 10 ? r.ratio.toFixed(0) : r.ratio.toFixed(1)}x`;
}

function verdict(r: Row): string {
  const base =
    r.targetText === 'not available' ? 'not available' : r.met === undefined ? (r.target ? 'n/a' : '') : r.met ? 'met' : 'MISSED';
  return r.wide ? `${base}${base ? ', ' : ''}wide spread` : base;
}

/**
 * The results as a Markdown table (readable in a terminal, pasted as is into the README):
 * hangar and its ceiling as median (min-max) over the rounds, the ratio of the medians, the
 * target and whether it is met.
 */
export function renderTable(rows: readonly Row[]): string {
  const header = ['figure', 'metric', 'hangar', 'ceiling', 'ratio', 'target', 'verdict'];
  const lines = rows.map((r) => [
    r.figure,
    `${r.metric}${r.unit ? ` (${r.unit})` : ''}`,
    r.targetText === 'not available' ? '-' : cell(r.hangar, r.unit),
    cell(r.ceiling, r.unit),
    ratioCell(r),
    r.targetText,
    verdict(r),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cols: readonly string[]) => `| ${cols.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [fmt(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...lines.map(fmt)].join('\n');
}

/** What each ceiling is and the notes of rows, under the table. */
export function renderNotes(rows: readonly Row[]): string {
  const out: string[] = [];
  const ceilings = new Map<string, string>();
  for (const r of rows) if (r.ceiling && !ceilings.has(r.figure)) ceilings.set(r.figure, r.ceiling.what);
  for (const [figure, what] of ceilings) out.push(`- ${figure}: ceiling = ${what}`);
  for (const r of rows) if (r.note) out.push(`- ${r.figure}, ${r.metric}: ${r.note}`);
  return out.join('\n');
}
