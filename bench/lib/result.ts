import { isWide, summarize, type Summary } from './stats.js';

/** What a row must reach. Ratios are always hangar / ceiling (of the medians). */
export type Target =
  | { readonly kind: 'ratio-at-least'; readonly value: number }
  | { readonly kind: 'ratio-at-most'; readonly value: number }
  | { readonly kind: 'at-most'; readonly value: number }
  | { readonly kind: 'at-least'; readonly value: number }
  | { readonly kind: 'below'; readonly value: number }
  | { readonly kind: 'equals'; readonly value: number };

export function targetText(t: Target | readonly Target[] | undefined, unit: string): string {
  if (!t) return 'reported';
  if (isList(t)) return t.map((x) => targetText(x, unit)).join(' and ');
  switch (t.kind) {
    case 'ratio-at-least':
      return `ratio >= ${t.value}`;
    case 'ratio-at-most':
      return `<= ${t.value}x ceiling`;
    case 'at-most':
      return `<= ${t.value} ${unit}`;
    case 'at-least':
      return `>= ${t.value.toLocaleString('en-US')} ${unit}`;
    case 'below':
      return `< ${t.value} ${unit}`;
    case 'equals':
      return `= ${t.value}`;
  }
}

function isList(t: Target | readonly Target[]): t is readonly Target[] {
  return Array.isArray(t);
}

/** One line of the table: a figure's metric, hangar beside its ceiling, over the rounds. */
export interface Row {
  readonly figure: string;
  readonly metric: string;
  readonly unit: string;
  readonly hangar: Summary;
  readonly ceiling?: Summary & { readonly what: string };
  /** hangar / ceiling, of the medians. */
  readonly ratio?: number;
  readonly target?: Target | readonly Target[];
  readonly targetText: string;
  /** Whether the target is met; undefined when the row is only reported. */
  readonly met?: boolean;
  /** max / min of the rounds above the threshold, for hangar or its ceiling. */
  readonly wide: boolean;
  readonly note?: string;
}

export interface RowInput {
  readonly figure: string;
  readonly metric: string;
  readonly unit: string;
  /** One value per round. */
  readonly hangar: readonly number[];
  readonly ceiling?: { readonly what: string; readonly values: readonly number[] };
  /** Several targets must all be met. */
  readonly target?: Target | readonly Target[];
  readonly note?: string;
}

/** Summarises the rounds, computes the ratio and checks the target. */
export function row(input: RowInput): Row {
  const hangar = summarize(input.hangar);
  const ceiling = input.ceiling ? { what: input.ceiling.what, ...summarize(input.ceiling.values) } : undefined;
  const ratio = ceiling && ceiling.median !== 0 ? hangar.median / ceiling.median : undefined;
  const targets = input.target === undefined ? [] : isList(input.target) ? input.target : [input.target];
  const verdicts = targets.map((t) => meets(t, hangar, ratio));
  const met = verdicts.length === 0 || verdicts.some((v) => v === undefined) ? undefined : verdicts.every(Boolean);
  const t = input.target;
  return {
    figure: input.figure,
    metric: input.metric,
    unit: input.unit,
    hangar,
    ...(ceiling ? { ceiling } : {}),
    ...(ratio !== undefined ? { ratio } : {}),
    ...(t ? { target: t } : {}),
    targetText: targetText(t, input.unit),
    ...(met !== undefined ? { met } : {}),
    wide: isWide(hangar) || (ceiling ? isWide(ceiling) : false),
    ...(input.note ? { note: input.note } : {}),
  };
}

function meets(t: Target, hangar: Summary, ratio: number | undefined): boolean | undefined {
  if (!Number.isFinite(hangar.median)) return undefined;
  switch (t.kind) {
    case 'ratio-at-least':
      return ratio === undefined ? undefined : ratio >= t.value;
    case 'ratio-at-most':
      return ratio === undefined ? undefined : ratio <= t.value;
    case 'at-most':
      return hangar.median <= t.value;
    case 'at-least':
      return hangar.median >= t.value;
    case 'below':
      return hangar.median < t.value;
    case 'equals':
      return hangar.max === t.value && hangar.min === t.value;
  }
}

/** A figure that could not be measured here, with the reason, as a row of its own. */
export function unavailable(figure: string, metric: string, reason: string): Row {
  return {
    figure,
    metric,
    unit: '',
    hangar: summarize([]),
    targetText: 'not available',
    wide: false,
    note: reason,
  };
}
