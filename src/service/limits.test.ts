import { describe, expect, it } from 'vitest';
import type { HangarError } from '../domain/errors.js';
import { LoginGuard, RateLimiter, loginSource } from './limits.js';

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
  it('refuses a login from a source that failed `perLoginAndSource` times in the minute, until the minute ends; not from elsewhere', () => {
    const c = clock();
    const guard = new LoginGuard({ perLoginAndSource: 3, perSource: 10 }, c.now);
    for (let i = 0; i < 3; i++) {
      expect(refusal(() => guard.check('alice', '10.0.0.1'))).toBeUndefined();
      guard.failed('alice', '10.0.0.1');
    }
    c.advance(20_000);
    const e = refusal(() => guard.check('alice', '10.0.0.1'));
    expect(e).toMatchObject({ status: 429, code: 'TOO_MANY_LOGIN_FAILURES', extra: { retryAfterSeconds: 40 } });
    expect(e?.message).toBe('too many failed logins for this login from 10.0.0.1; try again in 40 s (at 00:17:40 UTC)');
    // the same login from another address, another login from this one
    expect(refusal(() => guard.check('alice', '10.9.9.9'))).toBeUndefined();
    expect(refusal(() => guard.check('bob', '10.0.0.1'))).toBeUndefined();
    c.advance(40_000);
    expect(refusal(() => guard.check('alice', '10.0.0.1'))).toBeUndefined();
  });

  it('failures spread over many addresses never hold a login back', () => {
    const guard = new LoginGuard({ perLoginAndSource: 2, perSource: 10 }, clock().now);
    for (let i = 0; i < 50; i++) guard.failed('alice', `10.0.${i}.1`);
    expect(refusal(() => guard.check('alice', '10.0.200.1'))).toBeUndefined();
  });

  it('counts failures per source across logins against the larger `perSource` budget', () => {
    const c = clock();
    const guard = new LoginGuard({ perLoginAndSource: 2, perSource: 4 }, c.now);
    for (const who of ['a', 'b', 'c', 'd']) guard.failed(who, '10.0.0.1');
    const e = refusal(() => guard.check('e', '10.0.0.1'));
    expect(e?.code).toBe('TOO_MANY_LOGIN_FAILURES');
    expect(e?.message).toMatch(/^too many failed logins from 10\.0\.0\.1; try again in 60 s/);
    expect(refusal(() => guard.check('e', '10.0.0.2'))).toBeUndefined();
  });

  it('a success clears the count of that login from that source', () => {
    const guard = new LoginGuard({ perLoginAndSource: 2, perSource: 10 }, clock().now);
    guard.failed('alice', '10.0.0.1');
    guard.succeeded('alice', '10.0.0.1');
    guard.failed('alice', '10.0.0.1');
    expect(refusal(() => guard.check('alice', '10.0.0.1'))).toBeUndefined();
  });

  it('an IPv6 source is its /64; an IPv4-mapped address is the IPv4 one', () => {
    expect(loginSource('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(loginSource('::ffff:10.0.0.1')).toBe('10.0.0.1');
    expect(loginSource('10.0.0.1')).toBe('10.0.0.1');
    const guard = new LoginGuard({ perLoginAndSource: 2, perSource: 10 }, clock().now);
    guard.failed('alice', '2001:db8:1:2::1');
    guard.failed('alice', '2001:db8:1:2::2');
    expect(refusal(() => guard.check('alice', '2001:db8:1:2::3'))?.code).toBe('TOO_MANY_LOGIN_FAILURES');
    expect(refusal(() => guard.check('alice', '2001:db8:1:3::1'))).toBeUndefined();
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
