import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Keyring } from '../../src/lib/secrets.js';
import { openStore } from '../../src/store/database.js';
import { PortRaceError, addInstancePorts } from '../../src/store/instance-repository.js';
import { listServerCertificates } from '../../src/store/tls-repository.js';
import { esBody, mongoBody, redisBody } from '../helpers/bodies.js';
import { DIALECTS } from '../helpers/database.js';
import { type Account, type Reply, type TestHangar, startTestHangar, startWithTwoAccounts } from '../helpers/hangar.js';

// TLS modes, rotation and revocation through the API on the emulated runtime: the records, the
// operations, what the emulated edge is given (its listeners, certificate, CA and CRL), and the
// ports of the TLS listeners given to an instance made before them.

/** Polls until `condition` holds. */
async function until(what: string, condition: () => boolean | Promise<boolean>, ms = 25_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const TLS_FIELDS = ['tls_connect_string', 'public_tls_connect_string', 'servicenet_tls_connect_string'];

describe.each(DIALECTS)('TLS modes on %s', (dialect) => {
  let th: TestHangar;
  let alice: Account;
  let bob: Account;

  beforeAll(async () => {
    ({ th, alice, bob } = await startWithTwoAccounts({ dialect }));
  });
  afterAll(() => th?.close());

  /** The operation a change answered with, once it succeeded. */
  async function succeeded(res: Reply, kind: string, name: string): Promise<any> {
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const id = res.headers.get('x-operation-id');
    expect(id, kind).toMatch(/^[0-9a-f]{24}$/);
    expect(res.headers.get('location')).toBe(`/v2/operations/${id}/`);
    await until(`${kind} to succeed`, async () => (await alice.get(`/v2/operations/${id}/`)).body.data.state === 'SUCCEEDED');
    const op = (await alice.get(`/v2/operations/${id}/`)).body.data;
    expect(op).toMatchObject({ kind, instance_name: name, progress: 100 });
    return op;
  }

  const idOf = async (name: string) => (await alice.get(`/v2/instances/${name}/`)).body.data.id as string;

  describe('records', () => {
    it('a redis instance is `preferred` by default: the spec fields are the plain addresses, the TLS ones are beside them', async () => {
      const rec = await alice.ready(redisBody('pref'));
      expect(rec).toMatchObject({ tls: 'preferred', tls_client_auth: false });
      expect(rec.connect_string).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);
      expect(rec.public_connect_string).toBe(rec.connect_string);
      expect(rec.tls_connect_string).toMatch(/^rediss:\/\/127\.0\.0\.1:\d+$/);
      expect(rec.public_tls_connect_string).toBe(rec.tls_connect_string);
      expect(rec.servicenet_tls_connect_string).toMatch(/^rediss:\/\/127\.0\.0\.1:\d+$/);
      const ports = new Set(
        [rec.public_connect_string, rec.servicenet_connect_string, rec.public_tls_connect_string, rec.servicenet_tls_connect_string].map(
          (u: string) => new URL(u).port,
        ),
      );
      expect(ports.size).toBe(4);
      // the emulated edge listens on both, and presents the instance's current certificate on the TLS ones
      const id = rec.id;
      await alice.post('/v2/instances/pref/acls/', { cidr_mask: '192.0.2.0/24', description: 'test' });
      expect(th.runtime.connect(id, '192.0.2.1', 'public')).toBe(true);
      expect(th.runtime.connect(id, '192.0.2.1', 'public.tls')).toBe(true);
      expect(th.runtime.connect(id, '198.51.100.1', 'public.tls')).toBe(false);
      expect(th.runtime.tlsOf(id)?.serial).toBe((await alice.get('/v2/instances/pref/tls/')).body.data.serial);
      expect(th.runtime.tlsOf(id)?.clientAuth).toBeUndefined();
      // and the denied one is listed with its TLS listener
      const denied = (await alice.get('/v2/instances/pref/acls/denied')).body.data;
      expect(denied[0]).toMatchObject({ source: '198.51.100.1', listener: 'public.tls' });
    });

    it('`required`: connect_string names the TLS address (rediss://), the plain listeners refuse whatever the ACLs', async () => {
      const rec = await alice.ready(redisBody('req', { tls: 'required', acls: [{ cidr_mask: '192.0.2.0/24', description: 'x' }] }));
      expect(rec.tls).toBe('required');
      expect(rec.connect_string).toBe(rec.tls_connect_string);
      expect(rec.public_connect_string).toBe(rec.public_tls_connect_string);
      expect(rec.servicenet_connect_string).toBe(rec.servicenet_tls_connect_string);
      expect(rec.connect_string).toMatch(/^rediss:/);
      expect(th.runtime.connect(rec.id, '192.0.2.1', 'public')).toBe(false);
      expect(th.runtime.connect(rec.id, '192.0.2.1', 'public.tls')).toBe(true);
      // a closed listener's refusals are not the ACLs'
      expect((await alice.get('/v2/instances/req/acls/denied')).body.data).toEqual([]);
    });

    it('`off`: no TLS address in the record and no TLS listener', async () => {
      const rec = await alice.ready(redisBody('plain', { tls: 'off' }));
      expect(rec.tls).toBe('off');
      for (const f of TLS_FIELDS) expect(rec).not.toHaveProperty(f);
      expect(th.runtime.tlsOf(rec.id)).toBeUndefined();
    });

    it('mongodb and elasticsearch records show no mode (their TLS listeners are there by type)', async () => {
      const m = (await alice.post('/v2/instances/', mongoBody('m', 'mongodb_sharded'))).body.data;
      expect(m).not.toHaveProperty('tls');
      expect(m.ssl_connect_string).toMatch(/^127\.0\.0\.1:\d+$/);
      const es = (await alice.post('/v2/instances/', esBody('e'))).body.data;
      expect(es).not.toHaveProperty('tls');
    });

    it('400 for a mode that is none, a mode on another service, mutual TLS with TLS off or on another service', async () => {
      const bad = await alice.post('/v2/instances/', redisBody('x', { tls: 'sometimes' }));
      expect(bad.status).toBe(400);
      expect(bad.body).toMatchObject({ code: 'INVALID_VALUE', field: 'tls', allowed: ['off', 'preferred', 'required'] });
      for (const [body, field] of [
        [mongoBody('x', 'mongodb_sharded', { tls: 'required' }), 'tls'],
        [esBody('x', { tls_client_auth: true }), 'tls_client_auth'],
        [redisBody('x', { tls: 'off', tls_client_auth: true }), 'tls_client_auth'],
        [redisBody('x', { tls: 1 }), 'tls'],
      ] as const) {
        const res = await alice.post('/v2/instances/', body);
        expect({ field, status: res.status, code: res.body.code }).toEqual({ field, status: 400, code: 'INVALID_VALUE' });
        expect(res.body.message).toContain(field);
      }
      expect((await alice.get('/v2/instances/x/')).status).toBe(404);
    });
  });

  describe('POST /v2/instances/<name>/tls/', () => {
    it('200 off -> preferred -> required -> off, each an operation that succeeds once the edge serves it', async () => {
      await alice.ready(redisBody('m1', { tls: 'off' }));
      const id = await idOf('m1');
      let op = await succeeded(await alice.post('/v2/instances/m1/tls/', { mode: 'preferred' }), 'tls.mode', 'm1');
      expect(op.detail).toEqual({ from: 'off', to: 'preferred', tls_client_auth: false });
      let rec = (await alice.get('/v2/instances/m1/')).body.data;
      expect(rec.tls).toBe('preferred');
      expect(rec.tls_connect_string).toMatch(/^rediss:/);
      expect(rec.connect_string).toMatch(/^redis:/);
      expect(th.runtime.tlsOf(id)).toBeDefined();

      const res = await alice.post('/v2/instances/m1/tls/', { mode: 'required' });
      expect(res.body.data).toMatchObject({ mode: 'required', tls_client_auth: false, serial: expect.any(String) });
      op = await succeeded(res, 'tls.mode', 'm1');
      rec = (await alice.get('/v2/instances/m1/')).body.data;
      expect(rec.connect_string).toBe(rec.tls_connect_string);
      expect(th.runtime.connect(id, '127.0.0.1', 'public')).toBe(false);

      await succeeded(await alice.post('/v2/instances/m1/tls/', { mode: 'off' }), 'tls.mode', 'm1');
      rec = (await alice.get('/v2/instances/m1/')).body.data;
      expect(rec).toMatchObject({ tls: 'off', connect_string: expect.stringMatching(/^redis:/) });
      expect(th.runtime.tlsOf(id)).toBeUndefined();
    });

    it('200 without an operation when the instance is so already', async () => {
      await alice.ready(redisBody('m2'));
      const res = await alice.post('/v2/instances/m2/tls/', { mode: 'preferred' });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-operation-id')).toBeNull();
      expect(res.body.data.mode).toBe('preferred');
    });

    it('mutual TLS: the edge is given the CA, a CRL and the OU of the instance; turned off again with the mode off', async () => {
      await alice.ready(redisBody('mt'));
      const id = await idOf('mt');
      const op = await succeeded(await alice.post('/v2/instances/mt/tls/', { mode: 'preferred', tls_client_auth: true }), 'tls.mode', 'mt');
      expect(op.detail).toEqual({ from: 'preferred', to: 'preferred', tls_client_auth: true });
      expect((await alice.get('/v2/instances/mt/')).body.data.tls_client_auth).toBe(true);
      const ca = (await th.anonymous().get('/v2/tls/ca')).body;
      expect(th.runtime.tlsOf(id)?.clientAuth).toMatchObject({ caPem: ca, organizationalUnit: id });
      expect(th.runtime.tlsOf(id)?.clientAuth?.crlPem).toMatch(/BEGIN X509 CRL/);
      // a mode without mutual TLS named keeps it
      await succeeded(await alice.post('/v2/instances/mt/tls/', { mode: 'required' }), 'tls.mode', 'mt');
      expect((await alice.get('/v2/instances/mt/tls/')).body.data).toMatchObject({ mode: 'required', tls_client_auth: true });
      // off turns it off
      await succeeded(await alice.post('/v2/instances/mt/tls/', { mode: 'off' }), 'tls.mode', 'mt');
      expect((await alice.get('/v2/instances/mt/tls/')).body.data).toMatchObject({ mode: 'off', tls_client_auth: false });
    });

    it('400 for a mode that is none, mutual TLS with TLS off, another service, an unknown field', async () => {
      await alice.ready(redisBody('m3'));
      const bad = await alice.post('/v2/instances/m3/tls/', { mode: 'always' });
      expect(bad.status).toBe(400);
      expect(bad.body).toMatchObject({ field: 'mode', allowed: ['off', 'preferred', 'required'] });
      expect((await alice.post('/v2/instances/m3/tls/', { mode: 'off', tls_client_auth: true })).body.field).toBe('tls_client_auth');
      expect((await alice.post('/v2/instances/m3/tls/', { mode: 'off', extra: 1 })).status).toBe(400);
      expect((await alice.post('/v2/instances/m3/tls/', {})).status).toBe(400);
      await alice.post('/v2/instances/', esBody('es3'));
      expect((await alice.post('/v2/instances/es3/tls/', { mode: 'required' })).status).toBe(400);
      // nothing changed, nothing recorded
      expect((await alice.get('/v2/instances/m3/')).body.data.tls).toBe('preferred');
      expect((await alice.get('/v2/operations/?instance=m3&kind=tls.mode')).body.data).toEqual([]);
    });

    it("404 for a missing instance and the same 404 for another account's; 401 without credentials", async () => {
      await alice.ready(redisBody('m4'));
      const missing = await alice.post('/v2/instances/nope/tls/', { mode: 'off' });
      const theirs = await bob.post('/v2/instances/m4/tls/', { mode: 'off' });
      expect([missing.status, theirs.status]).toEqual([404, 404]);
      expect(theirs.body).toEqual({ ...missing.body, message: missing.body.message.replace('nope', 'm4') });
      expect((await th.anonymous().post('/v2/instances/m4/tls/', { mode: 'off' })).status).toBe(401);
      expect((await bob.post('/v2/instances/m4/tls/rotate')).status).toBe(404);
      expect((await alice.get('/v2/instances/m4/')).body.data.tls).toBe('preferred');
    });
  });

  describe('POST /v2/instances/<name>/tls/rotate', () => {
    it('200: a new certificate, an operation that succeeds once the edge presents it; the one before is retired', async () => {
      await alice.ready(redisBody('rot'));
      const id = await idOf('rot');
      const before = (await alice.get('/v2/instances/rot/tls/')).body.data;
      const res = await alice.post('/v2/instances/rot/tls/rotate');
      expect(res.body.data.serial).not.toBe(before.serial);
      expect(res.body.data.fingerprint_sha256).not.toBe(before.fingerprint_sha256);
      const op = await succeeded(res, 'tls.rotate', 'rot');
      expect(op.detail).toEqual({ previous_serial: before.serial, serial: res.body.data.serial });
      expect(th.runtime.tlsOf(id)?.serial).toBe(res.body.data.serial);
      expect(new X509Certificate(th.runtime.tlsOf(id)!.pem).serialNumber).toBe(res.body.data.serial);
      expect((await alice.get('/v2/instances/rot/tls/')).body.data.serial).toBe(res.body.data.serial);
      const history = await listServerCertificates(th.hangar.store.db, keyringOf(th), id);
      expect(history[0]).toMatchObject({ serial: res.body.data.serial, servedAt: expect.any(Number), retiredAt: null });
      expect(history.find((c) => c.serial === before.serial)?.retiredAt).toEqual(expect.any(Number));
    });
  });

  describe('revoking a client certificate', () => {
    it('is an operation that succeeds once the CRL the edge has lists it; revoking again is none', async () => {
      await alice.ready(redisBody('rv', { tls_client_auth: true }));
      const id = await idOf('rv');
      const made = (await alice.post('/v2/instances/rv/tls/client-certs', { common_name: 'app' })).body.data;
      const listed = () =>
        execFileSync('openssl', ['crl', '-noout', '-text'], { input: th.runtime.tlsOf(id)!.clientAuth!.crlPem, encoding: 'utf8' });
      expect(listed()).not.toContain(made.serial);
      const res = await alice.delete(`/v2/instances/rv/tls/client-certs/${made.serial}`);
      const op = await succeeded(res, 'tls.revoke', 'rv');
      expect(op.detail).toEqual({ serial: made.serial, common_name: 'app' });
      expect(listed()).toContain(`Serial Number: ${made.serial}`);
      const again = await alice.delete(`/v2/instances/rv/tls/client-certs/${made.serial}`);
      expect([again.status, again.headers.get('x-operation-id'), again.body.data.revoked_at]).toEqual([
        200,
        null,
        res.body.data.revoked_at,
      ]);
    });
  });
});

