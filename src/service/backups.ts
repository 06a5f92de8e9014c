import type { Readable } from 'node:stream';
import { decryptStream, newDataKey, verifyStream } from '../lib/backup-crypto.js';
import { newObjectId } from '../lib/ids.js';
import { chain, drain } from '../lib/streams.js';
import { PLANS, type Service } from '../domain/catalog.js';
import { firstProductOf } from '../engines/products.js';
import {
  ACTIVE_BACKUP_STATES,
  nextRunAfter,
  parseTimeOfDay,
  type Backup,
  type BackupPolicy,
  type BackupSchedule,
  type Restore,
} from '../domain/backups.js';
import { errors, HangarError } from '../domain/errors.js';
import { READY_STATES, SERVING_STATES, type Instance } from '../domain/model.js';
import type { BackupDriver } from '../engines/engine.js';
import { StorageError, type BackupStorage } from '../storage/index.js';
import {
  BackupConflictError,
  RestoreConflictError,
  deleteBackupRow,
  findActiveBackup,
  findBackup,
  insertBackup,
  insertRestore,
  listBackupsOfDeletedInstance,
  listBackupsOfInstance,
  listRestores,
} from '../store/backup-repository.js';
import { findPolicy, savePolicy } from '../store/backup-policy-repository.js';
import type { Db } from '../store/database.js';
import { bumpInstance, findInstanceByName, findInstanceProgress } from '../store/instance-repository.js';
import type { Operation } from '../domain/operations.js';
import { NO_ORIGIN, requestStep, type Caller, type Origin, type ServiceDeps } from './deps.js';
import type { Started } from './instances.js';

/** What `PUT .../backup-policy/` takes (the wire form). */
export interface PolicyInput {
  readonly schedule: string;
  readonly every_hours?: number;
  readonly daily_at?: string;
  readonly keep_last?: number | null;
  readonly keep_days?: number | null;
}

/** A backup's decrypted, checked content, for a download. */
export interface BackupContent {
  readonly backup: Backup;
  /** The snapshot; fails at its end when it is not the one recorded (the download must then be cut). */
  readonly stream: Readable;
  readonly fileName: string;
}

/** Wakes the work that runs backups (a new one was asked for). */
export interface BackupWork {
  wake(): void;
}

/** Thrown in a restore's transaction when the instance is no longer ready (the transaction is undone). */
const NOT_BUMPED = new Error('instance not bumped');

const MB = 1024 * 1024;
const GB = 1024 * MB;

/** The plan in bytes, in its service's unit (redis plans are MB of memory, the others GB). */
export function planBytes(service: Service, plan: number): number {
  return plan * (firstProductOf(service).planUnit === 'MB' ? MB : GB);
}

/**
 * Backups and restores as the API asks for them: list, take, remove, download, restore in place,
 * the checks of a restore into a new instance, and backup policies. The work itself (taking a
 * snapshot, restoring it) is BackupRunner's, started from what is recorded here.
 */
