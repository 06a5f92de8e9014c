import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { dieAtStep } from '../lib/fault-injection.js';
import { pidIsAlive } from '../lib/data-dir-lock.js';
import { sleep } from '../lib/time.js';
import type { StepContext } from '../domain/units.js';
import {
  claimInstance,
  findInstanceProgress,
  listAllInstanceIds,
  listPendingInstanceIds,
  releaseInstance,
  takeInstanceClaim,
} from '../store/instance-repository.js';
import { acquireLease, findLease, releaseLease, takeLease } from '../store/lease-repository.js';
import { Controller, PassCancelled, type PassResult } from './controller.js';
import { ConvergedSpecs } from './converged.js';
import { reconcileInstance, type ReconcileDeps } from './reconcile-instance.js';

/** How often the owner looks in the store for requests other replicas recorded. */
const POLL_MS = 250;
/** A periodic sweep queues a slice of the instances this often, over SPREAD_SHARE of its period. */
const SLICE_MS = 250;
const SPREAD_SHARE = 0.8;
/** How often a replica that does not run the passes looks whether a change was carried out. */
const SETTLE_POLL_MS = 50;
/** Administrative connections of the engines unused this long are closed. */
const ADMIN_IDLE_MS = 60_000;

/**
 * Drives every instance toward its desired state. One replica per host owns the runtime (a
 * lease in the store): it supervises the engines and runs the passes; the others only record
 * requests, which the owner finds by polling the store. On PostgreSQL each pass also claims its
 * instance with a short lease, so that no two replicas ever work on one instance at once.
 *
 * A lease whose holder is known to be dead is taken over at once rather than waited out: on
 * SQLite, the data-dir lock that `hangar serve` holds proves that no other hangar uses the
 * store; on PostgreSQL, a replica of this host named by its default id (`host:pid`) is dead
 * when its process is.
 */
export class Reconciler {
  private readonly controller: Controller;
  private readonly leaseName: string;
  private owner = false;
  private stopped = true;
  private lastRenewal = 0;
  private leaseTimer: NodeJS.Timeout | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  /** The next slice of a periodic sweep spread over its period. */
  private sliceTimer: NodeJS.Timeout | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private polling = false;
  private transition: Promise<void> = Promise.resolve();

  private readonly deps: ReconcileDeps & { readonly converged: ConvergedSpecs };

  constructor(deps: ReconcileDeps) {
    this.deps = { ...deps, converged: deps.converged ?? new ConvergedSpecs() };
    this.controller = new Controller((id, signal) => this.pass(id, signal), { workers: deps.config.workers, log: deps.log });
    const kinds = [...new Set(deps.zones.targets().map((t) => t.runtime.kind))].sort().join('+');
    this.leaseName = `runtime:${kinds}:${deps.config.hostId}`;
  }

  private get log(): Logger {
    return this.deps.log;
  }

  private get ttlMs(): number {
    return this.deps.config.leaseSeconds * 1000;
  }

  /** Whether this replica owns the runtime and runs passes. */
  get isOwner(): boolean {
    return this.owner;
  }

  get queueDepth(): number {
    return this.controller.depth;
  }

  /** Starts competing for the runtime lease; resolves after the first attempt. */
  async start(): Promise<void> {
    this.stopped = false;
    await this.tick();
    // A third of the lease at most, so that a renewal can fail twice before it runs out; a
    // second at most, so that a dead owner's lease is taken over soon after it dies.
    const every = Math.min(1000, Math.max(500, Math.floor(this.ttlMs / 3)));
    this.leaseTimer = setInterval(() => void this.tick(), every);
    this.leaseTimer.unref();
  }

  /** Stops passes between steps, hands the lease back; engines keep running. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.leaseTimer);
    await this.transition;
    if (this.owner) {
      await this.demote();
      await releaseLease(this.deps.db, this.leaseName, this.deps.config.replicaId).catch(() => {});
    }
  }

  enqueue(id: string): void {
    if (this.owner) this.controller.enqueue(id);
  }

  /**
   * On the owner, waits for the next pass of the instance. On another replica, waits until the
   * store shows the change recorded before this call carried out (or the instance gone or
   * FAILED), so that a request answers alike whichever replica took it.
   */
  async settle(id: string, timeoutMs: number): Promise<void> {
    if (this.owner) return this.controller.settle(id, timeoutMs);
    const { db, now } = this.deps;
    const until = now() + timeoutMs;
    try {
      const target = (await findInstanceProgress(db, id))?.specVersion;
      if (target === undefined) return;
      while (now() < until && !this.stopped) {
        await sleep(SETTLE_POLL_MS);
        if (this.owner) return await this.controller.settle(id, until - now());
        const progress = await findInstanceProgress(db, id);
        if (!progress || progress.observedVersion >= target || progress.state === 'FAILED') return;
      }
    } catch (err) {
      // The change is durable already; only the wait for it is cut short.
      this.log.debug({ err, instance: id }, 'waiting for a change failed');
    }
  }

