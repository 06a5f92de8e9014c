import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { Digest, decryptStream, encryptStream, verifyStream } from '../lib/backup-crypto.js';
import type { Keyring } from '../lib/secrets.js';
import { chain } from '../lib/streams.js';
import { prunable, type Backup, type Restore } from '../domain/backups.js';
import { SERVING_STATES, type Instance } from '../domain/model.js';
import { toSpec } from '../domain/spec.js';
import type { StepContext } from '../domain/units.js';
import type { Target, Targets } from '../reconciler/reconcile-instance.js';
import { StorageError, type BackupStorage } from '../storage/index.js';
import {
  claimBackup, failAbandonedBackup, failActiveRestores, findActiveRestore, findBackup, finishBackup, listBackupsOfInstance, listPendingBackupIds, listRunningBackups, renewBackup, updateRestore,
} from '../store/backup-repository.js';
import { findPolicy } from '../store/backup-policy-repository.js';
import type { Db } from '../store/database.js';
import { findInstanceById } from '../store/instance-repository.js';

/** What an async backup or restore reports, start to finish: where an operations view plugs in. */
export interface BackupFlowEvents {
  started(kind: 'backup' | 'restore', id: string, instanceId: string): void;
  step(kind: 'backup' | 'restore', id: string, step: string): void;
  finished(kind: 'backup' | 'restore', id: string, outcome: { state: 'COMPLETED' | 'FAILED'; reason?: string; seconds: number; service: string; bytes?: number }): void;
}

export interface BackupRunnerDeps {
  readonly db: Db;
  readonly keyring: Keyring;
  readonly zones: Targets;
  readonly storage: BackupStorage;
  readonly config: Config;
  readonly log: Logger;
  readonly now: () => number;
  /** Step boundaries of one backup (cancellation, and the test-only HANGAR_TEST_DIE_AT). */
  readonly steps: (signal: AbortSignal) => StepContext;
  /** Whether this replica owns the runtime: only the owner takes snapshots. */
  isOwner(): boolean;
  /** Whether the replica named `owner` is known to be dead (its leases need not be waited out). */
  ownerIsDead(owner: string): boolean;
  /** Removes a backup's object and row (retention). */
  remove(backup: Pick<Backup, 'id' | 'storageKey'>): Promise<void>;
  readonly events?: BackupFlowEvents;
}

/** How often the owner looks for backups to run. */
const POLL_MS = 250;
/** Backups running at once on one replica. */
const CONCURRENCY = 2;
/** How often RUNNING backups of dead replicas are looked for (at start, then this often). */
const ABANDONED_SWEEP_MS = 2000;

/** What a restore says to the reconciler pass that ran it. */
export interface RestoreOutcome {
  readonly restore: Restore;
  readonly ok: boolean;
  readonly reason?: string;
}

/**
 * Runs backups and restores. A backup: claimed (PENDING -> RUNNING, under a lease renewed while
 * it runs), snapshot taken by the engine, streamed through SHA-256 and AES-256-GCM to the
 * storage, recorded COMPLETED or FAILED with the reason, then retention. A backup whose replica
 * died is recorded FAILED and its object removed: it is never left RUNNING, and nothing half
 * written is ever listed. A restore runs inside the instance's reconcile pass (the reconciler
 * calls `runRestore`), so nothing else touches the instance's engines meanwhile.
 */
export class BackupRunner {
  private readonly running = new Map<string, AbortController>();
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private stopped = true;
  /** When abandoned backups were last looked for. */
  private lastSweep = 0;

  constructor(private readonly deps: BackupRunnerDeps) {}

  start(): void {
    this.stopped = false;
    this.timer = setInterval(() => this.wake(), POLL_MS);
    this.timer.unref();
    this.wake();
  }

  /** Stops taking backups; those running are cut (and will be recorded FAILED by whoever runs next). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    for (const c of this.running.values()) c.abort();
    const until = Date.now() + 8000;
    while (this.running.size > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  }

  /** Looks for work now (a backup was asked for). */
  wake(): void {
    if (this.stopped || this.polling || !this.deps.isOwner()) return;
    this.polling = true;
    void this.poll()
      .catch((err: unknown) => this.deps.log.debug({ err }, 'backup poll failed'))
      .finally(() => (this.polling = false));
  }

