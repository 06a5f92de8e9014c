import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reserveIdempotencyKey } from '../../src/store/idempotency-repository.js';
import { DIALECTS } from '../helpers/database.js';
import { type Account, type TestHangar, startWithTwoAccounts } from '../helpers/hangar.js';

const redis = (name: string) => ({ name, plan: 500, service: 'redis', type: 'redis_ha_instance', version: '7.0.15', zone: 'US-Dallas' });
const key = (k: string) => ({ headers: { 'idempotency-key': k } });

describe.each(DIALECTS)('Idempotency-Key on %s', (dialect) => {
  let th: TestHangar, alice: Account, bob: Account;

  beforeAll(async () => ({ th, alice, bob } = await startWithTwoAccounts({ dialect })));
  afterAll(() => th.close());

  const names = async (who: Account) => ((await who.get('/v2/instances/')).body.data as { name: string }[]).map((i) => i.name).sort();

  it('a repeat with the same key and body gets the first answer and does nothing again', async () => {
    const first = await alice.post('/v2/instances/', redis('idem-a'), key('k-create-1'));
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    await alice.waitFor('idem-a', (r) => r?.state === 'ACTIVE');
    const again = await alice.post('/v2/instances/', redis('idem-a'), key('k-create-1'));
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    // the first answer, as it was (REQUESTED), not a new record
    expect(again.body).toEqual(first.body);
    expect((await names(alice)).filter((n) => n === 'idem-a')).toHaveLength(1);
  });

  it('the same key with another body is a 409 and changes nothing', async () => {
    expect((await alice.post('/v2/instances/', redis('idem-b'), key('k-create-2'))).status).toBe(200);
    const other = await alice.post('/v2/instances/', redis('idem-c'), key('k-create-2'));
    expect(other.status).toBe(409);
    expect(other.body).toMatchObject({ code: 'IDEMPOTENCY_KEY_CONFLICT', message: expect.stringContaining('Idempotency-Key') });
    expect(await names(alice)).not.toContain('idem-c');
  });

  it('a refusal is an answer too: repeated as it was', async () => {
    expect((await alice.post('/v2/instances/', redis('idem-taken'))).status).toBe(200);
    const refused = await alice.post('/v2/instances/', redis('idem-taken'), key('k-refused'));
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('NAME_TAKEN');
    // delete the instance: a fresh request would now succeed, the repeat still answers the refusal
    expect((await alice.delete('/v2/instances/idem-taken/')).status).toBe(200);
    await alice.waitFor('idem-taken', (r) => r === undefined);
    const repeat = await alice.post('/v2/instances/', redis('idem-taken'), key('k-refused'));
    expect(repeat.status).toBe(409);
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
    expect(await names(alice)).not.toContain('idem-taken');
  });

  it('keys belong to their account', async () => {
    expect((await alice.post('/v2/instances/', redis('idem-shared'), key('k-shared'))).status).toBe(200);
    const theirs = await bob.post('/v2/instances/', redis('idem-shared'), key('k-shared'));
    expect(theirs.status).toBe(200);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
    expect(await names(bob)).toContain('idem-shared');
  });

  it('an ACL add repeated with its key is one ACL, with the same id', async () => {
    await alice.post('/v2/instances/', redis('idem-acl'));
    const body = { cidr_mask: '198.51.100.0/24', description: 'office' };
    const first = await alice.post('/v2/instances/idem-acl/acls/', body, key('k-acl'));
    const again = await alice.post('/v2/instances/idem-acl/acls/', body, key('k-acl'));
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.body.data).toBe(first.body.data);
    expect((await alice.get('/v2/instances/idem-acl/acls/')).body.data).toHaveLength(1);
    // without the key the same add is a conflict: the key is what made the repeat safe
    expect((await alice.post('/v2/instances/idem-acl/acls/', body)).status).toBe(409);
  });

  it('a PATCH repeated with its key is applied once', async () => {
    const created = await alice.post('/v2/instances/', {
      ...redis('idem-users'),
      service: 'mongodb',
      type: 'mongodb_singledb',
      plan: 1,
      version: '3.4.2',
      zone: 'US-West',
    });
    const id = created.body.data.id as string;
    await alice.waitFor('idem-users', (r) => r?.state === 'ACTIVE');
    const users = `/v2/mongodb/${id}/databases/shop/users`;
    expect((await alice.post(users, { username: 'app', password: 'first-password', roles: [] })).status).toBe(200);
    const patch = { roles: [{ role: 'read', db: 'shop' }] };
    const first = await alice.request('PATCH', `${users}/app`, { body: patch, headers: { 'idempotency-key': 'k-patch' } });
    const again = await alice.request('PATCH', `${users}/app`, { body: patch, headers: { 'idempotency-key': 'k-patch' } });
    expect(first.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect((await alice.get(users)).body.data).toEqual([{ name: 'app', roles: [{ role: 'read', db: 'shop' }] }]);
  });

  it('requests racing with one key: one runs, the others get its answer or a 409 while it runs; never two instances', async () => {
    const answers = await Promise.all(Array.from({ length: 8 }, () => alice.post('/v2/instances/', redis('idem-race'), key('k-race'))));
    for (const a of answers) expect([200, 409]).toContain(a.status);
    expect(answers.filter((a) => a.status === 200 && a.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    for (const a of answers.filter((x) => x.status === 409)) expect(a.body.code).toBe('IDEMPOTENCY_KEY_IN_USE');
    expect((await names(alice)).filter((n) => n === 'idem-race')).toHaveLength(1);
  });

  it('a key reserved by a request that died without answering is taken over after a minute', async () => {
    const caller = (await alice.post('/v2/tokens/verify/', { token: (alice.auth as { token: string }).token })).body.data;
    await reserveIdempotencyKey(th.hangar.store.db, caller.account_id, 'k-abandoned', 'hash-of-a-request-that-died', Date.now() - 120_000);
    const res = await alice.post('/v2/instances/', redis('idem-abandoned'), key('k-abandoned'));
    expect(res.status).toBe(200);
    expect(await names(alice)).toContain('idem-abandoned');
    // a reservation that is recent is someone else's running request
    await reserveIdempotencyKey(th.hangar.store.db, caller.account_id, 'k-running', 'hash-of-a-running-request', Date.now());
    const busy = await alice.post('/v2/instances/', redis('idem-busy'), key('k-running'));
    expect(busy.status).toBe(409);
  });

  it('a key longer than 255 characters is refused, naming the header', async () => {
    const res = await alice.post('/v2/instances/', redis('idem-long'), key('k'.repeat(256)));
    expect(res.status).toBe(400);
    expect(res.body.message).toContain('idempotency-key');
    expect(await names(alice)).not.toContain('idem-long');
  });

  it('a replay is not a second change in the audit log', async () => {
    const creates = async () =>
      ((await alice.get('/v2/events/?limit=1000')).body.data as { action: string }[]).filter((e) => e.action === 'instance.create').length;
    const before = await creates();
    await alice.post('/v2/instances/', redis('idem-audit'), key('k-audit'));
    await alice.post('/v2/instances/', redis('idem-audit'), key('k-audit'));
    expect(await creates()).toBe(before + 1);
  });
});