  /**
   * Whether the replica named `owner` is known to be dead, so that its leases need not be
   * waited out. Never true of this replica.
   */
  ownerIsDead(owner: string): boolean {
    if (owner === this.deps.config.replicaId) return false;
    // SQLite: `hangar serve` holds the data-dir lock, which it only takes from a dead process.
    if (this.deps.config.databaseUrl === undefined) return true;
    // PostgreSQL: another replica of this host under its default id, whose process is gone.
    // (Replicas in separate pid namespaces under one host name must set HANGAR_REPLICA_ID.)
    const m = /^(.*):(\d+)$/.exec(owner);
    return m !== null && m[1] === hostname() && Number(m[2]) !== process.pid && !pidIsAlive(Number(m[2]));
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    const { db, config, now } = this.deps;
    let held: boolean;
    try {
      held = await acquireLease(db, this.leaseName, config.replicaId, now(), this.ttlMs);
      if (!held) held = await this.takeOverFromDead();
      if (held) this.lastRenewal = now();
    } catch (err) {
      // The store is unreachable. Go on only while well inside the lease: another replica may
      // take it once it expires, and by then this one must have stopped its passes.
      held = this.owner && now() - this.lastRenewal < this.ttlMs / 2;
      this.log.warn({ err }, 'runtime lease renewal failed');
    }
    if (held && !this.owner && !this.stopped) this.transition = this.transition.then(() => this.promote());
    if (!held && this.owner) this.transition = this.transition.then(() => this.demote());
    // A failed promotion (the runtime did not start) is tried again at the next tick.
    this.transition = this.transition.catch((err: unknown) => this.log.error({ err }, 'runtime ownership change failed'));
    await this.transition;
  }

  /** Takes the runtime lease over when its holder is dead; true when this replica holds it then. */
  private async takeOverFromDead(): Promise<boolean> {
    const { db, config, now } = this.deps;
    const lease = await findLease(db, this.leaseName);
    if (!lease || lease.expires_at < now() || !this.ownerIsDead(lease.owner)) return false;
    const took = await takeLease(db, this.leaseName, lease.owner, config.replicaId, now(), this.ttlMs);
    if (took) this.log.warn({ lease: this.leaseName, from: lease.owner }, 'took the runtime lease over from a replica that no longer runs');
    return took;
  }

  private async promote(): Promise<void> {
    if (this.owner || this.stopped) return;
    this.log.info({ lease: this.leaseName, replica: this.deps.config.replicaId }, 'this replica owns the runtime');
    const instanceChanged = (id: string) => {
      // what the runtime reports (a unit died, the edge restarted) is converged whole
      this.deps.converged.forget(id);
      this.controller.enqueue(id);
    };
    for (const t of this.deps.zones.targets()) await t.runtime.start({ instanceChanged });
    this.owner = true;
    this.controller.start();
    // What the store knows is queued before this returns (and hangar serves); what only a runtime
    // knows (objects of instances the store lost) follows when the runtime answers: a slow or
    // unreachable cluster API must not hold the start.
    await this.sweep({ runtimes: false });
    void this.sweep();
    this.pollTimer = setInterval(() => void this.poll(), POLL_MS);
    this.pollTimer.unref();
    // Spread over most of the period: the instances are queued a slice at a time, not all at
    // once, so that a sweep of many instances does not hold requests behind it.
    const periodMs = this.deps.config.resyncSeconds * 1000;
    this.sweepTimer = setInterval(() => void this.sweep({ spreadMs: Math.floor(periodMs * SPREAD_SHARE) }), periodMs);
    this.sweepTimer.unref();
    this.idleTimer = setInterval(() => {
      for (const t of this.deps.zones.targets()) t.engines.closeIdle(ADMIN_IDLE_MS);
    }, ADMIN_IDLE_MS);
    this.idleTimer.unref();
  }

  private async demote(): Promise<void> {
    if (!this.owner) return;
    this.owner = false;
    clearInterval(this.pollTimer);
    clearInterval(this.sweepTimer);
    clearTimeout(this.sliceTimer);
    clearInterval(this.idleTimer);
    await this.controller.stop(8000);
    this.deps.converged.clear();
    for (const t of this.deps.zones.targets()) {
      await t.runtime.close();
      await t.engines.close();
    }
    this.log.info({ lease: this.leaseName }, 'this replica no longer owns the runtime');
  }

