import type { MongoRole } from '../../domain/model.js';
import type { MongoUserAdmin } from '../engine.js';

/**
 * The users of a FerretDB instance: MongoDB's user commands, with no roles. FerretDB 1.x refuses
 * any `roles` but `[]` ("support for field roles with non-default value is not implemented yet")
 * and enforces none (every user may read and write every database), so the server gets `roles:
 * []`; the roles a client asked for are hangar's record only (the user API returns them as sent).
 * A change of roles alone therefore changes nothing on the server.
 */
export class FerretdbUsers implements MongoUserAdmin {
  constructor(private readonly commands: MongoUserAdmin) {}

  /** The users of a database; FerretDB reports every user with no roles. */
  listUsers(database: string): Promise<{ name: string; roles: MongoRole[] }[]> {
    return this.commands.listUsers(database);
  }

  createUser(database: string, name: string, password: string, _roles: readonly MongoRole[]): Promise<void> {
    return this.commands.createUser(database, name, password, []);
  }

  updateUser(database: string, name: string, change: { password?: string; roles?: readonly MongoRole[] }): Promise<void> {
    return this.commands.updateUser(database, name, {
      ...(change.password !== undefined ? { password: change.password } : {}),
      ...(change.roles !== undefined ? { roles: [] } : {}),
    });
  }

  dropUser(database: string, name: string): Promise<void> {
    return this.commands.dropUser(database, name);
  }
}
