import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { Digest, encryptStream } from '../lib/backup-crypto.js';
import type { Keyring } from '../lib/secrets.js';
import { chain } from '../lib/streams.js';
import { prunable, type Backup } from '../domain/backups.js';
import { SERVING_STATES, type Instance } from '../domain/model.js';
import { toSpec } from '../engines/spec.js';
import { throwIfCancelled, type InstanceSpec, type StepContext } from '../domain/units.js';
import type { Target, Targets } from '../reconciler/reconcile-instance.js';
import { StorageError, type BackupStorage } from '../storage/index.js';
import {
  claimBackup,
  failAbandonedBackup,
  findBackup,
  finishBackup,
  listBackupsOfInstance,
  listPendingBackupIds,
  listRunningBackups,
  renewBackup,
} from '../store/backup-repository.js';
import { findPolicy } from '../store/backup-policy-repository.js';
import type { Db } from '../store/database.js';
import { findInstanceById } from '../store/instance-repository.js';
import { OperationConflict } from '../store/operation-log.js';
import type { WorkQueue } from './deps.js';

export type FlowKind = 'backup' | 'restore';

/** A step of a backup or a restore: its name, what it says, and how far the work is (0-100). */
export interface FlowStep {
  readonly name: string;
  readonly message?: string;
  readonly progress?: number;
}

/** How a backup or a restore ended, for its operation. */
export type FlowOutcome =
  | { readonly state: 'SUCCEEDED'; readonly message?: string; readonly detail?: Readonly<Record<string, unknown>> }
  | { readonly state: 'FAILED'; readonly code: string; readonly message: string }
  | { readonly state: 'CANCELLED'; readonly message: string };

/**
 * What a backup or a restore reports, start to finish, to the operation that follows it (the
 * operation has the backup's or the restore's id: OperationFlow). An answer `false` means the
 * operation is no longer open (cancelled, or failed by its deadline): the work stops.
 */
export interface BackupFlowEvents {
  /** A step of the work; the first turns its operation RUNNING. False: stop. */
  step(kind: FlowKind, id: string, step: FlowStep): Promise<boolean>;
  /** Undefined while the work may go on; else why it must stop (who cancelled it, the deadline it missed). */
  stopped(kind: FlowKind, id: string): Promise<string | undefined>;
  /**
   * The outcome, written in `trx` (the transaction that records it on the backup or the restore)
   * as its first write. False when the operation was closed first: the work did not succeed.
   */
  finished(kind: FlowKind, id: string, outcome: FlowOutcome, trx: Db): Promise<boolean>;
  /** The ids of the open flows of `kind` (of one instance). */
  open(kind: FlowKind, instanceId?: string): Promise<string[]>;
}

/** Where the duration of each backup and restore is reported. */
export interface BackupMetrics {
  observeBackup(kind: FlowKind, service: string, outcome: 'completed' | 'failed', seconds: number): void;
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
  /** Passes of an instance: one is waited for when its engines do not serve yet (hangar just started). */
  readonly work: WorkQueue;
  /** The operations that follow backups and restores; undefined: nothing is reported. */
  readonly events?: BackupFlowEvents;
  readonly metrics?: BackupMetrics;
}

/** How often the owner looks for backups to run. */
const POLL_MS = 250;
/** Backups running at once on one replica. */
const CONCURRENCY = 2;
/** How often RUNNING backups of dead replicas are looked for (at start, then this often). */
const ABANDONED_SWEEP_MS = 2000;
/** How often a running backup's or restore's operation is looked at (a cancel, a deadline stops the work). */
export const WATCH_MS = 250;
/** How long a backup waits for a pass of an instance whose engines do not serve (yet). */
const SETTLE_MS = 30_000;

/**
 * Runs backups. A backup: claimed (PENDING -> RUNNING, under a lease renewed while it runs),
 * snapshot taken by the engine, streamed through SHA-256 and AES-256-GCM to the storage, recorded
 * COMPLETED or FAILED with the reason, then retention. Its operation follows each step; the
 * operation's end is written with the backup's, in one transaction, so that the two never tell
 * different stories. A cancel or a missed deadline stops the work (the storage upload is cut):
 * the backup is FAILED saying so and nothing of it is kept. A backup whose replica died is
 * recorded FAILED and its object removed: it is never left RUNNING, and nothing half written is
 * ever listed. Restores are RestoreRunner's.
 */
