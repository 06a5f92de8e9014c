import { newObjectId } from '../lib/ids.js';
import type { Db } from '../store/database.js';
import { bumpInstance, getSpecVersion } from '../store/instance-repository.js';
import {
  findMongoUserId,
  insertMongoUser,
  listMongoUserRoles,
  markMongoUserDeleting,
  updateMongoUser,
} from '../store/mongodb-user-repository.js';
import { ADMIN_DB_ROLES, MONGODB_ROLES, USER_ADMIN_ROLES } from '../domain/catalog.js';
import { NO_ORIGIN, requestStep, type Caller, type Origin, type ServiceDeps } from './deps.js';
import { errors } from '../domain/errors.js';
import { type InstanceService, type Started, assertInstanceFits } from './instances.js';
import type { Operation } from '../domain/operations.js';
import type { Instance, MongoRole } from '../domain/model.js';

/**
 * hangar's own administrative user, which the engine creates as `root` on every MongoDB instance
 * (the engine's MONGODB_ADMIN_USER and MONGODB_ADMIN_DB): a client that could create, change or
 * drop it would take the instance from hangar, so it is refused before anything is recorded.
 * MongoDB users are named by user and database: `hangar` on any other database is an ordinary user.
 */
export const RESERVED_MONGODB_USER = { username: 'hangar', database: 'admin' } as const;

/** How long a user change waits for the engine before answering (it is durable either way). */
const SETTLE_MS = 5000;

export interface UserRecord {
  name: string;
  roles: { role: string; db: string }[];
}

/**
 * MongoDB database users. hangar records each user (password encrypted) as desired state; the
 * reconciler creates, updates and drops it on the engine through the runtime's driver, and
 * re-applies it whenever the engine is rebuilt.
 */
export class MongoUserService {
  private readonly step: (name: string) => void;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly instances: InstanceService,
  ) {
    this.step = requestStep(deps);
  }

  private async instance(caller: Caller, idOrName: string): Promise<Instance> {
    return assertInstanceFits(await this.instances.getByIdOrName(caller, idOrName), idOrName, 'mongodb');
  }

  async list(caller: Caller, instanceId: string, database: string): Promise<UserRecord[]> {
    const inst = await this.instance(caller, instanceId);
    assertDatabase(database);
    return listMongoUserRoles(this.deps.db, inst.id, database);
  }

  async create(
    caller: Caller,
    instanceId: string,
    database: string,
    body: { username: string; password: string; roles: readonly MongoRole[] },
    origin: Origin = NO_ORIGIN,
  ): Promise<Started<string>> {
    // the instance first: another account's answers 404 whatever the body says
    const inst = await this.instance(caller, instanceId);
    assertDatabase(database);
    assertUsername(body.username);
    assertNotReserved(database, body.username);
    assertPassword(body.password);
    const roles = assertRoles(body.roles);
    if (inst.deleting) throw errors.instanceDeleting(inst.name);
    const now = this.deps.now();
    const operation = await this.record(
      inst,
      now,
      { kind: 'user.create', caller, origin, detail: { database, username: body.username } },
      async (trx) => {
        const inserted = await insertMongoUser(trx, this.deps.keyring, {
          id: newObjectId(now),
          instanceId: inst.id,
          database,
          username: body.username,
          password: body.password,
          roles,
          now,
        });
        if (!inserted) throw errors.userExists(body.username, database);
        this.step('user-create:inserted');
      },
    );
    this.step('user-create:recorded');
    await this.apply(inst.id);
    return { result: `User "${body.username}" added to database "${database}"`, operation };
  }

  async update(
    caller: Caller,
    instanceId: string,
    database: string,
    username: string,
    body: { password?: string; roles?: readonly MongoRole[] },
    origin: Origin = NO_ORIGIN,
  ): Promise<Started<string>> {
    const inst = await this.instance(caller, instanceId);
    assertDatabase(database);
    assertNotReserved(database, username);
    if (body.password === undefined && body.roles === undefined) {
      throw errors.invalidBody('send "password", "roles" or both');
    }
    if (body.password !== undefined) assertPassword(body.password);
    const roles = body.roles === undefined ? undefined : assertRoles(body.roles);
    if (inst.deleting) throw errors.instanceDeleting(inst.name);
    const now = this.deps.now();
    const patch = { ...(body.password !== undefined ? { password: body.password } : {}), ...(roles ? { roles } : {}) };
    const operation = await this.record(inst, now, { kind: 'user.update', caller, origin, detail: { database, username } }, async (trx) => {
      const id = await findMongoUserId(trx, inst.id, database, username);
      if (!id || !(await updateMongoUser(trx, this.deps.keyring, id, patch, now))) throw errors.userNotFound(username, database);
      this.step('user-update:changed');
    });
    this.step('user-update:recorded');
    await this.apply(inst.id);
    return { result: `User "${username}" on database "${database}" updated`, operation };
  }

  async delete(
    caller: Caller,
    instanceId: string,
    database: string,
    username: string,
    origin: Origin = NO_ORIGIN,
  ): Promise<Started<string>> {
    const inst = await this.instance(caller, instanceId);
    assertDatabase(database);
    assertNotReserved(database, username);
    const now = this.deps.now();
    const operation = await this.record(
      inst,
      now,
      { kind: 'user.delete', caller, origin, detail: { database, username } },
      async (trx) => {
        const id = await findMongoUserId(trx, inst.id, database, username);
        if (!id || !(await markMongoUserDeleting(trx, id, now))) throw errors.userNotFound(username, database);
        this.step('user-delete:marked');
      },
      { allowDeleting: true },
    );
    this.step('user-delete:recorded');
    await this.apply(inst.id);
    return { result: `User "${username}" deleted from database "${database}"`, operation };
  }

  /**
   * One transaction: the operation is recorded first, then the instance's spec version is bumped
   * (in PostgreSQL that locks its row, so changes to one instance and its deletion run one after
   * the other), then `change` writes the user. A crash leaves either all or nothing.
   */
  private async record(
    inst: Instance,
    now: number,
    what: { kind: 'user.create' | 'user.update' | 'user.delete'; caller: Caller; origin: Origin; detail: Record<string, unknown> },
    change: (trx: Db) => Promise<void>,
    opts: { allowDeleting?: boolean } = {},
  ): Promise<Operation> {
    const { operations } = this.deps;
    return this.deps.db.transaction().execute(async (trx) => {
      const op = await operations.start(
        {
          kind: what.kind,
          instance: { id: inst.id, name: inst.name },
          account: what.caller.accountId,
          ...what.origin,
          detail: what.detail,
        },
        trx,
      );
      if (!(await bumpInstance(trx, inst.id, {}, now, { notDeleting: !opts.allowDeleting }))) {
        throw opts.allowDeleting ? errors.notAMongodbInstance(inst.id) : errors.instanceDeleting(inst.name);
      }
      await change(trx);
      await operations.setTarget(trx, op.id, await getSpecVersion(trx, inst.id));
      return op;
    });
  }

  private async apply(instanceId: string): Promise<void> {
    const settled = this.deps.work.settle(instanceId, SETTLE_MS);
    this.deps.work.enqueue(instanceId);
    await settled;
  }
}

