import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { READY_STATES } from '../domain/model.js';
import { deadlineSeconds, isInstanceKind, type Operation } from '../domain/operations.js';
import type { StepContext } from '../domain/units.js';
import type { Db } from '../store/database.js';
import { pruneEvents } from '../store/event-repository.js';
import { bumpInstance, findInstanceStatuses, updateInstance, type InstanceStatus } from '../store/instance-repository.js';
import { OperationConflict, finished, running, withStep, type OperationLog } from '../store/operation-log.js';
import { listOpenOperations, pruneOperations } from '../store/operation-repository.js';
import { Ticker } from '../lib/ticker.js';

/** How often open operations are looked at (deadlines, progress that no pass of this replica reported). */
const TICK_MS = 500;
/** How often old operations and events are pruned. */
const PRUNE_EVERY_MS = 60_000;
/** Rows removed per table and prune, so that no delete holds the store for long. */
const PRUNE_BATCH = 2000;
/** How often the steps of a long pass are written to its operations while it runs. */
const FLUSH_MS = 1000;
/**
 * When a pass first writes to its operations (RUNNING, and its steps so far): a shorter pass
 * writes everything once, with the outcome.
 */
const FIRST_FLUSH_MS = 250;
/** Open operations looked at per tick. */
const OPEN_LIMIT = 1000;

/** One pass seen by the operations of its instance: its steps are recorded, its outcome judged. */
export interface PassObserver {
  /** The step context of the pass, recording each step it passes. */
  wrap(ctx: StepContext): StepContext;
  /** The pass has ended: its steps are written and the instance's open operations judged. */
  end(): Promise<void>;
}

export interface OperationSupervisorDeps {
  readonly db: Db;
  readonly log: Logger;
  readonly now: () => number;
  readonly config: Config;
  readonly operations: OperationLog;
  /** More housekeeping run with the pruning (webhook delivery records); each returns how many rows went. */
  readonly prune?: readonly ((now: number) => Promise<number>)[];
  /** When a pass first writes to its operations, in ms (default a quarter second); tests make every pass "short". */
  readonly firstFlushMs?: number;
}

type Change = (op: Operation, now: number) => Operation | undefined;

/**
 * Keeps operations true to what happened, on every replica (each change is conditional on the
 * operation's revision, so replicas never undo each other):
 *
 * - an instance operation follows its instance in the store, level-based: done once a pass has
 *   carried out the spec version it recorded (`observed_version >= target`), FAILED when the
 *   instance is, CANCELLED when the instance is deleted first; a delete is done once the row is
 *   gone. The passes of the runtime owner tell their steps and judge at once; the periodic look
 *   finds what passes elsewhere did;
 * - no operation stays open past its deadline: it is FAILED (DEADLINE_EXCEEDED) and its instance
 *   is left in a known state: a create FAILED (what was built is removed by the next pass), a
 *   resize or a change DEGRADED with the reason (hangar keeps converging), a delete DELETING;
 * - finished operations and old events are pruned after their retention.
 */
export class OperationSupervisor {
  private readonly ticker = new Ticker(
    () => this.look(),
    TICK_MS,
    () => {},
  );
  /** Instances whose pass runs here now, with how many observers each. */
  private readonly observing = new Map<string, number>();
  private lastPrune = 0;

  constructor(private readonly deps: OperationSupervisorDeps) {}

  start(): void {
    this.ticker.start();
  }

  stop(): Promise<void> {
    return this.ticker.stop();
  }

  /** One look at every open operation, and pruning when due (or the end of the look in progress). */
  tick(): Promise<void> {
    return this.ticker.tick();
  }

  private async look(): Promise<void> {
    try {
      const open = await listOpenOperations(this.deps.db, { limit: OPEN_LIMIT });
      // the operations of an instance whose pass runs here are judged when it ends (with what it
      // has not written yet); only their deadlines are looked at now
      await this.judge(open, undefined, (op) => op.instanceId !== null && this.observing.has(op.instanceId));
      const now = this.deps.now();
      const { operationRetentionSeconds, eventRetentionSeconds } = this.deps.config;
      // Short retentions (tests) are pruned as often as they last.
      if (now - this.lastPrune >= Math.min(PRUNE_EVERY_MS, Math.min(operationRetentionSeconds, eventRetentionSeconds) * 1000)) {
        this.lastPrune = now;
        await this.prune(now);
      }
    } catch (err) {
      this.deps.log.warn({ err }, 'operations not looked at');
    }
  }

