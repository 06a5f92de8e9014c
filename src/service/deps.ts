import type { Config } from '../config.js';
import type { Keyring } from '../lib/secrets.js';
import type { Runtime } from '../runtimes/runtime.js';
import type { Db } from '../store/database.js';
import { dieAtStep } from '../lib/fault-injection.js';

/** Hands desired-state changes to the reconciler. */
export interface WorkQueue {
  /** Schedules a reconcile pass of the instance. */
  enqueue(instanceId: string): void;
  /**
   * Waits (at most `timeoutMs`) until a pass of the instance that started after this call has
   * ended; resolves at once when this replica does not run the reconciler.
   */
  settle(instanceId: string, timeoutMs: number): Promise<void>;
}

/** Everything the use cases need, built once by the composition root. */
export interface ServiceDeps {
  readonly db: Db;
  readonly keyring: Keyring;
  readonly runtime: Runtime;
  readonly config: Config;
  readonly work: WorkQueue;
  readonly now: () => number;
  /**
   * A step boundary of a request, between durable effects and before the answer: test-only
   * fault injection (HANGAR_TEST_DIE_AT names the step at which the process kills itself).
   * Built from the reconciler's step context; when left out, from `config.dieAt`.
   */
  readonly step?: (name: string) => void;
}

/** Who is asking: the authenticated account. */
export interface Caller {
  readonly accountId: string;
  readonly login: string;
}

/** The request step function of `deps`: its own, or one that obeys HANGAR_TEST_DIE_AT. */
export function requestStep(deps: ServiceDeps): (name: string) => void {
  return deps.step ?? dieAtStep(deps.config.dieAt);
}
