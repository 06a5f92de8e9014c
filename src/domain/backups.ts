import type { Service } from './catalog.js';

/**
 * Backups, restores and backup policies: the records and the pure rules (when a schedule fires
 * next, which backups retention keeps). No I/O here.
 */

export const BACKUP_STATES = ['PENDING', 'RUNNING', 'COMPLETED', 'FAILED'] as const;
export type BackupState = (typeof BACKUP_STATES)[number];
/** States in which a backup is still being made (at most one per instance). */
export const ACTIVE_BACKUP_STATES: readonly BackupState[] = ['PENDING', 'RUNNING'];

export interface Backup {
  readonly id: string;
  readonly accountId: string;
  readonly instanceId: string;
  /** The instance's name when the backup was asked for. */
  readonly instanceName: string;
  readonly service: Service;
  /**
   * The product that took it (`redis`, `valkey`, ...): what it can be restored into depends on it.
   * Null for one taken before hangar recorded it, of an instance deleted since.
   */
  readonly engine: string | null;
  /** The engine's version (as the engine reported it once the snapshot was taken; the instance's before). */
  readonly engineVersion: string;
  readonly zone: string;
  /** The instance's plan when the backup was asked for. */
  readonly plan: number;
  /** What the artifact is: `rdb`, `mongodb-archive`, `elasticsearch-snapshot`, `emulated`. */
  readonly format: string;
  readonly state: BackupState;
  readonly stateReason: string | null;
  /** The step a running backup is at (for progress), null before and after. */
  readonly step: string | null;
  readonly scheduled: boolean;
  /** Where the encrypted object is kept, relative to the storage (`<instance id>/<backup id>.rdb.hgb`). */
  readonly storageKey: string;
  /** Where it is, for people (`file:///...`, `s3://bucket/key`): never a credential. */
  readonly location: string;
  /** Size of the snapshot itself (decrypted), in bytes. */
  readonly sizeBytes: number | null;
  /** SHA-256 of the snapshot itself (decrypted), hex. */
  readonly sha256: string | null;
  /** Memory (redis) or data size the instance used when the snapshot was taken, in bytes. */
  readonly usedBytes: number | null;
  /** The data key the object is encrypted with (AES-256), unsealed from the store. */
  readonly dataKey: Buffer;
  readonly requestedAt: number;
  readonly startedAt: number | null;
  readonly finishedAt: number | null;
}

export type RestoreState = BackupState;

/** A restore of a backup into an instance: in place, or into a new instance created with `restore_from`. */
export interface Restore {
  readonly id: string;
  readonly accountId: string;
  readonly instanceId: string;
  readonly instanceName: string;
  readonly backupId: string;
  readonly kind: 'in_place' | 'new_instance';
  readonly state: RestoreState;
  readonly stateReason: string | null;
  readonly step: string | null;
  readonly requestedAt: number;
  readonly startedAt: number | null;
  readonly finishedAt: number | null;
}

/** When backups are taken: never, every N hours, or every day at a time of day (UTC). */
export type BackupSchedule =
  | { readonly kind: 'off' }
  | { readonly kind: 'every'; readonly hours: number }
  | { readonly kind: 'daily'; readonly minuteOfDay: number };

/** Which backups are kept: the last K and/or those of the last D days; neither: all. */
export interface Retention {
  readonly keepLast: number | null;
  readonly keepDays: number | null;
}

export interface BackupPolicy {
  readonly schedule: BackupSchedule;
  readonly retention: Retention;
}

export const NO_POLICY: BackupPolicy = { schedule: { kind: 'off' }, retention: { keepLast: null, keepDays: null } };

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const MINUTE = 60_000;

/** `HH:MM` of a minute of the day. */
export function formatTimeOfDay(minuteOfDay: number): string {
  return `${String(Math.floor(minuteOfDay / 60)).padStart(2, '0')}:${String(minuteOfDay % 60).padStart(2, '0')}`;
}

/** The minute of the day of `HH:MM` (24 h, UTC), or undefined when it is not one. */
export function parseTimeOfDay(text: string): number | undefined {
  const m = /^([01]\d|2[0-3]):([0-5]\d)$/.exec(text);
  return m ? Number(m[1]) * 60 + Number(m[2]) : undefined;
}

