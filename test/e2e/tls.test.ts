import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { POSTGRES_URL, freshPostgres } from '../helpers/database.js';
import { HangarProcess, LOGIN, PASSWORD, enginesAvailable, portOf, type Reply } from './helpers/hangar-process.js';
import { objectrocketPython } from './helpers/objectrocket.js';
import { type ClientTls, type RedisClient, connectRedis, eventually, pingOutcome } from './helpers/redis.js';

// TLS on instance connections, black box: `hangar serve` with the local runtime, real HAProxy and
// redis-server, driven through the HTTP API; clients verify the edge against GET /v2/tls/ca.

const LOCAL = [{ cidr_mask: '127.0.0.1', description: 'this machine' }];

/** The deployment's CA certificate, as any client fetches it: no credentials. */
async function caOf(h: HangarProcess): Promise<string> {
  const res = await fetch(`${h.url}/v2/tls/ca`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/x-pem-file/);
  return res.text();
}

/** The serial of the certificate the edge presents on `port` to a client that trusts `ca` (for 127.0.0.1). */
function servedSerial(port: number, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect({ host: '127.0.0.1', port, ca }, () => {
      const serial = s.getPeerX509Certificate()!.serialNumber;
      s.destroy();
      resolve(serial);
    });
    s.once('error', reject);
  });
}

/**
 * A client sending INCR `key` on one connection, one after the other, until stopped: how many it
 * sent and saw answered, the last value, and the first error (a command lost, the connection cut).
 */
function steady(client: RedisClient, key: string) {
  const state = { sent: 0, answered: 0, last: 0, error: undefined as string | undefined, running: true };
  const done = (async () => {
    while (state.running) {
      state.sent++;
      try {
        const n = await client.incr(key);
        if (n !== state.last + 1) {
          state.error = `INCR answered ${n} after ${state.last}`;
          return;
        }
        state.last = n;
        state.answered++;
      } catch (err) {
        state.error = (err as Error).message;
        return;
      }
      await new Promise((r) => setTimeout(r, 2));
    }
  })();
  return {
    state,
    async stop() {
      state.running = false;
      await done;
      return state;
    },
  };
}

const close = (c: RedisClient) => {
  try {
    c.destroy();
  } catch {
    /* already closed */
  }
};

