import { PostgresAdapter, sql } from 'kysely';
import type { Keyring } from '../lib/secrets.js';
import type { InstanceType, Service } from '../domain/catalog.js';
import { errors } from '../domain/errors.js';
import type { Instance, InstancePatch, InstanceProgress, InstanceState, NewInstance, PortMap } from '../domain/model.js';
import { aclValues, type NewAcl } from './acl-repository.js';
import { reusableQuery, type Db, type InstanceRow, type InstanceRowUpdate, type NewInstanceRow } from './database.js';
import { isUniqueViolation } from './errors.js';

/** The one row -> domain mapping of instances; secrets are decrypted here. */
export function toInstance(row: InstanceRow, keyring: Keyring): Instance {
  return {
    id: row.id,
    accountId: row.account_id,
    login: row.login,
    name: row.name,
    namePrior: row.name_prior,
    service: row.service as Service,
    engine: row.engine,
    type: row.type as InstanceType,
    version: row.version,
    zone: row.zone,
    plan: row.plan,
    desiredPlan: row.desired_plan,
    encrypted: row.encrypted === 1,
    storageEngine: row.storage_engine,
    apiKey: keyring.decrypt(row.api_key_enc),
    password: row.password_enc === null ? null : keyring.decrypt(row.password_enc),
    adminSecret: keyring.decrypt(row.admin_secret_enc),
    state: row.state as InstanceState,
    stateReason: row.state_reason,
    deleting: row.deleting === 1,
    specVersion: row.spec_version,
    observedVersion: row.observed_version,
    buildId: row.build_id,
    ports: JSON.parse(row.ports) as PortMap,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    transitionAt: row.transition_at,
    address: row.address ?? null,
    passwordPrior: row.password_prior_enc == null ? null : keyring.decrypt(row.password_prior_enc),
    passwordRotationEndsAt: row.password_rotation_ends_at == null ? null : Number(row.password_rotation_ends_at),
  };
}

/** The row of a new instance: REQUESTED, spec version 1, its secrets sealed. */
function newInstanceRow(inst: NewInstance, keyring: Keyring): NewInstanceRow & InstanceRow {
  return {
    id: inst.id,
    account_id: inst.accountId,
    login: inst.login,
    name: inst.name,
    name_prior: null,
    service: inst.service,
    engine: inst.engine,
    type: inst.type,
    version: inst.version,
    zone: inst.zone,
    plan: inst.plan,
    desired_plan: inst.plan,
    encrypted: inst.encrypted ? 1 : 0,
    storage_engine: inst.storageEngine,
    api_key_enc: keyring.encrypt(inst.apiKey),
    password_enc: inst.password === null ? null : keyring.encrypt(inst.password),
    admin_secret_enc: keyring.encrypt(inst.adminSecret),
    state: 'REQUESTED',
    state_reason: null,
    deleting: 0,
    spec_version: 1,
    observed_version: 0,
    build_id: inst.buildId,
    ports: JSON.stringify(inst.ports),
    created_at: inst.createdAt,
    updated_at: inst.createdAt,
    transition_at: inst.createdAt,
    lease_owner: null,
    lease_expires_at: null,
    address: null,
    password_prior_enc: null,
    password_rotation_ends_at: null,
    case_duplicate: 0,
  };
}

/** The columns of a patch. */
function patchRow(patch: InstancePatch): InstanceRowUpdate {
  const row: InstanceRowUpdate = {};
  if (patch.state !== undefined) row.state = patch.state;
  if (patch.stateReason !== undefined) row.state_reason = patch.stateReason;
  if (patch.plan !== undefined) row.plan = patch.plan;
  if (patch.desiredPlan !== undefined) row.desired_plan = patch.desiredPlan;
  if (patch.deleting !== undefined) row.deleting = patch.deleting ? 1 : 0;
  if (patch.observedVersion !== undefined) row.observed_version = patch.observedVersion;
  if (patch.updatedAt !== undefined) row.updated_at = patch.updatedAt;
  if (patch.transitionAt !== undefined) row.transition_at = patch.transitionAt;
  if (patch.address !== undefined) row.address = patch.address;
  return row;
}