  private async poll(): Promise<void> {
    if (Date.now() - this.lastSweep >= ABANDONED_SWEEP_MS) {
      this.lastSweep = Date.now();
      await this.failAbandoned();
    }
    for (const id of await listPendingBackupIds(this.deps.db)) {
      if (this.running.size >= CONCURRENCY || this.stopped) return;
      if (this.running.has(id)) continue;
      const ttl = this.deps.config.leaseSeconds * 1000;
      if (!(await claimBackup(this.deps.db, id, this.deps.config.replicaId, this.deps.now(), ttl))) continue;
      const controller = new AbortController();
      this.running.set(id, controller);
      void this.runBackup(id, controller).finally(() => this.running.delete(id));
    }
  }

  /** RUNNING backups whose replica died (or whose lease ran out) are FAILED, their objects removed. */
  private async failAbandoned(): Promise<void> {
    const { db, now } = this.deps;
    for (const b of await listRunningBackups(db)) {
      if (this.running.has(b.id)) continue;
      const dead = b.owner === null || (b.expiresAt ?? 0) < now() || this.deps.ownerIsDead(b.owner);
      if (!dead) continue;
      const reason = 'hangar stopped while the backup ran; nothing of it was kept: take a new one';
      if (await failAbandonedBackup(db, b.id, b.owner, reason, now())) {
        await this.deps.storage.remove(b.storageKey).catch((err: unknown) => this.deps.log.warn({ err, backup: b.id }, 'removing what an interrupted backup left'));
        this.deps.log.warn({ backup: b.id, owner: b.owner }, 'backup interrupted: recorded FAILED');
      }
    }
  }

  /** One backup, start to finish. */
  private async runBackup(id: string, controller: AbortController): Promise<void> {
    const { db, keyring, config, log, now, events } = this.deps;
    const owner = config.replicaId;
    const ttl = config.leaseSeconds * 1000;
    const t0 = performance.now();
    const backup = (await findBackup(db, keyring, id))!;
    events?.started('backup', id, backup.instanceId);
    let step = 'claimed';
    const renew = setInterval(() => {
      renewBackup(db, id, owner, now(), ttl, step).then((held) => held || controller.abort(), () => {});
    }, ttl / 3);
    const ctx = this.deps.steps(controller.signal);
    const mark = async (name: string) => {
      step = name;
      events?.step('backup', id, name);
      await renewBackup(db, id, owner, now(), ttl, name);
    };
    let stored = false;
    try {
      const inst = await findInstanceById(db, keyring, backup.instanceId);
      if (!inst || inst.deleting) throw new Error('the instance was deleted before its backup ran');
      if (!SERVING_STATES.includes(inst.state) || inst.state === 'RESIZING') throw new Error(`the instance was ${inst.state} when its backup was to run`);
      const target = this.target(inst);
      const driver = target.engines.require(inst.service).backups;
      if (!driver) throw new Error(`backups of ${inst.service} are not supported`);
      const spec = toSpec(inst);
      await mark('snapshot');
      const snapshot = await driver.snapshot(spec, target.runtime.place(spec), ctx);
      ctx.step('backup:snapshot-taken');
      await mark('storing');
      const digest = new Digest();
      stored = true;
      await this.deps.storage.put(backup.storageKey, chain(snapshot.stream, digest, encryptStream(backup.dataKey)), controller.signal);
      ctx.step('backup:stored');
      const done = await finishBackup(
        db,
        id,
        { state: 'COMPLETED', sizeBytes: digest.bytes, sha256: digest.sha256, usedBytes: snapshot.usedBytes, engineVersion: snapshot.engineVersion, finishedAt: now() },
        { owner },
      );
      // Another replica took it as abandoned meanwhile (and recorded it FAILED): what was stored goes.
      if (!done) throw new Error('this replica lost the backup to another');
      const seconds = (performance.now() - t0) / 1000;
      log.info({ backup: id, instance: backup.instanceId, bytes: digest.bytes, seconds }, 'backup completed');
      events?.finished('backup', id, { state: 'COMPLETED', seconds, service: backup.service, bytes: digest.bytes });
      await this.prune(backup.instanceId).catch((err: unknown) => log.warn({ err, instance: backup.instanceId }, 'retention failed'));
    } catch (err) {
      const reason = reasonOf(err, controller.signal);
      if (stored) await this.deps.storage.remove(backup.storageKey).catch(() => {});
      await finishBackup(db, id, { state: 'FAILED', stateReason: reason, finishedAt: now() }, { owner }).catch((e: unknown) => log.warn({ err: e, backup: id }, 'recording a failed backup'));
      log.warn({ backup: id, instance: backup.instanceId, reason }, 'backup failed');
      events?.finished('backup', id, { state: 'FAILED', reason, seconds: (performance.now() - t0) / 1000, service: backup.service });
    } finally {
      clearInterval(renew);
    }
  }

