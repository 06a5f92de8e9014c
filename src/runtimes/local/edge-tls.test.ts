import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect as tcpConnect, createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TerminalError } from '../../domain/errors.js';
import { findExecutable } from '../../lib/binaries.js';
import {
  edgeCertificateFile,
  edgeCertificatePublicFile,
  edgeTlsDir,
  ensureEdgeCertificate,
  removeEdgeCertificate,
  tlsBindOptions,
} from './edge-tls.js';
import { freePort } from '../../../test/helpers/ports.js';

const ID = '65a1b2c3d4e5f60718293a4b';
const dirs: string[] = [];
const tempDir = (prefix: string) => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const mode = (path: string) => statSync(path).mode & 0o777;

describe('ensureEdgeCertificate', () => {
  it('generates a self-signed certificate for the host clients use, with its key, mode 0600', async () => {
    const edgeDir = tempDir('hangar-edge-tls-');
    const { path, created } = await ensureEdgeCertificate({ edgeDir, instanceId: ID, host: '127.0.0.1' });
    expect(created).toBe(true);
    expect(path).toBe(join(edgeDir, 'tls', `${ID}.pem`));
    expect(mode(path)).toBe(0o600);
    expect(mode(edgeTlsDir(edgeDir))).toBe(0o700);
    const pem = readFileSync(path, 'utf8');
    const cert = new X509Certificate(pem);
    expect(cert.subjectAltName).toBe('IP Address:127.0.0.1');
    expect(cert.subject).toContain(`CN=${ID}`);
    expect(cert.checkPrivateKey(createPrivateKey(pem))).toBe(true);
    expect(cert.verify(cert.publicKey)).toBe(true);
    expect(Date.parse(cert.validTo) - Date.now()).toBeGreaterThan(800 * 86_400_000);
    // the certificate alone, for clients, holds no key
    const pub = readFileSync(edgeCertificatePublicFile(edgeDir, ID), 'utf8');
    expect(pub).toContain('BEGIN CERTIFICATE');
    expect(pub).not.toContain('PRIVATE KEY');
    expect(new X509Certificate(pub).fingerprint256).toBe(cert.fingerprint256);
    // nothing left behind from the work
    expect(readdirSync(edgeTlsDir(edgeDir)).sort()).toEqual([`${ID}.crt`, `${ID}.pem`]);
  });

  it('keeps a valid certificate, and replaces it near its end or for another host', async () => {
    const edgeDir = tempDir('hangar-edge-tls-');
    await ensureEdgeCertificate({ edgeDir, instanceId: ID, host: '127.0.0.1' });
    const first = readFileSync(edgeCertificateFile(edgeDir, ID), 'utf8');
    expect(await ensureEdgeCertificate({ edgeDir, instanceId: ID, host: '127.0.0.1' })).toMatchObject({ created: false });
    expect(readFileSync(edgeCertificateFile(edgeDir, ID), 'utf8')).toBe(first);

    const in800Days = () => Date.now() + 800 * 86_400_000;
    expect(await ensureEdgeCertificate({ edgeDir, instanceId: ID, host: '127.0.0.1', now: in800Days })).toMatchObject({ created: true });
    const second = readFileSync(edgeCertificateFile(edgeDir, ID), 'utf8');
    expect(second).not.toBe(first);

    expect(await ensureEdgeCertificate({ edgeDir, instanceId: ID, host: 'db.example.com' })).toMatchObject({ created: true });
    expect(new X509Certificate(readFileSync(edgeCertificateFile(edgeDir, ID), 'utf8')).subjectAltName).toBe('DNS:db.example.com');
  });

  it('replaces a damaged file', async () => {
    const edgeDir = tempDir('hangar-edge-tls-');
    await ensureEdgeCertificate({ edgeDir, instanceId: ID, host: '127.0.0.1' });
    writeFileSync(edgeCertificateFile(edgeDir, ID), 'not a certificate');
    expect(await ensureEdgeCertificate({ edgeDir, instanceId: ID, host: '127.0.0.1' })).toMatchObject({ created: true });
    expect(mode(edgeCertificateFile(edgeDir, ID))).toBe(0o600);
  });

  it('fails the instance, naming the package, when openssl is missing', async () => {
    const edgeDir = tempDir('hangar-edge-tls-');
    const failure = ensureEdgeCertificate({ edgeDir, instanceId: ID, host: '127.0.0.1', opensslBin: join(edgeDir, 'no-openssl') });
    await expect(failure).rejects.toBeInstanceOf(TerminalError);
    await expect(failure).rejects.toThrow(/apt-get install openssl/);
    expect(existsSync(edgeCertificateFile(edgeDir, ID))).toBe(false);
  });

  it('are removed with the instance', async () => {
    const edgeDir = tempDir('hangar-edge-tls-');
    await ensureEdgeCertificate({ edgeDir, instanceId: ID, host: '127.0.0.1' });
    removeEdgeCertificate(edgeDir, ID);
    removeEdgeCertificate(edgeDir, ID);
    expect(readdirSync(edgeTlsDir(edgeDir))).toEqual([]);
  });
});

