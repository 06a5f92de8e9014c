import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { newObjectId } from '../../src/lib/ids.js';
import { Keyring, newKey } from '../../src/lib/secrets.js';
import { AccountService } from '../../src/service/accounts.js';
import { HangarError } from '../../src/domain/errors.js';
import { findLiveToken, insertAccount, insertToken, purgeDeadTokens, revokeToken } from '../../src/store/account-repository.js';
import { insertAcl, listAcls, markAclDeleting, purgeDeletedAcls } from '../../src/store/acl-repository.js';
import { openStore, type InstanceRow, type Store } from '../../src/store/database.js';
import { isStoreUnavailable } from '../../src/store/errors.js';
import {
  PortRaceError,
  bumpInstance,
  claimInstance,
  deleteInstanceRow,
  findInstanceRowById,
  getInstanceListVersion,
  insertInstanceRow,
  listPendingInstanceIds,
  listUsedPorts,
  releaseInstance,
  renameInstance,
  replacePort,
  updateInstance,
} from '../../src/store/instance-repository.js';
import { acquireLease, findLease } from '../../src/store/lease-repository.js';
import { appendEvent } from '../../src/store/event-repository.js';
import { fanOutEvents, insertWebhook, listDeliveries } from '../../src/store/webhook-repository.js';
import { deleteMongoUserRow, findMongoUserId, insertMongoUser, markMongoUserDeleting } from '../../src/store/mongodb-user-repository.js';
import { MIGRATION_NAMES, migrateTo, migrateToLatest } from '../../src/store/migrations/index.js';
import { DIALECTS, freshPostgres } from '../helpers/database.js';

const HOST = 'host-a';
const NOW = 1_790_000_000_123; // a 2026 epoch in ms: larger than 2^31, as every stored time