export class BackupService {
  private readonly step: (name: string) => void;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly storage: BackupStorage,
    private readonly work: BackupWork,
  ) {
    this.step = requestStep(deps);
  }

  private get db(): Db {
    return this.deps.db;
  }

  private instance(caller: Caller, name: string): Promise<Instance | undefined> {
    return findInstanceByName(this.db, this.deps.keyring, caller.accountId, name);
  }

  /**
   * The backups `/v2/instances/<name>/backups/` names, newest first: those of the caller's
   * instance of that name, and those taken of deleted instances that had the name (kept until
   * their retention ends). 404 when there is neither.
   */
  async list(caller: Caller, name: string): Promise<Backup[]> {
    const inst = await this.instance(caller, name);
    const own = inst ? await listBackupsOfInstance(this.db, this.deps.keyring, inst.id) : [];
    const orphans = await listBackupsOfDeletedInstance(this.db, this.deps.keyring, caller.accountId, name);
    if (!inst && orphans.length === 0) throw errors.instanceNotFound(name);
    return [...own, ...orphans].sort((a, b) => b.requestedAt - a.requestedAt || b.id.localeCompare(a.id));
  }

  /** One backup of those (another account's, or another instance's, is the same 404 as none). */
  async get(caller: Caller, name: string, id: string): Promise<Backup> {
    const backup = await findBackup(this.db, this.deps.keyring, id);
    if (!backup || backup.accountId !== caller.accountId) throw errors.backupNotFound(id);
    const inst = await this.instance(caller, name);
    const ofIt =
      (inst !== undefined && backup.instanceId === inst.id) ||
      (backup.instanceName === name && (await this.instanceGone(backup.instanceId)));
    if (!ofIt) throw errors.backupNotFound(id);
    return backup;
  }

  private async instanceGone(id: string): Promise<boolean> {
    return (await findInstanceProgress(this.db, id)) === undefined;
  }

  /** The engine's backup driver for an instance, or a 422 saying why it has none here. */
  driverFor(inst: Pick<Instance, 'service' | 'engine' | 'zone'>): BackupDriver {
    const zone = this.deps.zones.get(inst.zone);
    if (!zone) throw errors.backupUnavailable(inst.service, `zone "${inst.zone}" is not configured on this hangar`);
    if (zone.runtime === 'kubernetes')
      throw errors.backupUnavailable(inst.service, `backups of instances on Kubernetes (zone "${inst.zone}") are not supported yet`);
    const offering = zone.engines.offerings().find((o) => o.engine === inst.engine);
    if (!offering?.available)
      throw errors.backupUnavailable(inst.service, offering?.unavailableReason ?? `${inst.engine} cannot run on this host`);
    const driver = zone.engines.require(inst.engine).backups;
    if (!driver) throw errors.backupUnavailable(inst.service, `backups of ${inst.engine} are not supported`);
    const reason = driver.unavailableReason();
    if (reason) throw errors.backupUnavailable(inst.service, reason);
    return driver;
  }

  /**
   * Records a PENDING backup of the instance with the `backup` operation that follows it (of the
   * same id), in `trx` when given (a transaction of the caller's that holds the events lock
   * already) or in one of its own: a second one while one is in the making is a
   * BackupConflictError, and nothing is recorded.
   */
  async record(inst: Instance, scheduled: boolean, origin: Origin, trx?: Db): Promise<Started<Backup>> {
    if (!trx) return this.db.transaction().execute((t) => this.record(inst, scheduled, origin, t));
    const driver = this.driverFor(inst);
    const now = this.deps.now();
    const id = newObjectId(now);
    const storageKey = `${inst.id}/${id}.${driver.format}.hgb`;
    const backup: Backup = {
      id,
      accountId: inst.accountId,
      instanceId: inst.id,
      instanceName: inst.name,
      service: inst.service,
      engineVersion: inst.version,
      zone: inst.zone,
      plan: inst.plan,
      format: driver.format,
      state: 'PENDING',
      stateReason: null,
      step: null,
      scheduled,
      storageKey,
      location: this.storage.location(storageKey),
      sizeBytes: null,
      sha256: null,
      usedBytes: null,
      dataKey: newDataKey(),
      requestedAt: now,
      startedAt: null,
      finishedAt: null,
    };
    const operation = await this.deps.operations.start(
      {
        id,
        kind: 'backup',
        instance: { id: inst.id, name: inst.name },
        account: inst.accountId,
        ...origin,
        detail: { backup_id: id, scheduled },
        ...(scheduled ? { message: "scheduled by the instance's backup policy" } : {}),
      },
      trx,
    );
    await insertBackup(trx, this.deps.keyring, backup);
    return { result: backup, operation };
  }

  /** Starts a backup now; answers with it PENDING, and the `backup` operation that follows it. */
  async create(caller: Caller, name: string, origin: Origin = NO_ORIGIN): Promise<Started<Backup>> {
    const inst = await this.instance(caller, name);
    if (!inst) throw errors.instanceNotFound(name);
    if (inst.deleting) throw errors.instanceDeleting(name);
    this.driverFor(inst);
    if (!SERVING_STATES.includes(inst.state) || inst.state === 'RESIZING') throw errors.instanceNotReady(name, inst.state);
    let started: Started<Backup>;
    try {
      started = await this.record(inst, false, origin);
    } catch (err) {
      if (err instanceof BackupConflictError) {
        const active = err.active ?? (await findActiveBackup(this.db, inst.id));
        throw errors.backupInProgress(name, active?.id ?? 'unknown', active?.state ?? 'RUNNING');
      }
      throw err;
    }
    this.step('backup:recorded');
    this.work.wake();
    return started;
  }

  /** Removes a finished backup from the storage and the list. */
  async delete(caller: Caller, name: string, id: string): Promise<string> {
    const backup = await this.get(caller, name, id);
    if (ACTIVE_BACKUP_STATES.includes(backup.state)) throw errors.backupInProgress(name, backup.id, backup.state);
    await this.remove(backup);
    return `Backup "${id}" of instance "${name}" deleted`;
  }

  /** Removes a backup's object, then its row (an object whose row is gone would be lost track of). */
  async remove(backup: Pick<Backup, 'id' | 'storageKey'>): Promise<void> {
    try {
      await this.storage.remove(backup.storageKey);
    } catch (err) {
      if (err instanceof StorageError) throw errors.backupStorageUnavailable(err.message);
      throw err;
    }
    await deleteBackupRow(this.db, backup.id);
  }

  /** The decrypted snapshot of a completed backup, checked against its SHA-256 as it is read. */
  open(backup: Backup): Promise<Readable> {
    return this.storage.get(backup.storageKey).then(
      (raw) => chain(raw, decryptStream(backup.dataKey), verifyStream({ sha256: backup.sha256!, sizeBytes: backup.sizeBytes! })),
      (err: unknown) => {
        if (err instanceof StorageError && err.kind === 'not-found')
          throw errors.backupCorrupt(backup.id, 'its object is missing from the backup storage');
        if (err instanceof StorageError) throw errors.backupStorageUnavailable(err.message);
        throw err;
      },
    );
  }

  /** A completed backup's snapshot for its owner to keep (decrypted). */
  async download(caller: Caller, name: string, id: string): Promise<BackupContent> {
    const backup = await this.get(caller, name, id);
    if (backup.state !== 'COMPLETED') throw errors.backupNotCompleted(id, backup.state);
    return { backup, stream: await this.open(backup), fileName: `${backup.instanceName}-${backup.id}.${backup.format}` };
  }

  /**
   * Reads a backup whole and checks it (decryption, SHA-256, size) before a restore is recorded:
   * a backup that is not the one taken is refused (422), the instance untouched.
   */
  private async assertIntact(backup: Backup): Promise<void> {
    try {
      await drain(await this.open(backup));
    } catch (err) {
      if (err instanceof HangarError) throw err;
      if (err instanceof StorageError) throw errors.backupStorageUnavailable(err.message);
      throw errors.backupCorrupt(backup.id, (err as Error).message);
    }
  }

  /**
   * The caller's completed backup of `service` that a new or existing instance on `plan` can be
   * restored from: 404 when it is not the caller's, 400 for another service or a plan smaller
   * than what the instance used or a snapshot of another engine's `format` (when given), 409 when
   * it is not completed, 422 when it no longer matches its SHA-256.
   */
  async restorable(caller: Caller, backupId: string, service: string, plan: number, field: string, format?: string): Promise<Backup> {
    const backup = await findBackup(this.db, this.deps.keyring, backupId);
    if (!backup || backup.accountId !== caller.accountId) throw errors.backupNotFound(backupId);
    if (backup.service !== service) {
      throw errors.invalidValue(
        field,
        `"${field}": backup "${backupId}" is a ${backup.service} backup; it cannot be restored into a ${service} instance`,
      );
    }
    // engines of one service may keep their data differently (mongod's archives, FerretDB's SQLite files)
    if (format !== undefined && backup.format !== format) {
      throw errors.invalidValue(
        field,
        `"${field}": backup "${backupId}" is a ${backup.format} snapshot; the engine of this instance restores ${format} snapshots only`,
      );
    }
    if (backup.state !== 'COMPLETED') throw errors.backupNotCompleted(backupId, backup.state);
    if (backup.usedBytes !== null && planBytes(backup.service, plan) < backup.usedBytes) {
      const unit = firstProductOf(backup.service).planUnit;
      const need = Math.ceil(backup.usedBytes / planBytes(backup.service, 1));
      const larger = PLANS[backup.service].filter((p) => planBytes(backup.service, p) >= backup.usedBytes!);
      throw errors.invalidValue(
        'plan',
        `"plan" ${plan} ${unit} is smaller than what the instance of backup "${backupId}" used (${need} ${unit})`,
        larger,
      );
    }
    await this.assertIntact(backup);
    return backup;
  }

  /** Starts restoring a backup into an instance in place: RESTORING until ACTIVE again; the `restore` operation follows it. */
  async restore(caller: Caller, name: string, backupId: string, origin: Origin = NO_ORIGIN): Promise<Started<Restore>> {
    const inst = await this.instance(caller, name);
    if (!inst) throw errors.instanceNotFound(name);
    if (inst.deleting) throw errors.instanceDeleting(name);
    this.driverFor(inst);
    if (!READY_STATES.includes(inst.state)) throw errors.operationInProgress(name, inst.state);
    const running = await findActiveBackup(this.db, inst.id);
    if (running) throw errors.backupInProgress(name, running.id, running.state);
    const backup = await this.restorable(caller, backupId, inst.service, inst.plan, 'backup_id', this.driverFor(inst).format);
    const now = this.deps.now();
    const restore: Restore = {
      id: newObjectId(now),
      accountId: caller.accountId,
      instanceId: inst.id,
      instanceName: inst.name,
      backupId: backup.id,
      kind: 'in_place',
      state: 'PENDING',
      stateReason: null,
      step: null,
      requestedAt: now,
      startedAt: null,
      finishedAt: null,
    };
    let operation: Operation | undefined;
    try {
      operation = await this.db.transaction().execute(async (trx) => {
        const op = await this.deps.operations.start(
          {
            id: restore.id,
            kind: 'restore',
            instance: { id: inst.id, name: inst.name },
            account: caller.accountId,
            ...origin,
            detail: { backup_id: backup.id, in_place: true },
          },
          trx,
        );
        const bumped = await bumpInstance(trx, inst.id, { state: 'RESTORING', stateReason: null, transitionAt: now }, now, {
          states: READY_STATES,
          notDeleting: true,
        });
        // nothing is recorded (the operation neither) when the instance moved meanwhile
        if (!bumped) throw NOT_BUMPED;
        await insertRestore(trx, restore);
        return op;
      });
    } catch (err) {
      if (err instanceof RestoreConflictError) throw errors.operationInProgress(name, 'RESTORING');
      if (err !== NOT_BUMPED) throw err;
    }
    if (!operation) {
      const current = await this.instance(caller, name);
      if (!current) throw errors.instanceNotFound(name);
      if (current.deleting) throw errors.instanceDeleting(name);
      throw errors.operationInProgress(name, current.state);
    }
    this.step('restore:recorded');
    this.deps.work.enqueue(inst.id);
    return { result: restore, operation };
  }

  /** The instance's restores, newest first. */
  async restores(caller: Caller, name: string): Promise<Restore[]> {
    const inst = await this.instance(caller, name);
    if (!inst) throw errors.instanceNotFound(name);
    return listRestores(this.db, inst.id);
  }

  /** The instance's policy (the default one until it is set), with when it fires next. */
  async policy(caller: Caller, name: string): Promise<BackupPolicy & { nextRunAt: number | null }> {
    const inst = await this.instance(caller, name);
    if (!inst) throw errors.instanceNotFound(name);
    const stored = await findPolicy(this.db, inst.id);
    if (stored) return stored;
    const p = this.deps.config.backupPolicy;
    return { ...p, nextRunAt: null };
  }

  /** Sets the instance's policy: the schedule starts counting now. */
  async setPolicy(caller: Caller, name: string, input: PolicyInput): Promise<BackupPolicy & { nextRunAt: number | null }> {
    const inst = await this.instance(caller, name);
    if (!inst) throw errors.instanceNotFound(name);
    if (inst.deleting) throw errors.instanceDeleting(name);
    const policy = parsePolicyInput(input);
    if (policy.schedule.kind !== 'off') this.driverFor(inst);
    const now = this.deps.now();
    const nextRunAt = nextRunAfter(policy.schedule, now);
    await savePolicy(this.db, inst.id, inst.accountId, policy, nextRunAt, now);
    return { ...policy, nextRunAt };
  }

  /** Gives a new instance the default policy (its schedule counting from its creation). */
  async applyDefaultPolicy(inst: Pick<Instance, 'id' | 'accountId'>): Promise<void> {
    const p = this.deps.config.backupPolicy;
    if (p.schedule.kind === 'off' && p.retention.keepLast === null && p.retention.keepDays === null) return;
    const now = this.deps.now();
    await savePolicy(this.db, inst.id, inst.accountId, p, nextRunAfter(p.schedule, now), now);
  }
}

