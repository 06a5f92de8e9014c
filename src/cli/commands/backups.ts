import { createHash } from 'node:crypto';
import { createWriteStream, renameSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { HangarApiError, type Backup } from '../../client/index.js';
import { REMOTE_OPTIONS, WAIT_OPTIONS, type ClientCommand, type ClientContext, str, timeoutMs } from '../client-command.js';
import { json } from '../io.js';
import { Progress } from '../progress.js';
import { fields, table } from '../table.js';

/** `12.3 MB`, `512 B`. */
export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '-';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
}

export function showBackup(b: Backup): string {
  return fields([
    ['id', b.id],
    ['instance', `${b.instance_name} (${b.instance_id})`],
    ['service', `${b.service} ${b.engine_version}`],
    ['state', b.state],
    ['reason', b.state_reason],
    ['trigger', b.trigger],
    ['requested', `${b.requested} UTC`],
    ['finished', b.finished ? `${b.finished} UTC` : null],
    ['size', b.size_bytes === null ? null : `${bytes(b.size_bytes)} (${b.size_bytes} bytes)`],
    ['sha256', b.sha256],
    ['location', b.location],
  ]);
}

async function ls(ctx: ClientContext): Promise<void> {
  const list = await ctx.connection().client.listBackups(ctx.args[0]!);
  if (ctx.opts.json === true) return ctx.io.out(json(list));
  if (list.length === 0) return ctx.io.out(`No backups. Take one: hangar backups create ${ctx.args[0]}`);
  ctx.io.out(
    table(
      ['ID', 'STATE', 'TRIGGER', 'SIZE', 'REQUESTED', 'FINISHED', 'SHA256'],
      list.map((b) => [b.id, b.state, b.trigger, bytes(b.size_bytes), b.requested, b.finished, b.sha256?.slice(0, 12)]),
    ),
  );
}

async function create(ctx: ClientContext): Promise<void> {
  const { opts, io } = ctx;
  const name = ctx.args[0]!;
  const { client } = ctx.connection();
  const started = await client.createBackup(name);
  if (opts['no-wait'] === true) {
    // its operation has its id: followed (or cancelled) with hangar operations
    io.out(
      opts.json === true
        ? json(started)
        : `Backup ${started.id} of "${name}" is ${started.state}; follow it with: hangar operations wait ${started.id} (stop it with: hangar operations cancel ${started.id})`,
    );
    return;
  }
  const progress = new Progress(io, `${name} backup ${started.id}`);
  try {
    const done = await client.waitForBackup(name, started.id, {
      timeoutMs: timeoutMs(opts),
      onPoll: (b) => b.state !== 'COMPLETED' && progress.update(b.step ? `${b.state} (${b.step})` : b.state),
    });
    progress.finish(`COMPLETED, ${bytes(done.size_bytes)}`);
    io.out(opts.json === true ? json(done) : showBackup(done));
  } catch (err) {
    progress.stop();
    throw err;
  }
}

async function rm(ctx: ClientContext): Promise<void> {
  const [name, id] = ctx.args as [string, string];
  const message = await ctx.connection().client.deleteBackup(name, id);
  ctx.io.out(ctx.opts.json === true ? json({ id, deleted: true, message }) : message);
}

async function download(ctx: ClientContext): Promise<void> {
  const { io, opts } = ctx;
  const [name, id] = ctx.args as [string, string];
  const { client } = ctx.connection();
  const got = await client.downloadBackup(name, id);
  const file = resolve(str(opts.output) ?? got.fileName);
  const tmp = `${file}.partial`;
  const progress = new Progress(io, `${name} backup ${id}`);
  const hash = createHash('sha256');
  let received = 0;
  const count = new Transform({
    transform(chunk: Buffer, _enc, done) {
      received += chunk.length;
      hash.update(chunk);
      progress.update(`${bytes(received)} of ${bytes(got.sizeBytes)}`);
      done(null, chunk);
    },
  });
  try {
    await pipeline(Readable.fromWeb(got.body as WebReadableStream<Uint8Array>), count, createWriteStream(tmp, { mode: 0o600 }));
    const sha = hash.digest('hex');
    if (received !== got.sizeBytes || sha !== got.sha256) {
      throw new HangarApiError(
        0,
        'BACKUP_CORRUPT',
        `the download of backup ${id} was cut short or does not match its SHA-256 (${received} of ${got.sizeBytes} bytes): the backup may be corrupt; nothing was written`,
      );
    }
    renameSync(tmp, file);
    progress.finish(`${bytes(received)} written to ${file}`);
  } catch (err) {
    progress.stop();
    rmSync(tmp, { force: true });
    if (err instanceof HangarApiError) throw err;
    throw new HangarApiError(
      0,
      'BACKUP_CORRUPT',
      `the download of backup ${id} was cut short (${received} of ${got.sizeBytes} bytes): the backup may be corrupt; nothing was written`,
    );
  }
  io.out(opts.json === true ? json({ id, file, size_bytes: received, sha256: got.sha256 }) : file);
}

