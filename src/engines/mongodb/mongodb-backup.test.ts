import { chmodSync, createReadStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { InstanceSpec, UnitDefinition, UnitHost } from '../../domain/units.js';
import { MongodbBackupDriver } from './mongodb-backup.js';

// The MongoDB backup driver with stand-in mongodump/mongorestore programs (the MongoDB Database
// Tools cannot be installed here): what it refuses without them, the command lines and the
// configuration it gives them, and the archive it hands on.

const dir = mkdtempSync(join(tmpdir(), 'hangar-mongobk-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const tools = join(dir, 'bin');
mkdirSync(tools);
const argsFile = join(dir, 'args');
// mongodump: records its arguments and writes a recognisable archive; mongorestore reads one
writeFileSync(join(tools, 'mongodump'), `#!/bin/sh\necho "$@" > '${argsFile}'\nprintf 'ARCHIVE-BYTES'\n`);
writeFileSync(join(tools, 'mongorestore'), `#!/bin/sh\necho "$@" > '${argsFile}'\ncat > '${join(dir, 'restored')}'\n`);
for (const t of ['mongodump', 'mongorestore']) chmodSync(join(tools, t), 0o755);

const spec: InstanceSpec = {
  id: '6560a1f2c3d4e5f607182931',
  service: 'mongodb',
  engine: 'mongod',
  routes: [],
  type: 'mongodb_replica_set',
  version: '7.0.2',
  plan: 5,
  encrypted: false,
  storageEngine: 'wiredtiger',
  password: null,
  adminSecret: 's3cret/with:chars',
  ports: { 'engine.0': 27101, 'engine.1': 27102, 'engine.2': 27103 },
};

/** Files on disk, as the local runtime keeps them. */
const host: UnitHost = {
  ensureUnit: async () => ({ pid: 0, started: false }),
  stopUnit: async () => {},
  isRunning: () => true,
  logTail: () => '',
  logEnd: () => 0,
  logFrom: () => '',
  writeFile: (u, name, content) => {
    mkdirSync(u.dir, { recursive: true });
    writeFileSync(join(u.dir, name), content, { mode: 0o600 });
    return true;
  },
  readFile: (u, name) => readFileSync(join(u.dir, name), 'utf8'),
  exists: () => false,
  readStream: (u, name) => createReadStream(join(u.dir, name)),
  writeStream: async (u, name, source) => {
    const chunks: Buffer[] = [];
    for await (const c of source) chunks.push(c as Buffer);
    mkdirSync(u.dir, { recursive: true });
    writeFileSync(join(u.dir, name), Buffer.concat(chunks));
    return Buffer.concat(chunks).length;
  },
  rename: () => {},
  runTool: async () => '',
  toolOutput: () => {
    throw new Error('not used by these tests');
  },
  handOver: () => {},
  remove: (u, name) => rmSync(join(u.dir, name), { force: true }),
  size: () => undefined,
};
const units = (s: InstanceSpec, d: string): UnitDefinition[] =>
  [0, 1, 2].map((i) => ({ instanceId: s.id, role: `member-${i}`, dir: join(d, `member-${i}`), bin: 'mongod', args: [] }));
const place = { dir: join(dir, 'instance'), host };

describe('MongodbBackupDriver', () => {
  it('refuses without mongodump and mongorestore, naming them', () => {
    const driver = new MongodbBackupDriver({ searchPath: join(dir, 'empty'), units });
    expect(driver.unavailableReason()).toBe(
      'backups of mongodb need mongodump and mongorestore (the MongoDB Database Tools), which are not installed on this host',
    );
  });

  it('dumps the replica set with --archive --gzip --oplog from a secondary, its password in a 0600 file, not on the command line', async () => {
    const driver = new MongodbBackupDriver({ searchPath: `${tools}:/usr/bin:/bin`, units });
    expect(driver.unavailableReason()).toBeUndefined();
    const snap = await driver.snapshot(spec, place);
    const chunks: Buffer[] = [];
    for await (const c of snap.stream) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('ARCHIVE-BYTES');
    const args = readFileSync(argsFile, 'utf8');
    expect(args).toMatch(/^--config=\S+\/member-0\/mongo-tools\.yaml --archive --gzip --oplog --quiet$/m);
    expect(args).not.toContain('s3cret');
    const config = join(dir, 'instance', 'member-0', 'mongo-tools.yaml');
    expect(statSync(config).mode & 0o777).toBe(0o600);
    expect(readFileSync(config, 'utf8')).toBe(
      `uri: "mongodb://hangar:${encodeURIComponent('s3cret/with:chars')}@127.0.0.1:27101,127.0.0.1:27102,127.0.0.1:27103/?authSource=admin&replicaSet=rs-${spec.id}&readPreference=secondaryPreferred"\n`,
    );
  });

  it('restores with --drop --oplogReplay, leaving users and roles alone, from the archive it read whole', async () => {
    const driver = new MongodbBackupDriver({ searchPath: `${tools}:/usr/bin:/bin`, units });
    const steps: string[] = [];
    await driver.restore(spec, place, createReadStream(argsFile).pipe(new PassThrough()), { step: (s) => void steps.push(s) });
    expect(steps).toEqual(['mongodb-restore:staged']);
    const args = readFileSync(argsFile, 'utf8');
    expect(args).toMatch(
      /--archive --gzip --drop --oplogReplay --nsExclude=admin\.system\.users --nsExclude=admin\.system\.roles --nsExclude=admin\.system\.version --quiet/,
    );
    expect(existsSync(join(dir, 'instance', 'member-0', 'restore.archive.gz'))).toBe(false);
  });
});
