import { X509Certificate } from 'node:crypto';
import { type Socket, connect as tcpConnect } from 'node:net';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findExecutable } from '../../src/lib/binaries.js';
import { redisBody } from '../helpers/bodies.js';
import { type Account, type Reply, type TestHangar, startTestHangar } from '../helpers/hangar.js';
import { claimPortRange } from '../helpers/ports.js';

// TLS on instance connections through the local runtime's edge, on real HAProxy and
// redis-server: clients that verify the edge against the deployment's CA, the modes and their
// switches under steady clients, rotation without a drop, the ACLs on TLS listeners, mutual TLS.

const available = (() => {
  const path = process.env.PATH ?? '';
  const missing = ['redis-server', 'haproxy'].filter((b) => findExecutable(b, `${path}:/usr/sbin:/sbin`) === undefined);
  if (missing.length === 0) return true;
  const message = `the TLS edge tests need ${missing.join(' and ')} (apt-get install ${missing.join(' ')})`;
  if (process.env.CI === 'true') throw new Error(message);
  console.warn(`${message}; leaving them out`);
  return false;
})();

/** A client's view of one connection: one reply line per command (AUTH, PING, INCR, GET answer in one line here). */
interface Conn {
  readonly socket: Socket | TLSSocket;
  /** Sends a command (inline) and resolves with its reply line, without \r\n. */
  ask(command: string): Promise<string>;
  readonly closed: Promise<void>;
}

function wrap(socket: Socket | TLSSocket): Conn {
  let buffer = '';
  const waiting: ((line: string) => void)[] = [];
  const failing: ((err: Error) => void)[] = [];
  let closedResolve!: () => void;
  const closed = new Promise<void>((r) => {
    closedResolve = r;
  });
  socket.setEncoding('utf8');
  socket.on('data', (d: string) => {
    buffer += d;
    for (let i = buffer.indexOf('\r\n'); i >= 0; i = buffer.indexOf('\r\n')) {
      const line = buffer.slice(0, i);
      buffer = buffer.slice(i + 2);
      // a bulk reply's header: its body follows on the next line
      if (/^\$\d+$/.test(line)) continue;
      failing.shift();
      waiting.shift()?.(line);
    }
  });
  const fail = () => {
    for (const f of failing.splice(0)) f(new Error('connection closed'));
    waiting.splice(0);
    closedResolve();
  };
  socket.on('close', fail);
  socket.on('error', () => {});
  return {
    socket,
    closed,
    ask: (command) =>
      new Promise<string>((resolve, reject) => {
        if (socket.destroyed) return reject(new Error('connection closed'));
        waiting.push(resolve);
        failing.push(reject);
        socket.write(`${command}\r\n`);
      }),
  };
}

/** A connection that has AUTHed: over TLS (verifying the edge against `ca` for 127.0.0.1), or plain. */
async function open(
  port: number,
  password: string,
  tls?: { ca: string; cert?: string; key?: string },
  localAddress?: string,
): Promise<Conn> {
  const socket = await new Promise<Socket | TLSSocket>((resolve, reject) => {
    const from = localAddress ? ({ localAddress } as object) : {};
    const s = tls
      ? tlsConnect({ host: '127.0.0.1', port, ca: tls.ca, ...(tls.cert ? { cert: tls.cert, key: tls.key } : {}), ...from }, () =>
          resolve(s),
        )
      : tcpConnect({ host: '127.0.0.1', port, ...from }, () => resolve(s));
    s.once('error', reject);
    s.setTimeout(3000, () => s.destroy(new Error('timeout')));
  });
  socket.setTimeout(0);
  const conn = wrap(socket);
  const auth = await conn.ask(`AUTH ${password}`);
  if (auth !== '+OK') throw new Error(`AUTH answered ${auth}`);
  return conn;
}

/** What a client gets: PONG through a new connection, or `refused` (closed, reset, handshake refused). */
async function pingOutcome(port: number, password: string, tls?: { ca: string; cert?: string; key?: string }, localAddress?: string) {
  try {
    const c = await open(port, password, tls, localAddress);
    try {
      return await c.ask('PING');
    } finally {
      c.socket.destroy();
    }
  } catch {
    return 'refused';
  }
}

const portOf = (url: string) => Number(new URL(url).port);

