import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HangarProcess, enginesAvailable, portOf, type RedisRecord } from './helpers/hangar-process.js';
import { connectRedis, enginePort, eventually, pingOutcome, type RedisClient } from './helpers/redis.js';

// The pass of an ACL change on real redis-server processes behind the real HAProxy edge: the
// edge enforces it at once, and the engines, which serve as the instance's last pass left them,
// are not asked anything. (Which passes converge an instance whole: test/integration/access-pass.test.ts.)

/** Calls per command since the engine started, from INFO commandstats. */
async function commandCalls(client: RedisClient): Promise<Record<string, number>> {
  const text = await client.info('commandstats');
  return Object.fromEntries([...text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)].map((m) => [m[1]!, Number(m[2])]));
}

/** The commands whose count differs between two readings. */
function changed(before: Record<string, number>, after: Record<string, number>, ignore: readonly string[]): string[] {
  return [...new Set([...Object.keys(before), ...Object.keys(after)])]
    .filter((c) => !ignore.includes(c) && (before[c] ?? 0) !== (after[c] ?? 0))
    .sort();
}

describe.runIf(enginesAvailable())('the pass of an ACL change on the local runtime', () => {
  let hangar: HangarProcess;
  let inst: RedisRecord;
  let primary: RedisClient, replica: RedisClient;

  beforeAll(async () => {
    // no periodic pass (they do check the engines) within the test
    hangar = await HangarProcess.start({ env: { HANGAR_RESYNC_INTERVAL: '3600' } });
    inst = await hangar.createRedis('acl-pass', { acls: [{ cidr_mask: '127.0.0.1', description: 'this machine' }] });
    primary = await connectRedis(enginePort(hangar.dataDir, inst.id, 'primary'), inst.password);
    replica = await connectRedis(enginePort(hangar.dataDir, inst.id, 'replica'), inst.password);
  }, 60_000);

  afterAll(async () => {
    for (const c of [primary, replica]) if (c?.isOpen) c.destroy();
    await hangar?.destroy();
  });

  it('an ACL added, then deleted, is enforced at the edge, and the engines get no command for either', async () => {
    const port = portOf(inst.public_connect_string);
    const source = '127.0.0.9';
    expect(await pingOutcome(port, inst.password, source)).toBe('refused');
    // INFO is this test's own reading; REPLCONF ACK and the primary's PING are replication's heartbeat
    const ignore = ['info', 'replconf', 'ping', 'auth'];
    const before = { primary: await commandCalls(primary), replica: await commandCalls(replica) };

    const added = await hangar.post('/v2/instances/acl-pass/acls/', { cidr_mask: source, description: 'for a moment' });
    expect(added.status).toBe(200);
    const client = await connectRedis(port, inst.password, source);
    try {
      expect(await client.ping()).toBe('PONG');
      const deleted = await hangar.delete(`/v2/instances/acl-pass/acls/${added.body.data}/`);
      expect(deleted.status).toBe(200);
      await eventually('the open connection from the source cut', () => !client.isOpen, 5000);
      expect(await pingOutcome(port, inst.password, source)).toBe('refused');
    } finally {
      if (client.isOpen) client.destroy();
    }
    await hangar.waitFor('acl-pass', (r) => r?.state === 'ACTIVE');

    const after = { primary: await commandCalls(primary), replica: await commandCalls(replica) };
    // the client's own AUTH and PING above went to the primary: one each, and nothing from hangar
    for (const c of ['auth', 'ping']) expect((after.primary[c] ?? 0) - (before.primary[c] ?? 0), c).toBe(1);
    expect(changed(before.primary, after.primary, ignore)).toEqual([]);
    expect(changed(before.replica, after.replica, ignore)).toEqual([]);
  });

  it('a change of a setting still reaches both engines (a pass that converges them)', async () => {
    const res = await hangar.patch('/v2/redis/acl-pass/config/', { timeout: '300' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    for (const c of [primary, replica]) expect(await c.configGet('timeout')).toEqual({ timeout: '300' });
  });
});