  private target(inst: Pick<Instance, 'zone'>): Target {
    const target = this.deps.zones.of(inst.zone);
    if (!target) throw new Error(`zone "${inst.zone}" is not configured on this hangar`);
    return target;
  }

  /** Applies the instance's retention (its policy, or the default one) to its finished backups. */
  async prune(instanceId: string, at: number = this.deps.now()): Promise<number> {
    const { db, keyring } = this.deps;
    const retention = ((await findPolicy(db, instanceId)) ?? this.deps.config.backupPolicy).retention;
    const all = await listBackupsOfInstance(db, keyring, instanceId);
    const ids = new Set(prunable(all, retention, at));
    for (const b of all) if (ids.has(b.id)) await this.deps.remove(b);
    if (ids.size > 0) this.deps.log.info({ instance: instanceId, removed: ids.size }, 'retention removed backups');
    return ids.size;
  }

  /**
   * Runs the restore asked for the instance, if any, from within its reconcile pass (the engines
   * run; nothing else touches them meanwhile). Undefined when none was asked for.
   */
  async runRestore(inst: Instance, target: Target, ctx: StepContext): Promise<RestoreOutcome | undefined> {
    const { db, keyring, now, log, events } = this.deps;
    const restore = await findActiveRestore(db, inst.id);
    if (!restore) return undefined;
    const t0 = performance.now();
    await updateRestore(db, restore.id, { state: 'RUNNING', startedAt: restore.startedAt ?? now(), step: 'reading' });
    events?.started('restore', restore.id, inst.id);
    try {
      const backup = await findBackup(db, keyring, restore.backupId);
      if (!backup || backup.state !== 'COMPLETED') throw new Error(`backup ${restore.backupId} no longer exists`);
      const driver = target.engines.require(inst.service).backups;
      if (!driver) throw new Error(`backups of ${inst.service} are not supported`);
      let raw;
      try {
        raw = await this.deps.storage.get(backup.storageKey);
      } catch (err) {
        if (err instanceof StorageError && err.kind === 'not-found') throw new Error('its object is missing from the backup storage');
        throw err;
      }
      const source = chain(raw, decryptStream(backup.dataKey), verifyStream({ sha256: backup.sha256!, sizeBytes: backup.sizeBytes! }));
      const spec = toSpec(inst);
      const stepping: StepContext = {
        ...(ctx.signal ? { signal: ctx.signal } : {}),
        step: (name) => {
          ctx.step(name);
          events?.step('restore', restore.id, name);
          void updateRestore(db, restore.id, { step: name }).catch(() => {});
        },
      };
      await driver.restore(spec, target.runtime.place(spec), source, stepping);
      await updateRestore(db, restore.id, { state: 'COMPLETED', step: null, finishedAt: now() });
      const seconds = (performance.now() - t0) / 1000;
      log.info({ restore: restore.id, instance: inst.id, backup: backup.id, seconds }, 'restore completed');
      events?.finished('restore', restore.id, { state: 'COMPLETED', seconds, service: inst.service, bytes: backup.sizeBytes ?? 0 });
      return { restore, ok: true };
    } catch (err) {
      // A cancelled pass (shutdown, lost claim) is carried on by the next one.
      if (ctx.signal?.aborted) throw err;
      const reason = reasonOf(err);
      await updateRestore(db, restore.id, { state: 'FAILED', stateReason: reason, step: null, finishedAt: now() });
      log.warn({ restore: restore.id, instance: inst.id, reason }, 'restore failed');
      events?.finished('restore', restore.id, { state: 'FAILED', reason, seconds: (performance.now() - t0) / 1000, service: inst.service });
      return { restore, ok: false, reason };
    }
  }

  /** Fails the restores still asked for an instance that is deleted or failed to build. */
  async cancelRestores(instanceId: string, reason: string): Promise<void> {
    await failActiveRestores(this.deps.db, instanceId, reason, this.deps.now());
  }
}

/** A failure in words for the record: the storage's, the engine's, or a cut. */
function reasonOf(err: unknown, signal?: AbortSignal): string {
  if (signal?.aborted) return 'hangar stopped (or lost the backup to another replica) while it ran; take a new one';
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof StorageError) return `the backup storage failed: ${message}`;
  if (/no space left/i.test(message)) return `no space left: ${message}`;
  return message;
}
