import { PassThrough, type Readable } from 'node:stream';
import type { Logger } from 'pino';
import { BackupIntegrityError, decryptStream, verifyStream } from '../lib/backup-crypto.js';
import type { Keyring } from '../lib/secrets.js';
import { chain } from '../lib/streams.js';
import type { Restore } from '../domain/backups.js';
import { READY_STATES, type Instance } from '../domain/model.js';
import { throwIfCancelled, type InstanceSpec, type StepContext } from '../domain/units.js';
import type { RestoreResult, Restores, Target } from '../reconciler/reconcile-instance.js';
import { StorageError, type BackupStorage } from '../storage/index.js';
import { failActiveRestores, findActiveRestore, findBackup, findRestore, updateRestore } from '../store/backup-repository.js';
import type { Db } from '../store/database.js';
import { findInstanceStatuses } from '../store/instance-repository.js';
import { WATCH_MS, inTransaction, reasonOf, type BackupFlowEvents, type BackupMetrics, type FlowOutcome } from './backup-runner.js';

export interface RestoreRunnerDeps {
  readonly db: Db;
  readonly keyring: Keyring;
  readonly storage: BackupStorage;
  readonly log: Logger;
  readonly now: () => number;
  /** The `restore` operations that follow restores; undefined: nothing is reported. */
  readonly events?: BackupFlowEvents;
  readonly metrics?: BackupMetrics;
}

/** A restore that failed because of the backup itself (not the one taken): said so in its operation. */
class CorruptBackup extends Error {}

/**
 * Runs restores, inside the reconcile pass of their instance (the reconciler calls `runRestore`),
 * so that nothing else touches the instance's engines meanwhile. Each restore is followed by the
 * `restore` operation of the same id: its steps and progress as the engine reports them; FAILED
 * with the reason when the restore fails (in one transaction with the restore's record); and
 * SUCCEEDED once the instance serves the restored data again (`settleRestores`, at the end of the
 * pass, and at each sweep for a pass cut short). A restore past its deadline is stopped while the
 * backup is still being read (the instance untouched); once its data is being replaced it is
 * carried to its end rather than left half done.
 */
export class RestoreRunner implements Restores {
  constructor(private readonly deps: RestoreRunnerDeps) {}

  async runRestore(inst: Instance, target: Target, ctx: StepContext, spec: InstanceSpec): Promise<RestoreResult | undefined> {
    const { db, keyring, now, log, events } = this.deps;
    const restore = await findActiveRestore(db, inst.id);
    if (!restore) return undefined;
    const t0 = performance.now();
    await updateRestore(db, restore.id, { state: 'RUNNING', startedAt: restore.startedAt ?? now(), step: 'reading' });
    // The work's own signal: the pass's (shutdown, lost claim), and the operation's end (a
    // deadline) until the backup has been read whole.
    const guard = new AbortController();
    let committed = false;
    let stoppedBy: string | undefined;
    const stop = (why: string) => {
      if (committed || stoppedBy !== undefined) return;
      stoppedBy = why;
      guard.abort();
    };
    const onPassAbort = () => guard.abort();
    if (ctx.signal?.aborted) guard.abort();
    ctx.signal?.addEventListener('abort', onPassAbort, { once: true });
    const watch = setInterval(() => {
      events?.stopped('restore', restore.id).then(
        (why) => why !== undefined && stop(why),
        () => {},
      );
    }, WATCH_MS);
    // Steps of the engine come synchronously; they reach the operation in order.
    let reported: Promise<unknown> = Promise.resolve();
    const report = (name: string, progress: number) => {
      reported = reported.then(() => events?.step('restore', restore.id, { name, progress })).catch(() => {});
    };
    try {
      if (events && !(await events.step('restore', restore.id, { name: 'reading', progress: 10 })))
        stop((await events.stopped('restore', restore.id)) ?? 'its operation is no longer open');
      throwIfCancelled(guard.signal, 'reading the backup');
      const backup = await findBackup(db, keyring, restore.backupId);
      if (backup?.state !== 'COMPLETED') throw new Error(`backup ${restore.backupId} no longer exists`);
      const driver = target.engines.require(inst.engine).backups;
      if (!driver) throw new Error(`backups of ${inst.service} are not supported`);
      let raw: Readable;
      try {
        raw = await this.deps.storage.get(backup.storageKey);
      } catch (err) {
        if (err instanceof StorageError && err.kind === 'not-found')
          throw new CorruptBackup('its object is missing from the backup storage');
        throw err;
      }
      const checked = chain(raw, decryptStream(backup.dataKey), verifyStream({ sha256: backup.sha256!, sizeBytes: backup.sizeBytes! }));
      // Read whole and checked: the engine replaces the data from here on (BackupDriver.restore).
      const source = chain(
        checked,
        whenEnded(() => (committed = true)),
      );
      let steps = 0;
      const stepping: StepContext = {
        signal: guard.signal,
        step: (name) => {
          ctx.step(name);
          throwIfCancelled(guard.signal, name);
          steps++;
          report(name, Math.min(80, 20 + 20 * steps));
          void updateRestore(db, restore.id, { step: name }).catch(() => {});
        },
      };
      try {
        await driver.restore(spec, target.runtime.place(spec), source, stepping);
      } catch (err) {
        if (err instanceof BackupIntegrityError) throw new CorruptBackup(err.message);
        throw err;
      }
      await updateRestore(db, restore.id, { state: 'COMPLETED', step: null, finishedAt: now() });
      report('restored', 90);
      await reported;
      const seconds = (performance.now() - t0) / 1000;
      log.info({ restore: restore.id, instance: inst.id, backup: backup.id, seconds }, 'restore completed');
      this.deps.metrics?.observeBackup('restore', inst.service, 'completed', seconds);
      return { restore, ok: true };
    } catch (err) {
      // A cancelled pass (shutdown, lost claim) is carried on by the next one.
      if (ctx.signal?.aborted) throw err;
      await reported;
      const reason = stoppedBy ?? reasonOf(err);
      const code = err instanceof CorruptBackup ? 'BACKUP_CORRUPT' : 'RESTORE_FAILED';
      await inTransaction(db, async (trx) => {
        await events?.finished('restore', restore.id, { state: 'FAILED', code, message: reason }, trx);
        await updateRestore(trx, restore.id, { state: 'FAILED', stateReason: reason, step: null, finishedAt: now() });
      });
      log.warn({ restore: restore.id, instance: inst.id, reason }, 'restore failed');
      this.deps.metrics?.observeBackup('restore', inst.service, 'failed', (performance.now() - t0) / 1000);
      return { restore, ok: false, reason };
    } finally {
      clearInterval(watch);
      ctx.signal?.removeEventListener('abort', onPassAbort);
    }
  }