/**
 * Records a new instance (REQUESTED) with its ports and ACLs, its secrets sealed: a name already
 * used in the account is a 409, and so is an account at `maxInstances`; a port another create
 * took meanwhile is a PortRaceError (pick again). Returns the instance as recorded.
 */
export async function createInstance(
  db: Db,
  keyring: Keyring,
  inst: NewInstance,
  hostId: string,
  acls: readonly NewAcl[],
  opts: { maxInstances?: number; guard?: (trx: Db) => Promise<void>; before?: (trx: Db) => Promise<void> } = {},
): Promise<Instance> {
  const row = newInstanceRow(inst, keyring);
  await insertInstanceRow(db, row, hostId, acls, opts.maxInstances, opts.guard, opts.before);
  return {
    ...inst,
    namePrior: null,
    desiredPlan: inst.plan,
    state: 'REQUESTED',
    stateReason: null,
    deleting: false,
    specVersion: 1,
    observedVersion: 0,
    updatedAt: inst.createdAt,
    transitionAt: inst.createdAt,
    address: null,
    passwordPrior: null,
    passwordRotationEndsAt: null,
  };
}

/**
 * Inserts an instance row with its ports and ACLs at once; a name already used in the account is a
 * 409, and so is an account at `maxInstances` (counted under a lock of the account's row, so
 * that creates at once cannot pass the quota together), and whatever `guard` refuses.
 */
export async function insertInstanceRow(
  db: Db,
  row: NewInstanceRow,
  hostId: string,
  acls: readonly NewAcl[],
  maxInstances?: number,
  /** Checks (capacity) and rows recorded with the instance (a restore), in the transaction before the insert; what it throws leaves nothing recorded. */
  guard?: (trx: Db) => Promise<void>,
  /** The transaction's first write (the operation that follows the create); undone with it. */
  before?: (trx: Db) => Promise<void>,
): Promise<void> {
  const ports = JSON.parse(row.ports) as PortMap;
  try {
    await db.transaction().execute(async (trx) => {
      await before?.(trx);
      if (maxInstances !== undefined) {
        // PostgreSQL: creates of one account wait for each other here. SQLite runs one write
        // transaction at a time anyway (and has no FOR UPDATE).
        if (trx.getExecutor().adapter instanceof PostgresAdapter) {
          await trx.selectFrom('accounts').select('id').where('id', '=', row.account_id).forUpdate().execute();
        }
        if ((await countInstances(trx, row.account_id)) >= maxInstances) throw errors.quotaExceeded('instances per account', maxInstances);
      }
      await guard?.(trx);
      await trx.insertInto('instances').values(row).execute();
      const entries = Object.entries(ports);
      if (entries.length > 0) {
        await trx
          .insertInto('ports')
          .values(entries.map(([role, port]) => ({ host_id: hostId, port, instance_id: row.id, role })))
          .execute();
      }
      if (acls.length > 0) await trx.insertInto('acls').values(acls.map(aclValues)).execute();
    });
  } catch (err) {
    if (isUniqueViolation(err)) {
      const holder = await findNameHolder(db, row.account_id, row.name);
      if (holder !== undefined) throw errors.nameTaken(row.name, holder);
      throw new PortRaceError();
    }
    throw err;
  }
}

/** Two creates picked the same port at once; the caller picks again. */
export class PortRaceError extends Error {
  override name = 'PortRaceError';
}

export function findInstanceRowByName(db: Db, accountId: string, name: string) {
  return db.selectFrom('instances').selectAll().where('account_id', '=', accountId).where('name', '=', name).executeTakeFirst();
}

export function findInstanceRowById(db: Db, id: string) {
  return db.selectFrom('instances').selectAll().where('id', '=', id).executeTakeFirst();
}

export function listInstanceRows(db: Db, accountId: string) {
  return db.selectFrom('instances').selectAll().where('account_id', '=', accountId).orderBy('created_at').orderBy('id').execute();
}

