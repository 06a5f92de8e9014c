import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN } from '../helpers/process.js';
import { PASSWORD, startTestHangar } from '../helpers/hangar.js';

const LOGIN = 'tls@example.com';

/** A self-signed certificate for 127.0.0.1, made by the openssl CLI. */
function selfSigned(dir: string): { cert: string; key: string; pem: Buffer; fingerprint: string } {
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  const fingerprint = execFileSync('openssl', ['x509', '-in', cert, '-noout', '-fingerprint', '-sha256'], { encoding: 'utf8' })
    .split('=')[1]!
    .trim();
  return { cert, key, pem: readFileSync(cert), fingerprint };
}

interface TlsReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  json: any;
  fingerprint: string;
}

function get(url: string, path: string, ca: Buffer, headers: Record<string, string>): Promise<TlsReply> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpsRequest({ host: u.hostname, port: u.port, path, method: 'GET', headers, ca, agent: false }, (res) => {
      const fingerprint = (res.socket as import('node:tls').TLSSocket).getPeerCertificate().fingerprint256;
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, json: text ? JSON.parse(text) : undefined, fingerprint }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

/** Writes plain HTTP to the port and collects whatever comes back until the connection ends. */
function plainHttp(url: string, request: string): Promise<string> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(u.port), u.hostname);
    let got = Buffer.alloc(0);
    socket.on('data', (c: Buffer) => (got = Buffer.concat([got, c])));
    socket.on('error', () => {});
    socket.on('close', () => resolve(got.toString('latin1')));
    socket.setTimeout(5000, () => socket.destroy());
    socket.write(request);
  });
}

describe('TLS for the API (--tls-cert, --tls-key)', () => {
  let dir: string;
  let child: ChildProcess | undefined;
  let url: string;
  let tls: ReturnType<typeof selfSigned>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hangar-tls-'));
    tls = selfSigned(dir);
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('HANGAR_')) env[k] = v;
    child = spawn(
      process.execPath,
      [BIN, 'serve', '--runtime', 'emulated', '--port', '0', '--data-dir', join(dir, 'data'), '--tls-cert', tls.cert, '--tls-key', tls.key],
      {
        env: {
          ...env,
          HANGAR_LOG_LEVEL: 'warn',
          HANGAR_DRAIN_PERIOD: '0',
          HANGAR_BOOTSTRAP_LOGIN: LOGIN,
          HANGAR_BOOTSTRAP_PASSWORD: PASSWORD,
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    url = await new Promise<string>((resolve, reject) => {
      let err = '';
      child!.stderr!.on('data', (c: Buffer) => {
        err += c.toString();
        const m = /hangar serving on (https?:\/\/[^/\s]+)/.exec(err);
        if (m) resolve(m[1]!);
      });
      child!.once('close', () => reject(new Error(`hangar serve exited:\n${err}`)));
    });
  });
  afterAll(async () => {
    if (child && child.exitCode === null) {
      const closed = new Promise((r) => child!.once('close', r));
      child.kill('SIGTERM');
      await closed;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves the API over HTTPS with the given certificate', async () => {
    expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const basic = `Basic ${Buffer.from(`${LOGIN}:${PASSWORD}`).toString('base64')}`;
    const login = await get(url, '/v2/tokens/', tls.pem, { authorization: basic });
    expect(login.status).toBe(200);
    expect(login.fingerprint).toBe(tls.fingerprint);
    expect(login.headers['strict-transport-security']).toBe('max-age=31536000');
    const list = await get(url, '/v2/instances/', tls.pem, { 'x-auth-token': login.json.data.token });
    expect({ status: list.status, body: list.json }).toEqual({ status: 200, body: { data: [] } });
  });

  it('answers plain HTTP on that port with nothing an eavesdropper or a client could use', async () => {
    const basic = Buffer.from(`${LOGIN}:${PASSWORD}`).toString('base64');
    const got = await plainHttp(url, `GET /v2/tokens/ HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic ${basic}\r\n\r\n`);
    // at most a TLS alert: no HTTP answer, no redirect, no token
    expect(got).not.toMatch(/HTTP\/1\.|token|data|\{/);
    expect(got.length).toBeLessThan(64);
  });

  it('also from HANGAR_TLS_CERT and HANGAR_TLS_KEY', async () => {
    const th = await startTestHangar({ listen: true, env: { HANGAR_TLS_CERT: tls.cert, HANGAR_TLS_KEY: tls.key } });
    try {
      expect(th.url).toMatch(/^https:\/\//);
      expect((await get(th.url, '/healthz', tls.pem, {})).status).toBe(200);
    } finally {
      await th.close();
    }
  });
});
