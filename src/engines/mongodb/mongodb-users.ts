import type { MongoUserAdmin } from '../engine.js';
import type { MongoRole } from '../../domain/model.js';
import { MONGODB_ADMIN_DB, MONGODB_ADMIN_USER } from './mongodb-config.js';
import { MONGO_ERROR, mongoErrorCode, type MongoCommands, type MongoDocument } from './mongodb-commands.js';

interface UsersInfoEntry {
  readonly user: string;
  readonly db: string;
  readonly roles?: readonly { readonly role: string; readonly db: string }[];
}

const roleKey = (r: MongoRole): string => `${r.db}\0${r.role}`;

/** Whether two role lists grant the same roles (order and duplicates aside). */
export function sameRoles(a: readonly MongoRole[], b: readonly MongoRole[]): boolean {
  const ka = new Set(a.map(roleKey));
  const kb = new Set(b.map(roleKey));
  return ka.size === kb.size && [...ka].every((k) => kb.has(k));
}

const plainRoles = (roles: readonly MongoRole[]): MongoRole[] => roles.map((r) => ({ role: r.role, db: r.db }));

/**
 * The users of a MongoDB instance, administered on the instance itself with MongoDB's user
 * management commands (`usersInfo`, `createUser`, `updateUser`, `dropUser`) as hangar's admin
 * user. Every method converges, so a reconcile pass cut short and repeated does no harm: creating
 * a user that exists updates it, updating one that is gone creates it (when the password is
 * known), dropping one that is gone succeeds, and roles are sent only when they differ.
 */
export class MongoUsers implements MongoUserAdmin {
  /** `commands` gives the connection to the instance's primary (or mongos) as hangar's admin. */
  constructor(private readonly commands: () => MongoCommands) {}

  private run(database: string, command: MongoDocument): Promise<MongoDocument> {
    return this.commands().run(database, command);
  }

  /** hangar's own user must never be changed through the user API: hangar would lose the instance. */
  private assertNotAdmin(database: string, name: string): void {
    if (database === MONGODB_ADMIN_DB && name === MONGODB_ADMIN_USER) {
      throw new Error(
        `user "${MONGODB_ADMIN_USER}" of database "${MONGODB_ADMIN_DB}" is hangar's administrative user and cannot be changed; use another name`,
      );
    }
  }

  private async usersInfo(database: string, filter: MongoDocument | number): Promise<UsersInfoEntry[]> {
    const reply = await this.run(database, { usersInfo: filter });
    const users = (reply.users ?? []) as UsersInfoEntry[];
    // usersInfo: 1 lists the users defined on this database only; keep to it whatever the server sends
    return users.filter((u) => u.db === database);
  }

  async listUsers(database: string): Promise<{ name: string; roles: MongoRole[] }[]> {
    const users = await this.usersInfo(database, 1);
    return users
      .filter((u) => !(database === MONGODB_ADMIN_DB && u.user === MONGODB_ADMIN_USER))
      .map((u) => ({ name: u.user, roles: plainRoles(u.roles ?? []) }));
  }

  async createUser(database: string, name: string, password: string, roles: readonly MongoRole[]): Promise<void> {
    this.assertNotAdmin(database, name);
    try {
      await this.run(database, { createUser: name, pwd: password, roles: plainRoles(roles) });
    } catch (err) {
      if (mongoErrorCode(err) !== MONGO_ERROR.UserAlreadyExists) throw err;
      // created by a pass that did not live to record it: make it what is asked
      await this.updateUser(database, name, { password, roles });
    }
  }

  async updateUser(database: string, name: string, change: { password?: string; roles?: readonly MongoRole[] }): Promise<void> {
    this.assertNotAdmin(database, name);
    const command: MongoDocument = { updateUser: name };
    if (change.password !== undefined) command.pwd = change.password;
    if (change.roles !== undefined) {
      const [current] = await this.usersInfo(database, { user: name, db: database });
      if (current === undefined) return this.recreate(database, name, change);
      if (!sameRoles(current.roles ?? [], change.roles)) command.roles = plainRoles(change.roles);
    }
    // A password cannot be read back to compare: it is always sent when given.
    if (Object.keys(command).length === 1) return;
    try {
      await this.run(database, command);
    } catch (err) {
      if (mongoErrorCode(err) !== MONGO_ERROR.UserNotFound) throw err;
      await this.recreate(database, name, change);
    }
  }

  /** A user to update that is not there (dropped behind hangar's back): created again when its password is known. */
  private async recreate(database: string, name: string, change: { password?: string; roles?: readonly MongoRole[] }): Promise<void> {
    if (change.password === undefined) throw new Error(`user "${name}" does not exist in database "${database}"`);
    await this.run(database, { createUser: name, pwd: change.password, roles: plainRoles(change.roles ?? []) });
  }

  async dropUser(database: string, name: string): Promise<void> {
    this.assertNotAdmin(database, name);
    try {
      await this.run(database, { dropUser: name });
    } catch (err) {
      if (mongoErrorCode(err) !== MONGO_ERROR.UserNotFound) throw err;
    }
  }
}