/** An instance by id, secrets unsealed; undefined when there is none. */
export async function findInstanceById(db: Db, keyring: Keyring, id: string): Promise<Instance | undefined> {
  const row = await findInstanceRowById(db, id);
  return row && toInstance(row, keyring);
}

/** An account's instance by name, secrets unsealed; undefined when there is none. */
export async function findInstanceByName(db: Db, keyring: Keyring, accountId: string, name: string): Promise<Instance | undefined> {
  const row = await findInstanceRowByName(db, accountId, name);
  return row && toInstance(row, keyring);
}

/** What an owner check needs of an instance: no secret is read. */
export interface OwnedInstance {
  readonly id: string;
  readonly name: string;
  readonly service: string;
}

/**
 * The account's instance named `name`, or (with `byId`) whose id is `name`, checked before its
 * name; undefined when the account has none (another account's instance is none).
 */
export async function findOwnedInstance(
  db: Db,
  accountId: string,
  name: string,
  opts: { byId?: boolean } = {},
): Promise<OwnedInstance | undefined> {
  const q = db.selectFrom('instances').select(['id', 'name', 'service']).where('account_id', '=', accountId);
  if (opts.byId) {
    const byId = await q.where('id', '=', name).executeTakeFirst();
    if (byId) return byId;
  }
  return q.where('name', '=', name).executeTakeFirst();
}

/** An account's instances, oldest first, secrets unsealed. */
export async function listInstances(db: Db, keyring: Keyring, accountId: string): Promise<Instance[]> {
  return (await listInstanceRows(db, accountId)).map((r) => toInstance(r, keyring));
}

/** Whether the account has an instance called `name`. */
/**
 * The name, as stored, of an instance of the account that holds `name` in any case (`MyCache`
 * holds `mycache`), other than `exceptId`; undefined when the name is free. Names are unique in
 * an account regardless of case (the store's index says so too).
 */
export async function findNameHolder(db: Db, accountId: string, name: string, exceptId?: string): Promise<string | undefined> {
  let q = db
    .selectFrom('instances')
    .select('name')
    .where('account_id', '=', accountId)
    .where(sql<string>`lower(name)`, '=', sql<string>`lower(${name})`);
  if (exceptId !== undefined) q = q.where('id', '!=', exceptId);
  // the oldest first: of names shared before the rule (case_duplicate), the one that holds it
  const row = await q.orderBy('case_duplicate').orderBy('created_at').executeTakeFirst();
  return row?.name;
}

/** Where an instance's pending work stands (no secret is read); undefined when there is none. */
export async function findInstanceProgress(db: Db, id: string): Promise<InstanceProgress | undefined> {
  const r = await db
    .selectFrom('instances')
    .select(['account_id', 'state', 'spec_version', 'observed_version', 'lease_owner'])
    .where('id', '=', id)
    .executeTakeFirst();
  return (
    r && {
      accountId: r.account_id,
      state: r.state as InstanceState,
      specVersion: r.spec_version,
      observedVersion: r.observed_version,
      leaseOwner: r.lease_owner,
    }
  );
}

/** Where an instance stands, as operations judge it (no secret is read). */
export interface InstanceStatus {
  readonly id: string;
  readonly name: string;
  readonly state: InstanceState;
  readonly stateReason: string | null;
  readonly deleting: boolean;
  readonly specVersion: number;
  readonly observedVersion: number;
  readonly plan: number;
  readonly desiredPlan: number;
}

/** The status of each of these instances that exists. */
export async function findInstanceStatuses(db: Db, ids: readonly string[]): Promise<Map<string, InstanceStatus>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('instances')
    .select(['id', 'name', 'state', 'state_reason', 'deleting', 'spec_version', 'observed_version', 'plan', 'desired_plan'])
    .where('id', 'in', ids)
    .execute();
  return new Map(
    rows.map((r) => [
      r.id,
      {
        id: r.id,
        name: r.name,
        state: r.state as InstanceState,
        stateReason: r.state_reason,
        deleting: r.deleting === 1,
        specVersion: r.spec_version,
        observedVersion: r.observed_version,
        plan: r.plan,
        desiredPlan: r.desired_plan,
      },
    ]),
  );
}