  /**
   * Queues every instance the store or the runtime knows of, so that a restart heals all: at
   * once, or (`spreadMs`) a slice every SLICE_MS over that time.
   */
  async sweep(opts: { runtimes?: boolean; spreadMs?: number } = {}): Promise<void> {
    try {
      const ids = new Set(await listAllInstanceIds(this.deps.db));
      if (opts.runtimes !== false) {
        for (const t of this.deps.zones.targets()) for (const id of await t.runtime.listInstanceIds()) ids.add(id);
      }
      const all = [...ids];
      const slices = Math.max(1, Math.min(all.length, Math.floor((opts.spreadMs ?? 0) / SLICE_MS)));
      const perSlice = Math.ceil(all.length / slices);
      clearTimeout(this.sliceTimer);
      const queueSlice = (from: number) => {
        // periodic sweeps go to the background lane: requested changes pass first
        for (const id of all.slice(from, from + perSlice)) {
          if (opts.spreadMs === undefined) this.controller.enqueue(id);
          else this.controller.enqueueBackground(id);
        }
        if (from + perSlice < all.length) {
          // a replica that lost the runtime since queues nothing more
          this.sliceTimer = setTimeout(() => this.owner && queueSlice(from + perSlice), SLICE_MS);
          this.sliceTimer.unref();
        }
      };
      queueSlice(0);
    } catch (err) {
      this.log.warn({ err }, 'sweep failed');
    }
  }

  private async poll(): Promise<void> {
    if (this.polling || !this.owner) return;
    this.polling = true;
    try {
      for (const id of await listPendingInstanceIds(this.deps.db)) this.controller.enqueueUnlessRunning(id);
    } catch (err) {
      this.log.debug({ err }, 'poll failed');
    } finally {
      this.polling = false;
    }
  }

  /** Claims the instance for one pass: free, expired, ours, or held by a dead replica. */
  private async claim(id: string): Promise<boolean> {
    const { db, config, now } = this.deps;
    if (await claimInstance(db, id, config.replicaId, now(), this.ttlMs)) return true;
    const holder = (await findInstanceProgress(db, id))?.leaseOwner;
    if (!holder || !this.ownerIsDead(holder)) return false;
    return takeInstanceClaim(db, id, holder, config.replicaId, now(), this.ttlMs);
  }

  private async pass(id: string, signal: AbortSignal): Promise<PassResult> {
    const { db, config, now } = this.deps;
    // SQLite: the data-dir lock makes this the only hangar on the store, and the controller runs
    // one pass of an instance at a time: there is nobody to claim the instance from (any other
    // holder would be dead, its claim taken over), so no claim is written and released per pass.
    if (config.databaseUrl === undefined) return this.observed(id, (deps) => reconcileInstance(deps, id, signal));
    const ttl = this.ttlMs;
    if (!(await this.claim(id))) {
      // No row to claim: an orphan of the runtime, or a deleted instance, which the pass removes.
      if (!(await findInstanceProgress(db, id))) return this.observed(id, (deps) => reconcileInstance(deps, id, signal));
      return { requeueAfterMs: ttl / 2 };
    }
    // Losing the claim (another replica took it) stops this pass at its next step.
    const lost = new AbortController();
    const renew = setInterval(() => {
      claimInstance(db, id, config.replicaId, now(), ttl).then(
        (held) => held || lost.abort(),
        () => {},
      );
    }, ttl / 3);
    try {
      return await this.observed(id, (deps) => reconcileInstance(deps, id, AbortSignal.any([signal, lost.signal])));
    } finally {
      clearInterval(renew);
      await releaseInstance(db, id, config.replicaId).catch(() => {});
    }
  }

  /** Runs a pass under the eyes of the instance's open operations (its steps, then its outcome). */
  private async observed(id: string, run: (deps: ReconcileDeps) => Promise<PassResult>): Promise<PassResult> {
    const observer = await this.deps.observer?.observe(id).catch((err: unknown) => {
      this.log.warn({ err, instance: id }, 'operations of the instance not read');
      return undefined;
    });
    if (!observer) return run(this.deps);
    const steps = this.deps.steps;
    try {
      return await run({ ...this.deps, steps: (signal) => observer.wrap(steps(signal)) });
    } finally {
      await observer.end();
    }
  }
}

/** Step boundaries of a pass: cancellation on shutdown, and the test-only `dieAt` fault. */
export function stepContext(signal: AbortSignal, dieAt: string | undefined): StepContext {
  const die = dieAtStep(dieAt);
  return {
    signal,
    step(name: string): void {
      die(name);
      if (signal.aborted) throw new PassCancelled(`cancelled before ${name}`);
    },
  };
}
