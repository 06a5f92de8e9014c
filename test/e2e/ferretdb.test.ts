import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, HangarProcess, LOGIN, PASSWORD, enginesAvailable } from './helpers/hangar-process.js';
import { isAlive, processesUnder } from './helpers/processes.js';

// MongoDB on FerretDB, for real: `hangar serve` with the local runtime (as root in CI, engines then
// run as the engine user), FerretDB 1.24.2 from the engine cache (`hangar engines install
// ferretdb@1.24.2`, which CI runs first), clients through the edge with the official driver.

const CACHE =
  process.env.HANGAR_ENGINE_CACHE ??
  (process.getuid?.() === 0 ? '/var/cache/hangar/engines' : join(process.env.HOME ?? '', '.cache/hangar/engines'));
const FERRETDB = join(CACHE, 'ferretdb', '1.24.2', 'bin', 'ferretdb');

/** Whether FerretDB and sqlite3 are here; in CI their absence fails the run, elsewhere the tests are left out saying what to install. */
function ferretdbAvailable(): boolean {
  if (!enginesAvailable()) return false;
  const missing = [
    existsSync(FERRETDB) ? undefined : `FerretDB 1.24.2 (hangar engines install ferretdb@1.24.2; looked for ${FERRETDB})`,
    spawnSync('sh', ['-c', 'command -v sqlite3'], { stdio: 'ignore' }).status === 0 ? undefined : 'sqlite3 (apt-get install sqlite3)',
  ].filter((x): x is string => x !== undefined);
  if (missing.length === 0) return true;
  const message = `the FerretDB tests need ${missing.join(' and ')}`;
  if (process.env.CI === 'true') throw new Error(message);
  console.warn(`${message}; leaving them out`);
  return false;
}

/**
 * A Python with the objectrocket client (PyPI objectrocket 0.7.0 and test/e2e/python/requirements.txt): HANGAR_TEST_OBJECTROCKET_PYTHON, else python3 when it imports it.
 */
function objectrocketPython(): string | undefined {
  const python = process.env.HANGAR_TEST_OBJECTROCKET_PYTHON ?? 'python3';
  if (spawnSync(python, ['-c', 'import objectrocket, pymongo'], { stdio: 'ignore' }).status === 0) return python;
  const message =
    'the objectrocket Python client is not installed (a venv with `pip install --no-deps objectrocket==0.7.0` and `pip install -r test/e2e/python/requirements.txt`, named by HANGAR_TEST_OBJECTROCKET_PYTHON; .ci/run makes one)';
  // in CI its absence fails the run, elsewhere the test is left out saying what to install
  if (process.env.CI === 'true') throw new Error(message);
  console.warn(`${message}: its test is left out`);
  return undefined;
}

const LOCAL = [{ cidr_mask: '127.0.0.1', description: 'this machine' }];
const users = (inst: string, db = 'app') => `/v2/mongodb/${inst}/databases/${db}/users`;

/** A `mongodb://` URL built from a record's `connect_string`, as a client would. */
const urlOf = (connectString: string, user: string, password: string, db: string) =>
  `mongodb://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${connectString}/${db}?authSource=${db}`;

/** Logs in through the edge and runs `work`; resolves with what it returned, or the failure's message. */
async function asClient<T>(
  url: string,
  work: (c: MongoClient) => Promise<T>,
  localAddress?: string,
): Promise<{ ok: true; value: T } | { ok: false; error: string }> {
  const client = new MongoClient(url, {
    serverSelectionTimeoutMS: 3000,
    connectTimeoutMS: 3000,
    ...(localAddress ? { localAddress } : {}),
  } as ConstructorParameters<typeof MongoClient>[1]);
  try {
    await client.connect();
    return { ok: true, value: await work(client) };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  } finally {
    await client.close().catch(() => {});
  }
}

const count = (db: string) => (c: MongoClient) => c.db(db).collection('things').countDocuments();

/** The uid a process runs as. */
const uidOf = (pid: number) => Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);

