import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestJson } from '../../src/engines/install/engine-manifest.js';
import { esBody, mongoBody } from '../helpers/bodies.js';
import { type Account, type TestHangar, startTestHangar } from '../helpers/hangar.js';

// POST /v2/instances/ on the local runtime refuses up front what this machine cannot run:
// MongoDB cannot be installed here, so stand-in programs that print the version of mongod 7.0.2
// and mongos 7.0.2 make MongoDB offered; Elasticsearch is offered from an engine cache of stand-in
// installs (as `hangar engines install` leaves them). Nothing is ever started.

/** An install in an engine cache: a start script and its manifest. */
function cachedInstall(cache: string, product: string, version: string): void {
  const home = join(cache, product, version);
  mkdirSync(join(home, 'bin'), { recursive: true });
  const program = join(home, 'bin', 'elasticsearch');
  writeFileSync(program, '#!/bin/sh\nexit 1\n');
  chmodSync(program, 0o755);
  const manifest = {
    manifest: 1,
    product,
    version,
    program,
    source: { kind: 'program', file: program, sha256: '0'.repeat(64) },
    java_home: null,
    env: {},
    patches: [],
    installed_at: '2026-12-07T21:21:33.598Z',
  };
  writeFileSync(join(home, 'hangar-engine.json'), JSON.stringify(manifest));
}

