import { execFileSync } from 'node:child_process';
import { X509Certificate, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import type { Instance } from '../../src/domain/model.js';
import { Keyring } from '../../src/lib/secrets.js';
import { Openssl } from '../../src/lib/x509.js';
import { createLogger, startHangar } from '../../src/server.js';
import { TlsAuthority } from '../../src/service/tls-authority.js';
import { TlsService } from '../../src/service/tls.js';
import { openStore } from '../../src/store/database.js';
import { findInstanceByName } from '../../src/store/instance-repository.js';
import { reencryptAll, sealingKeyIds } from '../../src/store/keyring.js';
import { listServerCertificates } from '../../src/store/tls-repository.js';
import { redisBody } from '../helpers/bodies.js';
import { DIALECTS, POSTGRES_URL, freshPostgres } from '../helpers/database.js';
import { type Account, type TestHangar, startTestHangar, startWithTwoAccounts } from '../helpers/hangar.js';
import { freePort } from '../helpers/ports.js';

const DAY = 86_400_000;

/** `openssl <args>` on a PEM given on stdin: its text. */
const openssl = (args: string[], pem: string) => execFileSync('openssl', args, { input: pem, encoding: 'utf8' });

/** A CA of the test's own, made with openssl (the operator's, as HANGAR_TLS_CA_CERT / _KEY take it). */
function operatorCa(dir: string, name: string, extensions = 'basicConstraints=critical,CA:true\nkeyUsage=critical,keyCertSign,cRLSign\n') {
  writeFileSync(join(dir, `${name}.ext`), `[v3]\n${extensions}`);
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-new',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      join(dir, `${name}.key`),
      '-out',
      join(dir, `${name}.crt`),
      '-days',
      '30',
      '-subj',
      `/O=Example Corp/CN=${name}`,
      '-config',
      join(dir, `${name}.ext`),
      '-extensions',
      'v3',
    ],
    { stdio: 'ignore', env: { ...process.env, OPENSSL_CONF: '/dev/null' } },
  );
  return { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
}

/**
 * A TLS server with `cert`/`key` (and, for mutual TLS, the clients' CA and CRL) on a port of its
 * own; connects a client to it and resolves with what the handshake said.
 */
async function handshake(
  server: { cert: string; key: string; ca?: string; crl?: string },
  client: { ca: string; host: string; cert?: string; key?: string },
): Promise<{ ok: true } | { ok: false; error: string }> {
  const port = await freePort();
  const mutual = server.ca !== undefined;
  const srv = tls.createServer(
    {
      cert: server.cert,
      key: server.key,
      ...(mutual ? { ca: server.ca, crl: server.crl, requestCert: true, rejectUnauthorized: true } : {}),
    },
    (socket) => socket.end('hello'),
  );
  srv.on('tlsClientError', () => {});
  await new Promise<void>((r) => srv.listen(port, '127.0.0.1', r));
  try {
    return await new Promise((resolve) => {
      const socket = tls.connect({
        host: '127.0.0.1',
        port,
        ca: client.ca,
        ...(client.cert ? { cert: client.cert, key: client.key } : {}),
        // the name the client means to reach, checked against the certificate's subjectAltName
        checkServerIdentity: (_host, cert) => tls.checkServerIdentity(client.host, cert),
      });
      let data = '';
      socket.on('data', (d) => {
        data += String(d);
      });
      socket.on('end', () => resolve(data === 'hello' ? { ok: true } : { ok: false, error: 'closed by the server' }));
      socket.on('error', (err) => resolve({ ok: false, error: err.message }));
    });
  } finally {
    await new Promise((r) => srv.close(r));
  }
}