async function eventually(what: string, check: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function finished(h: HangarProcess, path: string, ms = 60_000): Promise<any> {
  let last: any;
  await eventually(
    `${path} to finish`,
    async () => {
      last = (await h.get(path)).body.data;
      return ['COMPLETED', 'FAILED', 'SUCCEEDED'].includes(last?.state);
    },
    ms,
  );
  return last;
}

describe.runIf(ferretdbAvailable())('MongoDB on FerretDB on the local runtime', () => {
  let h: HangarProcess;
  let m: any;

  beforeAll(async () => {
    h = await HangarProcess.start();
  }, 60_000);
  afterAll(async () => {
    await h?.destroy();
  });

  const body = (name: string, extra: Record<string, unknown> = {}) => ({
    name,
    service: 'mongodb',
    type: 'mongodb_singledb',
    plan: 1,
    version: '1.24.2',
    zone: 'US-Dallas',
    ...extra,
  });
  const pidOf = (id: string) => Number(readFileSync(join(h.dataDir, 'instances', id, 'ferretdb', 'process.pid'), 'utf8'));

  it('a create that names no engine gets FerretDB where mongod is missing, and reaches ACTIVE', async () => {
    const zones = (await h.get('/v2/zones/')).body.data as any[];
    const mongodb = zones.find((z) => z.name === 'US-Dallas').services.find((s: any) => s.service === 'mongodb');
    expect(mongodb).toMatchObject({ available: true, default_engine: 'ferretdb', versions: expect.arrayContaining(['1.24.2', '1.24']) });
    const res = await h.post('/v2/instances/', body('m', { acls: LOCAL }));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    m = await h.waitFor('m', (r) => r?.state === 'ACTIVE', 60_000);
    expect(m).toMatchObject({ engine: 'ferretdb', version: '1.24.2', type: 'mongodb_singledb' });
    expect(m.connect_string).toMatch(/^127\.0\.0\.1:\d+$/);
    const pid = pidOf(m.id);
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    expect(cmdline[0]).toBe(FERRETDB);
    // the password of hangar's user is in the process's environment, never on its command line
    expect(cmdline.join(' ')).not.toMatch(/setup-password/);
    expect(readFileSync(`/proc/${pid}/environ`, 'utf8')).toMatch(/FERRETDB_SETUP_PASSWORD=/);
    if (process.getuid?.() === 0) expect(uidOf(pid)).not.toBe(0);
  });

  it('422 for the types FerretDB cannot run, saying why; a version of mongod is a 400 listing FerretDB versions', async () => {
    const rs = await h.post('/v2/instances/', body('rs', { type: 'mongodb_replica_set' }));
    expect(rs.status).toBe(422);
    expect(rs.body.message).toMatch(
      /FerretDB \(engine ferretdb\) runs mongodb_singledb only, not mongodb_replica_set; mongod, which runs it, cannot run here/,
    );
    const old = await h.post('/v2/instances/', body('old', { version: '3.4.2' }));
    expect(old.status).toBe(400);
    expect(old.body).toMatchObject({ field: 'version', allowed: expect.arrayContaining(['1.24.2', '1.24']) });
  });

  it('the user endpoints on the live server: a created user logs in through the edge, roles are kept as sent', async () => {
    const created = await h.post(users('m'), { username: 'app', password: 'password-1', roles: [{ role: 'readWrite', db: 'app' }] });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.data).toMatch(/"app"/);
    const url = urlOf(m.connect_string, 'app', 'password-1', 'app');
    const wrote = await asClient(url, async (c) => {
      await c
        .db('app')
        .collection('things')
        .insertMany([{ n: 1 }, { n: 2 }, { n: 3 }]);
      return c.db('app').collection('things').countDocuments();
    });
    expect(wrote).toEqual({ ok: true, value: 3 });
    expect(await asClient(urlOf(m.connect_string, 'app', 'wrong-password', 'app'), count('app'))).toMatchObject({ ok: false });
    const list = await h.get(users('m'));
    expect(list.body.data).toEqual([{ name: 'app', roles: [{ role: 'readWrite', db: 'app' }] }]);
  });

  it('a password change: the old one refused, the new one accepted; roles alone change no password', async () => {
    expect((await h.patch(`${users('m')}/app`, { password: 'password-2' })).status).toBe(200);
    expect(await asClient(urlOf(m.connect_string, 'app', 'password-1', 'app'), count('app'))).toMatchObject({ ok: false });
    expect(await asClient(urlOf(m.connect_string, 'app', 'password-2', 'app'), count('app'))).toEqual({ ok: true, value: 3 });
    const roles = [
      { role: 'read', db: 'app' },
      { role: 'read', db: 'reports' },
    ];
    expect((await h.patch(`${users('m')}/app`, { roles })).status).toBe(200);
    expect((await h.get(users('m'))).body.data).toEqual([{ name: 'app', roles }]);
    expect(await asClient(urlOf(m.connect_string, 'app', 'password-2', 'app'), count('app'))).toEqual({ ok: true, value: 3 });
    expect((await h.patch(`${users('m')}/app`, { password: 'password-3', roles: [{ role: 'dbAdmin', db: 'app' }] })).status).toBe(200);
    expect(await asClient(urlOf(m.connect_string, 'app', 'password-2', 'app'), count('app'))).toMatchObject({ ok: false });
    expect(await asClient(urlOf(m.connect_string, 'app', 'password-3', 'app'), count('app'))).toEqual({ ok: true, value: 3 });
    expect((await h.get(users('m'))).body.data).toEqual([{ name: 'app', roles: [{ role: 'dbAdmin', db: 'app' }] }]);
  });

  it("errors keep their shape: 404 for an unknown instance, user or database, 400 for hangar's own user, 409 for a user that exists", async () => {
    const none = await h.get(users('nowhere'));
    expect(none.status).toBe(404);
    expect(none.body).toMatchObject({ message: expect.stringMatching(/nowhere/) });
    expect((await h.patch(`${users('m')}/nobody`, { password: 'password-9' })).status).toBe(404);
    expect((await h.delete(`${users('m', 'otherdb')}/app`)).status).toBe(404);
    expect((await h.post(users('m', 'admin'), { username: 'hangar', password: 'password-9', roles: [] })).status).toBe(400);
    const twice = await h.post(users('m'), { username: 'app', password: 'password-1', roles: [] });
    expect(twice.status).toBe(409);
    expect(Object.keys(twice.body).sort()).toEqual(['code', 'message']);
  });

  it("another account's instance is the same 404 as a missing one, on every user endpoint", async () => {
    const login = 'other@example.com';
    const made = spawnSync(
      process.execPath,
      [BIN, 'accounts', 'create', '--data-dir', h.dataDir, '--login', login, '--password', PASSWORD],
      {
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '' },
      },
    );
    expect(made.status, made.stderr).toBe(0);
    const basic = Buffer.from(`${login}:${PASSWORD}`).toString('base64');
    const token = ((await (await fetch(`${h.url}/v2/tokens/`, { headers: { authorization: `Basic ${basic}` } })).json()) as any).data.token;
    const as = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${h.url}${path}`, {
        method,
        headers: { 'x-auth-token': token, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const missing = await as('GET', users('nowhere'));
    for (const [method, path, body] of [
      ['GET', users('m'), undefined],
      ['POST', users('m'), { username: 'intruder', password: 'password-x', roles: [] }],
      ['PATCH', `${users('m')}/app`, { password: 'password-x' }],
      ['DELETE', `${users('m')}/app`, undefined],
    ] as const) {
      const res = await as(method, path, body);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.code).toBe(missing.body.code);
    }
    expect(await asClient(urlOf(m.connect_string, 'app', 'password-3', 'app'), count('app'))).toEqual({ ok: true, value: 3 });
  });

  it('the edge admits only the ACLs: a source outside them is refused before any login', async () => {
    const url = urlOf(m.connect_string, 'app', 'password-3', 'app');
    const outside = await asClient(url, count('app'), '127.0.0.9');
    expect(outside.ok).toBe(false);
    const denied = await h.get('/v2/instances/m/acls/denied');
    expect(denied.status).toBe(200);
    await eventually('the refusal in the denied log', async () =>
      ((await h.get('/v2/instances/m/acls/denied')).body.data as any[]).some((d) => d.source === '127.0.0.9'),
    );
  });

  it('ferretdb keeps serving while hangar is stopped, and a restarted hangar adopts it (same process)', async () => {
    const pid = pidOf(m.id);
    await h.stop();
    expect(isAlive(pid)).toBe(true);
    expect(await asClient(urlOf(m.connect_string, 'app', 'password-3', 'app'), count('app'))).toEqual({ ok: true, value: 3 });
    await h.serve();
    await h.waitSupervising();
    await h.waitFor('m', (r) => r?.state === 'ACTIVE');
    expect(pidOf(m.id)).toBe(pid);
    expect(isAlive(pid)).toBe(true);
  });

  it('kill -9 of ferretdb: hangar starts it again, with its data and users', async () => {
    const pid = pidOf(m.id);
    process.kill(pid, 'SIGKILL');
    await eventually('ferretdb to be started again', async () => {
      try {
        const now = pidOf(m.id);
        return now !== pid && isAlive(now);
      } catch {
        return false;
      }
    });
    await h.waitFor('m', (r) => r?.state === 'ACTIVE');
    await eventually('the data to be served again', async () => {
      const r = await asClient(urlOf(m.connect_string, 'app', 'password-3', 'app'), count('app'));
      return r.ok && r.value === 3;
    });
  });

  it('a backup restores into the same instance (later writes gone, users kept) and into a new one', async () => {
    const started = await h.post('/v2/instances/m/backups/');
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const backup = await finished(h, `/v2/instances/m/backups/${started.body.data.id}/`);
    expect(backup).toMatchObject({ state: 'COMPLETED', format: 'ferretdb-sqlite', engine_version: '1.24.2' });
    const url = urlOf(m.connect_string, 'app', 'password-3', 'app');
    await asClient(url, (c) => c.db('app').collection('things').insertOne({ n: 4, after: true }));
    expect(await asClient(url, count('app'))).toEqual({ ok: true, value: 4 });
    // a user made after the backup stays: users are the instance's, not the snapshot's
    expect((await h.post(users('m'), { username: 'late', password: 'password-late', roles: [] })).status).toBe(200);

    const restore = await h.post('/v2/instances/m/restore/', { backup_id: backup.id });
    expect(restore.status, JSON.stringify(restore.body)).toBe(200);
    const op = await finished(h, `/v2/operations/${restore.body.data.id}/`);
    expect(op.state, JSON.stringify(op)).toBe('SUCCEEDED');
    expect(op.steps.map((s: any) => s.name)).toEqual(expect.arrayContaining(['ferretdb-restore:staged', 'ferretdb-restore:data-swapped']));
    await h.waitFor('m', (r) => r?.state === 'ACTIVE');
    expect(await asClient(url, count('app'))).toEqual({ ok: true, value: 3 });
    expect(await asClient(urlOf(m.connect_string, 'late', 'password-late', 'app'), count('app'))).toEqual({ ok: true, value: 3 });
    expect(readdirSync(join(h.dataDir, 'instances', m.id, 'ferretdb')).sort()).toEqual([
      'data',
      'process.log',
      'process.pid',
      'state.json',
    ]);

    const copy = await h.post('/v2/instances/', body('copy', { version: '1.24', restore_from: backup.id, acls: LOCAL }));
    expect(copy.status, JSON.stringify(copy.body)).toBe(200);
    const c = await h.waitFor('copy', (r) => r?.state === 'ACTIVE', 60_000);
    expect(c.connect_string).not.toBe(m.connect_string);
    // the copy has none of the source's users (they are hangar's, per instance), its own once made
    expect(await asClient(urlOf(c.connect_string, 'app', 'password-3', 'app'), count('app'))).toMatchObject({ ok: false });
    expect((await h.post(users('copy'), { username: 'reader', password: 'password-r', roles: [{ role: 'read', db: 'app' }] })).status).toBe(
      200,
    );
    expect(await asClient(urlOf(c.connect_string, 'reader', 'password-r', 'app'), count('app'))).toEqual({ ok: true, value: 3 });
  });

  it('a deleted user is refused', async () => {
    expect((await h.delete(`${users('m')}/late`)).status).toBe(200);
    expect(await asClient(urlOf(m.connect_string, 'late', 'password-late', 'app'), count('app'))).toMatchObject({ ok: false });
    expect((await h.get(users('m'))).body.data.map((u: any) => u.name)).toEqual(['app']);
  });

  const python = objectrocketPython();
  it.runIf(python)("the objectrocket Python client's MongoDB calls on a single instance", async () => {
    const script = join(import.meta.dirname, 'python', 'objectrocket_singledb.py');
    const run = spawnSync(python!, [script, h.url, LOGIN, PASSWORD, 'py-single'], { encoding: 'utf8', timeout: 120_000 });
    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(run.stdout).toMatch(/all passed/);
  });

  it('rename keeps the instance serving; delete leaves nothing behind', async () => {
    const renamed = await h.post('/v2/instances/m/rename/', { name: 'm2' });
    expect(renamed.status, JSON.stringify(renamed.body)).toBe(200);
    const r = await h.waitFor('m2', (x) => x?.state === 'ACTIVE');
    expect(r.connect_string).toBe(m.connect_string);
    expect(await asClient(urlOf(r.connect_string, 'app', 'password-3', 'app'), count('app'))).toEqual({ ok: true, value: 3 });
    const dir = join(h.dataDir, 'instances', m.id);
    expect(processesUnder(dir).length).toBe(1);
    expect((await h.delete('/v2/instances/m2/')).status).toBe(200);
    await h.waitFor('m2', (x) => x === undefined);
    expect(existsSync(dir)).toBe(false);
    expect(processesUnder(dir)).toEqual([]);
    expect(await asClient(urlOf(m.connect_string, 'app', 'password-3', 'app'), count('app'))).toMatchObject({ ok: false });
  });
});
