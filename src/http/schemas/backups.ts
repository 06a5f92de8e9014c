import { Type, type Static } from 'typebox';
import { InstanceNameParam } from './common.js';

export const BACKUP_EXAMPLE = {
  id: '6560a1f2c3d4e5f607182950',
  instance_id: '6560a1f2c3d4e5f607182930',
  instance_name: 'cache',
  service: 'redis',
  engine: 'redis',
  engine_version: '7.0.15',
  format: 'rdb',
  state: 'COMPLETED',
  state_reason: null,
  step: null,
  trigger: 'on_demand',
  scheduled: false,
  requested: '2026-11-26 03:00:00',
  started: '2026-11-26 03:00:00',
  finished: '2026-11-26 03:00:02',
  size_bytes: 104_857_600,
  sha256: '2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae',
  used_memory_bytes: 118_112_256,
  location: 'file:///var/lib/hangar/backups/6560a1f2c3d4e5f607182930/6560a1f2c3d4e5f607182950.rdb.hgb',
};

export const PENDING_BACKUP_EXAMPLE = {
  ...BACKUP_EXAMPLE,
  state: 'PENDING',
  started: null,
  finished: null,
  size_bytes: null,
  sha256: null,
  used_memory_bytes: null,
};

const time = (what: string) => Type.Union([Type.String(), Type.Null()], { description: `${what} (YYYY-MM-DD HH:MM:SS, UTC), or null` });
const count = (what: string) => Type.Union([Type.Integer(), Type.Null()], { description: what });

export const BackupRecord = Type.Object(
  {
    id: Type.String({ pattern: '^[0-9a-f]{24}$', description: 'The backup id (restore_from, backup_id)' }),
    instance_id: Type.String({ description: 'Id of the instance backed up (it may be deleted since)' }),
    instance_name: Type.String({ description: 'Name of the instance when the backup was asked for' }),
    service: Type.String({ description: 'redis, mongodb or elasticsearch' }),
    engine: Type.Union([Type.String(), Type.Null()], {
      description:
        'The engine that took it (redis, valkey, mongod, ferretdb, elasticsearch, opensearch; an addition to the spec): a Valkey backup is not restored into a Redis instance. null for a backup taken before hangar recorded it, of an instance deleted since',
    }),
    engine_version: Type.String({ description: 'Version of the engine the snapshot was taken of' }),
    format: Type.String({
      description: 'rdb (redis), mongodb-archive (mongodump --archive --gzip), elasticsearch-snapshot (a snapshot repository, tar)',
    }),
    state: Type.String({ description: 'PENDING, RUNNING, COMPLETED or FAILED' }),
    state_reason: Type.Union([Type.String(), Type.Null()], { description: 'Why it FAILED' }),
    step: Type.Union([Type.String(), Type.Null()], { description: 'What a RUNNING backup is doing (snapshot, storing)' }),
    trigger: Type.String({ description: 'scheduled (by the backup policy) or on_demand' }),
    scheduled: Type.Boolean({ description: 'Taken by the backup policy' }),
    requested: Type.String({ description: 'When it was asked for (YYYY-MM-DD HH:MM:SS, UTC)' }),
    started: time('When it started'),
    finished: time('When it ended'),
    size_bytes: count('Size of the snapshot (what a download gives), once COMPLETED'),
    sha256: Type.Union([Type.String(), Type.Null()], { description: 'SHA-256 of the snapshot, hex, once COMPLETED; a restore checks it' }),
    used_memory_bytes: count(
      'Memory (redis) the instance used when the snapshot was taken: a new instance restored from it needs a plan at least this large',
    ),
    location: Type.String({ description: 'Where the encrypted object is kept (file:// or s3://); never a credential' }),
  },
  { $id: 'Backup', description: 'A backup of an instance', examples: [BACKUP_EXAMPLE] },
);
export type BackupRecord = Static<typeof BackupRecord>;