  /**
   * The observer of a pass of `instanceId`, or undefined when the instance has no open operation
   * (nothing to tell). Its PENDING operations turn RUNNING: a pass has taken them up (written
   * with its first steps, or with the outcome of a short pass).
   */
  async observe(instanceId: string): Promise<PassObserver | undefined> {
    const open = await listOpenOperations(this.deps.db, { instanceId, limit: 50 });
    if (open.length === 0) return undefined;
    this.observing.set(instanceId, (this.observing.get(instanceId) ?? 0) + 1);
    // each operation as this pass last read or wrote it: changed without reading it again first
    const latest = new Map(open.map((op) => [op.id, op]));
    // The steps of a pass are those of the instance's own operations; a backup or a restore
    // (driven kinds) records the steps of its own work.
    const followers = open.filter((o) => isInstanceKind(o.kind));
    const followerIds = new Set(followers.map((o) => o.id));
    // PENDING ones turn RUNNING (step `started`, at the pass's start), written with the pass's
    // first steps: after FIRST_FLUSH_MS, or with the outcome when the pass is over sooner.
    const takenUpAt = this.deps.now();
    const toStart = new Set(followers.filter((o) => o.state === 'PENDING').map((o) => o.id));
    const steps: { name: string; at: number }[] = [];
    let written = 0;
    /** The steps not written yet, as a change (taken: they are written with it). */
    const takeSteps = (): Change | undefined => {
      const batch = steps.slice(written);
      if (batch.length === 0) return undefined;
      written = steps.length;
      return (o) => batch.reduce((acc, s) => withStep(acc, { name: s.name }, s.at), o);
    };
    /** The operation's start, if not written yet (taken: it is written with the change it joins). */
    const takeStart = (id: string): Change | undefined => {
      if (!toStart.delete(id)) return undefined;
      return (o) => withStep(running(o, takenUpAt), { name: 'started' }, takenUpAt);
    };
    const flush = async () => {
      const batch = takeSteps();
      for (const op of followers) {
        const change = both(takeStart(op.id), batch);
        if (change) await this.apply(latest.get(op.id) ?? op.id, change, latest);
      }
    };
    let ended = false;
    let timer: NodeJS.Timeout | undefined;
    /** The flush under way, which the end waits for (what it took is written before the verdict). */
    let flushing: Promise<void> = Promise.resolve();
    const schedule = (ms: number) => {
      timer = setTimeout(() => {
        flushing = flush()
          .catch(() => {})
          .finally(() => ended || schedule(FLUSH_MS));
      }, ms);
      timer.unref();
    };
    schedule(this.deps.firstFlushMs ?? FIRST_FLUSH_MS);
    return {
      wrap: (ctx) => ({
        ...ctx,
        step: (name: string) => {
          // A held or retried step repeats its name: it is one step.
          if (steps.at(-1)?.name !== name) steps.push({ name, at: this.deps.now() });
          ctx.step(name);
        },
      }),
      end: async () => {
        ended = true;
        clearTimeout(timer);
        try {
          await flushing;
          // what the pass has not written yet is written with the verdict on its operations, in one change each
          const last = takeSteps();
          await this.judge(await listOpenOperations(this.deps.db, { instanceId, limit: 50 }), (op) =>
            followerIds.has(op.id) ? both(takeStart(op.id), last) : undefined,
          );
        } catch (err) {
          this.deps.log.warn({ err, instance: instanceId }, 'operations of a pass not recorded');
        } finally {
          const n = (this.observing.get(instanceId) ?? 1) - 1;
          if (n > 0) this.observing.set(instanceId, n);
          else this.observing.delete(instanceId);
        }
      },
    };
  }

