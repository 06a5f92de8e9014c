import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Io } from '../../src/cli/io.js';
import { Progress } from '../../src/cli/progress.js';

/** An Io that records what reaches stderr, as a terminal or not. */
function recorder(tty: boolean) {
  const writes: string[] = [];
  const io: Io = { out: () => {}, err: (t) => writes.push(`${t}\n`), errRaw: (t) => writes.push(t), errIsTty: tty };
  return { io, text: () => writes.join('') };
}

describe('the live line of long work', () => {
  afterEach(() => vi.useRealTimers());

  it('on a terminal: one line rewritten in place with the state and the elapsed time, then the last word', () => {
    vi.useFakeTimers();
    const { io, text } = recorder(true);
    const p = new Progress(io, 'cache');
    p.update('REQUESTED');
    vi.advanceTimersByTime(1200);
    p.update('BUILDING');
    vi.advanceTimersByTime(2000);
    p.finish('ACTIVE');
    const out = text();
    expect(out).toMatch(/^\r\x1b\[2K\S cache: REQUESTED \(0\.0s\)/);
    expect(out).toContain('cache: REQUESTED (1.1s)');
    expect(out).toMatch(/\r\x1b\[2K\S cache: BUILDING \(3\.\ds\)/);
    // Nothing but the last line is left: no newline until the end.
    expect(out.indexOf('\n')).toBe(out.length - 1);
    expect(out.endsWith('\r\x1b[2Kcache: ACTIVE after 3.2s\n')).toBe(true);
  });

  it('elsewhere (CI, a pipe): one line per change of state', () => {
    vi.useFakeTimers();
    const { io, text } = recorder(false);
    const p = new Progress(io, 'cache');
    p.update('REQUESTED');
    p.update('REQUESTED');
    vi.advanceTimersByTime(500);
    p.update('BUILDING');
    vi.advanceTimersByTime(700);
    p.update('BUILDING');
    p.finish('ACTIVE');
    expect(text()).toBe('cache: REQUESTED (0.0s)\ncache: BUILDING (0.5s)\ncache: ACTIVE after 1.2s\n');
  });

  it('stopped by a failure: the last state stays on screen and the timer ends', () => {
    vi.useFakeTimers();
    const { io, text } = recorder(true);
    const p = new Progress(io, 'cache');
    p.update('BUILDING');
    p.stop();
    const before = text();
    vi.advanceTimersByTime(1000);
    expect(text()).toBe(before);
    expect(before.endsWith('cache: BUILDING (0.0s)\n')).toBe(true);
  });
});
