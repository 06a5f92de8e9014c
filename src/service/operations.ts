import { errors, HangarError } from '../domain/errors.js';
import { OPEN_OPERATION_STATES, OPERATION_KINDS, OPERATION_STATES, type Operation } from '../domain/operations.js';
import { isObjectId } from '../lib/ids.js';
import { bumpInstance, findInstanceByName } from '../store/instance-repository.js';
import { OperationConflict } from '../store/operation-log.js';
import { findOperation, listOperations, type OperationCursor } from '../store/operation-repository.js';
import type { Caller, ServiceDeps } from './deps.js';

/** Why an open operation of a kind cannot be cancelled (a create only until its build starts). */
const NOT_CANCELLABLE: Readonly<Record<string, string>> = {
  create: 'its build has started; delete the instance instead (DELETE /v2/instances/{name}/)',
  resize: 'a resize cannot be cancelled once recorded: the engines may already run on the larger plan; wait for it to finish',
  'engine.switch':
    'a switch of engines cannot be cancelled once recorded: an engine may already run the new one, whose data files the old one is not promised to load; wait for it to finish',
  rename: 'a rename is recorded at once; rename the instance back instead',
  delete: 'a delete cannot be cancelled: the teardown may have begun',
  'acl.add': 'the ACL is recorded; delete it instead',
  'acl.delete': 'the ACL is marked for removal; add it again instead',
  'user.create': 'the user is recorded; delete it instead',
  'user.update': 'the change is recorded; change the user again instead',
  'user.delete': 'the user is marked for removal; create it again instead',
  restore: 'a restore cannot be cancelled: the data would be left half restored',
};

export interface OperationQuery {
  /** An instance name (or id): its operations, those of a deleted instance of that name too. */
  readonly instance?: string;
  readonly states?: readonly string[];
  readonly kinds?: readonly string[];
  readonly limit: number;
  /** `next_cursor` of the previous page. */
  readonly cursor?: string;
}

/** Thrown in a cancel's transaction when the build started first (the cancel is undone with it). */
const BUILD_STARTED = new Error('build started');

/** The account's operations as the HTTP API shows them: list, read, cancel. */
export class OperationService {
  constructor(private readonly deps: ServiceDeps) {}

  /** One page of the caller's operations, newest first, and the cursor of the next page (null at the end). */
  async list(caller: Caller, q: OperationQuery): Promise<{ operations: Operation[]; nextCursor: string | null }> {
    for (const s of q.states ?? [])
      if (!(OPERATION_STATES as readonly string[]).includes(s))
        throw errors.invalidValue('state', `"state" ${JSON.stringify(s)} is not a state`, OPERATION_STATES);
    for (const k of q.kinds ?? [])
      if (!/^[a-z]+(\.[a-z]+)?$/.test(k)) throw errors.invalidValue('kind', `"kind" ${JSON.stringify(k)} is not a kind`, OPERATION_KINDS);
    const after = q.cursor === undefined ? undefined : parseCursor(q.cursor);
    let instance: { instanceId?: string; instanceName?: string } = {};
    if (q.instance !== undefined) {
      const current = await findInstanceByName(this.deps.db, this.deps.keyring, caller.accountId, q.instance);
      instance = current ? { instanceId: current.id } : isObjectId(q.instance) ? { instanceId: q.instance } : { instanceName: q.instance };
    }
    const operations = await listOperations(this.deps.db, {
      accountId: caller.accountId,
      ...instance,
      ...(q.states ? { states: q.states } : {}),
      ...(q.kinds ? { kinds: q.kinds } : {}),
      ...(after ? { after } : {}),
      limit: q.limit + 1,
    });
    const page = operations.slice(0, q.limit);
    const last = page.at(-1);
    return { operations: page, nextCursor: operations.length > q.limit && last ? cursorOf(last) : null };
  }

  /** The caller's operation; another account's is the same 404 as none. */
  async get(caller: Caller, id: string): Promise<Operation> {
    const op = await findOperation(this.deps.db, id);
    if (!op || op.accountId !== caller.accountId) throw errors.operationNotFound(id);
    return op;
  }

  /**
   * Cancels an operation where that is safe: a create whose build has not started (the instance
   * is removed), or an operation started as cancellable (a backup: its runner stops at its next
   * step). Anything else is a 409 saying why.
   */
  async cancel(caller: Caller, id: string): Promise<Operation> {
    const op = await this.get(caller, id);
    if (!OPEN_OPERATION_STATES.includes(op.state)) throw errors.operationNotCancellable(id, `it is ${op.state} already`);
    const by = `cancelled by ${caller.login}`;
    if (op.kind === 'create' && op.instanceId !== null) {
      if (op.state !== 'PENDING') throw errors.operationNotCancellable(id, NOT_CANCELLABLE.create!);
      return this.cancelCreate(op, op.instanceId, `${by} before its build started; the instance is removed`);
    }
    if (!op.cancellable) throw errors.operationNotCancellable(id, NOT_CANCELLABLE[op.kind] ?? `a ${op.kind} cannot be cancelled`);
    const cancelled = await this.deps.operations.cancel(id, by);
    if (!cancelled) throw errors.operationNotCancellable(id, `it is ${(await this.get(caller, id)).state} already`);
    return cancelled;
  }

  private async cancelCreate(op: Operation, instanceId: string, message: string): Promise<Operation> {
    const { db, operations } = this.deps;
    const now = this.deps.now();
    const cancelled = await db
      .transaction()
      .execute(async (trx) => {
        const done = await operations.cancel(op.id, message, trx);
        if (!done) throw BUILD_STARTED;
        // Only while no pass has taken it up: the pass that builds moves it to BUILDING first.
        const marked = await bumpInstance(
          trx,
          instanceId,
          { deleting: true, state: 'DELETING', stateReason: 'its create was cancelled', transitionAt: now },
          now,
          {
            states: ['REQUESTED'],
            notDeleting: true,
          },
        );
        if (!marked) throw BUILD_STARTED;
        return done;
      })
      .catch((err: unknown) => {
        if (err instanceof HangarError) throw err;
        if (err === BUILD_STARTED) throw errors.operationNotCancellable(op.id, NOT_CANCELLABLE.create!);
        // another replica changed the operation meanwhile
        if (err instanceof OperationConflict) throw errors.operationNotCancellable(op.id, 'it changed meanwhile; look at it again');
        throw err;
      });
    this.deps.work.enqueue(instanceId);
    return cancelled;
  }
}

function cursorOf(op: Operation): string {
  return Buffer.from(`${op.createdAt}.${op.id}`).toString('base64url');
}

function parseCursor(cursor: string): OperationCursor {
  const m = /^(\d{1,15})\.([0-9a-f]{24})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!m) throw errors.invalidValue('cursor', '"cursor" is not a cursor of this list: pass next_cursor of the previous page');
  return { createdAt: Number(m[1]), id: m[2]! };
}