/** The name and owner's login of each of these instances that exists (no secret is read). */
export async function findInstanceNames(db: Db, ids: readonly string[]): Promise<Map<string, { name: string; login: string }>> {
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('instances').select(['id', 'name', 'login']).where('id', 'in', ids).execute();
  return new Map(rows.map((r) => [r.id, { name: r.name, login: r.login }]));
}

/** The spec version of an instance as this transaction sees it (right after its own change). */
export async function getSpecVersion(db: Db, id: string): Promise<number> {
  const r = await db.selectFrom('instances').select('spec_version').where('id', '=', id).executeTakeFirstOrThrow();
  return Number(r.spec_version);
}

/**
 * The account's instance-records version: it moves whenever one of its instances is created,
 * deleted, or changes a field its record shows. 0 for an account that never had an instance.
 */
/** Read on every GET of instance records: built once (see reusableQuery). */
const listVersionQuery = reusableQuery((db) => db.selectFrom('instance_list_versions').select('version').where('account_id', '=', '?'));

export async function getInstanceListVersion(db: Db, accountId: string): Promise<number> {
  const [r] = await listVersionQuery(db, [accountId]);
  return r ? Number(r.version) : 0;
}

export async function countInstances(db: Db, accountId: string): Promise<number> {
  const r = await db
    .selectFrom('instances')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Ids of instances whose desired state has not been carried out yet. */
export async function listPendingInstanceIds(db: Db): Promise<string[]> {
  const rows = await db.selectFrom('instances').select('id').whereRef('observed_version', '<', 'spec_version').execute();
  return rows.map((r) => r.id);
}

export async function listAllInstanceIds(db: Db): Promise<string[]> {
  const rows = await db.selectFrom('instances').select('id').execute();
  return rows.map((r) => r.id);
}

/**
 * Updates an instance if it still is at `specVersion` (when given): the store's optimistic
 * check that keeps a reconcile pass from overwriting a newer request. True when a row changed.
 */
export async function updateInstance(
  db: Db,
  id: string,
  patch: InstancePatch,
  where: { specVersion?: number; states?: readonly string[]; notDeleting?: boolean } = {},
): Promise<boolean> {
  let q = db.updateTable('instances').set(patchRow(patch)).where('id', '=', id);
  if (where.specVersion !== undefined) q = q.where('spec_version', '=', where.specVersion);
  if (where.states) q = q.where('state', 'in', where.states);
  if (where.notDeleting) q = q.where('deleting', '=', 0);
  const r = await q.executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Records a new desired state: bumps the spec version with the change. */
export async function bumpInstance(
  db: Db,
  id: string,
  patch: InstancePatch,
  now: number,
  where: { states?: readonly string[]; notDeleting?: boolean } = {},
): Promise<boolean> {
  let q = db
    .updateTable('instances')
    .set((eb) => ({ ...patchRow(patch), spec_version: eb('spec_version', '+', 1), updated_at: now }))
    .where('id', '=', id);
  if (where.states) q = q.where('state', 'in', where.states);
  if (where.notDeleting) q = q.where('deleting', '=', 0);
  const r = await q.executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/**
 * Starts a rotation of the instance password: `password` becomes the password (the record
 * shows it), the current one stays accepted until `endsAt`. Bumps the spec version (the
 * reconciler applies it). False when a rotation is in progress or the instance is being deleted.
 */
export async function startInstanceRotation(
  db: Db,
  keyring: Keyring,
  inst: Instance,
  password: string,
  endsAt: number,
  now: number,
): Promise<boolean> {
  if (inst.password === null) return false;
  const r = await db
    .updateTable('instances')
    .set((eb) => ({
      password_enc: keyring.encrypt(password),
      password_prior_enc: keyring.encrypt(inst.password!),
      password_rotation_ends_at: endsAt,
      spec_version: eb('spec_version', '+', 1),
      updated_at: now,
    }))
    .where('id', '=', inst.id)
    .where('deleting', '=', 0)
    .where('password_prior_enc', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/**
 * Retires the password a rotation replaced: at once (`finish`, bumping the spec version), or
 * when its grace period is over at `dueAt` (a reconcile pass, which applies it itself). False
 * when there was nothing to retire.
 */
export async function endInstanceRotation(db: Db, id: string, now: number, opts: { dueAt?: number } = {}): Promise<boolean> {
  let q = db
    .updateTable('instances')
    .set((eb) => ({
      password_prior_enc: null,
      password_rotation_ends_at: null,
      ...(opts.dueAt === undefined ? { spec_version: eb('spec_version', '+', 1), updated_at: now } : {}),
    }))
    .where('id', '=', id)
    .where('password_prior_enc', 'is not', null);
  if (opts.dueAt !== undefined) q = q.where('password_rotation_ends_at', '<=', opts.dueAt);
  const r = await q.executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/**
 * Renames, if the instance is still called `from` and not being deleted (so that of two
 * renames at once, one wins and the other finds no instance of that name); a name taken in the
 * account, in any case, by another instance is a 409. A change of case alone is a rename too.
 */
export async function renameInstance(db: Db, accountId: string, id: string, from: string, to: string, now: number): Promise<boolean> {
  // Read first, so that the 409 names the instance holding the name as it is stored: after a
  // unique violation PostgreSQL reads nothing more in this transaction.
  const holder = await findNameHolder(db, accountId, to, id);
  if (holder !== undefined) throw errors.nameTaken(to, holder);
  try {
    const r = await db
      .updateTable('instances')
      // A name shared but for case before names were unique regardless of case is under the rule once renamed.
      .set((eb) => ({ name: to, name_prior: from, spec_version: eb('spec_version', '+', 1), updated_at: now, case_duplicate: 0 }))
      .where('id', '=', id)
      .where('name', '=', from)
      .where('deleting', '=', 0)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  } catch (err) {
    // another request took the name since it was read
    if (isUniqueViolation(err)) throw errors.nameTaken(to);
    throw err;
  }
}

/** Removes the instance and, by cascade, its ports, ACLs and users. */
export async function deleteInstanceRow(db: Db, id: string): Promise<void> {
  await db.deleteFrom('instances').where('id', '=', id).execute();
}

/**
 * Claims the right to run a reconcile pass on the instance until `now + ttlMs`, unless another
 * replica holds a live claim. True when this owner holds it.
 */
export async function claimInstance(db: Db, id: string, owner: string, now: number, ttlMs: number): Promise<boolean> {
  const r = await db
    .updateTable('instances')
    .set({ lease_owner: owner, lease_expires_at: now + ttlMs })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('lease_owner', 'is', null), eb('lease_owner', '=', owner), eb('lease_expires_at', '<', now)]))
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Takes the claim of an instance over from `from`, a replica known to be dead; true when it did. */
export async function takeInstanceClaim(db: Db, id: string, from: string, owner: string, now: number, ttlMs: number): Promise<boolean> {
  const r = await db
    .updateTable('instances')
    .set({ lease_owner: owner, lease_expires_at: now + ttlMs })
    .where('id', '=', id)
    .where('lease_owner', '=', from)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export async function releaseInstance(db: Db, id: string, owner: string): Promise<void> {
  await db
    .updateTable('instances')
    .set({ lease_owner: null, lease_expires_at: null })
    .where('id', '=', id)
    .where('lease_owner', '=', owner)
    .execute();
}

/** Every port in use on a host. */
/** The ports of `hostId` held in the store from `from` to `to` (both included). */
export async function listUsedPortsBetween(db: Db, hostId: string, from: number, to: number): Promise<Set<number>> {
  const rows = await db
    .selectFrom('ports')
    .select('port')
    .where('host_id', '=', hostId)
    .where('port', '>=', from)
    .where('port', '<=', to)
    .execute();
  return new Set(rows.map((r) => r.port));
}

export async function listUsedPorts(db: Db, hostId: string): Promise<Set<number>> {
  const rows = await db.selectFrom('ports').select('port').where('host_id', '=', hostId).execute();
  return new Set(rows.map((r) => r.port));
}

/**
 * Moves one named port of an instance to another port (an engine port taken by a stranger).
 * The new port is another create's already: a 409 from the port table, which the caller
 * answers by picking again (PortRaceError).
 */
export async function replacePort(db: Db, hostId: string, instanceId: string, role: string, port: number): Promise<void> {
  try {
    await movePort(db, hostId, instanceId, role, port);
  } catch (err) {
    if (isUniqueViolation(err)) throw new PortRaceError();
    throw err;
  }
}

async function movePort(db: Db, hostId: string, instanceId: string, role: string, port: number): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx.deleteFrom('ports').where('instance_id', '=', instanceId).where('role', '=', role).execute();
    await trx.insertInto('ports').values({ host_id: hostId, port, instance_id: instanceId, role }).execute();
    const row = await trx.selectFrom('instances').select('ports').where('id', '=', instanceId).executeTakeFirstOrThrow();
    const ports = { ...(JSON.parse(row.ports) as PortMap), [role]: port };
    await trx
      .updateTable('instances')
      .set({ ports: JSON.stringify(ports) })
      .where('id', '=', instanceId)
      .execute();
  });
}

/** Instances by service and state, for /metrics. */
export async function countInstancesByServiceAndState(db: Db): Promise<{ service: string; state: string; count: number }[]> {
  const rows = await db
    .selectFrom('instances')
    .select((eb) => ['service', 'state', eb.fn.countAll<number | string | bigint>().as('n')])
    .groupBy(['service', 'state'])
    .execute();
  return rows.map((r) => ({ service: r.service, state: r.state, count: Number(r.n) }));
}

/** Instances of `zones` alike in what they promise, counted: a zone's allocation read as a few grouped rows. */
export interface PlacementGroup {
  readonly zone: string;
  readonly service: Service;
  readonly engine: string;
  readonly type: InstanceType;
  readonly plan: number;
  readonly desiredPlan: number;
  readonly count: number;
}

/**
 * The instances (of `zones`, when given; deleting ones too: they hold their memory until gone), grouped by zone, service, engine, type and plans and
 * counted (an aggregate in the store: a few rows whatever the number of instances); `except`
 * leaves one instance out (a resize counts only what it adds).
 */
export async function countPlacements(db: Db, zones?: readonly string[], except?: string): Promise<PlacementGroup[]> {
  if (zones !== undefined && zones.length === 0) return [];
  let q = db
    .selectFrom('instances')
    .select((eb) => ['zone', 'service', 'engine', 'type', 'plan', 'desired_plan', eb.fn.countAll<number>().as('n')])
    .groupBy(['zone', 'service', 'engine', 'type', 'plan', 'desired_plan']);
  if (zones !== undefined) q = q.where('zone', 'in', zones);
  if (except !== undefined) q = q.where('id', '!=', except);
  const rows = await q.execute();
  return rows.map((r) => ({
    zone: r.zone,
    service: r.service as Service,
    engine: r.engine,
    type: r.type as InstanceType,
    plan: r.plan,
    desiredPlan: r.desired_plan,
    count: Number(r.n),
  }));
}

/**
 * Serializes placements (creates and resizes) until the end of the transaction, so that the
 * capacity read and the placement recorded after it cannot interleave with another's. SQLite runs
 * one transaction at a time already.
 */
export async function lockPlacements(trx: Db): Promise<void> {
  if (trx.getExecutor().adapter instanceof PostgresAdapter) await sql`select pg_advisory_xact_lock(${PLACEMENT_LOCK})`.execute(trx);
}

/** The advisory lock key of placements ("hangar" in ASCII). */
const PLACEMENT_LOCK = 0x68616e676172;
