import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { totalmem, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, HangarProcess, enginesAvailable, portOf } from './helpers/hangar-process.js';
import { pingOutcome } from './helpers/redis.js';

// One hangar serving three zones from a zones file: two on this host's local runtime (one with a
// capacity of its own, one sharing the host's) and one emulated, each refusing what does not fit.
describe.runIf(enginesAvailable())('zones and capacity', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hangar-zones-'));
  const zonesFile = join(dir, 'zones.yaml');
  let hangar: HangarProcess;
  const RESERVE_MB = 2048;

  beforeAll(async () => {
    writeFileSync(
      zonesFile,
      [
        'Dallas-A:',
        '  runtime: local',
        '  capacity_mb: 3000',
        'Dallas-B:',
        '  runtime: local',
        'Sandbox:',
        '  runtime: emulated',
        '  capacity_mb: 2000',
        '  services: [redis]',
        '',
      ].join('\n'),
    );
    hangar = await HangarProcess.start({ env: { HANGAR_ZONES: zonesFile, HANGAR_MEMORY_RESERVE_MB: String(RESERVE_MB) } });
  }, 60_000);

  afterAll(async () => {
    await hangar?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  const create = (name: string, zone: string, plan = 500, service = 'redis') =>
    hangar.post('/v2/instances/', {
      ...hangar.redisBody(name),
      zone,
      plan,
      ...(service === 'redis' ? {} : { service, type: 'mongodb_singledb', version: '3.4.2' }),
    });
  const ready = async (name: string) => hangar.waitFor(name, (r) => r?.state === 'ACTIVE');
  const zone = async (name: string) => ((await hangar.get('/v2/zones/')).body.data as any[]).find((z) => z.name === name);

  it('lists every zone with its runtime, services, capacity and free memory', async () => {
    const res = await hangar.get('/v2/zones/');
    expect(res.status).toBe(200);
    const hostMb = Math.floor(totalmem() / 1024 / 1024) - RESERVE_MB;
    expect(res.body.data.map((z: any) => [z.name, z.runtime, z.capacity_mb, z.allocated_mb, z.free_mb])).toEqual([
      ['Dallas-A', 'local', 3000, 0, 3000],
      ['Dallas-B', 'local', hostMb, 0, hostMb],
      ['Sandbox', 'emulated', 2000, 0, 2000],
    ]);
    const sandbox = res.body.data[2];
    expect(sandbox.services.map((s: any) => s.service)).toEqual(['redis']);
    expect(res.body.data[0].services.find((s: any) => s.service === 'redis')).toMatchObject({
      available: true,
      versions: expect.arrayContaining([await hangar.redisVersion()]),
    });
    // mongod cannot be installed here (FerretDB may run the service, from the engine cache)
    const mongodb = res.body.data[0].services.find((s: any) => s.service === 'mongodb');
    expect(mongodb.engines.find((e: any) => e.engine === 'mongod')).toMatchObject({
      available: false,
      reason: expect.stringMatching(/mongod/),
    });
  });

  it('creates in each zone: real engines in the local zones, models in the emulated one', async () => {
    for (const [name, z] of [
      ['in-a', 'Dallas-A'],
      ['in-b', 'Dallas-B'],
      ['in-sandbox', 'Sandbox'],
    ] as const) {
      const res = await create(name, z);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data.zone).toBe(z);
    }
    const a = await ready('in-a');
    const b = await ready('in-b');
    await ready('in-sandbox');
    for (const inst of [a, b]) {
      await hangar.post(`/v2/instances/${inst.name}/acls/`, { cidr_mask: '127.0.0.1', description: 'this machine' });
      expect(await pingOutcome(portOf(inst.connect_string), inst.password)).toBe('PONG');
    }
    expect(await zone('Dallas-A')).toMatchObject({ allocated_mb: 1000, free_mb: 2000 });
    expect(await zone('Sandbox')).toMatchObject({ allocated_mb: 1000, free_mb: 1000 });
  });

  it('400 for a zone that is not configured, naming the zones that are', async () => {
    const res = await create('nowhere', 'US-Dallas');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'INVALID_VALUE', field: 'zone', allowed: ['Dallas-A', 'Dallas-B', 'Sandbox'] });
    const mongo = await create('mongo-in-sandbox', 'Sandbox', 1, 'mongodb');
    expect(mongo.status).toBe(400);
    expect(mongo.body).toMatchObject({ field: 'zone', allowed: ['Dallas-A', 'Dallas-B'] });
  });

  it('409 CAPACITY_EXCEEDED for a create that does not fit, saying what is free and what the plan needs; nothing recorded', async () => {
    const res = await create('too-big', 'Sandbox', 1000);
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('CAPACITY_EXCEEDED');
    expect(res.body.message).toBe(
      'not enough memory left in zone "Sandbox": 1000 MB free of 2000 MB; a redis_ha_instance on plan 1000 needs 2000 MB (2 x 1000 MB: maxmemory of the primary and of the replica)',
    );
    expect((await hangar.get('/v2/instances/too-big/')).status).toBe(404);
    const host = await create('bigger-than-the-host', 'Dallas-B', 100000);
    expect(host.status).toBe(409);
    expect(host.body.message).toMatch(
      /^not enough memory left in this host \(local zones Dallas-B\): \d+ MB free of \d+ MB; a redis_ha_instance on plan 100000 needs 200000 MB/,
    );
  });

  it('409 for a resize that does not fit; a delete frees its capacity and the resize then passes', async () => {
    expect((await create('second-a', 'Dallas-A', 1000)).status).toBe(200);
    await ready('second-a');
    expect(await zone('Dallas-A')).toMatchObject({ allocated_mb: 3000, free_mb: 0 });
    const refused = await hangar.post('/v2/redis/in-a/resize/', { new_plan: 1000 });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: 'CAPACITY_EXCEEDED' });
    expect(refused.body.message).toMatch(/1000 MB free of 3000 MB; a redis_ha_instance on plan 1000 needs 2000 MB/);
    expect((await hangar.get('/v2/instances/in-a/')).body.data).toMatchObject({ plan: 500, state: 'ACTIVE' });
    expect((await hangar.delete('/v2/instances/second-a/')).status).toBe(200);
    await hangar.waitFor('second-a', (r) => r === undefined);
    expect(await zone('Dallas-A')).toMatchObject({ allocated_mb: 1000, free_mb: 2000 });
    expect((await hangar.post('/v2/redis/in-a/resize/', { new_plan: 1000 })).status).toBe(200);
    expect((await hangar.waitFor('in-a', (r) => r?.state === 'ACTIVE' && r.plan === 1000)).plan).toBe(1000);
    expect(await zone('Dallas-A')).toMatchObject({ allocated_mb: 2000, free_mb: 1000 });
  });

  it('exports capacity and allocation per zone in /metrics', async () => {
    const text = await (await fetch(`${hangar.url}/metrics`)).text();
    expect(text).toContain(`hangar_zone_capacity_bytes{zone="Dallas-A"} ${3000 * 1024 * 1024}`);
    expect(text).toContain(`hangar_zone_allocated_bytes{zone="Dallas-A"} ${2000 * 1024 * 1024}`);
    expect(text).toContain(`hangar_zone_allocated_bytes{zone="Sandbox"} ${1000 * 1024 * 1024}`);
  });

  it('hangar zones ls prints them', () => {
    const env = {
      ...process.env,
      HANGAR_URL: hangar.url,
      HANGAR_LOGIN: 'e2e@example.com',
      HANGAR_PASSWORD: 'correct-horse-battery-staple',
      HOME: dir,
    };
    const text = spawnSync(process.execPath, [BIN, 'zones', 'ls'], { env, encoding: 'utf8' });
    expect(text.status, text.stderr).toBe(0);
    const lines = text.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ZONE\s+RUNTIME\s+SERVICES\s+CAPACITY\s+ALLOCATED\s+FREE$/);
    expect(lines[1]).toMatch(/^Dallas-A\s+local\s+.*redis: redis [\d./]+.*\s+3000 MB\s+2000 MB\s+1000 MB$/);
    expect(lines[3]).toMatch(/^Sandbox\s+emulated\s+redis: redis [\d./]+, valkey [\d./]+\s+2000 MB\s+1000 MB\s+1000 MB$/);
    const json = spawnSync(process.execPath, [BIN, 'zones', 'ls', '--json'], { env, encoding: 'utf8' });
    expect(JSON.parse(json.stdout).map((z: any) => z.name)).toEqual(['Dallas-A', 'Dallas-B', 'Sandbox']);
  });
});
