import type { Keyring } from '../lib/secrets.js';
import type { Service } from '../domain/catalog.js';
import { ACTIVE_BACKUP_STATES, type Backup, type BackupState, type Restore, type RestoreState } from '../domain/backups.js';
import type { BackupRow, Db, RestoreRow } from './database.js';
import { isUniqueViolation } from './errors.js';

// Backups and restores: rows <-> domain, the data keys sealed here. Policies: backup-policy-repository.ts.

/** The one row -> domain mapping of backups; the data key is unsealed here. */
export function toBackup(row: BackupRow, keyring: Keyring): Backup {
  return {
    id: row.id,
    accountId: row.account_id,
    instanceId: row.instance_id,
    instanceName: row.instance_name,
    service: row.service as Service,
    engine: row.engine,
    engineVersion: row.engine_version,
    zone: row.zone,
    plan: row.plan,
    format: row.format,
    state: row.state as BackupState,
    stateReason: row.state_reason,
    step: row.step,
    scheduled: row.scheduled === 1,
    storageKey: row.storage_key,
    location: row.location,
    sizeBytes: row.size_bytes === null ? null : Number(row.size_bytes),
    sha256: row.sha256,
    usedBytes: row.used_bytes === null ? null : Number(row.used_bytes),
    dataKey: Buffer.from(keyring.decrypt(row.data_key_enc), 'base64'),
    requestedAt: Number(row.requested_at),
    startedAt: row.started_at === null ? null : Number(row.started_at),
    finishedAt: row.finished_at === null ? null : Number(row.finished_at),
  };
}

/** What a backup request records (PENDING). */
export type NewBackup = Pick<
  Backup,
  | 'id'
  | 'accountId'
  | 'instanceId'
  | 'instanceName'
  | 'service'
  | 'engine'
  | 'engineVersion'
  | 'zone'
  | 'plan'
  | 'format'
  | 'scheduled'
  | 'storageKey'
  | 'location'
  | 'dataKey'
  | 'requestedAt'
>;

/** Another backup of the instance is PENDING or RUNNING: the store keeps one at a time. */
export class BackupConflictError extends Error {
  override name = 'BackupConflictError';
  constructor(readonly active: { id: string; state: string } | undefined) {
    super(`a backup is in progress already${active ? `: ${active.id}` : ''}`);
  }
}

/** Records a PENDING backup; throws BackupConflictError when the instance has one in the making. */
export async function insertBackup(db: Db, keyring: Keyring, b: NewBackup): Promise<void> {
  try {
    await db
      .insertInto('backups')
      .values({
        id: b.id,
        account_id: b.accountId,
        instance_id: b.instanceId,
        instance_name: b.instanceName,
        service: b.service,
        engine: b.engine,
        engine_version: b.engineVersion,
        zone: b.zone,
        plan: b.plan,
        format: b.format,
        state: 'PENDING',
        state_reason: null,
        step: null,
        scheduled: b.scheduled ? 1 : 0,
        storage_key: b.storageKey,
        location: b.location,
        size_bytes: null,
        sha256: null,
        used_bytes: null,
        data_key_enc: keyring.encrypt(b.dataKey.toString('base64')),
        requested_at: b.requestedAt,
        started_at: null,
        finished_at: null,
        lease_owner: null,
        lease_expires_at: null,
      })
      .execute();
  } catch (err) {
    // Within a transaction of PostgreSQL nothing more can be read once a statement failed: the
    // caller reads the backup in the making then.
    if (isUniqueViolation(err)) throw new BackupConflictError(await findActiveBackup(db, b.instanceId).catch(() => undefined));
    throw err;
  }
}

export async function findBackup(db: Db, keyring: Keyring, id: string): Promise<Backup | undefined> {
  const row = await db.selectFrom('backups').selectAll().where('id', '=', id).executeTakeFirst();
  return row && toBackup(row, keyring);
}

/** The backups of an instance, newest first. */
export async function listBackupsOfInstance(db: Db, keyring: Keyring, instanceId: string): Promise<Backup[]> {
  const rows = await db
    .selectFrom('backups')
    .selectAll()
    .where('instance_id', '=', instanceId)
    .orderBy('requested_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  return rows.map((r) => toBackup(r, keyring));
}

/**
 * The backups an account took of instances called `name` that no longer exist, newest first:
 * what `/v2/instances/<name>/backups/` lists once the instance is deleted.
 */
export async function listBackupsOfDeletedInstance(db: Db, keyring: Keyring, accountId: string, name: string): Promise<Backup[]> {
  const rows = await db
    .selectFrom('backups')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('instance_name', '=', name)
    .where((eb) =>
      eb.not(eb.exists(eb.selectFrom('instances').select('instances.id').whereRef('instances.id', '=', 'backups.instance_id'))),
    )
    .orderBy('requested_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  return rows.map((r) => toBackup(r, keyring));
}

/** The instance's backup in the making (PENDING or RUNNING), if any. */
export async function findActiveBackup(db: Db, instanceId: string): Promise<{ id: string; state: string } | undefined> {
  return db
    .selectFrom('backups')
    .select(['id', 'state'])
    .where('instance_id', '=', instanceId)
    .where('state', 'in', ACTIVE_BACKUP_STATES)
    .executeTakeFirst();
}

/** Ids of PENDING backups, oldest first. */
export async function listPendingBackupIds(db: Db): Promise<string[]> {
  const rows = await db.selectFrom('backups').select('id').where('state', '=', 'PENDING').orderBy('requested_at').execute();
  return rows.map((r) => r.id);
}

/** RUNNING backups with their holder and lease: those whose holder died are finished as FAILED. */
export async function listRunningBackups(
  db: Db,
): Promise<{ id: string; storageKey: string; owner: string | null; expiresAt: number | null }[]> {
  const rows = await db
    .selectFrom('backups')
    .select(['id', 'storage_key', 'lease_owner', 'lease_expires_at'])
    .where('state', '=', 'RUNNING')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    storageKey: r.storage_key,
    owner: r.lease_owner,
    expiresAt: r.lease_expires_at === null ? null : Number(r.lease_expires_at),
  }));
}

