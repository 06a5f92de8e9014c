import type { Operation } from '../domain/operations.js';
import type { Db } from '../store/database.js';
import { finished, type OperationLog } from '../store/operation-log.js';
import type { BackupFlowEvents, FlowKind, FlowOutcome, FlowStep } from './backup-runner.js';

/**
 * The operations of backups and restores: each backup or restore is followed by the `backup` or
 * `restore` operation of the same id, started with its record (BackupService, the scheduler, a
 * create with `restore_from`). The runner reports its steps here; a cancel or a deadline closes
 * the operation, which the runner learns from `step` and `stopped` and stops. A backup or a
 * restore recorded before operations existed has none: its work goes on unreported.
 */
export class OperationFlow implements BackupFlowEvents {
  constructor(private readonly operations: OperationLog) {}

  async step(_kind: FlowKind, id: string, step: FlowStep): Promise<boolean> {
    if (!(await this.operations.find(id))) return true;
    return this.operations.step(id, step);
  }

  async stopped(_kind: FlowKind, id: string): Promise<string | undefined> {
    const op = await this.operations.find(id);
    return op ? whyClosed(op) : undefined;
  }

  async finished(_kind: FlowKind, id: string, outcome: FlowOutcome, trx: Db): Promise<boolean> {
    if (!(await this.operations.find(id, trx))) return true;
    const done = await this.operations.change(
      id,
      (op, now) =>
        outcome.state === 'FAILED'
          ? finished(op, 'FAILED', now, { error: { code: outcome.code, message: outcome.message }, message: outcome.message })
          : outcome.state === 'CANCELLED'
            ? finished(op, 'CANCELLED', now, { message: outcome.message })
            : finished(op, 'SUCCEEDED', now, { message: outcome.message, detail: outcome.detail }),
      trx,
    );
    return done !== undefined;
  }

  async open(kind: FlowKind, instanceId?: string): Promise<string[]> {
    return (await this.operations.listOpen({ kind, ...(instanceId !== undefined ? { instanceId } : {}) })).map((o) => o.id);
  }
}

/** Why a closed operation's work must stop, in words for the record it follows; undefined while it is open. */
export function whyClosed(op: Operation): string | undefined {
  if (op.state === 'PENDING' || op.state === 'RUNNING') return undefined;
  if (op.state === 'CANCELLED') return op.steps.at(-1)?.message ?? `its operation ${op.id} was cancelled`;
  if (op.state === 'FAILED') return op.error?.message ?? `its operation ${op.id} failed`;
  return `its operation ${op.id} has finished`;
}