describe.each(DIALECTS)('TLS on instance connections on %s', (dialect) => {
  let th: TestHangar;
  let alice: Account;
  let bob: Account;
  let caPem: string;
  let accountId: string;

  beforeAll(async () => {
    ({ th, alice, bob } = await startWithTwoAccounts({ dialect }));
    await alice.ready(redisBody('r'));
    caPem = (await th.anonymous().get('/v2/tls/ca')).body;
    accountId = (await alice.get('/v2/whoami/')).body.data.account_id;
  });
  afterAll(() => th?.close());

  /** The instance `r` as the service sees it. */
  const instance = async (): Promise<Instance> => (await findInstanceByName(th.hangar.store.db, depsOf(th).keyring, accountId, 'r'))!;

  describe('GET /v2/tls/ca', () => {
    it('200 without credentials: the CA certificate as PEM (application/x-pem-file), a CA of hangar, EC P-256, ten years', async () => {
      const res = await th.anonymous().get('/v2/tls/ca');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/x-pem-file');
      const ca = new X509Certificate(res.body as string);
      expect(ca.ca).toBe(true);
      expect(ca.subject).toBe(`O=hangar\nCN=hangar ${th.config.hostId} CA`);
      expect(ca.issuer).toBe(ca.subject);
      expect(ca.publicKey.asymmetricKeyDetails).toMatchObject({ namedCurve: 'prime256v1' });
      expect(Date.parse(ca.validTo) - Date.now()).toBeGreaterThan(3649 * DAY);
      const text = openssl(['x509', '-noout', '-text'], res.body);
      expect(text).toMatch(/Basic Constraints: critical\s+CA:TRUE/);
      expect(text).toMatch(/Key Usage: critical\s+Certificate Sign, CRL Sign/);
      // credentials are not needed, and a wrong token is no reason to refuse it
      expect((await alice.get('/v2/tls/ca')).body).toBe(res.body);
    });

    it("its key is sealed in the store like the other secrets, and the store's key rotation covers it", async () => {
      const row = await th.hangar.store.db.selectFrom('tls_authorities').selectAll().executeTakeFirstOrThrow();
      expect(row.key_enc).toMatch(/^v1\./);
      expect(row.key_enc).not.toContain('PRIVATE KEY');
      expect(row.cert_pem).toBe(caPem);
      expect([...(await sealingKeyIds(th.hangar.store.db)).keys()]).toHaveLength(1);
    });
  });

  describe('GET /v2/instances/<name>/tls/', () => {
    it("200: the instance's current certificate, made on the first read and the same on the next", async () => {
      const first = await alice.get('/v2/instances/r/tls/');
      expect(first.status).toBe(200);
      const ca = new X509Certificate(caPem);
      expect(first.body.data).toEqual({
        mode: 'preferred',
        tls_client_auth: false,
        serial: expect.stringMatching(/^[4-7][0-9A-F]{31}$/),
        fingerprint_sha256: expect.stringMatching(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/),
        not_before: expect.any(String),
        not_after: expect.any(String),
        ca_fingerprint_sha256: ca.fingerprint256,
      });
      const days = (Date.parse(first.body.data.not_after) - Date.parse(first.body.data.not_before)) / DAY;
      expect(days).toBeGreaterThan(397);
      expect(days).toBeLessThan(397.01);
      expect((await alice.get('/v2/instances/r/tls/')).body).toEqual(first.body);
      const rows = await th.hangar.store.db.selectFrom('tls_server_certificates').selectAll().execute();
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ serial: first.body.data.serial, generation: 1, names: '["127.0.0.1"]' });
      expect(rows[0]!.key_enc).toMatch(/^v1\./);
    });

    it("404 for a missing instance and the same 404 for another account's", async () => {
      const missing = await alice.get('/v2/instances/nope/tls/');
      const theirs = await bob.get('/v2/instances/r/tls/');
      expect(missing.status).toBe(404);
      expect(theirs.status).toBe(404);
      expect(theirs.body).toEqual({ ...missing.body, message: missing.body.message.replace('nope', 'r') });
      expect(theirs.body.code).toBe('INSTANCE_NOT_FOUND');
    });

    it('401 without credentials', async () => {
      expect((await th.anonymous().get('/v2/instances/r/tls/')).status).toBe(401);
    });
  });

  describe('the server certificate', () => {
    it('verifies against the CA with node:tls for an IP subjectAltName, and not for another address', async () => {
      const bundle = await th.hangar.tls.serverPemBundle(await instance());
      const cert = bundle.pem.slice(0, bundle.pem.indexOf('-----END CERTIFICATE-----') + 26);
      const key = bundle.pem.slice(bundle.pem.indexOf('-----BEGIN PRIVATE KEY-----'));
      expect(new X509Certificate(cert).serialNumber).toBe(bundle.serial);
      expect(new X509Certificate(cert).checkIssued(new X509Certificate(caPem))).toBe(true);
      expect(new X509Certificate(cert).keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
      expect(await handshake({ cert, key }, { ca: caPem, host: '127.0.0.1' })).toEqual({ ok: true });
      const wrong = await handshake({ cert, key }, { ca: caPem, host: '127.0.0.2' });
      expect(wrong).toMatchObject({ ok: false, error: expect.stringMatching(/IP: 127\.0\.0\.2 is not in the cert's list/) });
      // and a client that trusts another CA refuses it
      const other = mkdtempSync(join(tmpdir(), 'hangar-tls-other-'));
      try {
        const { cert: otherCa } = operatorCa(other, 'other');
        const refused = await handshake({ cert, key }, { ca: execFileSync('cat', [otherCa], { encoding: 'utf8' }), host: '127.0.0.1' });
        expect(refused).toMatchObject({ ok: false, error: expect.stringMatching(/unable to (get local issuer|verify)/) });
      } finally {
        rmSync(other, { recursive: true, force: true });
      }
    });

    it('is renewed for a DNS name when clients reach the instance by one, and verifies for that name', async () => {
      const base = await instance();
      const before = await th.hangar.tls.ensureServerCertificate(base);
      const named = await th.hangar.tls.ensureServerCertificate({ ...base, address: 'cache.example.test' });
      expect(named.serial).not.toBe(before.serial);
      expect(named.generation).toBe(before.generation + 1);
      expect(new X509Certificate(named.certPem).subjectAltName).toBe('DNS:cache.example.test');
      expect(await handshake({ cert: named.certPem, key: named.keyPem }, { ca: caPem, host: 'cache.example.test' })).toEqual({ ok: true });
      const other = await handshake({ cert: named.certPem, key: named.keyPem }, { ca: caPem, host: 'other.example.test' });
      expect(other).toMatchObject({ ok: false, error: expect.stringMatching(/other\.example\.test.*altnames/) });
      // back to the address: renewed again; the history keeps every generation until one is served
      const back = await th.hangar.tls.ensureServerCertificate(base);
      expect(back.generation).toBe(named.generation + 1);
      expect(JSON.parse(JSON.stringify(back.names))).toEqual(['127.0.0.1']);
    });

    it('is renewed within 30 days of its end; the certificate it replaces is kept until the new one is served', async () => {
      const base = await instance();
      const current = await th.hangar.tls.ensureServerCertificate(base);
      const deps = { ...depsOf(th), now: () => current.notAfter - 31 * DAY };
      const early = new TlsService(deps, undefined as never, th.hangar.tls.authority, new Openssl());
      expect((await early.ensureServerCertificate(base)).serial).toBe(current.serial);
      const late = new TlsService(
        { ...deps, now: () => current.notAfter - 29 * DAY },
        undefined as never,
        th.hangar.tls.authority,
        new Openssl(),
      );
      const renewed = await late.ensureServerCertificate(base);
      expect(renewed.serial).not.toBe(current.serial);
      expect(renewed.generation).toBe(current.generation + 1);
      expect(renewed.notAfter).toBeGreaterThan(current.notAfter);
      // until an edge says it serves the new one, the old one stays, not retired
      const history = await listServerCertificates(th.hangar.store.db, depsOf(th).keyring, base.id);
      expect(history.map((c) => c.serial).slice(0, 2)).toEqual([renewed.serial, current.serial]);
      expect(history.every((c) => c.retiredAt === null)).toBe(true);
      expect(await late.markServed(base.id, renewed.serial)).toBe(true);
      const after = await listServerCertificates(th.hangar.store.db, depsOf(th).keyring, base.id);
      expect(after[0]).toMatchObject({ serial: renewed.serial, servedAt: expect.any(Number), retiredAt: null });
      expect(after.slice(1).every((c) => c.retiredAt !== null)).toBe(true);
      expect(await late.markServed(base.id, 'FFFF')).toBe(false);
    });

    it('two reads at once on a renewal make one certificate', async () => {
      const base = await instance();
      const current = await th.hangar.tls.ensureServerCertificate(base);
      const later = { ...depsOf(th), now: () => current.notAfter - DAY };
      const a = new TlsService(later, undefined as never, th.hangar.tls.authority, new Openssl());
      const b = new TlsService(later, undefined as never, th.hangar.tls.authority, new Openssl());
      const got = await Promise.all([a.ensureServerCertificate(base), b.ensureServerCertificate(base), a.ensureServerCertificate(base)]);
      expect(new Set(got.map((c) => c.serial)).size).toBe(1);
      expect(got[0]!.generation).toBe(current.generation + 1);
    });

    it('its end is a metric per instance: hangar_tls_certificate_expiry_seconds', async () => {
      const base = await instance();
      const current = await th.hangar.tls.ensureServerCertificate(base);
      const text = (await th.hangar.app.inject({ url: '/metrics' })).body;
      const line = text
        .split('\n')
        .find((l) => l.startsWith(`hangar_tls_certificate_expiry_seconds{instance_id="${base.id}",instance_name="r",service="redis"}`));
      expect(
        line,
        text
          .split('\n')
          .filter((l) => l.includes('tls'))
          .join('\n'),
      ).toBeDefined();
      const seconds = Number(line!.split(' ').at(-1));
      expect(Math.abs(seconds - (current.notAfter - Date.now()) / 1000)).toBeLessThan(60);
    });
  });

  describe('client certificates', () => {
    const certs = '/v2/instances/r/tls/client-certs';

    it('POST 200: a certificate and its key, shown once with Cache-Control: no-store; verified by mutual TLS until revoked', async () => {
      const res = await alice.post(certs, { common_name: 'billing-worker' });
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('no-store');
      const c = res.body.data;
      expect(Object.keys(c).sort()).toEqual(['certificate', 'common_name', 'not_after', 'private_key', 'serial']);
      const x = new X509Certificate(c.certificate);
      expect(x.serialNumber).toBe(c.serial);
      expect(x.subject).toBe(`O=hangar\nOU=${(await instance()).id}\nCN=billing-worker`);
      expect(x.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
      expect(x.checkIssued(new X509Certificate(caPem))).toBe(true);
      expect(x.verify(new X509Certificate(caPem).publicKey)).toBe(true);
      expect(Math.round((Date.parse(c.not_after) - Date.now()) / DAY)).toBe(397);
      // hangar keeps the certificate, never its key
      const row = await th.hangar.store.db
        .selectFrom('tls_client_certificates')
        .selectAll()
        .where('serial', '=', c.serial)
        .executeTakeFirstOrThrow();
      expect(JSON.stringify(row)).not.toContain('PRIVATE KEY');

      const server = await th.hangar.tls.ensureServerCertificate(await instance());
      const mutual = async () =>
        handshake(
          { cert: server.certPem, key: server.keyPem, ca: caPem, crl: await th.hangar.tls.crlPem(server.instanceId) },
          { ca: caPem, host: '127.0.0.1', cert: c.certificate, key: c.private_key },
        );
      expect(await mutual()).toEqual({ ok: true });

      const revoked = await alice.delete(`${certs}/${c.serial.toLowerCase()}`);
      expect(revoked.status).toBe(200);
      expect(revoked.body.data).toMatchObject({ serial: c.serial, common_name: 'billing-worker', revoked_at: expect.any(String) });
      expect(await mutual()).toMatchObject({ ok: false });
      const crl = openssl(['crl', '-noout', '-text'], await th.hangar.tls.crlPem(server.instanceId));
      expect(crl).toContain(`Serial Number: ${c.serial}`);
      expect(crl).toContain(`Issuer: O = hangar, CN = hangar ${th.config.hostId} CA`);
      // revoking again keeps the first time
      expect((await alice.delete(`${certs}/${c.serial}`)).body.data.revoked_at).toBe(revoked.body.data.revoked_at);
    });

    it('GET 200 lists them: serial, CN, validity, revocation; never a key', async () => {
      const made = (await alice.post(certs, { common_name: 'reporting', valid_days: 30 })).body.data;
      const list = await alice.get(certs);
      expect(list.status).toBe(200);
      const mine = list.body.data.find((x: any) => x.serial === made.serial);
      expect(mine).toEqual({
        serial: made.serial,
        common_name: 'reporting',
        fingerprint_sha256: new X509Certificate(made.certificate).fingerprint256,
        not_before: expect.any(String),
        not_after: made.not_after,
        revoked_at: null,
      });
      expect(Math.round((Date.parse(made.not_after) - Date.now()) / DAY)).toBe(30);
      expect(list.body.data.some((x: any) => x.common_name === 'billing-worker' && x.revoked_at !== null)).toBe(true);
      expect(JSON.stringify(list.body)).not.toContain('PRIVATE KEY');
    });

    it('the CRL lists only revoked certificates, and is signed by the CA', async () => {
      const id = (await instance()).id;
      const kept = (await alice.post(certs, { common_name: 'kept' })).body.data;
      const crlPem = await th.hangar.tls.crlPem(id);
      const dir = mkdtempSync(join(tmpdir(), 'hangar-crl-'));
      try {
        writeFileSync(join(dir, 'ca.pem'), caPem);
        writeFileSync(join(dir, 'crl.pem'), crlPem);
        const text = execFileSync('openssl', ['crl', '-in', join(dir, 'crl.pem'), '-CAfile', join(dir, 'ca.pem'), '-noout', '-text'], {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        expect(text).not.toContain(kept.serial);
        expect(text).toMatch(/Next Update: /);
        const verified = execFileSync('openssl', ['crl', '-in', join(dir, 'crl.pem'), '-CAfile', join(dir, 'ca.pem'), '-noout'], {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        expect(verified).toBe('');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('400 for a common name openssl or people could misread, or a lifetime out of bounds', async () => {
      for (const body of [
        { common_name: '' },
        { common_name: 'a/CN=admin' },
        { common_name: 'x'.repeat(65) },
        { common_name: 'ok', valid_days: 0 },
        { common_name: 'ok', valid_days: 826 },
        { common_name: 'ok', extra: true },
        {},
      ]) {
        const res = await alice.post(certs, body);
        expect({ body, status: res.status }).toEqual({ body, status: 400 });
      }
    });

    it('404 for another account (POST, GET, DELETE), an unknown serial, a missing instance', async () => {
      const made = (await alice.post(certs, { common_name: 'mine' })).body.data;
      const missing = await alice.post('/v2/instances/nope/tls/client-certs', { common_name: 'x' });
      expect(missing.status).toBe(404);
      for (const res of [
        await bob.post(certs, { common_name: 'x' }),
        await bob.post(certs, { common_name: '' }),
        await bob.get(certs),
        await bob.delete(`${certs}/${made.serial}`),
      ]) {
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ ...missing.body, message: missing.body.message.replace('nope', 'r') });
      }
      const unknown = await alice.delete(`${certs}/${'0'.repeat(32)}`);
      expect(unknown.status).toBe(404);
      expect(unknown.body.code).toBe('CLIENT_CERTIFICATE_NOT_FOUND');
      // bob's attempt revoked nothing
      expect((await alice.get(certs)).body.data.find((x: any) => x.serial === made.serial).revoked_at).toBeNull();
    });

    it('issues and revocations are in the audit log', async () => {
      const made = await alice.request('POST', certs, {
        body: { common_name: 'audited' },
        headers: { 'x-request-id': `tls-issue-${dialect}` },
      });
      await alice.request('DELETE', `${certs}/${made.body.data.serial}`, { headers: { 'x-request-id': `tls-revoke-${dialect}` } });
      const events = (await alice.get('/v2/events/?limit=50')).body.data as any[];
      expect(events.find((e) => e.request_id === `tls-issue-${dialect}`)).toMatchObject({
        action: 'tls.client_cert.create',
        target: 'instance:r',
        outcome: 'success',
      });
      expect(events.find((e) => e.request_id === `tls-revoke-${dialect}`)).toMatchObject({
        action: 'tls.client_cert.revoke',
        target: `instance:r/client_cert:${made.body.data.serial}`,
        outcome: 'success',
      });
    });
  });
});

/** The service dependencies of a running test hangar (its store, keyring and settings). */
function depsOf(th: TestHangar) {
  return (th.hangar.tls as unknown as { deps: ConstructorParameters<typeof TlsService>[0] }).deps;
}

describe.each(DIALECTS)('the CA across starts on %s', (dialect) => {
  it('is made once and is the same after a restart on the same store', async () => {
    const th = await startTestHangar({ dialect });
    try {
      const before = (await th.anonymous().get('/v2/tls/ca')).body;
      await th.restart();
      expect((await th.anonymous().get('/v2/tls/ca')).body).toBe(before);
      expect(await th.hangar.store.db.selectFrom('tls_authorities').selectAll().execute()).toHaveLength(1);
    } finally {
      await th.close();
    }
  });

  it('of several openings at once, one CA is kept and every one of them has it', async () => {
    const th = await startTestHangar({ dialect });
    try {
      await th.hangar.store.db.deleteFrom('tls_authorities').execute();
      const deps = depsOf(th);
      const opened = await Promise.all(
        [1, 2, 3, 4].map((i) =>
          TlsAuthority.open({
            config: { ...th.config, replicaId: `r${i}` },
            db: deps.db,
            keyring: deps.keyring,
            openssl: new Openssl(),
            now: Date.now,
          }),
        ),
      );
      const cas = await Promise.all(opened.map((a) => a.get()));
      expect(new Set(cas.map((c) => c.fingerprint256)).size).toBe(1);
      expect(await th.hangar.store.db.selectFrom('tls_authorities').selectAll().execute()).toHaveLength(1);
    } finally {
      await th.close();
    }
  });

  it("its key stays readable after the store's secret key is rotated", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'hangar-tls-rot-'));
    const oldKey = randomBytes(32);
    const newKey = randomBytes(32);
    const pg = dialect === 'postgres' ? await freshPostgres() : undefined;
    const at = { dataDir, ...(pg ? { databaseUrl: pg.url } : {}) };
    try {
      let th = await startTestHangar({ ...at, env: { HANGAR_SECRET_KEY: oldKey.toString('base64') } });
      const alice = await th.signup();
      await alice.ready(redisBody('r'));
      const tlsBefore = (await alice.get('/v2/instances/r/tls/')).body.data;
      const caBefore = (await th.anonymous().get('/v2/tls/ca')).body;
      await th.stop();
      const store = await openStore(th.config);
      try {
        await reencryptAll(store.db, new Keyring([newKey, oldKey]));
        expect([...(await sealingKeyIds(store.db)).keys()]).toEqual([new Keyring([newKey]).currentId]);
      } finally {
        await store.close();
      }
      th = await startTestHangar({ ...at, env: { HANGAR_SECRET_KEY: newKey.toString('base64') } });
      try {
        expect((await th.anonymous().get('/v2/tls/ca')).body).toBe(caBefore);
        const token = (
          await th.anonymous().request('GET', '/v2/tokens/', {
            headers: { authorization: `Basic ${Buffer.from(`${alice.login}:${alice.password}`).toString('base64')}` },
          })
        ).body.data.token;
        const again = await th.anonymous().request('GET', '/v2/instances/r/tls/', { headers: { 'x-auth-token': token } });
        expect(again.body.data.serial).toBe(tlsBefore.serial);
        // a client certificate is still signed with the CA's key, unsealed with the new key
        const c = await th
          .anonymous()
          .request('POST', '/v2/instances/r/tls/client-certs', { body: { common_name: 'after' }, headers: { 'x-auth-token': token } });
        expect(new X509Certificate(c.body.data.certificate).verify(new X509Certificate(caBefore).publicKey)).toBe(true);
      } finally {
        await th.close();
      }
    } finally {
      await pg?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe.runIf(POSTGRES_URL !== undefined)('two hangars started together on one PostgreSQL', () => {
  it('end with one CA, the same for both', async () => {
    const pg = await freshPostgres();
    const env = { HANGAR_SECRET_KEY: randomBytes(32).toString('base64') };
    const started = await Promise.allSettled([
      startTestHangar({ databaseUrl: pg.url, env: { ...env, HANGAR_REPLICA_ID: 'first' } }),
      startTestHangar({ databaseUrl: pg.url, env: { ...env, HANGAR_REPLICA_ID: 'second' } }),
    ]);
    try {
      for (const s of started) if (s.status === 'rejected') throw s.reason;
      const [a, b] = started.map((s) => (s as PromiseFulfilledResult<TestHangar>).value) as [TestHangar, TestHangar];
      const fromA = (await a.anonymous().get('/v2/tls/ca')).body;
      expect(fromA).toMatch(/^-----BEGIN CERTIFICATE-----/);
      expect((await b.anonymous().get('/v2/tls/ca')).body).toBe(fromA);
      expect(await a.hangar.store.db.selectFrom('tls_authorities').selectAll().execute()).toHaveLength(1);
    } finally {
      for (const s of started) if (s.status === 'fulfilled') await s.value.close();
      await pg.drop();
    }
  });
});

describe("the operator's CA", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'hangar-operator-ca-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("is used when given: served at /v2/tls/ca, signing the instances' certificates; none is made in the store", async () => {
    const ca = operatorCa(dir, 'Example Root CA');
    const th = await startTestHangar({ env: { HANGAR_TLS_CA_CERT: ca.cert, HANGAR_TLS_CA_KEY: ca.key } });
    try {
      const given = execFileSync('cat', [ca.cert], { encoding: 'utf8' });
      const served = (await th.anonymous().get('/v2/tls/ca')).body as string;
      expect(new X509Certificate(served).fingerprint256).toBe(new X509Certificate(given).fingerprint256);
      const alice = await th.signup();
      await alice.ready(redisBody('r'));
      const t = (await alice.get('/v2/instances/r/tls/')).body.data;
      expect(t.ca_fingerprint_sha256).toBe(new X509Certificate(given).fingerprint256);
      const c = (await alice.post('/v2/instances/r/tls/client-certs', { common_name: 'app' })).body.data;
      expect(new X509Certificate(c.certificate).verify(new X509Certificate(given).publicKey)).toBe(true);
      expect(await th.hangar.store.db.selectFrom('tls_authorities').selectAll().execute()).toHaveLength(0);
    } finally {
      await th.close();
    }
  });

  it('is refused at start, naming the setting: a key that is not its own, a certificate that is not a CA, a missing file', async () => {
    const ca = operatorCa(dir, 'Right CA');
    const other = operatorCa(dir, 'Other CA');
    const leaf = operatorCa(dir, 'Not a CA', 'basicConstraints=critical,CA:false\n');
    const cases: [Record<string, string>, RegExp][] = [
      [
        { HANGAR_TLS_CA_CERT: ca.cert, HANGAR_TLS_CA_KEY: other.key },
        /HANGAR_TLS_CA_KEY \(.*Other CA\.key\) is not the private key of the certificate in HANGAR_TLS_CA_CERT/,
      ],
      [{ HANGAR_TLS_CA_CERT: leaf.cert, HANGAR_TLS_CA_KEY: leaf.key }, /HANGAR_TLS_CA_CERT \(.*\) is not a CA certificate/],
      [{ HANGAR_TLS_CA_CERT: join(dir, 'none.crt'), HANGAR_TLS_CA_KEY: ca.key }, /HANGAR_TLS_CA_CERT: cannot read/],
      [{ HANGAR_TLS_CA_CERT: ca.key, HANGAR_TLS_CA_KEY: ca.key }, /HANGAR_TLS_CA_CERT \(.*\) holds no PEM certificate/],
      [{ HANGAR_TLS_CA_CERT: ca.cert, HANGAR_TLS_CA_KEY: ca.cert }, /HANGAR_TLS_CA_KEY \(.*\) holds no unencrypted PEM private key/],
    ];
    for (const [env, message] of cases) {
      const dataDir = mkdtempSync(join(tmpdir(), 'hangar-operator-ca-start-'));
      try {
        const config = loadConfig(
          {},
          { HANGAR_DATA_DIR: dataDir, HANGAR_RUNTIME: 'emulated', HANGAR_LOG_LEVEL: 'silent', HANGAR_DRAIN_PERIOD: '0', ...env },
        );
        await expect(startHangar(config, createLogger(config), { listen: false })).rejects.toMatchObject({
          name: 'ConfigError',
          message: expect.stringMatching(message),
        });
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    }
    expect(() => loadConfig({}, { HANGAR_TLS_CA_CERT: ca.cert })).toThrow(/HANGAR_TLS_CA_CERT and HANGAR_TLS_CA_KEY go together/);
  });
});

describe('without openssl', () => {
  it('a CA that cannot be made does not fail the opening: asking for it is a 503 TLS_UNAVAILABLE saying what to install', async () => {
    const th = await startTestHangar();
    try {
      const deps = depsOf(th);
      await deps.db.deleteFrom('tls_authorities').execute();
      const missing = new Openssl({ bin: '/nonexistent/openssl' });
      const authority = await TlsAuthority.open({ config: th.config, db: deps.db, keyring: deps.keyring, openssl: missing, now: Date.now });
      await expect(authority.get()).rejects.toMatchObject({
        status: 503,
        code: 'TLS_UNAVAILABLE',
        message: expect.stringMatching(/install openssl/),
      });
    } finally {
      await th.close();
    }
  });
});
