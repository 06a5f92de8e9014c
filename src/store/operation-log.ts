import { newObjectId } from '../lib/ids.js';
import {
  OPEN_OPERATION_STATES,
  deadlineSeconds,
  isInstanceKind,
  operationEventKind,
  type Operation,
  type OperationDeadlines,
  type OperationError,
  type OperationKind,
  type OperationState,
  type RequestedBy,
} from '../domain/operations.js';
import type { Db } from './database.js';
import { appendEvent } from './event-repository.js';
import { findOperation, insertOperation, listOpenOperations, replaceOperation, setOperationTarget } from './operation-repository.js';

/** What starts an operation. */
export interface StartOperation {
  /** Its id: that of the record it follows (a backup, a restore), so that either names the other; default: a new one. */
  readonly id?: string;
  readonly kind: OperationKind;
  /** The instance it is about; null for an operation of no instance. */
  readonly instance: { readonly id: string; readonly name: string } | null;
  /** The account's id. */
  readonly account: string;
  readonly requestedBy?: RequestedBy | null;
  readonly requestId?: string | null;
  /** Kind-specific facts shown with it (snake_case keys: they reach clients as they are). */
  readonly detail?: Readonly<Record<string, unknown>>;
  /** Instance kinds: the spec version whose carrying out completes it (or setTarget later, in the same transaction). */
  readonly targetVersion?: number;
  /** Seconds until it is FAILED if unfinished; default: the kind's deadline setting. */
  readonly deadlineSeconds?: number;
  /** Whether POST /v2/operations/<id>/cancel may cancel it while it is open; default: backups yes, others no. */
  readonly cancellable?: boolean;
  /** Said with its first step (`recorded`). */
  readonly message?: string;
}

/** A step: its name, and optionally what it says and how far the work is (0-100). */
export interface StepInput {
  readonly name: string;
  readonly message?: string;
  readonly progress?: number;
}

/** At most this many steps are kept per operation (the first and the latest ones). */
const MAX_STEPS = 100;
/** Attempts at a change that another replica's change keeps beating. */
const ATTEMPTS = 5;

/** Another replica changed the operation between a read and a write of it. */
export class OperationConflict extends Error {
  override name = 'OperationConflict';
}

/**
 * The operations of hangar and the API to record them, for services (a request that starts
 * work) and for background workers (the reconciler, a backup runner). Every change appends its
 * event (`operation.created`, `.progress`, `.succeeded`, `.failed`, `.cancelled`) in the same
 * transaction, and only an open (PENDING or RUNNING) operation changes: once one is finished,
 * `step`, `succeed` and `fail` answer false, which tells a worker to stop (it was cancelled, or
 * failed by its deadline).
 *
 * ```ts
 * const op = await operations.start({ kind: 'backup', instance: { id, name }, account: caller.accountId, requestedBy, requestId });
 * if (!(await operations.step(op.id, { name: 'dumping', progress: 10 }))) return; // cancelled meanwhile
 * await operations.succeed(op.id, { detail: { size_bytes: 1234 } });   // or operations.fail(op.id, { code: 'DUMP_FAILED', message })
 * ```
 */
export class OperationLog {
  constructor(
    private readonly db: Db,
    private readonly opts: { readonly now: () => number; readonly deadlines: OperationDeadlines },
  ) {}

  /**
   * Records a new PENDING operation. Pass `trx` to record it in the transaction of the change it
   * follows, as that transaction's first write: on PostgreSQL it takes the events lock, which
   * must come before the instance's row or the placement lock.
   */
  async start(input: StartOperation, trx?: Db): Promise<Operation> {
    const now = this.opts.now();
    const seconds = input.deadlineSeconds ?? deadlineSeconds(this.opts.deadlines, input.kind);
    const op: Operation = {
      id: input.id ?? newObjectId(now),
      kind: input.kind,
      accountId: input.account,
      instanceId: input.instance?.id ?? null,
      instanceName: input.instance?.name ?? null,
      state: 'PENDING',
      steps: [{ name: 'recorded', at: now, ...(input.message !== undefined ? { message: input.message } : {}) }],
      progress: isInstanceKind(input.kind) ? null : 0,
      error: null,
      requestedBy: input.requestedBy ?? null,
      requestId: input.requestId ?? null,
      detail: input.detail ?? {},
      targetVersion: input.targetVersion ?? null,
      cancellable: input.cancellable ?? input.kind === 'backup',
      createdAt: now,
      updatedAt: now,
      startedAt: null,
      finishedAt: null,
      deadlineAt: now + seconds * 1000,
      lastEventId: null,
      rev: 1,
    };
    const record = async (t: Db): Promise<Operation> => {
      const eventId = await appendEvent(t, eventOf(op, 'operation.created', now));
      const recorded = { ...op, lastEventId: eventId };
      await insertOperation(t, recorded);
      return recorded;
    };
    return trx ? record(trx) : this.db.transaction().execute(record);
  }

  /** Records the spec version whose carrying out completes an instance operation (in the change's transaction). */
  async setTarget(trx: Db, id: string, version: number): Promise<void> {
    await setOperationTarget(trx, id, version);
  }

  /** The operation, or undefined. */
  find(id: string, db: Db = this.db): Promise<Operation | undefined> {
    return findOperation(db, id);
  }

  /**
   * Operations still PENDING or RUNNING (of a kind, of an instance), oldest deadline first: what a
   * runner takes up again after a restart.
   */
  listOpen(filter: { kind?: string; instanceId?: string; limit?: number } = {}): Promise<Operation[]> {
    return listOpenOperations(this.db, { ...filter, limit: filter.limit ?? 1000 });
  }

