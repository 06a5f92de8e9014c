import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/database.js';
import { redisBody } from '../helpers/bodies.js';
import { DIALECTS, freshPostgres } from '../helpers/database.js';
import { Client } from '../helpers/hangar.js';
import { type ServeProcess, spawnServe } from '../helpers/process.js';

/**
 * The real binary, killed (SIGKILL, through HANGAR_TEST_DIE_AT) in the middle of a create or a
 * delete, then started again on the same store without the fault: the work is finished and no
 * instance stays in a transitional state, well before the dead process's 30 s leases expire.
 */

const LOGIN = 'ops@example.com';
const PASSWORD = 'crash-test-password';
const ENV = {
  HANGAR_BOOTSTRAP_LOGIN: LOGIN,
  HANGAR_BOOTSTRAP_PASSWORD: PASSWORD,
  // Long leases: the killed process's runtime lease and claims must not be waited out (on
  // SQLite the data-dir lock proves it dead; on PostgreSQL its pid, on this host, does).
  HANGAR_LEASE_TTL: '30',
};

describe.each(DIALECTS)('crash recovery of hangar serve on %s', (dialect) => {
  let dataDir: string;
  let databaseUrl: string | undefined;
  let dropDb: (() => Promise<void>) | undefined;
  const running: ServeProcess[] = [];

  beforeEach(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'hangar-crash-'));
    if (dialect === 'postgres') {
      const pg = await freshPostgres();
      databaseUrl = pg.url;
      dropDb = () => pg.drop();
    }
  });
  afterEach(async () => {
    for (const p of running.splice(0)) await p.stop();
    await dropDb?.();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const serve = async (env: Record<string, string> = {}) => {
    const p = await spawnServe({ dataDir, ...(databaseUrl ? { databaseUrl } : {}), env: { ...ENV, ...env } });
    running.push(p);
    return p;
  };
  const login = async (url: string) => {
    const res = await new Client(url, { basic: [LOGIN, PASSWORD] }).get('/v2/tokens/');
    expect(res.status).toBe(200);
    return new Client(url, { token: res.body.data.token });
  };
  /** The instance row as the killed process left it. */
  const rowOf = async (name: string) => {
    const store = await openStore({ dataDir, databaseUrl });
    try {
      return await store.db.selectFrom('instances').select(['id', 'state', 'deleting']).where('name', '=', name).executeTakeFirst();
    } finally {
      await store.close();
    }
  };
  const expectKilled = async (p: ServeProcess) => {
    const exit = await p.exited;
    // (Its log line about the fault may be lost: the log is written asynchronously.)
    expect(exit, p.output()).toEqual({ code: null, signal: 'SIGKILL' });
  };

  it('killed while building an instance: the next start finishes it (ACTIVE)', async () => {
    const first = await serve({ HANGAR_TEST_DIE_AT: 'create:building' });
    const api = await login(first.url);
    // The process may die before or after it answers; the request is durable once accepted.
    const created = await api.post('/v2/instances/', redisBody('half-built')).catch(() => undefined);
    if (created) expect(created.status).toBe(200);
    await expectKilled(first);
    expect(await rowOf('half-built')).toMatchObject({ state: 'BUILDING', deleting: 0 });

    const second = await serve();
    const rec = await (await login(second.url)).waitFor('half-built', (r) => r?.state === 'ACTIVE', 10_000);
    expect(rec).toMatchObject({ name: 'half-built', plan: 500, state: 'ACTIVE' });
    expect(await second.stop()).toEqual({ code: 0, signal: null });
  });

  it('killed as a delete starts: the next start finishes it (gone)', async () => {
    const first = await serve({ HANGAR_TEST_DIE_AT: 'delete:start' });
    const api = await login(first.url);
    await api.ready(redisBody('doomed'));
    const deleted = await api.delete('/v2/instances/doomed/').catch(() => undefined);
    if (deleted) expect(deleted.status).toBe(200);
    await expectKilled(first);
    expect(await rowOf('doomed')).toMatchObject({ state: 'DELETING', deleting: 1 });

    const second = await serve();
    const again = await login(second.url);
    await again.waitGone('doomed', 10_000);
    expect((await again.get('/v2/instances/')).body).toEqual({ data: [] });
    expect(await rowOf('doomed')).toBeUndefined();
  });
});
