import { errors } from '../domain/errors.js';
import { parseCidr } from '../lib/cidr.js';

/** A fixed-window counter per key. Memory is bounded: windows are dropped once they end. */
class Windows {
  private readonly counts = new Map<string, { n: number; resetAt: number }>();
  constructor(
    private readonly windowMs: number,
    private readonly now: () => number,
  ) {}

  /** Adds one to the key's window and returns the window after the addition. */
  hit(key: string): { n: number; resetAt: number } {
    const t = this.now();
    let w = this.counts.get(key);
    if (!w || w.resetAt <= t) {
      if (this.counts.size > 100_000) this.prune(t);
      w = { n: 0, resetAt: t + this.windowMs };
      this.counts.set(key, w);
    }
    w.n++;
    return w;
  }

  peek(key: string): { n: number; resetAt: number } | undefined {
    const w = this.counts.get(key);
    return w && w.resetAt > this.now() ? w : undefined;
  }

  clear(key: string): void {
    this.counts.delete(key);
  }

  private prune(t: number): void {
    for (const [k, w] of this.counts) if (w.resetAt <= t) this.counts.delete(k);
  }
}

/** The budgets of failed logins, per minute. */
export interface LoginBudget {
  /** Failures of one login from one source before that login is held back from that source. */
  readonly perLoginAndSource: number;
  /** Failures from one source, whatever the logins, before every login from it is held back. */
  readonly perSource: number;
}

/**
 * The source a failure counts against: the connection's address; for IPv6 its /64, which one
 * client usually has whole (counting single addresses would give it 2^64 budgets).
 */
export function loginSource(ip: string): string {
  const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)?.[1];
  if (v4 || !ip.includes(':')) return v4 ?? ip;
  return parseCidr(`${ip}/64`)?.text ?? ip;
}

/**
 * Failed logins, counted per minute per (login, source) and per source. Past the first budget
 * that login is refused from that source, the right password too, while the same login from
 * elsewhere and other logins from the same source are not held back: a typo, or someone trying
 * passwords, cannot lock an account out everywhere, nor a whole office behind one address. Past
 * the larger second budget every login from that source is refused until its minute ends. A
 * success clears its (login, source) count.
 */
export class LoginGuard {
  private readonly windows: Windows;
  constructor(
    private readonly budget: LoginBudget,
    private readonly now: () => number,
  ) {
    this.windows = new Windows(60_000, now);
  }

  /** Throws 429 (saying when to try again) while the login from that source, or the source, is over its budget. */
  check(login: string, ip: string): void {
    const source = loginSource(ip);
    const pair = this.windows.peek(pairKey(login, source));
    if (pair && pair.n >= this.budget.perLoginAndSource) throw this.refusal(pair.resetAt, `for this login from ${source}`);
    const all = this.windows.peek(`s:${source}`);
    if (all && all.n >= this.budget.perSource) throw this.refusal(all.resetAt, `from ${source}`);
  }

  failed(login: string, ip: string): void {
    const source = loginSource(ip);
    this.windows.hit(pairKey(login, source));
    this.windows.hit(`s:${source}`);
  }

  succeeded(login: string, ip: string): void {
    this.windows.clear(pairKey(login, loginSource(ip)));
  }

  private refusal(resetAt: number, what: string) {
    const seconds = Math.max(1, Math.ceil((resetAt - this.now()) / 1000));
    return errors.tooManyLogins(seconds, what, resetAt);
  }
}

const pairKey = (login: string, source: string) => `p:${source}\u0000${login}`;

export interface RateState {
  readonly limit: number;
  readonly remaining: number;
  /** Epoch seconds at which the window resets. */
  readonly reset: number;
  readonly exceeded: boolean;
  /** Whole seconds until the window resets, at least 1 (for Retry-After). */
  readonly retryAfterSeconds: number;
}

/** Requests per minute per account (or per source address before authentication). */
export class RateLimiter {
  private readonly windows: Windows;
  constructor(
    private readonly limit: number,
    private readonly now: () => number,
  ) {
    this.windows = new Windows(60_000, now);
  }

  take(key: string): RateState {
    const w = this.windows.hit(key);
    return {
      limit: this.limit,
      remaining: Math.max(0, this.limit - w.n),
      reset: Math.ceil(w.resetAt / 1000),
      exceeded: w.n > this.limit,
      retryAfterSeconds: Math.max(1, Math.ceil((w.resetAt - this.now()) / 1000)),
    };
  }
}
