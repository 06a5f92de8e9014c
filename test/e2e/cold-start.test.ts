import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SseReader } from '../helpers/sse.js';
import { HangarProcess, enginesAvailable, hangarDown, portOf, type RedisRecord } from './helpers/hangar-process.js';
import { processesUnder } from './helpers/processes.js';
import { eventually, pingOutcome } from './helpers/redis.js';

const LOCAL = [{ cidr_mask: '127.0.0.1', description: 'this machine' }];
const NAMES = ['cold-a', 'cold-b', 'cold-c'];

/**
 * A deliberate cold start (`hangar down`, then `hangar serve`) is no incident: hangar brings up
 * what should run before it judges it, so the instances stay ACTIVE throughout and no
 * `instance.state` event (which webhooks and alerts follow) says DEGRADED.
 */
describe.runIf(enginesAvailable())('a cold start after hangar down', () => {
  let h: HangarProcess;

  beforeAll(async () => {
    h = await HangarProcess.start();
  }, 60_000);
  afterAll(async () => {
    await h?.destroy();
  });

  it('brings every instance back ACTIVE without an instance.state event to DEGRADED', async () => {
    const events = (after: number) =>
      SseReader.open(`${h.url}/v2/events/stream?kinds=instance.state&last_event_id=${after}`, { 'x-auth-token': h.authToken });
    const before = await events(0);
    let records: RedisRecord[];
    let lastId: number;
    try {
      records = [];
      for (const name of NAMES) expect((await h.post('/v2/instances/', h.redisBody(name, { acls: LOCAL }))).status).toBe(200);
      for (const name of NAMES) records.push(await h.waitFor(name, (r) => r?.state === 'ACTIVE'));
      await before.until('each instance ACTIVE on the stream', (ms) =>
        NAMES.every((n) => ms.some((m) => m.data?.instance_name === n && m.data?.data?.to === 'ACTIVE')),
      );
      lastId = Math.max(...before.events.map((m) => m.id!));
    } finally {
      before.close();
    }

    expect(await h.stop()).toEqual({ code: 0, signal: null });
    const down = await hangarDown(h.dataDir);
    expect(down.code, down.stderr).toBe(0);
    expect(processesUnder(h.dataDir)).toEqual([]);

    await h.serve();
    // every event since the last one before the stop, those of the start included
    const after = await events(lastId);
    try {
      for (const r of records) {
        await h.waitFor(r.name, (rec) => rec?.state === 'ACTIVE');
        await eventually(
          `${r.name} answers through the edge`,
          async () => (await pingOutcome(portOf(r.public_connect_string), r.password)) === 'PONG',
          20_000,
        );
      }
      // a few periodic checks later, still nothing said
      await new Promise((r) => setTimeout(r, 3000));
      const changes = after.events.map((m) => ({ instance: m.data?.instance_name, ...m.data?.data }));
      expect(
        changes.filter((c) => c.to === 'DEGRADED'),
        JSON.stringify(changes),
      ).toEqual([]);
      expect(changes, 'no state change at all: ACTIVE before, ACTIVE after').toEqual([]);
      for (const name of NAMES) {
        const rec = (await h.get(`/v2/instances/${name}/`)).body.data;
        // a record without a reason has none to show
        expect({ state: rec.state, reason: rec.state_reason ?? null }).toEqual({ state: 'ACTIVE', reason: null });
      }
    } finally {
      after.close();
    }
  });
});