  /** Fails the restores still asked for an instance that is deleted (their operations CANCELLED) or failed to build. */
  async cancelRestores(instanceId: string, reason: string, why: 'deleted' | 'failed'): Promise<void> {
    const { db, events, now } = this.deps;
    const outcome: FlowOutcome =
      why === 'deleted' ? { state: 'CANCELLED', message: reason } : { state: 'FAILED', code: 'INSTANCE_FAILED', message: reason };
    for (const id of (await events?.open('restore', instanceId)) ?? []) {
      await inTransaction(db, (trx) => events!.finished('restore', id, outcome, trx));
    }
    await failActiveRestores(db, instanceId, reason, now());
  }

  /**
   * Finishes the operations of the instance's restores (of every instance when left out) that
   * have ended: SUCCEEDED once the restore is COMPLETED and the instance serves again, FAILED as
   * the restore did, CANCELLED when the instance is gone.
   */
  async settleRestores(instanceId?: string): Promise<void> {
    const { db, events } = this.deps;
    if (!events) return;
    for (const id of await events.open('restore', instanceId)) {
      const restore = await findRestore(db, id);
      const outcome = await this.outcomeOf(restore);
      if (outcome) await inTransaction(db, (trx) => events.finished('restore', id, outcome, trx));
    }
  }

  private async outcomeOf(restore: Restore | undefined): Promise<FlowOutcome | undefined> {
    // every restore operation is started with its restore; one without is left to its deadline
    if (!restore) return undefined;
    if (restore.state === 'FAILED')
      return { state: 'FAILED', code: 'RESTORE_FAILED', message: restore.stateReason ?? 'the restore failed' };
    if (restore.state !== 'COMPLETED') return undefined;
    const inst = (await findInstanceStatuses(this.deps.db, [restore.instanceId])).get(restore.instanceId);
    if (!inst || inst.deleting)
      return { state: 'CANCELLED', message: `instance "${restore.instanceName}" was deleted before it served the restored data` };
    if (!READY_STATES.includes(inst.state)) return undefined;
    return {
      state: 'SUCCEEDED',
      message: `backup ${restore.backupId} restored; instance "${restore.instanceName}" serves it`,
      detail: { backup_id: restore.backupId },
    };
  }
}

/** Passes everything through and calls `ended` once the source has ended without error. */
function whenEnded(ended: () => void): PassThrough {
  const pass = new PassThrough();
  pass.on('end', ended);
  return pass;
}