/** A place for a store: a temp data dir (SQLite) or a fresh PostgreSQL database. */
async function location(dialect: string): Promise<{ dataDir: string; databaseUrl: string | undefined; drop(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'hangar-store-'));
  const pg = dialect === 'postgres' ? await freshPostgres() : undefined;
  return {
    dataDir,
    databaseUrl: pg?.url,
    async drop() {
      await pg?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

function instanceRow(accountId: string, name: string, ports: Record<string, number>, extra: Partial<InstanceRow> = {}): InstanceRow {
  return {
    id: newObjectId(),
    account_id: accountId,
    login: `${accountId}@example.com`,
    name,
    name_prior: null,
    service: 'redis',
    engine: 'redis',
    type: 'redis_ha_instance',
    version: '7.0.15',
    zone: 'US-Dallas',
    plan: 500,
    desired_plan: 500,
    encrypted: 0,
    storage_engine: null,
    api_key_enc: 'enc',
    password_enc: 'enc',
    admin_secret_enc: 'enc',
    state: 'REQUESTED',
    state_reason: null,
    deleting: 0,
    spec_version: 1,
    observed_version: 0,
    build_id: 'b',
    ports: JSON.stringify(ports),
    created_at: NOW,
    updated_at: NOW,
    transition_at: NOW,
    lease_owner: null,
    lease_expires_at: null,
    address: null,
    password_prior_enc: null,
    password_rotation_ends_at: null,
    case_duplicate: 0,
    ...extra,
  };
}

const acl = (instanceId: string, cidrMask: string, flags: { transport?: boolean; kibana?: boolean } = {}) => ({
  id: newObjectId(),
  instanceId,
  accountId: 'acc-1',
  cidrMask,
  description: 'd',
  transport: flags.transport ?? false,
  kibana: flags.kibana ?? false,
  createdAt: NOW,
});

const keyring = new Keyring([newKey()]);
const user = (instanceId: string, username: string) => ({
  id: newObjectId(),
  instanceId,
  database: 'app',
  username,
  password: 'a-user-password',
  roles: [{ role: 'read', db: 'app' }],
  now: NOW,
});

describe.each(DIALECTS)('store on %s', (dialect) => {
  let loc: Awaited<ReturnType<typeof location>>;
  let store: Store;

  // One store per dialect, emptied before each test (a new PostgreSQL database per test is slow).
  beforeAll(async () => {
    loc = await location(dialect);
    store = await openStore(loc);
  });
  afterAll(async () => {
    await store.close();
    await loc.drop();
  });
  beforeEach(async () => {
    for (const t of ['mongodb_users', 'acls', 'ports', 'instances', 'tokens', 'api_keys', 'accounts', 'leases'] as const)
      await store.db.deleteFrom(t).execute();
    for (const id of ['acc-1', 'acc-2'])
      await insertAccount(store.db, { id, login: `${id}@example.com`, passwordHash: 'h', createdAt: NOW });
  });

  it("webhooks: the events after a store's first webhook are all fanned out, however late the dispatcher first looks", async () => {
    const fresh = await location(dialect);
    const s = await openStore(fresh);
    try {
      await insertAccount(s.db, { id: 'acc-1', login: 'acc-1@example.com', passwordHash: 'h', createdAt: NOW });
      const hook = {
        id: newObjectId(),
        accountId: 'acc-1',
        url: 'https://hooks.example.com/h',
        kinds: ['*'],
        description: '',
        secret: 'whsec_x',
        createdAt: NOW,
      };
      expect(await insertWebhook(s.db, keyring, hook, 20)).toBe(true);
      const event = { accountId: 'acc-1', instanceId: null, instanceName: null, operationId: null, data: {}, createdAt: NOW };
      await s.db.transaction().execute(async (trx) => {
        await appendEvent(trx, { ...event, kind: 'operation.created' });
        await appendEvent(trx, { ...event, kind: 'operation.succeeded' });
      });
      // the dispatcher's first look at this store comes only now, after both events
      expect(await fanOutEvents(s.db, (e) => JSON.stringify(e), NOW, 200)).toBe(2);
      expect((await listDeliveries(s.db, hook.id, { limit: 10 })).map((d) => d.eventKind)).toEqual([
        'operation.succeeded',
        'operation.created',
      ]);
    } finally {
      await s.close();
      await fresh.drop();
    }
  });

  describe('migrations', () => {
    it('running them again, in-process or by another start, changes nothing and keeps the data', async () => {
      const migrations = async () =>
        (await sql<{ name: string }>`select name from kysely_migration order by name`.execute(store.db)).rows.map((r) => r.name);
      const applied = await migrations();
      expect(applied).toEqual([...MIGRATION_NAMES].sort());
      expect(applied).toContain('2026-11-21T0900-initial');
      await migrateToLatest(store.db);
      const again = await openStore(loc);
      await again.close();
      expect(await migrations()).toEqual(applied);
      expect((await store.db.selectFrom('accounts').select('id').orderBy('id').execute()).map((r) => r.id)).toEqual(['acc-1', 'acc-2']);
    });

    it('two starts migrating one new store at once both succeed', async () => {
      const other = await location(dialect);
      try {
        const [s1, s2] = await Promise.all([openStore(other), openStore(other)]);
        const rows = (await sql<{ name: string }>`select name from kysely_migration`.execute(s1.db)).rows;
        expect(rows).toHaveLength(MIGRATION_NAMES.length);
        await s1.close();
        await s2.close();
      } finally {
        await other.drop();
      }
    });
  });

  it('counts the statements it sends: a read is one, a transaction its statements and BEGIN and COMMIT', async () => {
    const before = store.statements();
    await store.db.selectFrom('accounts').select('id').execute();
    expect(store.statements() - before).toBe(1);
    await store.db.transaction().execute(async (trx) => {
      await trx.selectFrom('accounts').select('id').execute();
      await trx.selectFrom('instances').select('id').execute();
    });
    expect(store.statements() - before).toBe(1 + 4);
  });

  it('times are epoch milliseconds and come back as the same numbers', async () => {
    const row = instanceRow('acc-1', 'times', { public: 20001 });
    await insertInstanceRow(store.db, row, HOST, []);
    const back = await findInstanceRowById(store.db, row.id);
    expect(back?.created_at).toBe(NOW);
    expect(typeof back?.created_at).toBe('number');
    expect(back).toEqual(row);
  });

  describe('instances', () => {
    it('a name taken in the account is a 409 NAME_TAKEN; nothing of the refused one is kept', async () => {
      await insertInstanceRow(store.db, instanceRow('acc-1', 'same', { public: 20001 }), HOST, []);
      const dup = instanceRow('acc-1', 'same', { public: 20002 });
      const err = await insertInstanceRow(store.db, dup, HOST, [acl(dup.id, '10.0.0.1')]).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(HangarError);
      expect(err).toMatchObject({ status: 409, code: 'NAME_TAKEN' });
      expect(await findInstanceRowById(store.db, dup.id)).toBeUndefined();
      expect([...(await listUsedPorts(store.db, HOST))]).toEqual([20001]);
      expect(await listAcls(store.db, dup.id, true)).toEqual([]);
    });

    it('the same name in another account is another instance', async () => {
      await insertInstanceRow(store.db, instanceRow('acc-1', 'same', { public: 20001 }), HOST, []);
      await insertInstanceRow(store.db, instanceRow('acc-2', 'same', { public: 20002 }), HOST, []);
      expect((await listUsedPorts(store.db, HOST)).size).toBe(2);
    });

    it('a port used on the host is a PortRaceError (the caller picks again); on another host it is free', async () => {
      await insertInstanceRow(store.db, instanceRow('acc-1', 'one', { public: 20001 }), HOST, []);
      const clash = instanceRow('acc-1', 'two', { public: 20001 });
      await expect(insertInstanceRow(store.db, clash, HOST, [])).rejects.toBeInstanceOf(PortRaceError);
      expect(await findInstanceRowById(store.db, clash.id)).toBeUndefined();
      await insertInstanceRow(store.db, clash, 'host-b', []);
    });

    it('a rename to a taken name is a 409 NAME_TAKEN and changes nothing', async () => {
      const a = instanceRow('acc-1', 'a', { public: 20001 });
      await insertInstanceRow(store.db, a, HOST, []);
      await insertInstanceRow(store.db, instanceRow('acc-1', 'b', { public: 20002 }), HOST, []);
      await expect(renameInstance(store.db, a.account_id, a.id, 'a', 'b', NOW + 1)).rejects.toMatchObject({
        status: 409,
        code: 'NAME_TAKEN',
      });
      expect(await findInstanceRowById(store.db, a.id)).toMatchObject({ name: 'a', name_prior: null, spec_version: 1 });
      expect(await renameInstance(store.db, a.account_id, a.id, 'a', 'c', NOW + 1)).toBe(true);
      expect(await findInstanceRowById(store.db, a.id)).toMatchObject({ name: 'c', name_prior: 'a', spec_version: 2 });
    });

    it('deleting the row takes its ports, ACLs and users with it', async () => {
      const row = instanceRow('acc-1', 'gone', { public: 20001, servicenet: 20002 });
      await insertInstanceRow(store.db, row, HOST, [acl(row.id, '10.0.0.1')]);
      await insertMongoUser(store.db, keyring, user(row.id, 'u'));
      await deleteInstanceRow(store.db, row.id);
      expect(await findInstanceRowById(store.db, row.id)).toBeUndefined();
      expect((await listUsedPorts(store.db, HOST)).size).toBe(0);
      expect(await store.db.selectFrom('acls').select('id').execute()).toEqual([]);
      expect(await store.db.selectFrom('mongodb_users').select('id').execute()).toEqual([]);
    });

    it('a change bumps the spec version; a pass writes only at the version it read', async () => {
      const row = instanceRow('acc-1', 'v', { public: 20001 });
      await insertInstanceRow(store.db, row, HOST, []);
      expect(await listPendingInstanceIds(store.db)).toEqual([row.id]);
      expect(await updateInstance(store.db, row.id, { state: 'ACTIVE', observedVersion: 1 }, { specVersion: 1 })).toBe(true);
      expect(await listPendingInstanceIds(store.db)).toEqual([]);
      expect(
        await bumpInstance(store.db, row.id, { desiredPlan: 1000, state: 'RESIZING' }, NOW + 1, { states: ['ACTIVE', 'COMPLETED'] }),
      ).toBe(true);
      expect(await listPendingInstanceIds(store.db)).toEqual([row.id]);
      // a pass that read version 1 cannot overwrite the newer request
      expect(await updateInstance(store.db, row.id, { state: 'ACTIVE', observedVersion: 1 }, { specVersion: 1 })).toBe(false);
      expect(await findInstanceRowById(store.db, row.id)).toMatchObject({ state: 'RESIZING', desired_plan: 1000, spec_version: 2 });
      // a second resize from a state that is not ready changes nothing
      expect(await bumpInstance(store.db, row.id, { desiredPlan: 2500 }, NOW + 2, { states: ['ACTIVE', 'COMPLETED'] })).toBe(false);
      expect(await bumpInstance(store.db, row.id, { deleting: true, state: 'DELETING' }, NOW + 3, { notDeleting: true })).toBe(true);
      expect(await bumpInstance(store.db, row.id, { deleting: true, state: 'DELETING' }, NOW + 4, { notDeleting: true })).toBe(false);
      expect(await findInstanceRowById(store.db, row.id)).toMatchObject({ desired_plan: 1000, spec_version: 3, deleting: 1 });
    });

    it('one replica at a time holds the claim of an instance, until it expires', async () => {
      const row = instanceRow('acc-1', 'claimed', { public: 20001 });
      await insertInstanceRow(store.db, row, HOST, []);
      expect(await claimInstance(store.db, row.id, 'r1', NOW, 6000)).toBe(true);
      expect(await claimInstance(store.db, row.id, 'r2', NOW + 1000, 6000)).toBe(false);
      expect(await claimInstance(store.db, row.id, 'r1', NOW + 2000, 6000)).toBe(true);
      expect(await claimInstance(store.db, row.id, 'r2', NOW + 7000, 6000)).toBe(false);
      expect(await claimInstance(store.db, row.id, 'r2', NOW + 8001, 6000)).toBe(true);
      await releaseInstance(store.db, row.id, 'r1');
      expect(await claimInstance(store.db, row.id, 'r1', NOW + 9000, 6000)).toBe(false);
      await releaseInstance(store.db, row.id, 'r2');
      expect(await claimInstance(store.db, row.id, 'r1', NOW + 9000, 6000)).toBe(true);
    });

    it("the account's records version moves with every change its records show, whoever writes it, and only then", async () => {
      const version = () => getInstanceListVersion(store.db, 'acc-1');
      const other = () => getInstanceListVersion(store.db, 'acc-2');
      const seen: number[] = [await version()];
      const moved = async () => {
        const v = await version();
        expect(v).not.toBe(seen.at(-1));
        seen.push(v);
      };
      const stayed = async () => expect(await version()).toBe(seen.at(-1));
      const before = await other();
      const row = instanceRow('acc-1', 'shown', { public: 20001 });
      await insertInstanceRow(store.db, row, HOST, []);
      await moved();
      await updateInstance(store.db, row.id, { state: 'BUILDING', updatedAt: NOW + 1 });
      await moved();
      await renameInstance(store.db, row.account_id, row.id, 'shown', 'renamed', NOW + 2);
      await moved();
      await replacePort(store.db, HOST, row.id, 'public', 20002);
      await moved();
      // leases and bookkeeping are not part of a record
      await claimInstance(store.db, row.id, 'r1', NOW, 6000);
      await releaseInstance(store.db, row.id, 'r1');
      await updateInstance(store.db, row.id, { observedVersion: 1 });
      await stayed();
      await deleteInstanceRow(store.db, row.id);
      await moved();
      expect(await other()).toBe(before);
    });

    it('the records version read while a transaction is open is the committed one, and moves once it commits (never a version rolled back)', async () => {
      const row = instanceRow('acc-1', 'pending', { public: 20011 });
      await insertInstanceRow(store.db, row, HOST, []);
      const committed = await getInstanceListVersion(store.db, 'acc-1');
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let changed!: () => void;
      const inside = new Promise<void>((r) => (changed = r));
      const trx = store.db.transaction().execute(async (t) => {
        await t.updateTable('instances').set({ state: 'BUILDING' }).where('id', '=', row.id).execute();
        changed();
        await held;
        throw new Error('rolled back');
      });
      await inside;
      const during = getInstanceListVersion(store.db, 'acc-1');
      release();
      await expect(trx).rejects.toThrow('rolled back');
      expect(await during).toBe(committed);
      expect(await getInstanceListVersion(store.db, 'acc-1')).toBe(committed);
      await updateInstance(store.db, row.id, { state: 'BUILDING', updatedAt: NOW + 1 });
      expect(await getInstanceListVersion(store.db, 'acc-1')).toBeGreaterThan(committed);
    });
  });

  describe('instance names, unique in an account regardless of case', () => {
    it('a second name that differs only in case is a 409 naming the first as stored; another account may use it', async () => {
      await insertInstanceRow(store.db, instanceRow('acc-1', 'MyCache', { public: 20001 }), HOST, []);
      await expect(insertInstanceRow(store.db, instanceRow('acc-1', 'mycache', { public: 20002 }), HOST, [])).rejects.toMatchObject({
        status: 409,
        code: 'NAME_TAKEN',
        message:
          'an instance named "MyCache" already exists in this account, and names are unique regardless of case: "mycache" cannot be used',
      });
      await insertInstanceRow(store.db, instanceRow('acc-2', 'mycache', { public: 20003 }), HOST, []);
    });

    it('a rename to a name taken in another case is a 409; a change of case alone is a rename', async () => {
      const a = instanceRow('acc-1', 'a', { public: 20001 });
      await insertInstanceRow(store.db, a, HOST, []);
      await insertInstanceRow(store.db, instanceRow('acc-1', 'Sessions', { public: 20002 }), HOST, []);
      await expect(renameInstance(store.db, a.account_id, a.id, 'a', 'SESSIONS', NOW + 1)).rejects.toMatchObject({
        status: 409,
        message: expect.stringContaining('"Sessions"'),
      });
      expect(await renameInstance(store.db, a.account_id, a.id, 'a', 'A', NOW + 1)).toBe(true);
      expect(await findInstanceRowById(store.db, a.id)).toMatchObject({ name: 'A', name_prior: 'a' });
    });

    it("the index is the store's own: a row written past the repository is refused too", async () => {
      await insertInstanceRow(store.db, instanceRow('acc-1', 'Raw', { public: 20001 }), HOST, []);
      await expect(
        store.db
          .insertInto('instances')
          .values(instanceRow('acc-1', 'RAW', { public: 20002 }))
          .execute(),
      ).rejects.toThrow();
    });

    it('the migration keeps names shared but for case from before: the oldest holds the name, the others join the rule when renamed', async () => {
      const other = await location(dialect);
      const s = await openStore(other);
      try {
        // the schema just before the migration under test
        await migrateTo(s.db, MIGRATION_NAMES[MIGRATION_NAMES.indexOf('2026-12-07T1200-instance-names-any-case') - 1]!);
        for (const id of ['acc-1', 'acc-2']) {
          await s.db
            .insertInto('accounts')
            .values({ id, login: `${id}@example.com`, password_hash: 'x', created_at: NOW })
            .execute();
        }
        const rows = [
          instanceRow('acc-1', 'Dup', { public: 20001 }, { created_at: NOW }),
          instanceRow('acc-1', 'dup', { public: 20002 }, { created_at: NOW + 1 }),
          instanceRow('acc-1', 'DUP', { public: 20003 }, { created_at: NOW + 2 }),
          instanceRow('acc-2', 'dup', { public: 20004 }, { created_at: NOW + 3 }),
        ];
        for (const { case_duplicate: _, ...row } of rows) await s.db.insertInto('instances').values(row).execute();
        await migrateToLatest(s.db);
        const flags = await s.db.selectFrom('instances').select(['account_id', 'name', 'case_duplicate']).orderBy('created_at').execute();
        expect(flags.map((r) => [r.account_id, r.name, r.case_duplicate])).toEqual([
          ['acc-1', 'Dup', 0],
          ['acc-1', 'dup', 1],
          ['acc-1', 'DUP', 1],
          ['acc-2', 'dup', 0],
        ]);
        // the name stays held, by the oldest
        await expect(insertInstanceRow(s.db, instanceRow('acc-1', 'dUp', { public: 20005 }), HOST, [])).rejects.toMatchObject({
          status: 409,
          message: expect.stringContaining('an instance named "Dup" already exists'),
        });
        // renamed, a marked instance is under the rule
        expect(await renameInstance(s.db, 'acc-1', rows[1]!.id, 'dup', 'dup-2', NOW + 10)).toBe(true);
        expect(await findInstanceRowById(s.db, rows[1]!.id)).toMatchObject({ name: 'dup-2', case_duplicate: 0 });
        await expect(renameInstance(s.db, 'acc-1', rows[2]!.id, 'DUP', 'DUP-2', NOW + 11)).rejects.toMatchObject({
          status: 409,
          message: expect.stringContaining('"dup-2"'),
        });
      } finally {
        await s.close();
        await other.drop();
      }
    });
  });

  describe('ACLs', () => {
    it('the same rule twice on an instance is refused; other flags or another instance are other rules', async () => {
      const row = instanceRow('acc-1', 'e', { public: 20001 });
      const other = instanceRow('acc-1', 'f', { public: 20002 });
      await insertInstanceRow(store.db, row, HOST, []);
      await insertInstanceRow(store.db, other, HOST, []);
      expect(await insertAcl(store.db, acl(row.id, '10.0.0.0/8'))).toBe(true);
      expect(await insertAcl(store.db, acl(row.id, '10.0.0.0/8'))).toBe(false);
      expect(await insertAcl(store.db, acl(row.id, '10.0.0.0/8', { transport: true }))).toBe(true);
      expect(await insertAcl(store.db, acl(other.id, '10.0.0.0/8'))).toBe(true);
      expect((await listAcls(store.db, row.id)).map((a) => [a.cidrMask, a.transport])).toEqual([
        ['10.0.0.0/8', false],
        ['10.0.0.0/8', true],
      ]);
    });

    it('a rule being removed is hidden, still blocks its twin until purged, then frees it', async () => {
      const row = instanceRow('acc-1', 'g', { public: 20001 });
      await insertInstanceRow(store.db, row, HOST, []);
      const a = acl(row.id, '10.0.0.1');
      await insertAcl(store.db, a);
      expect(await markAclDeleting(store.db, row.id, a.id)).toBe(true);
      expect(await markAclDeleting(store.db, row.id, a.id)).toBe(false);
      expect(await listAcls(store.db, row.id)).toEqual([]);
      expect((await listAcls(store.db, row.id, true)).map((x) => x.deleting)).toEqual([true]);
      expect(await insertAcl(store.db, acl(row.id, '10.0.0.1'))).toBe(false);
      await purgeDeletedAcls(store.db, row.id, [a.id]);
      expect(await insertAcl(store.db, acl(row.id, '10.0.0.1'))).toBe(true);
    });
  });

  describe('MongoDB users', () => {
    it('a user that exists, or is still being dropped, cannot be added again; once dropped it can', async () => {
      const row = instanceRow('acc-1', 'm', { public: 20001 }, { service: 'mongodb', type: 'mongodb_singledb' });
      await insertInstanceRow(store.db, row, HOST, []);
      const u = user(row.id, 'u');
      expect(await insertMongoUser(store.db, keyring, u)).toBe(true);
      expect(await insertMongoUser(store.db, keyring, user(row.id, 'u'))).toBe(false);
      expect(await insertMongoUser(store.db, keyring, { ...user(row.id, 'u'), database: 'other' })).toBe(true);
      expect(await markMongoUserDeleting(store.db, u.id, NOW)).toBe(true);
      expect(await findMongoUserId(store.db, row.id, 'app', 'u')).toBeUndefined();
      expect(await insertMongoUser(store.db, keyring, user(row.id, 'u'))).toBe(false);
      await deleteMongoUserRow(store.db, u.id);
      expect(await insertMongoUser(store.db, keyring, user(row.id, 'u'))).toBe(true);
    });
  });

  describe('accounts and tokens', () => {
    it('a login taken is a 409 LOGIN_TAKEN', async () => {
      const svc = new AccountService(store.db, { tokenTtlSeconds: 60, now: () => NOW });
      await svc.createAccount('ops@example.com', 'long-enough-password');
      await expect(svc.createAccount('ops@example.com', 'another-long-password')).rejects.toMatchObject({
        status: 409,
        code: 'LOGIN_TAKEN',
      });
      expect(await svc.ensureAccount('ops@example.com', 'whatever-password')).toBe(false);
    });

    it('a token is live until it expires or is revoked; dead ones are purged after a day', async () => {
      await insertToken(store.db, { id: 't1', accountId: 'acc-1', tokenHash: 'h1', createdAt: NOW, expiresAt: NOW + 1000 });
      await insertToken(store.db, { id: 't2', accountId: 'acc-1', tokenHash: 'h2', createdAt: NOW, expiresAt: NOW + 1000 });
      expect(await findLiveToken(store.db, 'h1', NOW + 999)).toMatchObject({
        account_id: 'acc-1',
        login: 'acc-1@example.com',
        expires_at: NOW + 1000,
      });
      expect(await findLiveToken(store.db, 'h1', NOW + 1000)).toBeUndefined();
      await revokeToken(store.db, 'h2', NOW + 500);
      expect(await findLiveToken(store.db, 'h2', NOW + 501)).toBeUndefined();
      expect(await findLiveToken(store.db, 'h2', NOW + 499)).toBeUndefined();
      await purgeDeadTokens(store.db, NOW + 500 + 86_400_000);
      expect((await store.db.selectFrom('tokens').select('id').orderBy('id').execute()).map((r) => r.id)).toEqual(['t1', 't2']);
      await purgeDeadTokens(store.db, NOW + 501 + 86_400_000);
      expect((await store.db.selectFrom('tokens').select('id').execute()).map((r) => r.id)).toEqual(['t1']);
      await purgeDeadTokens(store.db, NOW + 1001 + 86_400_000);
      expect(await store.db.selectFrom('tokens').select('id').execute()).toEqual([]);
    });
  });

  it('a token revoked by another replica (or an operator command) is refused within 5 s; revoked through this one, at once', async () => {
    let now = NOW;
    const here = new AccountService(store.db, { tokenTtlSeconds: 3600, now: () => now });
    const elsewhere = new AccountService(store.db, { tokenTtlSeconds: 3600, now: () => now });
    await here.createAccount('revoke@example.com', 'long-enough-password');
    const caller = (await here.verifyBasic('revoke@example.com', 'long-enough-password'))!;
    const a = (await here.issueToken(caller)).token;
    const b = (await here.issueToken(caller)).token;
    expect(await here.verifyToken(a)).toBeDefined();
    expect(await here.verifyToken(b)).toBeDefined();
    expect(here.cachedTokenCaller(a)).toBeDefined();
    // elsewhere: this replica's cache still takes it until its 5 s are up, then never again
    await elsewhere.revokeAllTokens('revoke@example.com');
    now += 4999;
    expect(here.cachedTokenCaller(a)).toBeDefined();
    now += 2;
    expect(here.cachedTokenCaller(a)).toBeUndefined();
    expect(await here.verifyToken(a)).toBeUndefined();
    // here: at once
    const c = (await here.issueToken(caller)).token;
    const cVerified = (await here.verifyToken(c))!;
    await here.revokeToken(cVerified.tokenHash!);
    expect(here.cachedTokenCaller(c)).toBeUndefined();
    expect(await here.verifyToken(c)).toBeUndefined();
  });

  it('logins drop tokens dead for more than a day (at most once an hour), and record when a key pair was used', async () => {
    let now = NOW;
    const svc = new AccountService(store.db, { tokenTtlSeconds: 60, now: () => now });
    await svc.createAccount('keys@example.com', 'long-enough-password');
    const { user_key: userKey, pass_key: passKey } = await svc.createApiKey('keys@example.com');
    expect((await svc.listApiKeys('keys@example.com'))[0]!.last_used_at).toBeNull();
    const caller = await svc.verifyBasic(userKey, passKey);
    expect(caller?.login).toBe('keys@example.com');
    expect((await svc.listApiKeys('keys@example.com'))[0]!.last_used_at).toBe(NOW);
    await svc.issueToken(caller!);
    const count = async () =>
      Number(
        (
          await store.db
            .selectFrom('tokens')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    expect(await count()).toBe(1);
    now = NOW + 60_000 + 86_400_000 + 1; // the first token is dead for more than a day
    await svc.issueToken(caller!);
    expect(await count()).toBe(1);
    // one more dead token, within the hour of that purge: it stays until the next hour
    await insertToken(store.db, { id: 'dead', accountId: caller!.accountId, tokenHash: 'dead', createdAt: NOW, expiresAt: NOW });
    now += 60_000;
    await svc.issueToken(caller!);
    expect(await count()).toBe(3);
    now += 3_600_000;
    await svc.issueToken(caller!);
    expect(await count()).toBe(3);
    expect(await store.db.selectFrom('tokens').select('id').where('id', '=', 'dead').execute()).toEqual([]);
  });

  it('a lease has one owner at a time, renewable by it, free once expired', async () => {
    expect(await acquireLease(store.db, 'runtime:x', 'r1', NOW, 6000)).toBe(true);
    expect(await acquireLease(store.db, 'runtime:x', 'r2', NOW + 1, 6000)).toBe(false);
    expect(await acquireLease(store.db, 'runtime:x', 'r1', NOW + 5000, 6000)).toBe(true);
    expect(await acquireLease(store.db, 'runtime:x', 'r2', NOW + 10_000, 6000)).toBe(false);
    expect(await acquireLease(store.db, 'runtime:x', 'r2', NOW + 11_001, 6000)).toBe(true);
    expect(await findLease(store.db, 'runtime:x')).toEqual({ name: 'runtime:x', owner: 'r2', expires_at: NOW + 17_001 });
    // two replicas racing for a free lease: exactly one wins
    const results = await Promise.all([
      acquireLease(store.db, 'runtime:y', 'r1', NOW, 6000),
      acquireLease(store.db, 'runtime:y', 'r2', NOW, 6000),
    ]);
    expect(results.filter(Boolean)).toHaveLength(1);
  });
});

describe('store on sqlite: its settings', () => {
  it('WAL with synchronous NORMAL, checkpointed every 10,000 pages rather than every 1,000', async () => {
    const loc = await location('sqlite');
    const store = await openStore(loc);
    try {
      const pragma = async (name: string) => Object.values((await sql.raw(`pragma ${name}`).execute(store.db)).rows[0] as object)[0];
      expect(await pragma('journal_mode')).toBe('wal');
      expect(await pragma('synchronous')).toBe(1);
      expect(await pragma('wal_autocheckpoint')).toBe(10_000);
    } finally {
      await store.close();
      await loc.drop();
    }
  });
});

describe.runIf(DIALECTS.includes('postgres'))('store on postgres: a connection the server ends', () => {
  it('while a transaction holds it between two queries: that transaction fails, hangar does not crash, the next query gets a new connection', async () => {
    const loc = await location('postgres');
    const store = await openStore(loc);
    const admin = new pg.Client({ connectionString: process.env.HANGAR_TEST_DATABASE_URL });
    await admin.connect();
    try {
      let ended!: () => void;
      const serverEnded = new Promise<void>((r) => (ended = r));
      const tx = store.db.transaction().execute(async (trx) => {
        const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
        // the server ends this connection while it is checked out and idle (as a PostgreSQL
        // that stops or restarts does): the connection's 'error' event has no query to go to
        await admin.query('select pg_terminate_backend($1)', [rows[0]!.pid]);
        await new Promise((r) => setTimeout(r, 300));
        ended();
        await sql`select 1`.execute(trx);
      });
      await serverEnded;
      await expect(tx).rejects.toThrow();
      // an unhandled 'error' event would have ended this process (the test run) by now
      const { rows } = await sql<{ one: number }>`select 1 as one`.execute(store.db);
      expect(rows[0]!.one).toBe(1);
    } finally {
      await admin.end();
      await store.close();
      await loc.drop();
    }
  });
});

describe.runIf(DIALECTS.includes('postgres'))('store on postgres: waiting for a pooled connection', () => {
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it('a request waits past 5 s for a connection while the store answers the work that holds them (a busy hangar is not a store down)', async () => {
    const loc = await location('postgres');
    const store = await openStore({ ...loc, poolSize: 1 });
    try {
      // the one connection is taken by a transaction that the store keeps answering, for 6.5 s
      const holding = store.db.transaction().execute(async (trx) => {
        const until = Date.now() + 6500;
        while (Date.now() < until) {
          await sql`select 1`.execute(trx);
          await sleep(200);
        }
      });
      await sleep(50);
      const t0 = Date.now();
      const { rows } = await sql<{ two: number }>`select 2 as two`.execute(store.db);
      const waited = Date.now() - t0;
      expect(rows[0]!.two).toBe(2);
      expect(waited).toBeGreaterThan(5000);
      await holding;
    } finally {
      await store.close();
      await loc.drop();
    }
  }, 20_000);

  it('a request waiting for a connection gives up after 5 s when no query was answered meanwhile, as "store unavailable"', async () => {
    const loc = await location('postgres');
    const store = await openStore({ ...loc, poolSize: 1 });
    try {
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      // the one connection is held, and nothing is asked of the store, for longer than 5 s
      const holding = store.db.transaction().execute(async (trx) => {
        await sql`select 1`.execute(trx);
        await released;
      });
      await sleep(50);
      const t0 = Date.now();
      const failure = await sql`select 2`.execute(store.db).then(
        () => undefined,
        (err: unknown) => err,
      );
      const waited = Date.now() - t0;
      release();
      await holding;
      expect(isStoreUnavailable(failure), String(failure)).toBe(true);
      expect(waited).toBeGreaterThanOrEqual(4900);
      // not the 30 s a store that answers gets (the margin is for a busy machine)
      expect(waited).toBeLessThan(10_000);
      // and the pool serves again once the connection is back
      const { rows } = await sql<{ three: number }>`select 3 as three`.execute(store.db);
      expect(rows[0]!.three).toBe(3);
    } finally {
      await store.close();
      await loc.drop();
    }
  }, 20_000);
});