describe.runIf(enginesAvailable())('TLS on instance connections, through the local edge', () => {
  let h: HangarProcess;
  let ca: string;

  beforeAll(async () => {
    h = await HangarProcess.start();
    ca = await caOf(h);
  }, 60_000);

  afterAll(async () => {
    await h?.destroy();
  });

  /** The operation a change answered with (X-Operation-Id), once it succeeded. */
  async function succeeded(res: Reply, kind: string): Promise<any> {
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const id = res.headers.get('x-operation-id');
    expect(id).toMatch(/^[0-9a-f]{24}$/);
    let op: any;
    await eventually(
      `${kind} to succeed`,
      async () => {
        op = (await h.get(`/v2/operations/${id}/`)).body.data;
        if (op.state === 'FAILED') throw new Error(`${kind} failed: ${JSON.stringify(op)}`);
        return op.state === 'SUCCEEDED';
      },
      30_000,
    );
    expect(op.kind).toBe(kind);
    return op;
  }

  describe('an instance in `preferred` (the default)', () => {
    let rec: any;
    let tls: ClientTls;
    beforeAll(async () => {
      rec = await h.createRedis('t', { acls: LOCAL });
      tls = { ca };
    }, 60_000);

    it("keeps the spec's fields plain (what existing clients read) and names the TLS addresses beside them", () => {
      expect(rec.tls).toBe('preferred');
      expect(rec.connect_string).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);
      expect(rec.public_connect_string).toBe(rec.connect_string);
      expect(rec.servicenet_connect_string).toMatch(/^redis:\/\//);
      expect(rec.tls_connect_string).toMatch(/^rediss:\/\/127\.0\.0\.1:\d+$/);
      expect(rec.public_tls_connect_string).toBe(rec.tls_connect_string);
      expect(rec.servicenet_tls_connect_string).toMatch(/^rediss:\/\/127\.0\.0\.1:\d+$/);
    });

    const python = objectrocketPython(['redis']);
    it.runIf(python)('the objectrocket Python client reads the instance and reaches it on its connect_string, in plain', () => {
      const script = join(import.meta.dirname, 'python', 'objectrocket_redis.py');
      const run = spawnSync(python!, [script, h.url, LOGIN, PASSWORD, 't'], { encoding: 'utf8', timeout: 60_000 });
      expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
      expect(run.stdout).toMatch(/all passed/);
    });

    it('a client verifying the edge against GET /v2/tls/ca (its IP checked) AUTHs and PINGs on both TLS addresses', async () => {
      expect(await pingOutcome(portOf(rec.tls_connect_string), rec.password, undefined, tls)).toBe('PONG');
      expect(await pingOutcome(portOf(rec.servicenet_tls_connect_string), rec.password, undefined, tls)).toBe('PONG');
      // the certificate is checked for the address: another name, or another CA, and the client refuses it
      expect(await pingOutcome(portOf(rec.tls_connect_string), rec.password, undefined, { ca, servername: 'localhost' })).toMatch(
        /^ERR_TLS_CERT_ALTNAME_INVALID/,
      );
      expect(await pingOutcome(portOf(rec.tls_connect_string), rec.password, undefined, {})).toMatch(
        /^(UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT|SELF_SIGNED_CERT_IN_CHAIN)/,
      );
      // the edge presents the instance's certificate, of the CA, for its IP
      const serial = await servedSerial(portOf(rec.tls_connect_string), ca);
      expect(serial).toBe((await h.get('/v2/instances/t/tls/')).body.data.serial);
      // a wrong password is the engine's answer, through TLS
      expect(await pingOutcome(portOf(rec.tls_connect_string), 'wrong', undefined, tls)).toMatch(/WRONGPASS|invalid/i);
    });

    it('a plain client on the TLS port and a TLS client on a plain port both fail', async () => {
      expect(await pingOutcome(portOf(rec.tls_connect_string), rec.password)).toBe('refused');
      // the engine reads a ClientHello as the start of a command and answers nothing: the handshake never ends
      expect(await pingOutcome(portOf(rec.connect_string), rec.password, undefined, tls)).toMatch(/^(refused|Connection timeout)$/);
      // the plain address serves plain clients, as before
      expect(await pingOutcome(portOf(rec.connect_string), rec.password)).toBe('PONG');
    });

    it('an address outside the ACLs is refused on the TLS port and listed in acls/denied', async () => {
      expect(await pingOutcome(portOf(rec.tls_connect_string), rec.password, '127.0.0.2', tls)).toBe('refused');
      await eventually(
        'the refusal is listed',
        async () =>
          ((await h.get('/v2/instances/t/acls/denied')).body.data as any[]).some(
            (d) => d.source === '127.0.0.2' && d.listener === 'public.tls',
          ),
        15_000,
      );
      expect(await pingOutcome(portOf(rec.tls_connect_string), rec.password, '127.0.0.1', tls)).toBe('PONG');
      expect((await h.get('/v2/instances/t/acls/effective')).body.data.in_sync).toBe(true);
      // deleting the ACL cuts an open TLS connection of its source, as it does a plain one
      const conn = await connectRedis(portOf(rec.tls_connect_string), rec.password, undefined, tls);
      try {
        const acl = (await h.get('/v2/instances/t/acls/')).body.data[0];
        expect((await h.delete(`/v2/instances/t/acls/${acl._id.$oid}/`)).status).toBe(200);
        await eventually(
          'the open TLS connection is cut',
          async () => {
            try {
              await conn.ping();
              return false;
            } catch {
              return true;
            }
          },
          15_000,
        );
      } finally {
        close(conn);
      }
      expect(await pingOutcome(portOf(rec.tls_connect_string), rec.password, undefined, tls)).toBe('refused');
      expect((await h.post('/v2/instances/t/acls/', LOCAL[0])).status).toBe(200);
      expect(await pingOutcome(portOf(rec.tls_connect_string), rec.password, undefined, tls)).toBe('PONG');
    });

    it("its certificate's end is in /metrics: hangar_tls_certificate_expiry_seconds", async () => {
      const text = await (await fetch(`${h.url}/metrics`)).text();
      const line = text.split('\n').find((l) => l.startsWith('hangar_tls_certificate_expiry_seconds{') && l.includes(`"${rec.id}"`));
      expect(
        line,
        text
          .split('\n')
          .filter((l) => l.includes('tls'))
          .join('\n'),
      ).toBeDefined();
      const { not_after } = (await h.get('/v2/instances/t/tls/')).body.data;
      expect(Math.abs(Number(line!.split(' ').at(-1)) - (Date.parse(not_after) - Date.now()) / 1000)).toBeLessThan(120);
    });

    it('after a rotation, a connection opened before still answers and a new one sees the new serial', async () => {
      const before = (await h.get('/v2/instances/t/tls/')).body.data.serial;
      const old = await connectRedis(portOf(rec.tls_connect_string), rec.password, undefined, tls);
      try {
        const keep = steady(old, 'rotation');
        const res = await h.post('/v2/instances/t/tls/rotate');
        const op = await succeeded(res, 'tls.rotate');
        const after = res.body.data.serial;
        expect(after).not.toBe(before);
        expect(op.detail).toEqual({ previous_serial: before, serial: after });
        const state = await keep.stop();
        expect(state.error).toBeUndefined();
        expect(state.answered).toBe(state.sent);
        expect(await old.ping()).toBe('PONG');
        expect(await servedSerial(portOf(rec.tls_connect_string), ca)).toBe(after);
        expect(await servedSerial(portOf(rec.servicenet_tls_connect_string), ca)).toBe(after);
        expect(await pingOutcome(portOf(rec.tls_connect_string), rec.password, undefined, tls)).toBe('PONG');
      } finally {
        close(old);
      }
    });
  });

  it('off -> preferred -> required under steady clients: no command lost on the listener that stays; in required the plain port refuses', async () => {
    const rec = await h.createRedis('s', { tls: 'off', acls: LOCAL });
    expect(rec.tls_connect_string).toBeUndefined();
    const plainPort = portOf(rec.connect_string);
    const plainClient = await connectRedis(plainPort, rec.password);
    const plain = steady(plainClient, 'plain');
    let secureClient: RedisClient | undefined;
    try {
      await succeeded(await h.post('/v2/instances/s/tls/', { mode: 'preferred' }), 'tls.mode');
      const preferred = (await h.get('/v2/instances/s/')).body.data;
      expect(preferred.connect_string).toBe(rec.connect_string);
      const tlsPort = portOf(preferred.tls_connect_string);
      // the plain listener stayed: its client went on without losing a command
      expect(plain.state.error).toBeUndefined();
      secureClient = await connectRedis(tlsPort, rec.password, undefined, { ca });
      const secure = steady(secureClient, 'secure');
      await succeeded(await h.post('/v2/instances/s/tls/', { mode: 'required' }), 'tls.mode');
      const required = (await h.get('/v2/instances/s/')).body.data;
      expect(required.tls).toBe('required');
      expect(required.connect_string).toBe(`rediss://127.0.0.1:${tlsPort}`);
      // the plain listener refuses now, and closed what was open
      await eventually('the plain connection is closed', () => plain.state.error !== undefined, 15_000);
      expect(await pingOutcome(plainPort, rec.password)).toBe('refused');
      expect(await pingOutcome(portOf(required.servicenet_connect_string), rec.password)).toBe('refused');
      expect(await pingOutcome(portOf(required.servicenet_tls_connect_string), rec.password, undefined, { ca })).toBe('PONG');
      const kept = await secure.stop();
      expect(kept.error).toBeUndefined();
      expect(kept.answered).toBe(kept.sent);
      // what each client saw answered is what the engine counted: no INCR lost on the TLS listener
      const check = await connectRedis(tlsPort, rec.password, undefined, { ca });
      try {
        expect(await check.get('secure')).toBe(String(kept.last));
        const cut = await plain.stop();
        expect(cut.answered).toBeGreaterThan(0);
        // cut by the switch to required: at most the command in flight then went unanswered
        expect([String(cut.last), String(cut.last + 1)]).toContain(await check.get('plain'));
      } finally {
        close(check);
      }
    } finally {
      await plain.stop();
      close(plainClient);
      if (secureClient) close(secureClient);
    }
  });

  it("with tls_client_auth, a client without a certificate, with another instance's or with a revoked one is refused", async () => {
    const rec = await h.createRedis('m', { tls: 'required', tls_client_auth: true, acls: LOCAL });
    expect(rec.tls_client_auth).toBe(true);
    const port = portOf(rec.tls_connect_string!);
    const issue = async (name: string) => {
      const res = await h.post(`/v2/instances/${name}/tls/client-certs`, { common_name: 'app' });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.headers.get('cache-control')).toContain('no-store');
      return res.body.data;
    };
    const withCert = (c: any): ClientTls => ({ ca, cert: c.certificate, key: c.private_key });
    const mine = await issue('m');
    const theirs = await issue('t');
    expect(new X509Certificate(mine.certificate).checkIssued(new X509Certificate(ca))).toBe(true);
    expect(await pingOutcome(port, rec.password, undefined, { ca })).toBe('refused');
    expect(await pingOutcome(port, rec.password, undefined, withCert(theirs))).toBe('refused');
    expect(await pingOutcome(port, rec.password, undefined, withCert(mine))).toBe('PONG');
    await succeeded(await h.delete(`/v2/instances/m/tls/client-certs/${mine.serial}`), 'tls.revoke');
    expect(await pingOutcome(port, rec.password, undefined, withCert(mine))).toBe('refused');
    const listed = (await h.get('/v2/instances/m/tls/client-certs')).body.data as any[];
    expect(listed.find((c) => c.serial === mine.serial)?.revoked_at).toBeTruthy();
    // another certificate of the instance is taken
    expect(await pingOutcome(port, rec.password, undefined, withCert(await issue('m')))).toBe('PONG');
  });

  it('after a restart of hangar, the CA is the same and the edge presents the same certificate', async () => {
    const rec = (await h.get('/v2/instances/t/')).body.data;
    const serial = (await h.get('/v2/instances/t/tls/')).body.data.serial;
    await h.stop();
    await h.serve();
    expect(await caOf(h)).toBe(ca);
    await h.waitFor('t', (r) => r?.state === 'ACTIVE');
    expect((await h.get('/v2/instances/t/tls/')).body.data.serial).toBe(serial);
    expect(await servedSerial(portOf(rec.tls_connect_string), ca)).toBe(serial);
    expect(await pingOutcome(portOf(rec.tls_connect_string!), rec.password, undefined, { ca })).toBe('PONG');
  });
});

describe.runIf(POSTGRES_URL !== undefined && enginesAvailable())('the deployment CA of replicas on one PostgreSQL', () => {
  it('is the same for two replicas, and after both restart; their instances verify against it', async () => {
    const db = await freshPostgres();
    const first = await HangarProcess.start({ databaseUrl: db.url });
    let second: HangarProcess | undefined;
    try {
      second = await HangarProcess.replicaOf(first);
      const ca = await caOf(first);
      expect(await caOf(second)).toBe(ca);
      const rec = await first.createRedis('r', { acls: LOCAL });
      expect(await pingOutcome(portOf(rec.tls_connect_string!), rec.password, undefined, { ca })).toBe('PONG');
      await second.stop();
      await first.stop();
      await second.serve();
      await first.serve();
      expect(await caOf(first)).toBe(ca);
      expect(await caOf(second)).toBe(ca);
      await first.waitFor('r', (r) => r?.state === 'ACTIVE');
      expect(await pingOutcome(portOf(rec.tls_connect_string!), rec.password, undefined, { ca })).toBe('PONG');
    } finally {
      await second?.destroy();
      await first.destroy();
      await db.drop();
    }
  });
});
