import type { BackupPolicy, BackupSchedule } from '../domain/backups.js';
import type { BackupPolicyRow, Db } from './database.js';

// Backup policies: each instance's schedule and retention, and when the schedule fires next.

export interface StoredPolicy extends BackupPolicy {
  readonly instanceId: string;
  readonly accountId: string;
  readonly nextRunAt: number | null;
}

function toPolicy(row: BackupPolicyRow): StoredPolicy {
  const schedule: BackupSchedule =
    row.schedule === 'every' && row.every_hours !== null
      ? { kind: 'every', hours: row.every_hours }
      : row.schedule === 'daily' && row.daily_minute !== null
        ? { kind: 'daily', minuteOfDay: row.daily_minute }
        : { kind: 'off' };
  return {
    instanceId: row.instance_id,
    accountId: row.account_id,
    schedule,
    retention: { keepLast: row.keep_last, keepDays: row.keep_days },
    nextRunAt: row.next_run_at === null ? null : Number(row.next_run_at),
  };
}

export async function findPolicy(db: Db, instanceId: string): Promise<StoredPolicy | undefined> {
  const row = await db.selectFrom('backup_policies').selectAll().where('instance_id', '=', instanceId).executeTakeFirst();
  return row && toPolicy(row);
}

/** Sets an instance's policy, with when it fires next. */
export async function savePolicy(
  db: Db,
  instanceId: string,
  accountId: string,
  p: BackupPolicy,
  nextRunAt: number | null,
  now: number,
): Promise<void> {
  const values = {
    account_id: accountId,
    schedule: p.schedule.kind,
    every_hours: p.schedule.kind === 'every' ? p.schedule.hours : null,
    daily_minute: p.schedule.kind === 'daily' ? p.schedule.minuteOfDay : null,
    keep_last: p.retention.keepLast,
    keep_days: p.retention.keepDays,
    next_run_at: nextRunAt,
    updated_at: now,
  };
  await db
    .insertInto('backup_policies')
    .values({ instance_id: instanceId, ...values })
    .onConflict((oc) => oc.column('instance_id').doUpdateSet(values))
    .execute();
}

/** Policies whose schedule is due at `now`. */
export async function listDuePolicies(db: Db, now: number): Promise<StoredPolicy[]> {
  const rows = await db
    .selectFrom('backup_policies')
    .selectAll()
    .where('next_run_at', 'is not', null)
    .where('next_run_at', '<=', now)
    .execute();
  return rows.map(toPolicy);
}

/**
 * Moves a due schedule on to `next`, if it is still due at `due`: of several replicas firing the
 * same schedule at once, exactly one gets true.
 */
export async function advancePolicy(db: Db, instanceId: string, due: number, next: number | null): Promise<boolean> {
  const r = await db
    .updateTable('backup_policies')
    .set({ next_run_at: next })
    .where('instance_id', '=', instanceId)
    .where('next_run_at', '=', due)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export async function deletePolicy(db: Db, instanceId: string): Promise<void> {
  await db.deleteFrom('backup_policies').where('instance_id', '=', instanceId).execute();
}

/** Removes the policies of instances that are gone and have no backup left to prune; resolves with how many. */
export async function deleteOrphanPolicies(db: Db): Promise<number> {
  const r = await db
    .deleteFrom('backup_policies')
    .where((eb) =>
      eb.not(eb.exists(eb.selectFrom('instances').select('instances.id').whereRef('instances.id', '=', 'backup_policies.instance_id'))),
    )
    .where((eb) =>
      eb.not(eb.exists(eb.selectFrom('backups').select('backups.id').whereRef('backups.instance_id', '=', 'backup_policies.instance_id'))),
    )
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}