describe('create on the local runtime, from the engines found', () => {
  let bin: string;
  let withMongo: TestHangar;
  let without: TestHangar;
  let cached: TestHangar;
  let alice: Account;
  let bob: Account;
  let carol: Account;

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
      env: {
        HANGAR_RUNTIME: 'local',
        HANGAR_MONGOD_BIN: join(bin, 'no-mongod'),
        HANGAR_FERRETDB_BIN: join(bin, 'no-ferretdb'),
        HANGAR_ELASTICSEARCH_BIN: join(bin, 'no-elasticsearch'),
        HANGAR_ENGINE_CACHE: join(bin, 'empty-cache'),
      },
    });
    cachedInstall(join(bin, 'cache'), 'elasticsearch', '2.4.6');
    cachedInstall(join(bin, 'cache'), 'elasticsearch', '6.8.23');
    cached = await startTestHangar({
      env: { HANGAR_RUNTIME: 'local', HANGAR_ELASTICSEARCH_BIN: join(bin, 'no-elasticsearch'), HANGAR_ENGINE_CACHE: join(bin, 'cache') },
    });
    alice = await withMongo.signup();
    bob = await without.signup();
    carol = await cached.signup();
  });
  afterAll(async () => {
    await withMongo?.close();
    await without?.close();
    await cached?.close();
    rmSync(bin, { recursive: true, force: true });
  });

  it('422 naming the missing binary and its variable; nothing recorded', async () => {
    const mongo = await bob.post('/v2/instances/', mongoBody('m', 'mongodb_singledb'));
    expect(mongo.status).toBe(422);
    expect(mongo.body).toMatchObject({
      code: 'SERVICE_UNAVAILABLE_HERE',
      message: expect.stringMatching(/no-mongod.*HANGAR_MONGOD_BIN.*no-ferretdb.*HANGAR_FERRETDB_BIN/),
    });
    const es = await bob.post('/v2/instances/', esBody('e'));
    expect(es.status).toBe(422);
    expect(es.body.message).toMatch(/no-elasticsearch.*HANGAR_ELASTICSEARCH_BIN/);
    expect((await bob.get('/v2/instances/')).body.data).toEqual([]);
  });

  it("offers the versions of the engine cache, and lists the API's others as unavailable, with why", async () => {
    const zones = (await carol.get('/v2/zones/')).body.data as any[];
    const es = zones[0].services.find((s: any) => s.service === 'elasticsearch');
    expect(es).toMatchObject({ available: true, default_engine: 'elasticsearch', versions: ['2.4.6', '2.4', '6.8.23', '6.8'] });
    const engine = es.engines.find((e: any) => e.engine === 'elasticsearch');
    const unavailable = Object.fromEntries(engine.unavailable_versions.map((v: any) => [v.version, v.reason]));
    expect(unavailable).toMatchObject({
      '5.2.2': expect.stringMatching(/fails at bootstrap on Java 11 and 17/),
      '6.3.2': expect.stringMatching(/not published on Maven Central/),
      '6.4.1': expect.stringMatching(/not published on Maven Central/),
      '5.6.9': 'not installed here: run `hangar engines install elasticsearch@5.6.9`',
    });
    expect(engine.notes.join('\n')).toMatch(/kibana_http and kibana_https answer 503/);
    // OpenSearch is an engine of its own, not installed here
    expect(es.engines.find((e: any) => e.engine === 'opensearch')).toMatchObject({
      available: false,
      reason: expect.stringMatching(/HANGAR_OPENSEARCH_BIN/),
      unavailable_versions: [{ version: '2.19.1', reason: 'not installed here: run `hangar engines install opensearch@2.19.1`' }],
    });
  });

  it('422 for a version of the API it cannot serve, naming why and the versions it serves; 400 for one it does not know; nothing recorded', async () => {
    for (const [version, why] of [
      ['6.4.1', /elasticsearch 6\.4\.1 cannot be served here: hangar cannot run it: it is not published on Maven Central/],
      ['5.2.2', /fails at bootstrap/],
      ['5.6.9', /not installed here: run `hangar engines install elasticsearch@5\.6\.9`/],
    ] as const) {
      const res = await carol.post('/v2/instances/', esBody('e', { version }));
      expect(res.status, version).toBe(422);
      expect(res.body).toMatchObject({ code: 'SERVICE_UNAVAILABLE_HERE', field: 'version', allowed: ['2.4.6', '2.4', '6.8.23', '6.8'] });
      expect(res.body.message).toMatch(why);
      expect(res.body.message).toMatch(/versions served here: 2\.4\.6, 2\.4, 6\.8\.23, 6\.8$/);
    }
    const unknown = await carol.post('/v2/instances/', esBody('e', { version: '9.9.9' }));
    expect(unknown).toMatchObject({ status: 400, body: { code: 'INVALID_VALUE', field: 'version' } });
    expect((await carol.get('/v2/instances/')).body.data).toEqual([]);
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

// FerretDB from the engine cache: stand-in programs in a cache laid out as `hangar engines install`
// lays it out (a manifest per version), with or without stand-ins of mongod beside it.
describe('mongodb on FerretDB, from the engine cache', () => {
  let dir: string;
  let ferretOnly: TestHangar;
  let both: TestHangar;
  let alice: Account;
  let bob: Account;

  /** A ferretdb stand-in installed as `ferretdb@<version>` in the cache. */
  const install = (cache: string, version: string) => {
    const home = join(cache, 'ferretdb', version);
    mkdirSync(join(home, 'bin'), { recursive: true });
    const program = join(home, 'bin', 'ferretdb');
    writeFileSync(program, `#!/bin/sh\nprintf 'version: v${version}\\n'\n`);
    chmodSync(program, 0o755);
    const source = { kind: 'program', file: '/stand-in', sha256: '0'.repeat(64) } as const;
    const engine = {
      product: 'ferretdb',
      version,
      dir: home,
      program,
      source,
      java: undefined,
      env: {},
      patches: [],
      installedAt: '2026-01-01T00:00:00.000Z',
    };
    writeFileSync(join(home, 'hangar-engine.json'), manifestJson(engine));
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hangar-ferretdb-cache-'));
    const cache = join(dir, 'cache');
    install(cache, '1.24.2');
    install(cache, '1.23.1');
    for (const [name, line] of [
      ['mongod', 'db version v7.0.2'],
      ['mongos', 'mongos version v7.0.2'],
    ]) {
      writeFileSync(join(dir, name!), `#!/bin/sh\nprintf '%s\\n' '${line}'\n`);
      chmodSync(join(dir, name!), 0o755);
    }
    ferretOnly = await startTestHangar({
      env: { HANGAR_RUNTIME: 'local', HANGAR_ENGINE_CACHE: cache, HANGAR_MONGOD_BIN: join(dir, 'no-mongod') },
    });
    both = await startTestHangar({
      env: {
        HANGAR_RUNTIME: 'local',
        HANGAR_ENGINE_CACHE: cache,
        HANGAR_MONGOD_BIN: join(dir, 'mongod'),
        HANGAR_MONGOS_BIN: join(dir, 'mongos'),
      },
    });
    alice = await ferretOnly.signup();
    bob = await both.signup();
  });
  afterAll(async () => {
    await ferretOnly?.close();
    await both?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const mongodb = async (who: Account) =>
    ((await who.get('/v2/zones/')).body.data as any[]).find((z) => z.name === 'US-West').services.find((s: any) => s.service === 'mongodb');

  it('offers every version installed, newest first, as X.Y.Z and X.Y; FerretDB is the default where mongod is missing', async () => {
    const s = await mongodb(alice);
    expect(s).toMatchObject({
      available: true,
      default_engine: 'ferretdb',
      versions: ['1.24.2', '1.24', '1.23.1', '1.23'],
      types: ['mongodb_singledb'],
    });
    expect(s.engines.find((e: any) => e.engine === 'mongod').types).toEqual([
      'mongodb_sharded',
      'mongodb_replica_set',
      'mongodb_singledb',
      'mongodb_jumbo_replica_set',
    ]);
    expect(s.engines.map((e: any) => [e.engine, e.available])).toEqual([
      ['mongod', false],
      ['ferretdb', true],
    ]);
  });

  it('mongod before FerretDB where both are installed; FerretDB still offered', async () => {
    const s = await mongodb(bob);
    expect(s).toMatchObject({ default_engine: 'mongod', versions: ['7.0.2', '7.0'] });
    expect(s.types).toHaveLength(4);
    expect(s.engines.find((e: any) => e.engine === 'ferretdb')).toMatchObject({
      available: true,
      versions: ['1.24.2', '1.24', '1.23.1', '1.23'],
    });
  });

  it("400 for a version of the other engine, whose allowed lists the default engine's versions; nothing recorded", async () => {
    const res = await alice.post('/v2/instances/', mongoBody('m', 'mongodb_singledb', { version: '7.0.2' }));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'INVALID_VALUE', field: 'version', allowed: ['1.24.2', '1.24', '1.23.1', '1.23'] });
    const other = await bob.post('/v2/instances/', mongoBody('m', 'mongodb_singledb', { version: '1.24.2' }));
    expect(other.status).toBe(400);
    expect(other.body).toMatchObject({ field: 'version', allowed: ['7.0.2', '7.0'] });
    const named = await bob.post('/v2/instances/', mongoBody('m', 'mongodb_singledb', { version: '7.0', engine: 'ferretdb' }));
    expect(named.status).toBe(400);
    expect(named.body.message).toMatch(/on ferretdb/);
    expect((await alice.get('/v2/instances/')).body.data).toEqual([]);
    expect((await bob.get('/v2/instances/')).body.data).toEqual([]);
  });

  it('422 up front for the types FerretDB cannot run where mongod is missing, saying why; nothing recorded', async () => {
    for (const type of ['mongodb_replica_set', 'mongodb_jumbo_replica_set', 'mongodb_sharded'] as const) {
      const res = await alice.post('/v2/instances/', mongoBody('m', type, { version: '1.24.2' }));
      expect(res.status, type).toBe(422);
      expect(res.body.code).toBe('SERVICE_UNAVAILABLE_HERE');
      expect(res.body.message).toMatch(new RegExp(`FerretDB \\(engine ferretdb\\) runs mongodb_singledb only, not ${type}`));
      expect(res.body.message).toMatch(/mongod, which runs it, cannot run here: .*HANGAR_MONGOD_BIN/);
    }
    expect((await alice.get('/v2/instances/')).body.data).toEqual([]);
  });

  it('422 for a replica set asked of FerretDB by name where mongod runs, pointing to mongod', async () => {
    const res = await bob.post('/v2/instances/', mongoBody('m', 'mongodb_replica_set', { version: '1.24.2', engine: 'ferretdb' }));
    expect(res.status).toBe(422);
    expect(res.body.message).toMatch(/runs mongodb_singledb only, not mongodb_replica_set: ask for engine mongod/);
  });
});