export class BackupRunner {
  private readonly running = new Map<string, AbortController>();
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private stopped = true;
  /** When abandoned backups were last looked for. */
  private lastSweep = 0;
  /** Run at each sweep, after abandoned backups (open restore operations are settled there). */
  private readonly sweeps: (() => Promise<void>)[] = [];

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

  /** Runs `sweep` with each look for abandoned work (on the owner). */
  onSweep(sweep: () => Promise<void>): void {
    this.sweeps.push(sweep);
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
      for (const sweep of this.sweeps) await sweep().catch((err: unknown) => this.deps.log.warn({ err }, 'backup sweep failed'));
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
    const { db, now, events } = this.deps;
    for (const b of await listRunningBackups(db)) {
      if (this.running.has(b.id)) continue;
      const dead = b.owner === null || (b.expiresAt ?? 0) < now() || this.deps.ownerIsDead(b.owner);
      if (!dead) continue;
      const reason = 'hangar stopped while the backup ran; nothing of it was kept: take a new one';
      const failed = await inTransaction(db, async (trx) => {
        await events?.finished('backup', b.id, { state: 'FAILED', code: 'BACKUP_FAILED', message: reason }, trx);
        return failAbandonedBackup(trx, b.id, b.owner, reason, now());
      });
      if (failed) {
        await this.deps.storage
          .remove(b.storageKey)
          .catch((err: unknown) => this.deps.log.warn({ err, backup: b.id }, 'removing what an interrupted backup left'));
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
    let step = 'claimed';
    /** Why the work was stopped from outside (a cancel, a deadline); undefined: it was not. */
    let stoppedBy: string | undefined;
    const stop = (why: string) => {
      stoppedBy ??= why;
      controller.abort();
    };
    const renew = setInterval(() => {
      renewBackup(db, id, owner, now(), ttl, step).then(
        (held) => held || controller.abort(),
        () => {},
      );
    }, ttl / 3);
    // Its operation is looked at while the work runs, not only between steps: a cancel or a
    // deadline stops an upload in the middle.
    const watch = setInterval(() => {
      events?.stopped('backup', id).then(
        (why) => why !== undefined && stop(why),
        () => {},
      );
    }, WATCH_MS);
    const ctx = this.deps.steps(controller.signal);
    const mark = async (name: string, progress: number) => {
      step = name;
      await renewBackup(db, id, owner, now(), ttl, name);
      if (events && !(await events.step('backup', id, { name, progress })))
        stop((await events.stopped('backup', id)) ?? 'its operation is no longer open');
      throwIfCancelled(controller.signal, `the backup's ${name} step`);
    };
    let stored = false;
    try {
      await mark('started', 5);
      const inst = await findInstanceById(db, keyring, backup.instanceId);
      if (!inst || inst.deleting) throw new Error('the instance was deleted before its backup ran');
      if (!SERVING_STATES.includes(inst.state) || inst.state === 'RESIZING')
        throw new Error(`the instance was ${inst.state} when its backup was to run`);
      const target = this.target(inst);
      const driver = target.engines.require(inst.engine).backups;
      if (!driver) throw new Error(`backups of ${inst.service} are not supported`);
      const spec = toSpec(inst);
      await this.assertServing(inst, target, spec, controller.signal);
      await mark('snapshot', 10);
      const snapshot = await driver.snapshot(spec, target.runtime.place(spec), ctx);
      ctx.step('backup:snapshot-taken');
      await mark('storing', 50);
      const digest = new Digest();
      stored = true;
      await this.deps.storage.put(backup.storageKey, chain(snapshot.stream, digest, encryptStream(backup.dataKey)), controller.signal);
      ctx.step('backup:stored');
      const outcome = await inTransaction(db, async (trx) => {
        // The operation first (the events lock comes before anything else), and only while it is
        // open: a cancel that came first wins, and the backup is not COMPLETED.
        const message = `${digest.bytes} bytes stored at ${backup.location}`;
        const detail = { backup_id: id, size_bytes: digest.bytes, sha256: digest.sha256 };
        if (events && !(await events.finished('backup', id, { state: 'SUCCEEDED', message, detail }, trx))) return 'closed';
        const done = await finishBackup(
          trx,
          id,
          {
            state: 'COMPLETED',
            sizeBytes: digest.bytes,
            sha256: digest.sha256,
            usedBytes: snapshot.usedBytes,
            engineVersion: snapshot.engineVersion,
            finishedAt: now(),
          },
          { owner },
        );
        // Another replica took it as abandoned meanwhile (and recorded it FAILED): what was stored goes.
        if (!done) throw new Error('this replica lost the backup to another');
        return 'done';
      });
      if (outcome === 'closed') {
        stop((await events?.stopped('backup', id)) ?? 'its operation is no longer open');
        throw new Error('stopped');
      }
      const seconds = (performance.now() - t0) / 1000;
      log.info({ backup: id, instance: backup.instanceId, bytes: digest.bytes, seconds }, 'backup completed');
      this.deps.metrics?.observeBackup('backup', backup.service, 'completed', seconds);
      await this.prune(backup.instanceId).catch((err: unknown) => log.warn({ err, instance: backup.instanceId }, 'retention failed'));
    } catch (err) {
      const reason = stoppedBy !== undefined ? `${stoppedBy}; nothing of it was kept` : reasonOf(err, controller.signal);
      const code = err instanceof StorageError ? 'BACKUP_STORAGE_UNAVAILABLE' : 'BACKUP_FAILED';
      // Recorded first, then what the upload may have left is removed, in the background: a
      // storage that does not answer holds neither the record nor the runner's place.
      await inTransaction(db, async (trx) => {
        await events?.finished('backup', id, { state: 'FAILED', code, message: reason }, trx);
        await finishBackup(trx, id, { state: 'FAILED', stateReason: reason, finishedAt: now() }, { owner });
      }).catch((e: unknown) => log.warn({ err: e, backup: id }, 'recording a failed backup'));
      log.warn({ backup: id, instance: backup.instanceId, reason }, 'backup failed');
      this.deps.metrics?.observeBackup('backup', backup.service, 'failed', (performance.now() - t0) / 1000);
      if (stored)
        void this.deps.storage
          .remove(backup.storageKey)
          .catch((e: unknown) => log.warn({ err: e, backup: id }, 'removing what a failed backup left'));
    } finally {
      clearInterval(renew);
      clearInterval(watch);
    }
  }

  /**
   * Right after hangar starts, an instance's engines may not be back yet (the emulated runtime
   * holds nothing, a rebooted host runs nothing): a pass of the instance is waited for before
   * the snapshot, and an instance that still does not serve fails the backup saying why.
   */
  private async assertServing(inst: Instance, target: Target, spec: InstanceSpec, signal: AbortSignal): Promise<void> {
    const engine = target.engines.require(inst.engine);
    const check = () =>
      Promise.resolve()
        .then(() => target.runtime.checkInstance(spec, engine))
        .catch((err: unknown) => ({ healthy: false, reason: err instanceof Error ? err.message : String(err) }));
    if ((await check()).healthy) return;
    const settled = this.deps.work.settle(inst.id, SETTLE_MS);
    this.deps.work.enqueue(inst.id);
    await settled;
    throwIfCancelled(signal, 'waiting for the instance to serve');
    const health = await check();
    if (!health.healthy) throw new Error(`the instance does not serve: ${health.reason ?? 'no reason given'}`);
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
}

/** Attempts at a transaction that another replica's change of the same operation keeps beating. */
const ATTEMPTS = 5;

/** Runs `work` in a transaction, again when an operation it changes moved meanwhile. */
export async function inTransaction<T>(db: Db, work: (trx: Db) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction().execute(work);
    } catch (err) {
      if (!(err instanceof OperationConflict) || attempt >= ATTEMPTS) throw err;
    }
  }
}

/** A failure in words for the record: the storage's, the engine's, or a cut. */
export function reasonOf(err: unknown, signal?: AbortSignal): string {
  if (signal?.aborted) return 'hangar stopped (or lost the backup to another replica) while it ran; take a new one';
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof StorageError) return `the backup storage failed: ${message}`;
  if (/no space left/i.test(message)) return `no space left: ${message}`;
  return message;
}