async function until(what: string, condition: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * A client that sends INCR on one connection, one after another, until stopped: how many it
 * sent, how many were answered, and the first error (a command lost or the connection cut).
 */
function steady(conn: Conn, key: string) {
  const state = { sent: 0, answered: 0, last: 0, error: undefined as string | undefined, running: true };
  const done = (async () => {
    while (state.running) {
      state.sent++;
      try {
        const reply = await conn.ask(`INCR ${key}`);
        const n = Number(reply.slice(1));
        if (!reply.startsWith(':') || n !== state.last + 1) {
          state.error = `INCR answered ${reply} after ${state.last}`;
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

describe.runIf(available)('TLS at the local edge, with real HAProxy and redis-server', () => {
  let th: TestHangar;
  let alice: Account;
  let ca: string;

  beforeAll(async () => {
    const range = await claimPortRange();
    th = await startTestHangar({
      env: { HANGAR_RUNTIME: 'local', HANGAR_PORT_RANGE: `${range.first}-${range.last}` },
    });
    alice = await th.signup();
    ca = (await th.anonymous().get('/v2/tls/ca')).body;
  }, 60_000);

  afterAll(async () => {
    await th?.close();
  });

  /** The operation a change answered with, once it succeeded. */
  async function succeeded(res: Reply, kind: string): Promise<any> {
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const id = res.headers.get('x-operation-id');
    expect(id).toMatch(/^[0-9a-f]{24}$/);
    await until(`${kind} to succeed`, async () => (await alice.get(`/v2/operations/${id}/`)).body.data.state === 'SUCCEEDED', 20_000);
    return (await alice.get(`/v2/operations/${id}/`)).body.data;
  }

  describe('an instance in `preferred` (the default)', () => {
    let rec: any;
    beforeAll(async () => {
      rec = await alice.ready(redisBody('t', { acls: [{ cidr_mask: '127.0.0.1', description: 'this machine' }] }));
    }, 60_000);

    it('a client verifying the edge against GET /v2/tls/ca (its IP checked) AUTHs and PINGs on tls_connect_string and the servicenet one', async () => {
      expect(rec.tls_connect_string).toMatch(/^rediss:\/\/127\.0\.0\.1:\d+$/);
      expect(await pingOutcome(portOf(rec.tls_connect_string), rec.password, { ca })).toBe('+PONG');
      expect(await pingOutcome(portOf(rec.servicenet_tls_connect_string), rec.password, { ca })).toBe('+PONG');
      // the certificate presented is the instance's, for the address, signed by the CA
      const c = await open(portOf(rec.tls_connect_string), rec.password, { ca });
      const peer = (c.socket as TLSSocket).getPeerX509Certificate()!;
      c.socket.destroy();
      expect(peer.serialNumber).toBe((await alice.get('/v2/instances/t/tls/')).body.data.serial);
      expect(peer.checkIssued(new X509Certificate(ca))).toBe(true);
      expect(peer.checkIP('127.0.0.1')).toBe('127.0.0.1');
      // a wrong password is the engine's answer, through TLS
      await expect(open(portOf(rec.tls_connect_string), 'wrong', { ca })).rejects.toThrow(/WRONGPASS|invalid/);
      // and the plain address still serves, as before
      expect(await pingOutcome(portOf(rec.connect_string), rec.password)).toBe('+PONG');
    });

    it('a plain client on the TLS port and a TLS client on a plain port both fail', async () => {
      expect(await pingOutcome(portOf(rec.tls_connect_string), rec.password)).toBe('refused');
      expect(await pingOutcome(portOf(rec.connect_string), rec.password, { ca })).toBe('refused');
    });

    it('an address outside the ACLs is refused on the TLS port and listed as denied; acls/effective is in sync', async () => {
      expect(await pingOutcome(portOf(rec.tls_connect_string), rec.password, { ca }, '127.0.0.2')).toBe('refused');
      await until('the refusal is listed', async () =>
        ((await alice.get('/v2/instances/t/acls/denied')).body.data as any[]).some(
          (d) => d.source === '127.0.0.2' && d.listener === 'public.tls',
        ),
      );
      const effective = (await alice.get('/v2/instances/t/acls/effective')).body.data;
      expect(effective.in_sync).toBe(true);
      // deleting the ACL cuts an open TLS connection of that source
      const conn = await open(portOf(rec.tls_connect_string), rec.password, { ca });
      const acl = (await alice.get('/v2/instances/t/acls/')).body.data[0];
      expect((await alice.delete(`/v2/instances/t/acls/${acl._id.$oid}/`)).status).toBe(200);
      await conn.closed;
      expect(await pingOutcome(portOf(rec.tls_connect_string), rec.password, { ca })).toBe('refused');
      await alice.post('/v2/instances/t/acls/', { cidr_mask: '127.0.0.1', description: 'this machine' });
      expect(await pingOutcome(portOf(rec.tls_connect_string), rec.password, { ca })).toBe('+PONG');
    });

    it('after a rotation, a connection opened before still answers and a new one sees the new serial', async () => {
      const before = (await alice.get('/v2/instances/t/tls/')).body.data.serial;
      const old = await open(portOf(rec.tls_connect_string), rec.password, { ca });
      const keep = steady(old, 'rotation');
      const res = await alice.post('/v2/instances/t/tls/rotate');
      const op = await succeeded(res, 'tls.rotate');
      const after = res.body.data.serial;
      expect(op.detail).toEqual({ previous_serial: before, serial: after });
      expect(after).not.toBe(before);
      const state = await keep.stop();
      expect(state.error).toBeUndefined();
      expect(state.answered).toBeGreaterThan(0);
      expect(await old.ask('PING')).toBe('+PONG');
      expect((old.socket as TLSSocket).getPeerX509Certificate()!.serialNumber).toBe(before);
      old.socket.destroy();
      const fresh = await open(portOf(rec.tls_connect_string), rec.password, { ca });
      expect((fresh.socket as TLSSocket).getPeerX509Certificate()!.serialNumber).toBe(after);
      expect(await fresh.ask('PING')).toBe('+PONG');
      fresh.socket.destroy();
    });
  });

  it('off -> preferred -> required under steady clients: no command lost on the listener that stays; required refuses and closes plain', async () => {
    const rec = await alice.ready(redisBody('s', { tls: 'off', acls: [{ cidr_mask: '127.0.0.1', description: 'this machine' }] }));
    expect(rec.tls_connect_string).toBeUndefined();
    const plainPort = portOf(rec.connect_string);
    const plain = steady(await open(plainPort, rec.password), 'plain');
    const toPreferred = await alice.post('/v2/instances/s/tls/', { mode: 'preferred' });
    await succeeded(toPreferred, 'tls.mode');
    const preferred = (await alice.get('/v2/instances/s/')).body.data;
    const tlsPort = portOf(preferred.tls_connect_string);
    expect(await pingOutcome(tlsPort, rec.password, { ca })).toBe('+PONG');
    // the plain listener stayed: its client went on without losing a command
    expect(plain.state.error).toBeUndefined();
    const secure = steady(await open(tlsPort, rec.password, { ca }), 'secure');
    const plainCut = plain.state;
    await succeeded(await alice.post('/v2/instances/s/tls/', { mode: 'required' }), 'tls.mode');
    const required = (await alice.get('/v2/instances/s/')).body.data;
    expect(required.connect_string).toBe(`rediss://127.0.0.1:${tlsPort}`);
    // the plain listener refuses now, and closed what was open
    await until('the plain connection is closed', () => plainCut.error !== undefined);
    expect(await pingOutcome(plainPort, rec.password)).toBe('refused');
    expect(await pingOutcome(portOf(required.servicenet_tls_connect_string), rec.password, { ca })).toBe('+PONG');
    const kept = await secure.stop();
    expect(kept.error).toBeUndefined();
    expect(kept.answered).toBe(kept.sent);
    // no INCR was lost: what each client saw answered is what the engine counted
    const check = await open(tlsPort, rec.password, { ca });
    expect(await check.ask('GET secure')).toBe(String(kept.last));
    // the plain client, cut by the switch to required: at most the command in flight then went unanswered
    const cut = await plain.stop();
    expect(cut.answered).toBeGreaterThan(0);
    expect([String(cut.last), String(cut.last + 1)]).toContain(await check.ask('GET plain'));
    check.socket.destroy();
  });

  it("with tls_client_auth, a client without a certificate, with another instance's, or with a revoked one is refused", async () => {
    const rec = await alice.ready(
      redisBody('m', { tls: 'required', tls_client_auth: true, acls: [{ cidr_mask: '127.0.0.1', description: 'this machine' }] }),
    );
    const port = portOf(rec.tls_connect_string);
    const issue = async (name: string) => (await alice.post(`/v2/instances/${name}/tls/client-certs`, { common_name: 'app' })).body.data;
    const mine = await issue('m');
    const theirs = await issue('t');
    const withCert = (c: any) => ({ ca, cert: c.certificate, key: c.private_key });
    expect(await pingOutcome(port, rec.password, { ca })).toBe('refused');
    expect(await pingOutcome(port, rec.password, withCert(theirs))).toBe('refused');
    expect(await pingOutcome(port, rec.password, withCert(mine))).toBe('+PONG');
    const open_ = await open(port, rec.password, withCert(mine));
    await succeeded(await alice.delete(`/v2/instances/m/tls/client-certs/${mine.serial}`), 'tls.revoke');
    expect(await pingOutcome(port, rec.password, withCert(mine))).toBe('refused');
    // another certificate of the instance is taken
    expect(await pingOutcome(port, rec.password, withCert(await issue('m')))).toBe('+PONG');
    open_.socket.destroy();
  });

  it('after a restart of hangar, the edge presents the same certificate of the same CA', async () => {
    const rec = (await alice.get('/v2/instances/t/')).body.data;
    const serial = (await alice.get('/v2/instances/t/tls/')).body.data.serial;
    await th.restart();
    expect((await th.anonymous().get('/v2/tls/ca')).body).toBe(ca);
    const conn = await open(portOf(rec.tls_connect_string), rec.password, { ca });
    expect((conn.socket as TLSSocket).getPeerX509Certificate()!.serialNumber).toBe(serial);
    conn.socket.destroy();
    await until('the instance is served again', async () => (await alice.get('/v2/instances/t/')).body.data.state === 'ACTIVE');
    expect((await alice.get('/v2/instances/t/tls/')).body.data.serial).toBe(serial);
  });
});