/** The policy of a PUT body, or a 400 naming the field at fault. */
export function parsePolicyInput(input: PolicyInput): BackupPolicy {
  let schedule: BackupSchedule;
  const extra = (field: string) => errors.invalidValue(field, `"${field}" does not apply to schedule "${input.schedule}"`);
  switch (input.schedule) {
    case 'off':
      if (input.every_hours !== undefined) throw extra('every_hours');
      if (input.daily_at !== undefined) throw extra('daily_at');
      schedule = { kind: 'off' };
      break;
    case 'every': {
      if (input.daily_at !== undefined) throw extra('daily_at');
      const h = input.every_hours;
      if (h === undefined || !Number.isInteger(h) || h < 1 || h > 8760)
        throw errors.invalidValue('every_hours', '"every_hours" must be a whole number of hours from 1 to 8760 with schedule "every"');
      schedule = { kind: 'every', hours: h };
      break;
    }
    case 'daily': {
      if (input.every_hours !== undefined) throw extra('every_hours');
      const minute = input.daily_at === undefined ? undefined : parseTimeOfDay(input.daily_at);
      if (minute === undefined)
        throw errors.invalidValue('daily_at', '"daily_at" must be a time of day HH:MM (UTC, 00:00 to 23:59) with schedule "daily"');
      schedule = { kind: 'daily', minuteOfDay: minute };
      break;
    }
    default:
      throw errors.invalidValue('schedule', `"schedule" ${JSON.stringify(input.schedule)} is not a schedule`, ['off', 'every', 'daily']);
  }
  const count = (field: 'keep_last' | 'keep_days', max: number): number | null => {
    const v = input[field];
    if (v === undefined || v === null) return null;
    if (!Number.isInteger(v) || v < 1 || v > max)
      throw errors.invalidValue(field, `"${field}" must be a whole number from 1 to ${max}, or null`);
    return v;
  };
  return { schedule, retention: { keepLast: count('keep_last', 10_000), keepDays: count('keep_days', 36_500) } };
}