  /**
   * Brings each open operation up to date with its instance, or fails it past its deadline.
   * `first`: a change to make before the verdict (a pass's last steps), in the same write.
   * `deadlinesOnly`: operations whose verdict is left to later (a pass of their instance runs).
   */
  private async judge(
    open: readonly Operation[],
    first?: (op: Operation) => Change | undefined,
    deadlinesOnly?: (op: Operation) => boolean,
  ): Promise<void> {
    if (open.length === 0) return;
    const ids = [...new Set(open.filter((o) => o.instanceId !== null && isInstanceKind(o.kind)).map((o) => o.instanceId!))];
    const statuses = await findInstanceStatuses(this.deps.db, ids);
    for (const op of open) {
      const inst = op.instanceId === null ? undefined : statuses.get(op.instanceId);
      const judged = isInstanceKind(op.kind) && !deadlinesOnly?.(op) ? verdict(op, inst) : undefined;
      const before = first?.(op);
      const change = both(before, judged);
      try {
        if (change) await this.apply(op, change);
        if (!judged && op.deadlineAt <= this.deps.now()) await this.expire(op);
      } catch (err) {
        if (!(err instanceof OperationConflict)) this.deps.log.warn({ err, operation: op.id }, 'operation not updated');
      }
    }
  }

  /**
   * Changes the operation: `op` as last read (or written), or only its id (read first). With
   * `latest`, what was written is kept there for the next change (an operation that was not
   * changed, or is no longer open, is read afresh next time).
   */
  private async apply(op: Operation | string, change: Change, latest?: Map<string, Operation>): Promise<void> {
    const id = typeof op === 'string' ? op : op.id;
    const written = await this.deps.operations.change(id, change, undefined, typeof op === 'string' ? undefined : op);
    if (!latest) return;
    if (written) latest.set(id, written);
    else latest.delete(id);
  }

  /**
   * Fails an operation past its deadline and leaves its instance in a known state, in one
   * transaction (the operation first: it takes the events lock before the instance's row).
   */
  private async expire(op: Operation): Promise<void> {
    const { db, operations, config } = this.deps;
    const seconds = deadlineSeconds(config.operationDeadlines, op.kind);
    const failed = await db.transaction().execute(async (trx) => {
      const now = this.deps.now();
      const inst = op.instanceId === null ? undefined : (await findInstanceStatuses(trx, [op.instanceId])).get(op.instanceId);
      // The instance may have finished the work meanwhile: that verdict wins.
      const late = isInstanceKind(op.kind) ? verdict(op, inst) : undefined;
      if (late) return operations.change(op.id, late, trx);
      const effect = inst ? await leaveKnown(trx, op, inst, seconds, now) : undefined;
      const message = `${op.kind} not finished within its deadline of ${seconds} s${effect ? `; ${effect}` : ''}`;
      return operations.change(
        op.id,
        (o, at) => finished(o, 'FAILED', at, { error: { code: 'DEADLINE_EXCEEDED', message }, message }),
        trx,
      );
    });
    if (failed?.state === 'FAILED')
      this.deps.log.warn({ operation: op.id, kind: op.kind, instance: op.instanceId, reason: failed.error?.message }, 'operation failed');
  }

  private async prune(now: number): Promise<void> {
    const { db, config } = this.deps;
    const ops = await pruneOperations(db, now - config.operationRetentionSeconds * 1000, PRUNE_BATCH);
    const events = await pruneEvents(db, now - config.eventRetentionSeconds * 1000, PRUNE_BATCH);
    let more = 0;
    for (const p of this.deps.prune ?? []) more += await p(now);
    if (ops + events + more > 0) this.deps.log.info({ operations: ops, events, records: more }, 'pruned');
  }
}

/** `a`, then `b` on what `a` made, as one change; or the one given. */
function both(a: Change | undefined, b: Change | undefined): Change | undefined {
  if (!a || !b) return a ?? b;
  return (op, now) => {
    const first = a(op, now);
    return b(first ?? op, now) ?? first;
  };
}

/**
 * What an instance operation has become, judged from its instance (undefined: the instance is
 * gone); undefined when it is where it was.
 */