export const RESTORE_EXAMPLE = {
  id: '6560a1f2c3d4e5f607182960',
  instance_id: '6560a1f2c3d4e5f607182930',
  instance_name: 'cache',
  backup_id: '6560a1f2c3d4e5f607182950',
  kind: 'in_place',
  state: 'PENDING',
  state_reason: null,
  step: null,
  requested: '2026-11-26 09:00:00',
  started: null,
  finished: null,
};

export const RestoreRecord = Type.Object(
  {
    id: Type.String({ description: 'The restore id' }),
    instance_id: Type.String({ description: 'The instance restored into' }),
    instance_name: Type.String({ description: 'Its name when the restore was asked for' }),
    backup_id: Type.String({ description: 'The backup restored' }),
    kind: Type.String({ description: 'in_place (POST .../restore/) or new_instance (restore_from in a create)' }),
    state: Type.String({ description: 'PENDING, RUNNING, COMPLETED or FAILED' }),
    state_reason: Type.Union([Type.String(), Type.Null()], { description: 'Why it FAILED' }),
    step: Type.Union([Type.String(), Type.Null()], {
      description: 'What a RUNNING restore is doing (reading, restore:staged, restore:engines-stopped, restore:data-swapped)',
    }),
    requested: Type.String({ description: 'When it was asked for (YYYY-MM-DD HH:MM:SS, UTC)' }),
    started: time('When it started'),
    finished: time('When it ended'),
  },
  { $id: 'Restore', description: 'A restore of a backup into an instance', examples: [RESTORE_EXAMPLE] },
);
export type RestoreRecord = Static<typeof RestoreRecord>;

export const RestoreBody = Type.Object(
  {
    backup_id: Type.String({
      description: 'A completed backup of the account, of the same service (of this instance or another one, deleted ones included)',
    }),
  },
  { additionalProperties: false, examples: [{ backup_id: BACKUP_EXAMPLE.id }] },
);

export const POLICY_EXAMPLE = {
  schedule: 'daily',
  daily_at: '03:00',
  every_hours: null,
  keep_last: 7,
  keep_days: 30,
  next_run: '2026-11-27 03:00:00',
};

export const PolicyRecord = Type.Object(
  {
    schedule: Type.String({ description: 'off, every (every_hours hours) or daily (at daily_at, UTC)' }),
    every_hours: count('Hours between backups (schedule every)'),
    daily_at: Type.Union([Type.String(), Type.Null()], { description: 'HH:MM, UTC (schedule daily)' }),
    keep_last: count('Retention: keep the last K completed backups (null: no such limit)'),
    keep_days: count('Retention: keep the backups of the last D days (null: no such limit); with both, a backup either keeps is kept'),
    next_run: Type.Union([Type.String(), Type.Null()], {
      description: 'When the schedule fires next (YYYY-MM-DD HH:MM:SS, UTC); null when off',
    }),
  },
  { $id: 'BackupPolicy', description: "The instance's backup policy", examples: [POLICY_EXAMPLE] },
);
export type PolicyRecord = Static<typeof PolicyRecord>;

export const PolicyBody = Type.Object(
  {
    schedule: Type.String({ description: 'off, every or daily' }),
    every_hours: Type.Optional(Type.Integer({ description: 'with schedule every: 1 to 8760' })),
    daily_at: Type.Optional(Type.String({ description: 'with schedule daily: HH:MM, UTC' })),
    keep_last: Type.Optional(Type.Union([Type.Integer(), Type.Null()], { description: 'keep the last K completed backups' })),
    keep_days: Type.Optional(Type.Union([Type.Integer(), Type.Null()], { description: 'keep the backups of the last D days' })),
  },
  {
    additionalProperties: false,
    examples: [
      { schedule: 'daily', daily_at: '03:00', keep_last: 7 },
      { schedule: 'every', every_hours: 6, keep_days: 2 },
      { schedule: 'off' },
    ],
  },
);

export const BackupParams = Type.Object({
  instance_name: InstanceNameParam,
  backup_id: Type.String({ description: 'The backup id', examples: [BACKUP_EXAMPLE.id] }),
});