/** PENDING -> RUNNING for `owner`, until `now + ttlMs`; true when this call claimed it. */
export async function claimBackup(db: Db, id: string, owner: string, now: number, ttlMs: number): Promise<boolean> {
  const r = await db
    .updateTable('backups')
    .set({ state: 'RUNNING', started_at: now, lease_owner: owner, lease_expires_at: now + ttlMs, step: 'claimed' })
    .where('id', '=', id)
    .where('state', '=', 'PENDING')
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Renews the lease of a running backup, and records its step; false when `owner` no longer holds it. */
export async function renewBackup(db: Db, id: string, owner: string, now: number, ttlMs: number, step?: string): Promise<boolean> {
  const r = await db
    .updateTable('backups')
    .set({ lease_expires_at: now + ttlMs, ...(step !== undefined ? { step } : {}) })
    .where('id', '=', id)
    .where('state', '=', 'RUNNING')
    .where('lease_owner', '=', owner)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** What a finished backup records. */
export interface BackupOutcome {
  readonly state: 'COMPLETED' | 'FAILED';
  readonly stateReason?: string | null;
  readonly sizeBytes?: number;
  readonly sha256?: string;
  readonly usedBytes?: number | null;
  readonly engineVersion?: string;
  readonly finishedAt: number;
}

/**
 * Finishes a backup that is still in the making (PENDING, or RUNNING under `owner` when one is
 * named); true when it did. A backup another replica took over (or failed) is left alone.
 */
export async function finishBackup(db: Db, id: string, outcome: BackupOutcome, where: { owner?: string } = {}): Promise<boolean> {
  let q = db
    .updateTable('backups')
    .set({
      state: outcome.state,
      state_reason: outcome.stateReason ?? null,
      step: null,
      finished_at: outcome.finishedAt,
      lease_owner: null,
      lease_expires_at: null,
      ...(outcome.sizeBytes !== undefined ? { size_bytes: outcome.sizeBytes } : {}),
      ...(outcome.sha256 !== undefined ? { sha256: outcome.sha256 } : {}),
      ...(outcome.usedBytes !== undefined ? { used_bytes: outcome.usedBytes } : {}),
      ...(outcome.engineVersion !== undefined ? { engine_version: outcome.engineVersion } : {}),
    })
    .where('id', '=', id)
    .where('state', 'in', ACTIVE_BACKUP_STATES);
  if (where.owner !== undefined) q = q.where('lease_owner', '=', where.owner);
  const r = await q.executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** A RUNNING backup whose holder is `from` (dead) is failed with `reason`; true when this call did it. */
export async function failAbandonedBackup(db: Db, id: string, from: string | null, reason: string, now: number): Promise<boolean> {
  let q = db
    .updateTable('backups')
    .set({ state: 'FAILED', state_reason: reason, step: null, finished_at: now, lease_owner: null, lease_expires_at: null })
    .where('id', '=', id)
    .where('state', '=', 'RUNNING');
  q = from === null ? q.where('lease_owner', 'is', null) : q.where('lease_owner', '=', from);
  const r = await q.executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Removes a finished backup's row; true when this call removed it. */
export async function deleteBackupRow(db: Db, id: string): Promise<boolean> {
  const r = await db.deleteFrom('backups').where('id', '=', id).where('state', 'not in', ACTIVE_BACKUP_STATES).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/** Per instance that has one: its last successful backup (for /metrics). */
export async function lastSuccessfulBackups(
  db: Db,
): Promise<{ instanceId: string; instanceName: string; service: string; finishedAt: number; sizeBytes: number }[]> {
  const rows = await db
    .selectFrom('backups as b')
    .select(['b.instance_id', 'b.instance_name', 'b.service', 'b.finished_at', 'b.size_bytes'])
    .where('b.state', '=', 'COMPLETED')
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('backups as n')
            .select('n.id')
            .whereRef('n.instance_id', '=', 'b.instance_id')
            .where('n.state', '=', 'COMPLETED')
            .where((e) =>
              e.or([
                e('n.finished_at', '>', e.ref('b.finished_at')),
                e.and([e('n.finished_at', '=', e.ref('b.finished_at')), e('n.id', '>', e.ref('b.id'))]),
              ]),
            ),
        ),
      ),
    )
    .execute();
  return rows.map((r) => ({
    instanceId: r.instance_id,
    instanceName: r.instance_name,
    service: r.service,
    finishedAt: Number(r.finished_at),
    sizeBytes: Number(r.size_bytes ?? 0),
  }));
}

/** Ids of instances that have backups (deleted ones included), for retention. */
export async function listInstanceIdsWithBackups(db: Db): Promise<string[]> {
  const rows = await db.selectFrom('backups').select('instance_id').distinct().execute();
  return rows.map((r) => r.instance_id);
}

// --- restores ---------------------------------------------------------------------------------

export function toRestore(row: RestoreRow): Restore {
  return {
    id: row.id,
    accountId: row.account_id,
    instanceId: row.instance_id,
    instanceName: row.instance_name,
    backupId: row.backup_id,
    kind: row.kind as Restore['kind'],
    state: row.state as RestoreState,
    stateReason: row.state_reason,
    step: row.step,
    requestedAt: Number(row.requested_at),
    startedAt: row.started_at === null ? null : Number(row.started_at),
    finishedAt: row.finished_at === null ? null : Number(row.finished_at),
  };
}

/** The instance has a restore in the making already: the store keeps one at a time. */
export class RestoreConflictError extends Error {
  override name = 'RestoreConflictError';
}

/** Records a PENDING restore (in the caller's transaction); a second one of the instance is a RestoreConflictError. */
export async function insertRestore(
  db: Db,
  r: Pick<Restore, 'id' | 'accountId' | 'instanceId' | 'instanceName' | 'backupId' | 'kind' | 'requestedAt'>,
): Promise<void> {
  try {
    await insertRestoreRow(db, r);
  } catch (err) {
    if (isUniqueViolation(err)) throw new RestoreConflictError(`instance ${r.instanceId} has a restore in the making`, { cause: err });
    throw err;
  }
}

async function insertRestoreRow(
  db: Db,
  r: Pick<Restore, 'id' | 'accountId' | 'instanceId' | 'instanceName' | 'backupId' | 'kind' | 'requestedAt'>,
): Promise<void> {
  await db
    .insertInto('restores')
    .values({
      id: r.id,
      account_id: r.accountId,
      instance_id: r.instanceId,
      instance_name: r.instanceName,
      backup_id: r.backupId,
      kind: r.kind,
      state: 'PENDING',
      state_reason: null,
      step: null,
      requested_at: r.requestedAt,
      started_at: null,
      finished_at: null,
    })
    .execute();
}

/** The instance's restore in the making (PENDING or RUNNING), if any. */
export async function findActiveRestore(db: Db, instanceId: string): Promise<Restore | undefined> {
  const row = await db
    .selectFrom('restores')
    .selectAll()
    .where('instance_id', '=', instanceId)
    .where('state', 'in', ACTIVE_BACKUP_STATES)
    .executeTakeFirst();
  return row && toRestore(row);
}

export async function findRestore(db: Db, id: string): Promise<Restore | undefined> {
  const row = await db.selectFrom('restores').selectAll().where('id', '=', id).executeTakeFirst();
  return row && toRestore(row);
}

/** The instance's restores, newest first. */
export async function listRestores(db: Db, instanceId: string): Promise<Restore[]> {
  const rows = await db
    .selectFrom('restores')
    .selectAll()
    .where('instance_id', '=', instanceId)
    .orderBy('requested_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  return rows.map(toRestore);
}

/** Moves a restore on (a step, RUNNING, or its end). */
export async function updateRestore(
  db: Db,
  id: string,
  patch: { state?: RestoreState; stateReason?: string | null; step?: string | null; startedAt?: number; finishedAt?: number },
): Promise<void> {
  await db
    .updateTable('restores')
    .set({
      ...(patch.state !== undefined ? { state: patch.state } : {}),
      ...(patch.stateReason !== undefined ? { state_reason: patch.stateReason } : {}),
      ...(patch.step !== undefined ? { step: patch.step } : {}),
      ...(patch.startedAt !== undefined ? { started_at: patch.startedAt } : {}),
      ...(patch.finishedAt !== undefined ? { finished_at: patch.finishedAt } : {}),
    })
    .where('id', '=', id)
    .execute();
}

/** Fails every restore in the making of an instance (it is being deleted, or failed to build). */
export async function failActiveRestores(db: Db, instanceId: string, reason: string, now: number): Promise<void> {
  await db
    .updateTable('restores')
    .set({ state: 'FAILED', state_reason: reason, step: null, finished_at: now })
    .where('instance_id', '=', instanceId)
    .where('state', 'in', ACTIVE_BACKUP_STATES)
    .execute();
}