/**
 * When a schedule fires next, strictly after `after` (epoch ms); null when it is off. "Every N
 * hours" counts from `after` (the last run, or when the policy was set); "daily at HH:MM" is the
 * next such minute in UTC.
 */
export function nextRunAfter(schedule: BackupSchedule, after: number): number | null {
  switch (schedule.kind) {
    case 'off':
      return null;
    case 'every':
      return after + schedule.hours * HOUR;
    case 'daily': {
      const midnight = Math.floor(after / DAY) * DAY;
      const today = midnight + schedule.minuteOfDay * MINUTE;
      return today > after ? today : today + DAY;
    }
  }
}

/**
 * The backups retention removes, of one instance's finished backups (COMPLETED or FAILED).
 * A backup is kept when it is among the last `keepLast` completed ones, or finished within
 * `keepDays` days of `now`; with neither set, every backup is kept. A failed one is removed
 * like a completed one of its age (it counts towards no `keepLast`).
 */
export function prunable(
  backups: readonly Pick<Backup, 'id' | 'state' | 'finishedAt' | 'requestedAt'>[],
  retention: Retention,
  now: number,
): string[] {
  const { keepLast, keepDays } = retention;
  if (keepLast === null && keepDays === null) return [];
  const finished = backups
    .filter((b) => b.state === 'COMPLETED' || b.state === 'FAILED')
    .sort((a, b) => (b.finishedAt ?? b.requestedAt) - (a.finishedAt ?? a.requestedAt));
  const out: string[] = [];
  let newerCompleted = 0;
  for (const b of finished) {
    const inLast = keepLast !== null && b.state === 'COMPLETED' && newerCompleted < keepLast;
    const recent = keepDays !== null && now - (b.finishedAt ?? b.requestedAt) <= keepDays * DAY;
    if (!inLast && !recent) out.push(b.id);
    if (b.state === 'COMPLETED') newerCompleted++;
  }
  return out;
}

/**
 * A policy from its text form, as the HANGAR_BACKUP_POLICY setting writes it: `off`,
 * `every=6h`, `daily=03:00`, then optionally `keep=7` and `days=30`, comma-separated
 * (`daily=03:00,keep=7`). Throws an Error naming what is wrong.
 */
export function parsePolicy(text: string): BackupPolicy {
  const parts = text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  let schedule: BackupSchedule | undefined;
  let keepLast: number | null = null;
  let keepDays: number | null = null;
  const positive = (v: string, what: string) => {
    if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > 100_000) throw new Error(`${what} must be a positive integer, got "${v}"`);
    return Number(v);
  };
  for (const part of parts) {
    const [key, value = ''] = part.split(/=(.*)/s) as [string, string?];
    if (key === 'off' && value === '' && schedule === undefined) schedule = { kind: 'off' };
    else if (key === 'every' && schedule === undefined) schedule = { kind: 'every', hours: positive(value.replace(/h$/, ''), 'every=Nh') };
    else if (key === 'daily' && schedule === undefined) {
      const minute = parseTimeOfDay(value);
      if (minute === undefined) throw new Error(`daily= takes a time HH:MM (UTC), got "${value}"`);
      schedule = { kind: 'daily', minuteOfDay: minute };
    } else if (key === 'keep') keepLast = positive(value, 'keep=K');
    else if (key === 'days') keepDays = positive(value, 'days=D');
    else throw new Error(`"${part}" is not part of a backup policy (off, every=Nh, daily=HH:MM, keep=K, days=D)`);
  }
  return { schedule: schedule ?? { kind: 'off' }, retention: { keepLast, keepDays } };
}

/** The text form of a policy (parsePolicy reads it back). */
export function formatPolicy(p: BackupPolicy): string {
  const s = p.schedule;
  const parts = [s.kind === 'off' ? 'off' : s.kind === 'every' ? `every=${s.hours}h` : `daily=${formatTimeOfDay(s.minuteOfDay)}`];
  if (p.retention.keepLast !== null) parts.push(`keep=${p.retention.keepLast}`);
  if (p.retention.keepDays !== null) parts.push(`days=${p.retention.keepDays}`);
  return parts.join(',');
}
