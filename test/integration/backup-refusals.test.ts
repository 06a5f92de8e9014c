import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findExecutable } from '../../src/lib/binaries.js';
import { mongoBody } from '../helpers/bodies.js';
import { type Account, type TestHangar, startTestHangar } from '../helpers/hangar.js';

// Backups of a service whose tools this host lacks are refused up front, naming them. MongoDB
// cannot be installed here: stand-in programs that print mongod 7.0.2's version make MongoDB
// offered on the local runtime, and the MongoDB Database Tools (mongodump, mongorestore) are missing.

const toolsHere =
  findExecutable('mongodump', process.env.PATH ?? '') !== undefined && findExecutable('mongorestore', process.env.PATH ?? '') !== undefined;

describe('backups of MongoDB on the local runtime without the MongoDB Database Tools', () => {
  let bin: string;
  let th: TestHangar;
  let alice: Account;

  beforeAll(async () => {
    bin = mkdtempSync(join(tmpdir(), 'hangar-standins-'));
    for (const [name, line] of [
      ['mongod', 'db version v7.0.2'],
      ['mongos', 'mongos version v7.0.2'],
    ]) {
      writeFileSync(join(bin, name!), `#!/bin/sh\nprintf '%s\\n' '${line}'\n`);
      chmodSync(join(bin, name!), 0o755);
    }
    th = await startTestHangar({
      env: { HANGAR_RUNTIME: 'local', HANGAR_MONGOD_BIN: join(bin, 'mongod'), HANGAR_MONGOS_BIN: join(bin, 'mongos') },
    });
    alice = await th.signup();
    expect((await alice.post('/v2/instances/', mongoBody('m', 'mongodb_singledb', { version: '7.0' }))).status).toBe(200);
  });
  afterAll(async () => {
    await th?.close();
    rmSync(bin, { recursive: true, force: true });
  });

  it('422 BACKUP_UNAVAILABLE naming mongodump and mongorestore, for a backup and for a schedule; nothing recorded', async () => {
    const res = await alice.post('/v2/instances/m/backups/');
    if (toolsHere) {
      // a host with the tools: not refused for want of them
      expect(res.body.code).not.toBe('BACKUP_UNAVAILABLE');
      return;
    }
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      code: 'BACKUP_UNAVAILABLE',
      message: 'backups of mongodb need mongodump and mongorestore (the MongoDB Database Tools), which are not installed on this host',
    });
    const policy = await alice.request('PUT', '/v2/instances/m/backup-policy/', { body: { schedule: 'every', every_hours: 6 } });
    expect(policy.status).toBe(422);
    expect(policy.body.code).toBe('BACKUP_UNAVAILABLE');
    expect((await alice.get('/v2/instances/m/backups/')).body.data).toEqual([]);
  });
});
