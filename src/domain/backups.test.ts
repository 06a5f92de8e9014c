import { describe, expect, it } from 'vitest';
import { formatPolicy, nextRunAfter, parsePolicy, prunable } from './backups.js';

const at = (iso: string) => Date.parse(iso);
const DAY = 86_400_000;

describe('nextRunAfter', () => {
  it('every N hours counts from the last run; daily is the next HH:MM in UTC; off never', () => {
    expect(nextRunAfter({ kind: 'every', hours: 6 }, at('2026-11-26T10:00:00Z'))).toBe(at('2026-11-26T16:00:00Z'));
    expect(nextRunAfter({ kind: 'daily', minuteOfDay: 180 }, at('2026-11-26T02:59:59Z'))).toBe(at('2026-11-26T03:00:00Z'));
    expect(nextRunAfter({ kind: 'daily', minuteOfDay: 180 }, at('2026-11-26T03:00:00Z'))).toBe(at('2026-11-27T03:00:00Z'));
    expect(nextRunAfter({ kind: 'daily', minuteOfDay: 0 }, at('2026-12-31T23:00:00Z'))).toBe(at('2027-01-01T00:00:00Z'));
    expect(nextRunAfter({ kind: 'off' }, 0)).toBeNull();
  });
});

describe('prunable', () => {
  const now = at('2026-11-26T12:00:00Z');
  const b = (id: string, state: string, daysAgo: number) => ({
    id,
    state: state as 'COMPLETED',
    finishedAt: now - daysAgo * DAY,
    requestedAt: now - daysAgo * DAY,
  });
  const list = [b('new', 'COMPLETED', 0.1), b('failed', 'FAILED', 0.5), b('mid', 'COMPLETED', 2), b('old', 'COMPLETED', 10)];

  it('keeps everything without retention', () => {
    expect(prunable(list, { keepLast: null, keepDays: null }, now)).toEqual([]);
  });
  it('keeps the last K completed ones (a failed one counts towards none)', () => {
    expect(prunable(list, { keepLast: 2, keepDays: null }, now)).toEqual(['failed', 'old']);
  });
  it('keeps those of the last D days', () => {
    expect(prunable(list, { keepLast: null, keepDays: 1 }, now)).toEqual(['mid', 'old']);
  });
  it('with both, keeps what either keeps', () => {
    expect(prunable(list, { keepLast: 1, keepDays: 3 }, now)).toEqual(['old']);
  });
  it('never removes a backup in the making', () => {
    expect(prunable([b('running', 'RUNNING', 30)], { keepLast: 1, keepDays: 1 }, now)).toEqual([]);
  });
});

describe('parsePolicy', () => {
  it('reads what formatPolicy writes', () => {
    for (const text of ['off', 'every=6h', 'daily=03:00,keep=7', 'every=1h,keep=24,days=7', 'off,days=30'])
      expect(formatPolicy(parsePolicy(text))).toBe(text);
  });
  it('names what is wrong', () => {
    expect(() => parsePolicy('every=0h')).toThrow(/every=Nh must be a positive integer/);
    expect(() => parsePolicy('daily=3am')).toThrow(/daily= takes a time HH:MM/);
    expect(() => parsePolicy('hourly')).toThrow(/"hourly" is not part of a backup policy/);
  });
});