async function restore(ctx: ClientContext): Promise<void> {
  const { opts, io } = ctx;
  const [name, backupId] = ctx.args as [string, string];
  const { client } = ctx.connection();
  const started = await client.restoreInstance(name, backupId);
  if (opts['no-wait'] === true) {
    io.out(
      opts.json === true
        ? json(started)
        : `Restore of "${name}" from backup ${backupId} started; follow it with: hangar operations wait ${started.id}`,
    );
    return;
  }
  const progress = new Progress(io, name);
  try {
    const done = await client.waitForRestore(name, started.id, {
      timeoutMs: timeoutMs(opts),
      onPoll: (r) => r.state !== 'COMPLETED' && progress.update(`RESTORING${r.step ? ` (${r.step})` : ''}`),
    });
    const inst = await client.waitUntilReady(name, { timeoutMs: timeoutMs(opts) });
    progress.finish(`restored from ${backupId}, ${inst.state}`);
    io.out(opts.json === true ? json(done) : `Instance "${name}" runs on the data of backup ${backupId}.`);
  } catch (err) {
    progress.stop();
    throw err;
  }
}

const ID_ARGS = ['NAME', 'BACKUP_ID'];

export const backupCommands: readonly ClientCommand[] = [
  {
    kind: 'client',
    name: 'backups ls',
    summary: "List an instance's backups, newest first",
    args: ['NAME'],
    remote: true,
    options: REMOTE_OPTIONS,
    examples: ['hangar backups ls cache', 'hangar backups ls cache --json'],
    details: "A deleted instance's backups stay (until their retention ends) and are listed under the name it had.",
    run: ls,
  },
  {
    kind: 'client',
    name: 'backups create',
    summary: 'Take a backup of an instance now, and wait until it is stored',
    args: ['NAME'],
    remote: true,
    options: { ...REMOTE_OPTIONS, ...WAIT_OPTIONS },
    examples: ['hangar backups create cache', 'hangar backups create cache --no-wait'],
    details:
      "Shows the state (PENDING, RUNNING and its step) on a live line until the backup is COMPLETED, then prints it; a FAILED backup exits 1 with the reason. The backup's operation has its id: hangar operations cancel BACKUP_ID stops it (it is then FAILED and keeps nothing).",
    run: create,
  },
  {
    kind: 'client',
    name: 'backups rm',
    summary: 'Remove a backup from the storage',
    args: ID_ARGS,
    remote: true,
    options: REMOTE_OPTIONS,
    examples: ['hangar backups rm cache 6560a1f2c3d4e5f607182950'],
    run: rm,
  },
  {
    kind: 'client',
    name: 'backups download',
    summary: 'Download a completed backup (decrypted: an RDB file for redis), checked against its SHA-256',
    args: ID_ARGS,
    remote: true,
    options: {
      ...REMOTE_OPTIONS,
      output: { type: 'string', short: 'o', value: 'FILE', description: 'where to write it (default: NAME-BACKUP_ID.FORMAT here)' },
    },
    examples: [
      'hangar backups download cache 6560a1f2c3d4e5f607182950',
      'hangar backups download cache 6560a1f2c3d4e5f607182950 -o cache.rdb',
    ],
    details:
      'Written under FILE.partial and renamed once complete and matching its SHA-256; a download cut short leaves nothing and exits 1.',
    run: download,
  },
  {
    kind: 'client',
    name: 'instances restore',
    summary: 'Restore a backup into an instance, replacing its data, and wait until it serves again',
    args: ID_ARGS,
    remote: true,
    options: { ...REMOTE_OPTIONS, ...WAIT_OPTIONS },
    examples: [
      'hangar instances restore cache 6560a1f2c3d4e5f607182950',
      'hangar instances restore cache 6560a1f2c3d4e5f607182950 --no-wait',
    ],
    details:
      'The backup is checked (its SHA-256) first: a corrupt one is refused and the instance untouched. The instance is RESTORING (clients are cut off) until ACTIVE again, its Redis users and settings kept; the live line shows the step. The operation of the restore has its id (hangar operations show ID). To restore into a new instance: hangar instances create NAME ... --restore-from BACKUP_ID.',
    run: restore,
  },
];