// MongoDB's own limits: database names without /\. "$*<>:|? and under 64 bytes.
function assertDatabase(db: string): void {
  if (!/^[^/\\. "$*<>:|?\x00]{1,63}$/.test(db)) {
    throw errors.invalidValue('database_name', 'the database name must be 1 to 63 characters without / \\ . space " $ * < > : | ?');
  }
}

function assertUsername(name: string): void {
  if (!/^[^\x00-\x1f\x7f]{1,128}$/.test(name)) {
    throw errors.invalidValue('username', '"username" must be 1 to 128 characters without control characters');
  }
}

function assertNotReserved(database: string, username: string): void {
  const { username: name, database: db } = RESERVED_MONGODB_USER;
  if (database === db && username === name) {
    throw errors.invalidValue(
      'username',
      `user "${name}" of database "${db}" is hangar's own administrative user and cannot be created, changed or deleted; use another name or database`,
    );
  }
}

function assertPassword(pw: string): void {
  if (pw.length < 8 || pw.length > 256) throw errors.invalidValue('password', '"password" must be 8 to 256 characters');
}

function assertRoles(roles: readonly MongoRole[]): MongoRole[] {
  const out: MongoRole[] = [];
  roles.forEach((r, i) => {
    if (!(MONGODB_ROLES as readonly string[]).includes(r.role)) {
      throw errors.invalidValue(`roles[${i}].role`, `"roles[${i}].role" ${JSON.stringify(r.role)} is not a role`, MONGODB_ROLES);
    }
    assertDatabase(r.db);
    if (ADMIN_DB_ROLES.includes(r.role) && r.db !== 'admin') {
      throw errors.invalidValue(`roles[${i}].db`, `"roles[${i}].db": role ${r.role} is granted on the "admin" database only`);
    }
    if (USER_ADMIN_ROLES.includes(r.role) && r.db === 'admin') {
      throw errors.invalidValue(
        `roles[${i}].db`,
        `"roles[${i}].db": role ${r.role} is not granted on the "admin" database: it administers the users of admin, hangar's own among them`,
      );
    }
    if (!out.some((o) => o.role === r.role && o.db === r.db)) out.push({ role: r.role, db: r.db });
  });
  return out;
}
