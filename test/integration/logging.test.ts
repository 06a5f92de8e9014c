import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { type Hangar, createLogger, startHangar } from '../../src/server.js';
import { accounts } from '../helpers/accounts.js';
import { mongoBody, redisBody } from '../helpers/bodies.js';
import { Client } from '../helpers/hangar.js';

const LOGIN = 'logs@example.com';
const PASSWORD = 'a-password-that-must-never-be-logged';
const USER_PASSWORD = 'mongo-user-secret-never-logged';
const NEW_USER_PASSWORD = 'another-mongo-secret-never-logged';

describe('request logs', () => {
  let dataDir: string;
  let hangar: Hangar;
  let lines: string[];
  const secrets: string[] = [PASSWORD, USER_PASSWORD, NEW_USER_PASSWORD];

  /** The parsed lines logged so far. */
  const logged = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  const requestLines = () => logged().filter((l) => l.msg === 'request');

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'hangar-logs-'));
    lines = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(...chunk.toString().split('\n').filter(Boolean));
        done();
      },
    });
    const config = loadConfig(
      {},
      {
        HANGAR_PORT: '0',
        HANGAR_DATA_DIR: dataDir,
        HANGAR_RUNTIME: 'emulated',
        HANGAR_LOG_LEVEL: 'trace',
        HANGAR_HOST_ID: `logs-${process.pid}`,
        HANGAR_DRAIN_PERIOD: '0',
      },
    );
    // The server's own logger (its redaction included), writing to the test's stream.
    hangar = await startHangar(config, createLogger(config, sink));
    await accounts(hangar).createAccount(LOGIN, PASSWORD);
  });
  afterAll(async () => {
    await hangar?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('one line per request: request id, method, route, status, account, duration', async () => {
    const basic = new Client(hangar.url, { basic: [LOGIN, PASSWORD] });
    const res = await basic.get('/v2/instances/', { headers: { 'x-request-id': 'trace-me-123' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('trace-me-123');
    await new Promise((r) => setTimeout(r, 50));
    const line = requestLines().find((l) => l.request_id === 'trace-me-123');
    expect(line).toMatchObject({
      method: 'GET',
      url: '/v2/instances/',
      route: '/v2/instances/',
      status: 200,
      account: LOGIN,
      duration_ms: expect.any(Number),
    });
    expect(requestLines().filter((l) => l.request_id === 'trace-me-123')).toHaveLength(1);
  });

  it('a request id that is not one is replaced by a new one, which is returned', async () => {
    const res = await new Client(hangar.url, undefined).get('/v2/instances/', { headers: { 'x-request-id': 'x'.repeat(129) } });
    expect(res.status).toBe(401);
    const id = res.headers.get('x-request-id')!;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    await new Promise((r) => setTimeout(r, 50));
    expect(requestLines().find((l) => l.request_id === id)).toMatchObject({ status: 401, account: null });
    const made = await new Client(hangar.url, undefined).get('/healthz');
    expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('never carries a password, a token or an Authorization header', async () => {
    const basic = new Client(hangar.url, { basic: [LOGIN, PASSWORD] });
    const token = (await basic.get('/v2/tokens/')).body.data.token as string;
    secrets.push(token, Buffer.from(`${LOGIN}:${PASSWORD}`).toString('base64'));
    const me = new Client(hangar.url, { token });
    await new Client(hangar.url, { basic: [LOGIN, 'wrong-password-also-secret'] }).get('/v2/instances/');
    secrets.push('wrong-password-also-secret');
    await me.post('/v2/tokens/verify/', { token });
    const m = await me.post('/v2/instances/', mongoBody('m'));
    await me.waitFor('m', (r) => r?.state === 'ACTIVE');
    const r = await me.post('/v2/instances/', redisBody('r'));
    await me.waitFor('r', (x) => x?.state === 'ACTIVE');
    secrets.push(r.body.data.password, r.body.data.api_key);
    const users = `/v2/mongodb/${m.body.data.id}/databases/app/users`;
    expect((await me.post(users, { username: 'u', password: USER_PASSWORD, roles: [] })).status).toBe(200);
    expect((await me.patch(`${users}/u`, { password: NEW_USER_PASSWORD })).status).toBe(200);
    // A body the server refuses is not logged either.
    await me.request('POST', users, {
      rawBody: `{"username": "v", "password": "${USER_PASSWORD}", "roles": [`,
      headers: { 'content-type': 'application/json' },
    });
    await me.delete('/v2/tokens/');
    await new Promise((res) => setTimeout(res, 100));

    expect(requestLines().length).toBeGreaterThan(8);
    const all = lines.join('\n');
    for (const s of secrets) expect(all, `a secret (${s.slice(0, 4)}...) in the log`).not.toContain(s);
    expect(requestLines().filter((l) => l.route === '/v2/tokens/verify/')[0]).toMatchObject({ status: 200 });
  });
});