export function verdict(op: Operation, inst: InstanceStatus | undefined): Change | undefined {
  const name = op.instanceName ?? op.instanceId ?? '';
  if (op.kind === 'delete') {
    if (!inst) return (o, now) => finished(o, 'SUCCEEDED', now, { message: `instance "${name}" is gone` });
    return stateStep(op, inst);
  }
  if (!inst || inst.deleting) {
    return (o, now) => finished(o, 'CANCELLED', now, { message: `instance "${name}" was deleted before the ${op.kind} finished` });
  }
  if (inst.state === 'FAILED') {
    const reason = inst.stateReason ?? 'no reason given';
    const message = op.kind === 'create' ? reason : `instance "${inst.name}" is FAILED: ${reason}`;
    return (o, now) => finished(o, 'FAILED', now, { error: { code: 'INSTANCE_FAILED', message }, message });
  }
  if (op.targetVersion !== null && inst.observedVersion >= op.targetVersion) {
    // carried out by a pass: one that had not written its start yet (another replica judged first) had taken it up
    return (o, now) =>
      finished(o.state === 'PENDING' ? withStep(running(o, now), { name: 'started' }, now) : o, 'SUCCEEDED', now, { message: inst.state });
  }
  return stateStep(op, inst);
}

/** A step `state:<STATE>` (with the reason) when the instance's state moved since the last one recorded. */
function stateStep(op: Operation, inst: InstanceStatus): Change | undefined {
  const name = `state:${inst.state}`;
  const message = inst.stateReason ?? undefined;
  const last = [...op.steps].reverse().find((s) => s.name.startsWith('state:'));
  if (last ? last.name === name && last.message === message : inst.state === initialState(op)) return undefined;
  return (o, now) => withStep(o, { name, ...(message !== undefined ? { message } : {}) }, now);
}

/** The state the request itself left the instance in: not a step of the work. */
function initialState(op: Operation): string | undefined {
  if (op.kind === 'create') return 'REQUESTED';
  if (op.kind === 'resize') return 'RESIZING';
  if (op.kind === 'delete') return 'DELETING';
  return undefined;
}

/**
 * Leaves the instance of an operation past its deadline in a known state; says what it did.
 * A create is FAILED (its spec version moves, so that a pass stuck in the build cannot write
 * ACTIVE later; the next pass removes what was built). A resize or a change of a serving
 * instance makes it DEGRADED with the reason: hangar keeps converging, and the next pass that
 * succeeds makes it ACTIVE again. A delete stays DELETING with the reason.
 */
async function leaveKnown(trx: Db, op: Operation, inst: InstanceStatus, seconds: number, now: number): Promise<string | undefined> {
  if (op.kind === 'create') {
    const reason = `not ready within the create deadline of ${seconds} s`;
    const failed = await bumpInstance(trx, inst.id, { state: 'FAILED', stateReason: reason, transitionAt: now }, now, {
      states: ['REQUESTED', 'BUILDING'],
      notDeleting: true,
    });
    return failed ? 'the instance is FAILED (delete it)' : undefined;
  }
  if (op.kind === 'delete') {
    await updateInstance(
      trx,
      inst.id,
      { stateReason: `not torn down within ${seconds} s; hangar keeps trying`, updatedAt: now },
      { states: ['DELETING'] },
    );
    return 'the instance stays DELETING while hangar keeps trying';
  }
  if (!isInstanceKind(op.kind)) return undefined;
  const what = op.kind === 'resize' ? `resize to ${String(op.detail.to_plan)} MB` : op.kind;
  const reason = `${what} not done within ${seconds} s; hangar keeps trying`;
  const states = op.kind === 'resize' ? ['RESIZING', ...READY_STATES] : [...READY_STATES];
  const degraded = await updateInstance(
    trx,
    inst.id,
    { state: 'DEGRADED', stateReason: reason, updatedAt: now },
    { states, notDeleting: true },
  );
  return degraded ? 'the instance is DEGRADED until hangar has carried the change out' : `the instance is ${inst.state}`;
}
