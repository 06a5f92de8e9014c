import type { HangarProcess } from './hangar-process.js';

/** One change seen while observing: an instance's state and reason, or /readyz. */
export interface Sighting {
  /** Milliseconds since the observation started. */
  readonly at: number;
  readonly state?: string;
  readonly reason?: string;
  readonly ready?: number;
  readonly problems?: readonly string[];
}

/**
 * Watches an instance's record and /readyz every 20 ms, keeping every change, until stopped:
 * short-lived states (DEGRADED while hangar heals an engine) are seen as a client polling
 * closely would see them.
 */
export class Observer {
  readonly states: Sighting[] = [];
  readonly readiness: Sighting[] = [];
  private running = true;
  private readonly started = Date.now();
  private readonly done: Promise<void>;

  constructor(
    private readonly h: HangarProcess,
    private readonly name: string,
  ) {
    this.done = this.loop();
  }

  private async loop(): Promise<void> {
    while (this.running) {
      try {
        const [rec, ready] = await Promise.all([this.h.get(`/v2/instances/${this.name}/`), this.h.readyz()]);
        const at = Date.now() - this.started;
        const state = rec.status === 200 ? rec.body.data.state : 'GONE';
        const reason = rec.status === 200 ? rec.body.data.state_reason : undefined;
        const last = this.states.at(-1);
        if (!last || last.state !== state || last.reason !== reason) this.states.push({ at, state, reason });
        const lastReady = this.readiness.at(-1);
        if (!lastReady || lastReady.ready !== ready.status || JSON.stringify(lastReady.problems) !== JSON.stringify(ready.problems)) {
          this.readiness.push({ at, ready: ready.status, problems: ready.problems });
        }
      } catch {
        /* hangar paused or restarting: try again */
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** The first sighting of `state` whose reason matches, or undefined. */
  firstState(state: string, reason?: RegExp): Sighting | undefined {
    return this.states.find((s) => s.state === state && (!reason || reason.test(s.reason ?? '')));
  }

  /** The first /readyz answer that named a problem matching `problem` (degraded instances keep /readyz at 200). */
  firstProblem(problem: RegExp): Sighting | undefined {
    return this.readiness.find((s) => (s.problems ?? []).some((p) => problem.test(p)));
  }

  /** Resolves once `predicate` holds for some sighting (or rejects after `ms`, with what was seen). */
  async until(what: string, predicate: () => boolean, ms = 15_000): Promise<void> {
    const end = Date.now() + ms;
    while (!predicate()) {
      if (Date.now() > end)
        throw new Error(`not seen within ${ms} ms: ${what}\n${this.describe()}\nhangar log:\n${this.h.log.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** What was seen, for failure messages. */
  describe(): string {
    return `states: ${JSON.stringify(this.states)}\nreadiness: ${JSON.stringify(this.readiness)}`;
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }
}
