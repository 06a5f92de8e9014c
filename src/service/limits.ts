import { errors } from '../domain/errors.js';

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

/**
 * Failed logins per login and per source address, per minute. Past the limit every login
 * attempt of that login or from that address is refused with 429, the right password too,
 * until the minute ends.
 */
export class LoginGuard {
  private readonly windows: Windows;
  constructor(
    private readonly limit: number,
    private readonly now: () => number,
  ) {
    this.windows = new Windows(60_000, now);
  }

  /** Throws 429 while the login or the address is over the limit. */
  check(login: string, ip: string): void {
    for (const key of [`l:${login}`, `a:${ip}`]) {
      const w = this.windows.peek(key);
      if (w && w.n >= this.limit) throw errors.tooManyLogins(Math.max(1, Math.ceil((w.resetAt - this.now()) / 1000)));
    }
  }

  failed(login: string, ip: string): void {
    this.windows.hit(`l:${login}`);
    this.windows.hit(`a:${ip}`);
  }
}

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