describe('tlsBindOptions', () => {
  it("names the instance's PEM, quoted for HAProxy", () => {
    expect(tlsBindOptions('/data/edge', ID)).toBe(`ssl crt "/data/edge/tls/${ID}.pem"`);
    expect(tlsBindOptions('/data dir/"e"', ID)).toBe(`ssl crt "/data dir/\\"e\\"/tls/${ID}.pem"`);
  });
});

// HAProxy terminating TLS with the generated certificate in front of a plain TCP server of this
// test: the path a mongodb_sharded `ssl` or an elasticsearch `https` listener takes.
const haproxy = findExecutable('haproxy', process.env.PATH ?? '/usr/bin:/bin');
const haproxyHere = (() => {
  if (haproxy) return true;
  const message = 'the edge TLS test needs haproxy (apt-get install haproxy)';
  if (process.env.CI === 'true') throw new Error(message);
  console.warn(`${message}; leaving it out`);
  return false;
})();

describe.runIf(haproxyHere)('HAProxy with a TLS listener', () => {
  const edgeDir = tempDir('hangar-edge-tls-haproxy-');
  let backend: Server;
  let edge: ChildProcess;
  let tlsPort = 0;
  const received: string[] = [];

  beforeAll(async () => {
    // the engine behind the edge speaks plain TCP: it answers each line it gets
    backend = createServer((socket) => {
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => {
        received.push(chunk);
        socket.write(`plain engine got: ${chunk}`);
      });
      socket.on('error', () => {});
    });
    await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
    const backendPort = (backend.address() as AddressInfo).port;
    await ensureEdgeCertificate({ edgeDir, instanceId: ID, host: '127.0.0.1' });
    tlsPort = await freePort();
    const cfg = join(edgeDir, 'haproxy.cfg');
    writeFileSync(
      cfg,
      [
        'global',
        '    maxconn 100',
        'defaults',
        '    mode tcp',
        '    timeout connect 5s',
        '    timeout client 30s',
        '    timeout server 30s',
        `frontend i-${ID}-ssl`,
        `    bind 127.0.0.1:${tlsPort} ${tlsBindOptions(edgeDir, ID)}`,
        `    default_backend e-${ID}-engine`,
        `backend e-${ID}-engine`,
        `    server engine 127.0.0.1:${backendPort}`,
        '',
      ].join('\n'),
    );
    chmodSync(cfg, 0o600);
    const check = spawnSync(haproxy!, ['-c', '-f', cfg], { encoding: 'utf8' });
    expect(check.status, check.stderr + check.stdout).toBe(0);
    edge = spawn(haproxy!, ['-db', '-f', cfg], { stdio: 'ignore' });
    // listening once a TCP connection is accepted
    for (let i = 0; ; i++) {
      const up = await new Promise<boolean>((resolve) => {
        const s = tcpConnect(tlsPort, '127.0.0.1', () => {
          s.destroy();
          resolve(true);
        });
        s.on('error', () => resolve(false));
      });
      if (up) break;
      if (i > 200 || edge.exitCode !== null) throw new Error('haproxy did not start listening');
      await new Promise((r) => setTimeout(r, 25));
    }
  });

  afterAll(async () => {
    if (edge && edge.exitCode === null) {
      const exited = new Promise((r) => edge.once('exit', r));
      process.kill(edge.pid!, 'SIGTERM');
      await exited;
    }
    await new Promise((r) => backend.close(r));
  });

  it('decrypts what a client sends over TLS, verified against the instance certificate, and forwards it in plain', async () => {
    const ca = readFileSync(edgeCertificatePublicFile(edgeDir, ID), 'utf8');
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = tlsConnect({ host: '127.0.0.1', port: tlsPort, ca }, () => {
        expect(socket.authorized).toBe(true);
        socket.write('ping over tls\n');
      });
      socket.setEncoding('utf8');
      socket.once('data', (d: string) => {
        socket.end();
        resolve(d);
      });
      socket.on('error', reject);
    });
    expect(answer).toBe('plain engine got: ping over tls\n');
    expect(received).toContain('ping over tls\n');
  });

  it('refuses clients that do not speak TLS: nothing reaches the engine', async () => {
    const before = received.length;
    await new Promise<void>((resolve) => {
      const s = tcpConnect(tlsPort, '127.0.0.1', () => s.write('plain text\r\n\r\n'));
      s.on('close', () => resolve());
      s.on('error', () => {});
      s.setTimeout(2000, () => s.destroy());
    });
    expect(received.slice(before)).toEqual([]);
  });

  it('presents a certificate that clients pinning another one refuse', async () => {
    const other = tempDir('hangar-edge-tls-other-');
    await ensureEdgeCertificate({ edgeDir: other, instanceId: ID, host: '127.0.0.1' });
    const ca = readFileSync(edgeCertificatePublicFile(other, ID), 'utf8');
    const error = await new Promise<Error>((resolve) => {
      const socket = tlsConnect({ host: '127.0.0.1', port: tlsPort, ca }, () => resolve(new Error('connected')));
      socket.on('error', resolve);
    });
    expect(error.message).toMatch(/self[- ]signed|unable to verify|certificate/i);
  });
});
