/**
 * A periodic loop of a background worker (the operation supervisor, the webhook dispatcher, the
 * backup scheduler): runs `work` every `everyMs`, one run at a time (a run still going when the
 * next is due is not doubled, and `tick()` meanwhile waits for it), on a timer that never holds
 * the process open. `stop()` ends the loop and waits for the run in progress. Errors of a timed
 * run go to `onError`; those of a `tick()` to its caller.
 */
export class Ticker {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly work: () => Promise<void>,
    private readonly everyMs: number,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Whether the loop runs (started, not stopped). */
  get started(): boolean {
    return this.timer !== undefined;
  }

  /** Starts the loop (again after a stop); `now`: a first run at once instead of after `everyMs`. A started loop is left as it is. */
  start(opts: { now?: boolean } = {}): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.tick().catch(this.onError), this.everyMs);
    this.timer.unref();
    if (opts.now) void this.tick().catch(this.onError);
  }

  /** A run now, or the one in progress: resolves when it is over. */
  tick(): Promise<void> {
    this.running ??= this.work().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** Ends the loop; resolves once the run in progress (if any) is over. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => {});
  }
}
