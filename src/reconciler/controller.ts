import type { Logger } from 'pino';

/** How a pass ended: done, or run again after a delay (without counting as a failure). */
// biome-ignore lint/suspicious/noConfusingVoidType: passes that never requeue (teardown, webhook deliveries) are plain Promise<void> functions
export type PassResult = { readonly requeueAfterMs?: number } | void;

export type ReconcileFn = (id: string, signal: AbortSignal) => Promise<PassResult>;

export class PassCancelled extends Error {
  override name = 'PassCancelled';
}

interface Waiter {
  readonly resolve: () => void;
  /** Only a pass that starts after the waiter was registered settles it. */
  armed: boolean;
}

const BACKOFF_FIRST_MS = 200;
const BACKOFF_MAX_MS = 30_000;

/**
 * A keyed work queue with a fixed number of workers, in the manner of controller-runtime: at
 * most one pass per instance at a time; requests for an instance that is queued coalesce;
 * a request during its pass runs it once more afterwards; a failed pass is retried with
 * exponential backoff. Passes are level-based, so running one more than needed is harmless.
 */
export class Controller {
  private readonly ready: string[] = [];
  private readonly queued = new Set<string>();
  /**
   * The background lane (periodic resyncs): taken only when `ready` is empty, so that a sweep of
   * many instances never holds a change that was asked for behind it.
   */
  private readonly later: string[] = [];
  private readonly queuedLater = new Set<string>();
  private readonly running = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly delayed = new Map<string, NodeJS.Timeout>();
  private readonly failures = new Map<string, number>();
  private readonly waiters = new Map<string, Waiter[]>();
  private active = 0;
  private started = false;
  private abort = new AbortController();
  private idle: (() => void) | undefined;

  constructor(
    private readonly reconcile: ReconcileFn,
    private readonly opts: { readonly workers: number; readonly log: Logger },
  ) {}

  get isRunning(): boolean {
    return this.started;
  }

  /** Instances waiting for a pass. */
  get depth(): number {
    return this.queued.size + this.queuedLater.size + this.delayed.size;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.abort = new AbortController();
    this.pump();
  }

  /** Stops taking work, cancels passes at their next step, and waits for them to end. */
  async stop(timeoutMs: number): Promise<void> {
    if (!this.started) return;
    this.started = false;
    this.abort.abort();
    for (const t of this.delayed.values()) clearTimeout(t);
    this.delayed.clear();
    this.ready.length = 0;
    this.queued.clear();
    this.later.length = 0;
    this.queuedLater.clear();
    for (const list of this.waiters.values()) for (const w of list) w.resolve();
    this.waiters.clear();
    this.failures.clear();
    if (this.active > 0) {
      // The timer is cleared once the passes have ended: left pending, it would keep the
      // process alive for the rest of `timeoutMs` after a stop.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([new Promise<void>((r) => (this.idle = r)), new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]);
      clearTimeout(timer);
      this.idle = undefined;
    }
  }

  enqueue(id: string, delayMs = 0): void {
    if (!this.started) return;
    if (delayMs > 0) {
      if (this.delayed.has(id) || this.queued.has(id)) return;
      this.delayed.set(
        id,
        setTimeout(() => {
          this.delayed.delete(id);
          this.enqueue(id);
        }, delayMs).unref(),
      );
      return;
    }
    const timer = this.delayed.get(id);
    if (timer) {
      clearTimeout(timer);
      this.delayed.delete(id);
    }
    if (this.running.has(id)) {
      this.dirty.add(id);
      return;
    }
    if (this.queued.has(id)) return;
    // queued in the background lane: moved ahead (its entry there is skipped)
    this.queuedLater.delete(id);
    this.queued.add(id);
    this.ready.push(id);
    this.pump();
  }

  /**
   * Queues a pass unless one of the instance is running or queued already. For what the store
   * shows pending (a change another replica recorded): a running pass read it, or its write at
   * an older spec version fails and queues the next pass, or the next look at the store finds
   * it. (`enqueue` would run one more pass after the running one, for nothing.)
   */
  enqueueUnlessRunning(id: string): void {
    if (this.running.has(id)) return;
    this.enqueue(id);
  }

  /**
   * Queues a pass in the background lane: after every pass asked with `enqueue`. Nothing is
   * added for an instance whose pass is queued, delayed or running already.
   */
  enqueueBackground(id: string): void {
    if (!this.started) return;
    if (this.running.has(id) || this.queued.has(id) || this.queuedLater.has(id) || this.delayed.has(id)) return;
    this.queuedLater.add(id);
    this.later.push(id);
    this.pump();
  }

  /** The next instance to pass: the ready lane first, then the background lane. */
  private next(): string | undefined {
    const id = this.ready.shift();
    if (id !== undefined) {
      this.queued.delete(id);
      return id;
    }
    while (this.later.length > 0) {
      const bg = this.later.shift()!;
      // skipped: moved to the ready lane since
      if (!this.queuedLater.delete(bg)) continue;
      return bg;
    }
    return undefined;
  }

  /** Resolves after the next pass of `id` that starts from now on ends, or after `timeoutMs`. */
  settle(id: string, timeoutMs: number): Promise<void> {
    if (!this.started) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, timeoutMs);
      const waiter: Waiter = { resolve: done, armed: false };
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      const list = this.waiters.get(id) ?? [];
      list.push(waiter);
      this.waiters.set(id, list);
    });
  }

  private pump(): void {
    while (this.started && this.active < this.opts.workers) {
      const id = this.next();
      if (id === undefined) return;
      this.running.add(id);
      this.active++;
      for (const w of this.waiters.get(id) ?? []) w.armed = true;
      void this.run(id);
    }
  }

  private async run(id: string): Promise<void> {
    let again: number | undefined;
    try {
      const result = await this.reconcile(id, this.abort.signal);
      this.failures.delete(id);
      again = result?.requeueAfterMs;
    } catch (err) {
      if (err instanceof PassCancelled || this.abort.signal.aborted) {
        again = undefined;
      } else {
        const n = (this.failures.get(id) ?? 0) + 1;
        this.failures.set(id, n);
        again = Math.min(BACKOFF_FIRST_MS * 2 ** (n - 1), BACKOFF_MAX_MS);
        this.opts.log.warn({ instance: id, err, attempt: n, retryInMs: again }, 'reconcile pass failed');
      }
    } finally {
      this.running.delete(id);
      this.active--;
      const list = this.waiters.get(id);
      if (list) {
        const keep = list.filter((w) => !w.armed);
        for (const w of list) if (w.armed) w.resolve();
        if (keep.length > 0) this.waiters.set(id, keep);
        else this.waiters.delete(id);
      }
    }
    if (this.dirty.delete(id)) this.enqueue(id);
    else if (again !== undefined) this.enqueue(id, again);
    if (this.active === 0 && this.idle) {
      this.idle();
      this.idle = undefined;
    }
    this.pump();
  }
}
