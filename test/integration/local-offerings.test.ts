import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { esBody, mongoBody } from '../helpers/bodies.js';
import { type Account, type TestHangar, startTestHangar } from '../helpers/hangar.js';

// POST /v2/instances/ on the local runtime refuses up front what this machine cannot run:
// MongoDB and Elasticsearch cannot be installed here, so stand-in programs that print the
// version of mongod 7.0.2 and mongos 7.0.2 make MongoDB offered; nothing is ever started.

describe('create on the local runtime, from the engines found', () => {
  let bin: string;
  let withMongo: TestHangar;
  let without: TestHangar;
  let alice: Account;
  let bob: Account;

  beforeAll(async () => {
    bin = mkdtempSync(join(tmpdir(), 'hangar-standins-'));
    for (const [name, line] of [
      ['mongod', 'db version v7.0.2'],
      ['mongos', 'mongos version v7.0.2'],
    ]) {
      writeFileSync(join(bin, name!), `#!/bin/sh\nprintf '%s\\n' '${line}'\n`);
      chmodSync(join(bin, name!), 0o755);
    }
    withMongo = await startTestHangar({
      env: { HANGAR_RUNTIME: 'local', HANGAR_MONGOD_BIN: join(bin, 'mongod'), HANGAR_MONGOS_BIN: join(bin, 'mongos') },
    });
    without = await startTestHangar({
      env: { HANGAR_RUNTIME: 'local', HANGAR_MONGOD_BIN: join(bin, 'no-mongod'), HANGAR_ELASTICSEARCH_BIN: join(bin, 'no-elasticsearch') },
    });
    alice = await withMongo.signup();
    bob = await without.signup();
  });
  afterAll(async () => {
    await withMongo?.close();
    await without?.close();
    rmSync(bin, { recursive: true, force: true });
  });

  it('422 naming the missing binary and its variable; nothing recorded', async () => {
    const mongo = await bob.post('/v2/instances/', mongoBody('m', 'mongodb_singledb'));
    expect(mongo.status).toBe(422);
    expect(mongo.body).toMatchObject({ code: 'SERVICE_UNAVAILABLE_HERE', message: expect.stringMatching(/no-mongod.*HANGAR_MONGOD_BIN/) });
    const es = await bob.post('/v2/instances/', esBody('e'));
    expect(es.status).toBe(422);
    expect(es.body.message).toMatch(/no-elasticsearch.*HANGAR_ELASTICSEARCH_BIN/);
    expect((await bob.get('/v2/instances/')).body.data).toEqual([]);
  });

  it('400 for a version other than the mongod found, listing it as X.Y.Z and X.Y', async () => {
    const res = await alice.post('/v2/instances/', mongoBody('m', 'mongodb_singledb', { version: '3.4.2' }));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'INVALID_VALUE', field: 'version', allowed: ['7.0.2', '7.0'] });
  });

  it('400 for mmapv1, which MongoDB 4.2 and newer no longer have; nothing recorded', async () => {
    const res = await alice.post('/v2/instances/', mongoBody('m', 'mongodb_singledb', { version: '7.0', storage_engine: 'mmapv1' }));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'INVALID_VALUE', field: 'storage_engine', allowed: ['wiredtiger'] });
    expect(res.body.message).toMatch(/"mmapv1" is not available with the mongod installed on this host/);
    expect((await alice.get('/v2/instances/')).body.data).toEqual([]);
  });
});
