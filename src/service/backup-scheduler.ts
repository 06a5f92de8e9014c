import type { Logger } from 'pino';
import type { Keyring } from '../lib/secrets.js';
import { nextRunAfter } from '../domain/backups.js';
import { SERVING_STATES } from '../domain/model.js';
import { findActiveBackup, listInstanceIdsWithBackups } from '../store/backup-repository.js';
import { advancePolicy, deleteOrphanPolicies, listDuePolicies } from '../store/backup-policy-repository.js';
import type { Db } from '../store/database.js';
import { lockEvents } from '../store/event-repository.js';
import { findInstanceById } from '../store/instance-repository.js';
import type { BackupService } from './backups.js';
import { NO_ORIGIN } from './deps.js';
import type { BackupRunner } from './backup-runner.js';
import { Ticker } from '../lib/ticker.js';

export interface BackupSchedulerDeps {
  readonly db: Db;
  readonly keyring: Keyring;
  readonly log: Logger;
  /** The clock schedules are read with (tests move it). */
  readonly now: () => number;
  readonly backups: BackupService;
  readonly runner: BackupRunner;
}

/** How often every replica looks for due schedules and applies retention. */
const TICK_MS = 15_000;

/**
 * Fires backup schedules and applies retention. Every replica ticks; a due schedule is moved on
 * to its next run and its backup recorded in one transaction, and the move is conditional on the
 * schedule still being due, so of several replicas on one PostgreSQL exactly one records it. A
 * hangar that was down fires a missed schedule once when it is back (not once per missed run).
 */
export class BackupScheduler {
  private readonly ticker: Ticker;

  constructor(private readonly deps: BackupSchedulerDeps) {
    this.ticker = new Ticker(
      () => this.run(),
      TICK_MS,
      (err) => deps.log.warn({ err }, 'backup schedule tick failed'),
    );
  }

  start(): void {
    this.ticker.start({ now: true });
  }

  stop(): Promise<void> {
    return this.ticker.stop();
  }

  /** One look at the schedules and retention (or the end of the look in progress); resolves with the backups it recorded. */
  tick(): Promise<void> {
    return this.ticker.tick();
  }

  private async run(): Promise<void> {
    await this.fire();
    await this.retain();
  }

  private async fire(): Promise<void> {
    const { db, keyring, log, now, backups } = this.deps;
    const at = now();
    for (const p of await listDuePolicies(db, at)) {
      const inst = await findInstanceById(db, keyring, p.instanceId);
      const next = inst && !inst.deleting ? nextRunAfter(p.schedule, at) : null;
      try {
        const recorded = await db.transaction().execute(async (trx) => {
          // The backup's operation appends an event: the events lock comes first (PostgreSQL).
          await lockEvents(trx);
          if (!(await advancePolicy(trx, p.instanceId, p.nextRunAt!, next))) return undefined;
          if (!inst || inst.deleting) return undefined;
          if (!SERVING_STATES.includes(inst.state) || inst.state === 'RESIZING') {
            log.warn({ instance: inst.id, state: inst.state }, 'scheduled backup skipped: the instance is not serving');
            return undefined;
          }
          if (inst.engine !== inst.desiredEngine) {
            // which engine's snapshot it would be is not known until the switch is over
            log.warn({ instance: inst.id, to: inst.desiredEngine }, 'scheduled backup skipped: the instance is switching engines');
            return undefined;
          }
          const active = await findActiveBackup(trx, inst.id);
          if (active) {
            log.warn({ instance: inst.id, backup: active.id }, 'scheduled backup skipped: a backup is in progress');
            return undefined;
          }
          return (await backups.record(inst, true, NO_ORIGIN, trx)).result;
        });
        if (recorded) log.info({ instance: p.instanceId, backup: recorded.id }, 'scheduled backup recorded');
      } catch (err) {
        log.warn({ err, instance: p.instanceId }, 'scheduled backup not recorded');
      }
    }
    this.deps.runner.wake();
  }

  /** Retention for every instance with backups, deleted ones included; policies of instances gone without backups go too. */
  private async retain(): Promise<void> {
    const { db, log } = this.deps;
    const ids = await listInstanceIdsWithBackups(db);
    for (const id of ids)
      await this.deps.runner.prune(id, this.deps.now()).catch((err: unknown) => log.warn({ err, instance: id }, 'retention failed'));
    await deleteOrphanPolicies(db);
  }
}