  /** Whether the operation is still PENDING or RUNNING. */
  async isOpen(id: string): Promise<boolean> {
    const op = await this.find(id);
    return op !== undefined && OPEN_OPERATION_STATES.includes(op.state);
  }

  /**
   * A step of an open operation: it turns RUNNING (if it was PENDING) and the step is added with
   * its time, and `progress` when given. False when the operation is no longer open: stop.
   */
  async step(id: string, step: string | StepInput): Promise<boolean> {
    const s = typeof step === 'string' ? { name: step } : step;
    return (await this.change(id, (op, now) => withStep(running(op, now), s, now))) !== undefined;
  }

  /** Finishes an open operation as SUCCEEDED (progress 100). False when it was no longer open. */
  async succeed(id: string, opts: { message?: string; detail?: Readonly<Record<string, unknown>> } = {}): Promise<boolean> {
    return (
      (await this.change(id, (op, now) => finished(op, 'SUCCEEDED', now, { message: opts.message, detail: opts.detail }))) !== undefined
    );
  }

  /** Finishes an open operation as FAILED with `error`. False when it was no longer open. */
  async fail(id: string, error: OperationError): Promise<boolean> {
    return (await this.change(id, (op, now) => finished(op, 'FAILED', now, { error, message: error.message }))) !== undefined;
  }

  /** Finishes an open operation as CANCELLED. False when it was no longer open. */
  async cancel(id: string, message: string, trx?: Db): Promise<Operation | undefined> {
    return this.change(id, (op, now) => finished(op, 'CANCELLED', now, { message }), trx);
  }

  /**
   * Applies `next` to the operation if it is open and `next` returns a change, with its event;
   * tried again when another replica changed it meanwhile. Returns the operation as written, or
   * undefined when it was not open or `next` changed nothing. Within `trx`, a concurrent change
   * throws instead (the caller's transaction is rolled back).
   *
   * `known`: the operation as the caller last read or wrote it, changed without reading it again
   * (outside a transaction only). The write is conditional on its revision as always: when it
   * moved meanwhile, the change is made again on the operation read afresh.
   */
  async change(
    id: string,
    next: (op: Operation, now: number) => Operation | undefined,
    trx?: Db,
    known?: Operation,
  ): Promise<Operation | undefined> {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const op =
        attempt === 0 && known !== undefined && known.id === id && trx === undefined ? known : await findOperation(trx ?? this.db, id);
      if (!op || !OPEN_OPERATION_STATES.includes(op.state)) return undefined;
      const now = this.opts.now();
      const changed = next(op, now);
      if (!changed) return undefined;
      try {
        return await this.write(op, changed, now, trx);
      } catch (err) {
        if (!(err instanceof OperationConflict) || trx) throw err;
      }
    }
    return undefined;
  }

  /** Writes `changed` over `op` with its event; OperationConflict when `op` moved meanwhile. */
  private async write(op: Operation, changed: Operation, now: number, trx?: Db): Promise<Operation> {
    const kind = operationEventKind(changed.state, false);
    const record = async (t: Db): Promise<Operation> => {
      const written: Operation = { ...changed, updatedAt: now, rev: op.rev + 1 };
      const eventId = await appendEvent(t, eventOf(written, kind, now));
      const final = { ...written, lastEventId: eventId };
      if (!(await replaceOperation(t, op.rev, final))) throw new OperationConflict();
      return final;
    };
    return trx ? record(trx) : this.db.transaction().execute(record);
  }
}

function eventOf(op: Operation, kind: string, now: number) {
  return {
    accountId: op.accountId,
    kind,
    instanceId: op.instanceId,
    instanceName: op.instanceName,
    operationId: op.id,
    data: { ...op },
    createdAt: now,
  };
}

/** The operation RUNNING: its start recorded if it was PENDING. */
export function running(op: Operation, now: number): Operation {
  return op.state === 'PENDING' ? { ...op, state: 'RUNNING', startedAt: now } : op;
}

/** The operation with one more step (the oldest ones after the first are dropped past MAX_STEPS). */
export function withStep(op: Operation, s: StepInput, now: number): Operation {
  const step = { name: s.name.slice(0, 200), at: now, ...(s.message !== undefined ? { message: s.message.slice(0, 1000) } : {}) };
  // In time order: a pass's steps are written in batches, and another writer's step (a later
  // one) may land between a batch's taking and its writing.
  let at = op.steps.length;
  while (at > 0 && op.steps[at - 1]!.at > now) at--;
  let steps = [...op.steps.slice(0, at), step, ...op.steps.slice(at)];
  if (steps.length > MAX_STEPS) steps = [steps[0]!, ...steps.slice(steps.length - MAX_STEPS + 1)];
  const progress = s.progress === undefined ? op.progress : Math.max(0, Math.min(100, Math.round(s.progress)));
  return { ...op, steps, progress };
}

/** The operation finished in `state`, with a last step saying so. */
export function finished(
  op: Operation,
  state: Exclude<OperationState, 'PENDING' | 'RUNNING'>,
  now: number,
  opts: { error?: OperationError; message?: string | undefined; detail?: Readonly<Record<string, unknown>> | undefined } = {},
): Operation {
  const step = withStep(op, { name: state.toLowerCase(), ...(opts.message !== undefined ? { message: opts.message } : {}) }, now);
  return {
    ...step,
    state,
    finishedAt: now,
    startedAt: op.startedAt ?? (state === 'SUCCEEDED' || state === 'FAILED' ? now : null),
    progress: state === 'SUCCEEDED' ? 100 : step.progress,
    error: opts.error ?? null,
    detail: opts.detail ? { ...op.detail, ...opts.detail } : op.detail,
  };
}
