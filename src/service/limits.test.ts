import { describe, expect, it } from 'vitest';
import { HangarError } from '../domain/errors.js';
import { LoginGuard, RateLimiter } from './limits.js';

/** A clock the test moves (the limits work on one-minute windows). */
function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

const refusal = (fn: () => void): HangarError | undefined => {
  try {
    fn();
    return undefined;
  } catch (err) {
    return err as HangarError;
  }
};

describe('LoginGuard', () => {
  it('refuses a login, or an address, that failed `limit` times in the minute, until the minute ends', () => {
    const c = clock();
    const guard = new LoginGuard(3, c.now);
    for (let i = 0; i < 3; i++) {
      expect(refusal(() => guard.check('alice', `10.0.0.${i}`))).toBeUndefined();
      guard.failed('alice', `10.0.0.${i}`);
    }
    c.advance(20_000);
    const e = refusal(() => guard.check('alice', '10.9.9.9'));
    expect(e).toMatchObject({ status: 429, code: 'TOO_MANY_LOGIN_FAILURES', extra: { retryAfterSeconds: 40 } });
    expect(e?.message).toBe('too many failed logins; try again in 40 s');
    expect(refusal(() => guard.check('bob', '10.9.9.9'))).toBeUndefined();
    c.advance(40_000);
    expect(refusal(() => guard.check('alice', '10.9.9.9'))).toBeUndefined();
  });

  it('counts failures per address across logins', () => {
    const c = clock();
    const guard = new LoginGuard(2, c.now);
    guard.failed('a', '10.0.0.1');
    guard.failed('b', '10.0.0.1');
    expect(refusal(() => guard.check('c', '10.0.0.1'))?.code).toBe('TOO_MANY_LOGIN_FAILURES');
    expect(refusal(() => guard.check('c', '10.0.0.2'))).toBeUndefined();
  });
});

describe('RateLimiter', () => {
  it('counts requests per key in a one-minute window, then starts again', () => {
    const c = clock(60_000 * 1000 + 500);
    const limiter = new RateLimiter(2, c.now);
    expect(limiter.take('k')).toEqual({ limit: 2, remaining: 1, reset: 60_061, exceeded: false, retryAfterSeconds: 60 });
    expect(limiter.take('k')).toMatchObject({ remaining: 0, exceeded: false });
    c.advance(59_000);
    expect(limiter.take('k')).toMatchObject({ remaining: 0, exceeded: true, retryAfterSeconds: 1 });
    expect(limiter.take('other')).toMatchObject({ remaining: 1, exceeded: false });
    c.advance(1_000);
    expect(limiter.take('k')).toMatchObject({ remaining: 1, exceeded: false });
  });
});