/** The keyring of a running test hangar. */
function keyringOf(th: TestHangar) {
  return (th.hangar.tls as unknown as { deps: { keyring: Keyring } }).deps.keyring;
}

describe.each(DIALECTS)('an instance made before TLS listeners existed, on %s', (dialect) => {
  it('gets ports for them from its zone at its next pass, and serves them (`preferred`)', async () => {
    const th = await startTestHangar({ dialect, env: { HANGAR_PORT_RANGE: '20000-20099' } });
    try {
      const alice = await th.signup();
      const rec = await alice.ready(redisBody('old'));
      const ports = JSON.parse((await rowOf(th, rec.id)).ports) as Record<string, number>;
      const { 'public.tls': _a, 'servicenet.tls': _b, ...before } = ports;
      // as a hangar before this one recorded it: the plain listeners and the engines, nothing else
      await th.stop();
      const store = await openStore(th.config);
      try {
        await store.db
          .deleteFrom('ports')
          .where('instance_id', '=', rec.id)
          .where('role', 'in', ['public.tls', 'servicenet.tls'])
          .execute();
        await store.db
          .updateTable('instances')
          .set({ ports: JSON.stringify(before) })
          .where('id', '=', rec.id)
          .execute();
      } finally {
        await store.close();
      }
      await th.restart();
      const after = await alice.waitFor('old', (r) => r?.tls_connect_string !== undefined);
      const given = JSON.parse((await rowOf(th, rec.id)).ports) as Record<string, number>;
      // the ports it had stay; the new ones are from the zone's range, and the store's port table holds them
      expect(Object.fromEntries(Object.entries(given).filter(([r]) => r in before))).toEqual(before);
      for (const role of ['public.tls', 'servicenet.tls']) {
        expect(given[role]).toBeGreaterThanOrEqual(20000);
        expect(given[role]).toBeLessThanOrEqual(20099);
        expect(Object.values(before)).not.toContain(given[role]);
      }
      const held = await th.hangar.store.db.selectFrom('ports').selectAll().where('instance_id', '=', rec.id).execute();
      expect(held.map((p) => p.role).sort()).toEqual(Object.keys(given).sort());
      expect(after.tls).toBe('preferred');
      expect(after.tls_connect_string).toBe(`rediss://127.0.0.1:${given['public.tls']}`);
      expect(after.connect_string).toBe(rec.connect_string);
      await until('the edge serves them', () => th.runtime.tlsOf(rec.id) !== undefined);
    } finally {
      await th.close();
    }
  });

  it('of two instances given the same port at once, one is refused (PortRaceError: it picks again); a role given twice keeps its first port', async () => {
    const th = await startTestHangar({ dialect });
    try {
      const alice = await th.signup();
      const a = await alice.ready(redisBody('a'));
      const b = await alice.ready(redisBody('b'));
      const db = th.hangar.store.db;
      const scope = (await db.selectFrom('ports').select('host_id').where('instance_id', '=', a.id).executeTakeFirstOrThrow()).host_id;
      const results = await Promise.allSettled([
        addInstancePorts(db, scope, a.id, { extra: 29999 }),
        addInstancePorts(db, scope, b.id, { extra: 29999 }),
      ]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
      expect(refused.reason).toBeInstanceOf(PortRaceError);
      const winner = results.findIndex((r) => r.status === 'fulfilled');
      const id = [a.id, b.id][winner]!;
      // the same role again, another port: the first stays
      expect((await addInstancePorts(db, scope, id, { extra: 29998 })).extra).toBe(29999);
      const other = [a.id, b.id][1 - winner]!;
      expect(JSON.parse((await rowOf(th, other)).ports)).not.toHaveProperty('extra');
      expect((await db.selectFrom('ports').selectAll().where('port', '=', 29998).execute()).length).toBe(0);
    } finally {
      await th.close();
    }
  });
});

async function rowOf(th: TestHangar, id: string) {
  return th.hangar.store.db.selectFrom('instances').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}
