import { X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import { connect as tcpConnect, createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EdgeRoute } from '../../domain/endpoints.js';
import type { EdgeTls } from '../../domain/units.js';
import { firstProductOf } from '../../engines/products.js';
import { findExecutable } from '../../lib/binaries.js';
import { Openssl, randomSerial, type Issuer } from '../../lib/x509.js';
import { edgeTlsFiles } from './edge-tls.js';
import { edgePaths } from './haproxy-config.js';
import { HaproxyEdge } from './haproxy-edge.js';
import { haproxyCommand, parseShowProc } from './haproxy-socket.js';
import { ProcessSupervisor } from './process-supervisor.js';
import { freePort } from '../../../test/helpers/ports.js';

// The edge's TLS listeners on a real HAProxy, with certificates of a CA made here as hangar's
// deployment CA makes them: a Redis-family instance's listeners (plain and TLS side by side, TLS
// required, mutual TLS) and a mongodb_sharded `ssl` listener, in front of TCP servers of this test
// standing for the engines (the Redis engine behind the edge is tested through the API).

const haproxy = findExecutable('haproxy', process.env.PATH ?? '/usr/bin:/bin');
const available = (() => {
  if (haproxy) return true;
  if (process.env.CI === 'true') throw new Error('the edge TLS test needs haproxy (apt-get install haproxy)');
  console.warn('the edge TLS test needs haproxy (apt-get install haproxy); leaving it out');
  return false;
})();

const DAY = 86_400_000;
const openssl = new Openssl();

/** What a client got: the engine's answer, the connection closed without one, or the error it saw. */
type Outcome = { answer: string; serial: string } | { closed: true } | { error: string };

/** Whether the edge refused the client after accepting its connection: closed, or reset, without an answer. */
const refused = (o: Outcome) => 'closed' in o || ('error' in o && ['ECONNRESET', 'EPIPE'].includes(o.error));

describe.runIf(available)('HaproxyEdge with TLS listeners', () => {
  const ID = '65a1b2c3d4e5f60718293a4b';
  const OTHER = '65a1b2c3d4e5f60718293a4c';
  const edgeDir = mkdtempSync(join(tmpdir(), 'hangar-edge-'));
  const log = pino({ level: 'silent' });
  const supervisor = new ProcessSupervisor({
    programs: new Set([realpathSync(haproxy!)]),
    env: { PATH: process.env.PATH ?? '' },
    log,
    onDeath: () => {},
  });
  const edge = new HaproxyEdge({
    edgeDir,
    bin: haproxy!,
    bindAddress: '127.0.0.1',
    probeSource: '127.77.0.1',
    maxconn: 100,
    supervisor,
    log,
  });
  const redis = firstProductOf('redis');
  let engine: Server;
  let ca: Issuer;
  let ports: Record<string, number>;
  const routes = (mode: 'off' | 'preferred' | 'required'): EdgeRoute[] => redis.edgeRoutes('redis_ha_instance', ports, mode);

  /** A server certificate of the CA for 127.0.0.1, as the edge is handed it. */
  async function serverTls(): Promise<EdgeTls> {
    const now = Date.now();
    const serial = randomSerial();
    const made = await openssl.issue(ca, {
      kind: 'server',
      organizationalUnit: ID,
      commonName: '127.0.0.1',
      names: ['127.0.0.1'],
      serial,
      notBefore: now - 60_000,
      notAfter: now + 30 * DAY,
    });
    return { serial, pem: `${made.certPem.trimEnd()}\n${made.keyPem.trimEnd()}\n` };
  }

  /** A client certificate of the CA for the instance `ou`. */
  async function clientCert(ou: string): Promise<{ cert: string; key: string; serial: string }> {
    const now = Date.now();
    const serial = randomSerial();
    const made = await openssl.issue(ca, {
      kind: 'client',
      organizationalUnit: ou,
      commonName: 'app',
      serial,
      notBefore: now - 60_000,
      notAfter: now + 30 * DAY,
    });
    return { cert: made.certPem, key: made.keyPem, serial };
  }

  const crl = (revoked: readonly string[]) =>
    openssl.crl(
      ca,
      revoked.map((serial) => ({ serial, revokedAt: Date.now() - 1000, notAfter: Date.now() + 30 * DAY })),
      Date.now(),
      30,
    );

  /** Connects over TLS to `port` (verifying the edge against the CA for 127.0.0.1), says hello, and says what came back. */
  function tryTls(port: number, client: { cert?: string; key?: string } = {}): Promise<Outcome> {
    return new Promise((resolve) => {
      const s = tlsConnect({ host: '127.0.0.1', port, ca: ca.certPem, ...client }, () => s.write('hello\n'));
      const timer = setTimeout(() => {
        s.destroy();
        resolve({ error: 'timeout' });
      }, 3000);
      s.setEncoding('utf8');
      s.once('data', (d: string) => {
        clearTimeout(timer);
        const serial = s.getPeerCertificate().serialNumber;
        s.end();
        resolve({ answer: d, serial });
      });
      s.on('error', (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        resolve({ error: err.code ?? err.message });
      });
      s.on('close', () => {
        clearTimeout(timer);
        resolve({ closed: true });
      });
    });
  }

  /** A plain TCP client on `port`: the engine's answer, or closed. */
  function tryPlain(port: number): Promise<Outcome> {
    return new Promise((resolve) => {
      const s = tcpConnect(port, '127.0.0.1', () => s.write('hello\n'));
      const timer = setTimeout(() => {
        s.destroy();
        resolve({ error: 'timeout' });
      }, 3000);
      s.setEncoding('utf8');
      s.once('data', (d: string) => {
        clearTimeout(timer);
        s.end();
        resolve({ answer: d, serial: '' });
      });
      s.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
      s.on('close', () => {
        clearTimeout(timer);
        resolve({ closed: true });
      });
    });
  }

  /** An open TLS connection: each `ask` sends a line and resolves with the engine's answer. */
  async function openTls(port: number): Promise<{ socket: TLSSocket; ask(line: string): Promise<string> }> {
    const socket = await new Promise<TLSSocket>((resolve, reject) => {
      const s = tlsConnect({ host: '127.0.0.1', port, ca: ca.certPem }, () => resolve(s));
      s.once('error', reject);
    });
    socket.setEncoding('utf8');
    return {
      socket,
      ask: (line) =>
        new Promise((resolve, reject) => {
          socket.once('data', resolve);
          socket.once('close', () => reject(new Error('closed')));
          socket.write(`${line}\n`);
        }),
    };
  }

  const reloads = async () =>
    parseShowProc(await haproxyCommand(edgePaths(edgeDir).masterSocket, 'show proc')).find((p) => p.type === 'master')!.reloads;

  beforeAll(async () => {
    engine = createServer((socket) => {
      socket.setEncoding('utf8');
      socket.on('data', (d: string) => socket.write(`engine: ${d}`));
      socket.on('error', () => {});
    });
    await new Promise<void>((r) => engine.listen(0, '127.0.0.1', r));
    const enginePort = (engine.address() as AddressInfo).port;
    ports = {
      public: await freePort(),
      servicenet: await freePort(),
      'public.tls': await freePort(),
      'servicenet.tls': await freePort(),
      'engine.primary': enginePort,
      'engine.replica': 1,
    };
    ca = await openssl.makeCa('edge test CA', 30);
    // as the runtime does: access first (the allow lists the listeners load), then the listeners
    await edge.applyAccess(ID, new Map([['main', ['127.0.0.1']]]));
  });

  afterAll(async () => {
    await supervisor.stop(edge.unit);
    await new Promise((r) => engine.close(r));
    rmSync(edgeDir, { recursive: true, force: true });
  });

  let first: EdgeTls;

  it("presents the instance's certificate on its TLS listeners, verified against the CA for the address, and forwards in plain", async () => {
    first = await serverTls();
    expect(await edge.ensureRoutes(ID, routes('preferred'), first)).toEqual({ wentLive: true, servedCertificate: first.serial });
    expect(statSync(edgeTlsFiles(edgeDir, ID).cert).mode & 0o777).toBe(0o600);
    for (const role of ['public.tls', 'servicenet.tls']) {
      expect(await tryTls(ports[role]!)).toEqual({ answer: 'engine: hello\n', serial: first.serial });
    }
    // the plain listeners serve beside them
    expect(await tryPlain(ports.public!)).toMatchObject({ answer: 'engine: hello\n' });
    // a client that means another address refuses the certificate
    const wrongName = await new Promise<string>((resolve) => {
      const s = tlsConnect(
        {
          host: '127.0.0.1',
          port: ports['public.tls']!,
          ca: ca.certPem,
          servername: 'db.example.com',
          checkServerIdentity: (_h, c) => (c.subjectaltname?.includes('db.example.com') ? undefined : new Error('not for db.example.com')),
        },
        () => resolve('connected'),
      );
      s.on('error', (e) => resolve(e.message));
    });
    expect(wrongName).toBe('not for db.example.com');
  });

  it('gives nothing to a plain client on a TLS port, and fails the handshake of a TLS client on a plain port', async () => {
    expect(refused(await tryPlain(ports['public.tls']!))).toBe(true);
    const onPlain = await tryTls(ports.public!);
    expect('error' in onPlain || 'closed' in onPlain).toBe(true);
  });

  it('refuses a source outside the allow list on the TLS listener too', async () => {
    const outcome = await new Promise<Outcome>((resolve) => {
      // a socket bound to 127.0.0.2: net.connect's option, which tls.connect passes on
      const from = { localAddress: '127.0.0.2' } as object;
      const s = tlsConnect({ host: '127.0.0.1', port: ports['public.tls']!, ca: ca.certPem, ...from }, () => s.write('hello\n'));
      s.setEncoding('utf8');
      s.once('data', (d: string) => resolve({ answer: d, serial: '' }));
      s.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
      s.on('close', () => resolve({ closed: true }));
    });
    expect(refused(outcome)).toBe(true);
  });

  it('replaces the certificate without a reload: an open connection keeps answering, a new one gets the new serial', async () => {
    const before = await reloads();
    const open = await openTls(ports['public.tls']!);
    try {
      expect(await open.ask('one')).toBe('engine: one\n');
      const second = await serverTls();
      expect(await edge.ensureRoutes(ID, routes('preferred'), second)).toEqual({ wentLive: false, servedCertificate: second.serial });
      expect(await reloads()).toBe(before);
      expect(await open.ask('two')).toBe('engine: two\n');
      expect(open.socket.getPeerCertificate().serialNumber).toBe(first.serial);
      expect(await tryTls(ports['public.tls']!)).toEqual({ answer: 'engine: hello\n', serial: second.serial });
      // and the file, which a reload or a restart of the edge reads, holds it too
      expect(new X509Certificate(readFileSync(edgeTlsFiles(edgeDir, ID).cert, 'utf8')).serialNumber).toBe(second.serial);
      first = second;
      // the same certificate again changes nothing
      expect(await edge.ensureRoutes(ID, routes('preferred'), second)).toEqual({ wentLive: false, servedCertificate: second.serial });
      expect(await reloads()).toBe(before);
    } finally {
      open.socket.destroy();
    }
  });

  it("with mutual TLS, takes only the instance's own certificates of the CA, and refuses a revoked one once the CRL lists it (no reload)", async () => {
    const own = await clientCert(ID);
    const theirs = await clientCert(OTHER);
    const mutual = (crlPem: string): EdgeTls => ({ ...first, clientAuth: { caPem: ca.certPem, crlPem, organizationalUnit: ID } });
    await edge.ensureRoutes(ID, routes('preferred'), mutual(await crl([])));
    expect(await tryTls(ports['public.tls']!, { cert: own.cert, key: own.key })).toMatchObject({ answer: 'engine: hello\n' });
    expect(await tryTls(ports['public.tls']!)).toEqual({ error: 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED' });
    // signed by the CA, but another instance's
    expect(refused(await tryTls(ports['public.tls']!, { cert: theirs.cert, key: theirs.key }))).toBe(true);
    // the plain listeners ask for nothing
    expect(await tryPlain(ports.public!)).toMatchObject({ answer: 'engine: hello\n' });

    const before = await reloads();
    await edge.ensureRoutes(ID, routes('preferred'), mutual(await crl([own.serial])));
    expect(await reloads()).toBe(before);
    expect(await tryTls(ports['public.tls']!, { cert: own.cert, key: own.key })).toEqual({
      error: 'ERR_SSL_SSLV3_ALERT_CERTIFICATE_REVOKED',
    });
    const another = await clientCert(ID);
    expect(await tryTls(ports['public.tls']!, { cert: another.cert, key: another.key })).toMatchObject({ answer: 'engine: hello\n' });
    // back to no client certificates
    await edge.ensureRoutes(ID, routes('preferred'), first);
    expect(await tryTls(ports['public.tls']!)).toMatchObject({ answer: 'engine: hello\n' });
  });

  it('with TLS required, refuses clients on the plain listeners and cuts their open connections; TLS connections stay', async () => {
    const plain = await new Promise<import('node:net').Socket>((resolve, reject) => {
      const s = tcpConnect(ports.public!, '127.0.0.1', () => resolve(s));
      s.once('error', reject);
    });
    const plainClosed = new Promise<void>((r) => plain.once('close', () => r()));
    plain.on('error', () => {});
    const secure = await openTls(ports['public.tls']!);
    try {
      await edge.ensureRoutes(ID, routes('required'), first);
      await plainClosed;
      expect(refused(await tryPlain(ports.public!))).toBe(true);
      expect(refused(await tryPlain(ports.servicenet!))).toBe(true);
      expect(await secure.ask('still')).toBe('engine: still\n');
      expect(await tryTls(ports['servicenet.tls']!)).toMatchObject({ answer: 'engine: hello\n' });
    } finally {
      secure.socket.destroy();
      plain.destroy();
    }
  });

  it('with TLS off, has no TLS listener, and cuts the TLS connections; the plain listeners admit again', async () => {
    const secure = await openTls(ports['public.tls']!);
    const closed = new Promise<void>((r) => secure.socket.once('close', () => r()));
    await edge.ensureRoutes(ID, routes('off'));
    await closed;
    expect(await tryTls(ports['public.tls']!)).toMatchObject({ error: 'ECONNREFUSED' });
    expect(await tryPlain(ports.public!)).toMatchObject({ answer: 'engine: hello\n' });
  });

  it("terminates a mongodb_sharded's `ssl` listener with the certificate too", async () => {
    const mongo = firstProductOf('mongodb').edgeRoutes('mongodb_sharded', {
      public: await freePort(),
      ssl: await freePort(),
      'engine.config': 1,
      'engine.shard': 2,
      'engine.mongos': ports['engine.primary']!,
    });
    await edge.applyAccess(OTHER, new Map([['main', ['127.0.0.1']]]));
    await expect(edge.ensureRoutes(OTHER, mongo)).rejects.toThrow(/no certificate/);
    const tls = await serverTls();
    expect(await edge.ensureRoutes(OTHER, mongo, tls)).toEqual({ wentLive: true, servedCertificate: tls.serial });
    expect(await tryTls(mongo.find((r) => r.role === 'ssl')!.port)).toEqual({ answer: 'engine: hello\n', serial: tls.serial });
  });

  it("removes an instance's TLS files with it", async () => {
    await edge.removeInstance(OTHER);
    for (const f of Object.values(edgeTlsFiles(edgeDir, OTHER))) expect(existsSync(f)).toBe(false);
    expect(existsSync(edgeTlsFiles(edgeDir, ID).cert)).toBe(true);
  });
});
