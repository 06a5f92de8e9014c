import { X509Certificate } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { firstProductOf } from '../../engines/products.js';
import { findExecutable } from '../../lib/binaries.js';
import { edgeCertificateFile, edgeCertificatePublicFile, ensureEdgeCertificate } from './edge-tls.js';
import { HaproxyEdge } from './haproxy-edge.js';
import { ProcessSupervisor } from './process-supervisor.js';
import { freePort } from '../../../test/helpers/ports.js';

// The edge of a mongodb_sharded instance on a real HAProxy: its `ssl` listener decrypts with the
// instance's certificate (made when its routes go live) and forwards in plain to the engine port,
// here a TCP server of this test standing for the mongos that cannot be installed on this machine.

const haproxy = findExecutable('haproxy', process.env.PATH ?? '/usr/bin:/bin');
const available = (() => {
  if (haproxy) return true;
  if (process.env.CI === 'true') throw new Error('the edge TLS test needs haproxy (apt-get install haproxy)');
  console.warn('the edge TLS test needs haproxy (apt-get install haproxy); leaving it out');
  return false;
})();

describe.runIf(available)('HaproxyEdge with TLS listeners', () => {
  const ID = '65a1b2c3d4e5f60718293a4b';
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
    certificateHost: '127.0.0.1',
    maxconn: 100,
    supervisor,
    log,
  });
  let engine: Server;
  const received: string[] = [];
  let ports: Record<string, number>;

  beforeAll(async () => {
    engine = createServer((socket) => {
      socket.setEncoding('utf8');
      socket.on('data', (d: string) => {
        received.push(d);
        socket.write(`engine: ${d}`);
      });
      socket.on('error', () => {});
    });
    await new Promise<void>((r) => engine.listen(0, '127.0.0.1', r));
    ports = {
      public: await freePort(),
      ssl: await freePort(),
      'engine.config': 1,
      'engine.shard': 2,
      'engine.mongos': (engine.address() as AddressInfo).port,
    };
  });

  afterAll(async () => {
    await supervisor.stop(edge.unit);
    await new Promise((r) => engine.close(r));
    rmSync(edgeDir, { recursive: true, force: true });
  });

  /** The certificate the `ssl` listener presents, checked against `ca`, and what the engine answered. */
  function handshake(ca: string): Promise<{ fingerprint: string; answer: string }> {
    return new Promise((resolve, reject) => {
      const s = tlsConnect({ host: '127.0.0.1', port: ports.ssl!, ca }, () => s.write('hello\n'));
      s.setEncoding('utf8');
      s.once('data', (d: string) => {
        const fingerprint = s.getPeerCertificate().fingerprint256;
        s.end();
        resolve({ fingerprint, answer: d });
      });
      s.on('error', reject);
    });
  }

  it('makes the certificate, listens with TLS, admits by ACL and forwards in plain', async () => {
    const routes = firstProductOf('mongodb').edgeRoutes('mongodb_sharded', ports);
    // as the runtime does: access first (the allow lists the listeners load), then the listeners
    await edge.applyAccess(ID, new Map([['main', ['127.0.0.1']]]));
    expect(await edge.ensureRoutes(ID, routes)).toEqual({ wentLive: true });
    expect(statSync(edgeCertificateFile(edgeDir, ID)).mode & 0o777).toBe(0o600);
    const ca = readFileSync(edgeCertificatePublicFile(edgeDir, ID), 'utf8');
    const { answer } = await handshake(ca);
    expect(answer).toBe('engine: hello\n');
    expect(received).toEqual(['hello\n']);
  });

  it('presents a replaced certificate at once (HAProxy reads certificate files only when it loads)', async () => {
    const before = readFileSync(edgeCertificatePublicFile(edgeDir, ID), 'utf8');
    // a certificate for another host in its place, as after a change of the advertised host
    const other = mkdtempSync(join(tmpdir(), 'hangar-edge-'));
    try {
      await ensureEdgeCertificate({ edgeDir: other, instanceId: ID, host: '127.0.0.2' });
      copyFileSync(edgeCertificateFile(other, ID), edgeCertificateFile(edgeDir, ID));
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
    // the listeners are unchanged: only the certificate makes this pass reload the edge
    expect(await edge.ensureRoutes(ID, firstProductOf('mongodb').edgeRoutes('mongodb_sharded', ports))).toEqual({ wentLive: false });
    const after = readFileSync(edgeCertificatePublicFile(edgeDir, ID), 'utf8');
    expect(new X509Certificate(after).subjectAltName).toBe('IP Address:127.0.0.1');
    expect(after).not.toBe(before);
    const { fingerprint, answer } = await handshake(after);
    expect(fingerprint).toBe(new X509Certificate(after).fingerprint256);
    expect(answer).toBe('engine: hello\n');
  });

  it('removes the certificate with the instance', async () => {
    await edge.removeInstance(ID);
    expect(existsSync(edgeCertificateFile(edgeDir, ID))).toBe(false);
    expect(existsSync(edgeCertificatePublicFile(edgeDir, ID))).toBe(false);
  });
});
