import { describe, expect, it } from 'vitest';
import { MONGO_ERROR, type MongoCommands, type MongoDocument } from './mongodb-commands.js';
import { MongoUsers, sameRoles } from './mongodb-users.js';

/** A server error as the driver raises it: a message and MongoDB's numeric code. */
class FakeServerError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

interface StoredUser {
  pwd: string;
  roles: { role: string; db: string }[];
}

/**
 * A fake of MongoDB's user management commands (no mongod can be installed on this machine): it
 * keeps users per database and answers usersInfo, createUser, updateUser and dropUser with the
 * replies and error codes a MongoDB server gives, recording every command sent.
 */
class FakeMongoCommands implements MongoCommands {
  readonly sent: { database: string; command: MongoDocument }[] = [];
  readonly users = new Map<string, StoredUser>();
  /** Fails the next command with this error (a dropped connection, say). */
  failNext: Error | undefined;

  private key = (db: string, user: string) => `${db}.${user}`;

  async run(database: string, command: MongoDocument): Promise<MongoDocument> {
    this.sent.push({ database, command: structuredClone(command) });
    if (this.failNext) {
      const err = this.failNext;
      this.failNext = undefined;
      throw err;
    }
    const [name] = Object.keys(command);
    const user = String(command[name!]);
    const key = this.key(database, user);
    switch (name) {
      case 'usersInfo': {
        const filter = command.usersInfo as number | { user: string; db: string };
        const entries = [...this.users].filter(([k]) =>
          typeof filter === 'number' ? k.startsWith(`${database}.`) : k === this.key(filter.db, filter.user),
        );
        return {
          ok: 1,
          users: entries.map(([k, u]) => ({ _id: k, user: k.slice(k.indexOf('.') + 1), db: k.slice(0, k.indexOf('.')), roles: u.roles })),
        };
      }
      case 'createUser':
        if (this.users.has(key)) throw new FakeServerError(MONGO_ERROR.UserAlreadyExists, `User "${user}@${database}" already exists`);
        this.users.set(key, { pwd: String(command.pwd), roles: command.roles as StoredUser['roles'] });
        return { ok: 1 };
      case 'updateUser': {
        const u = this.users.get(key);
        if (!u) throw new FakeServerError(MONGO_ERROR.UserNotFound, `Could not find user "${user}" for db "${database}"`);
        if (command.pwd !== undefined) u.pwd = String(command.pwd);
        if (command.roles !== undefined) u.roles = command.roles as StoredUser['roles'];
        return { ok: 1 };
      }
      case 'dropUser':
        if (!this.users.delete(key)) throw new FakeServerError(MONGO_ERROR.UserNotFound, `User "${user}@${database}" not found`);
        return { ok: 1 };
      default:
        throw new FakeServerError(59, `no such command: '${name}'`);
    }
  }

  /** The names of the commands sent, in order (`usersInfo`, `createUser`, ...). */
  commandNames(): string[] {
    return this.sent.map((s) => Object.keys(s.command)[0]!);
  }
}

function setup() {
  const fake = new FakeMongoCommands();
  return { fake, users: new MongoUsers(() => fake) };
}

const READ = { role: 'read', db: 'shop' };
const WRITE = { role: 'readWrite', db: 'shop' };

describe('MongoUsers', () => {
  it('creates a user with its password and roles on its database', async () => {
    const { fake, users } = setup();
    await users.createUser('shop', 'alice', 'password-1', [WRITE]);
    expect(fake.sent).toEqual([{ database: 'shop', command: { createUser: 'alice', pwd: 'password-1', roles: [WRITE] } }]);
    expect(await users.listUsers('shop')).toEqual([{ name: 'alice', roles: [WRITE] }]);
  });

  it('lists the users of one database only, with their roles', async () => {
    const { users } = setup();
    await users.createUser('shop', 'alice', 'password-1', [WRITE]);
    await users.createUser('blog', 'bob', 'password-2', [{ role: 'read', db: 'blog' }]);
    expect(await users.listUsers('shop')).toEqual([{ name: 'alice', roles: [WRITE] }]);
    expect(await users.listUsers('empty')).toEqual([]);
  });

  it("never lists, changes or drops hangar's own user", async () => {
    const { fake, users } = setup();
    fake.users.set('admin.hangar', { pwd: 'admin-secret', roles: [{ role: 'root', db: 'admin' }] });
    expect(await users.listUsers('admin')).toEqual([]);
    await expect(users.createUser('admin', 'hangar', 'password-1', [])).rejects.toThrow(/hangar's administrative user/);
    await expect(users.updateUser('admin', 'hangar', { password: 'password-1' })).rejects.toThrow(/administrative/);
    await expect(users.dropUser('admin', 'hangar')).rejects.toThrow(/administrative/);
    expect(fake.users.get('admin.hangar')?.pwd).toBe('admin-secret');
    expect(fake.commandNames()).toEqual(['usersInfo']);
  });

  it('updates a user that exists already when asked to create it (a pass repeated after a crash)', async () => {
    const { fake, users } = setup();
    await users.createUser('shop', 'alice', 'password-1', [READ]);
    fake.sent.length = 0;
    await users.createUser('shop', 'alice', 'password-2', [WRITE]);
    expect(fake.commandNames()).toEqual(['createUser', 'usersInfo', 'updateUser']);
    expect(fake.sent.at(-1)?.command).toEqual({ updateUser: 'alice', pwd: 'password-2', roles: [WRITE] });
    expect(fake.users.get('shop.alice')).toEqual({ pwd: 'password-2', roles: [WRITE] });
  });

  it('sends the roles only when they differ from those the user has', async () => {
    const { fake, users } = setup();
    await users.createUser('shop', 'alice', 'password-1', [READ, WRITE]);
    fake.sent.length = 0;
    await users.updateUser('shop', 'alice', { password: 'password-2', roles: [WRITE, READ] });
    expect(fake.sent.at(-1)?.command).toEqual({ updateUser: 'alice', pwd: 'password-2' });
    fake.sent.length = 0;
    await users.updateUser('shop', 'alice', { roles: [READ, WRITE] });
    // nothing differs: no updateUser at all
    expect(fake.commandNames()).toEqual(['usersInfo']);
    await users.updateUser('shop', 'alice', { roles: [READ] });
    expect(fake.sent.at(-1)?.command).toEqual({ updateUser: 'alice', roles: [READ] });
    expect(fake.users.get('shop.alice')).toEqual({ pwd: 'password-2', roles: [READ] });
  });

  it('replaces the roles (a sent list is the whole list)', async () => {
    const { fake, users } = setup();
    await users.createUser('shop', 'alice', 'password-1', [READ]);
    await users.updateUser('shop', 'alice', { roles: [{ role: 'dbAdmin', db: 'shop' }] });
    expect(fake.users.get('shop.alice')?.roles).toEqual([{ role: 'dbAdmin', db: 'shop' }]);
  });

  it('changes only the password when only the password is given', async () => {
    const { fake, users } = setup();
    await users.createUser('shop', 'alice', 'password-1', [READ]);
    fake.sent.length = 0;
    await users.updateUser('shop', 'alice', { password: 'password-2' });
    expect(fake.sent).toEqual([{ database: 'shop', command: { updateUser: 'alice', pwd: 'password-2' } }]);
  });

  it('creates again a user dropped behind its back when the password is known, and says so otherwise', async () => {
    const { fake, users } = setup();
    await users.updateUser('shop', 'alice', { password: 'password-1', roles: [READ] });
    expect(fake.users.get('shop.alice')).toEqual({ pwd: 'password-1', roles: [READ] });
    fake.users.clear();
    await users.updateUser('shop', 'alice', { password: 'password-2' });
    expect(fake.commandNames().slice(-2)).toEqual(['updateUser', 'createUser']);
    expect(fake.users.get('shop.alice')).toEqual({ pwd: 'password-2', roles: [] });
    fake.users.clear();
    await expect(users.updateUser('shop', 'alice', { roles: [WRITE] })).rejects.toThrow(/"alice" does not exist in database "shop"/);
  });

  it('drops a user, and succeeds when it is gone already', async () => {
    const { fake, users } = setup();
    await users.createUser('shop', 'alice', 'password-1', [READ]);
    await users.dropUser('shop', 'alice');
    expect(fake.users.size).toBe(0);
    await users.dropUser('shop', 'alice');
    expect(fake.sent.at(-1)).toEqual({ database: 'shop', command: { dropUser: 'alice' } });
  });

  it('passes on failures other than the ones it converges from', async () => {
    const { fake, users } = setup();
    fake.failNext = new Error('connection 3 to 127.0.0.1:20001 closed');
    await expect(users.createUser('shop', 'alice', 'password-1', [READ])).rejects.toThrow(/closed/);
    fake.failNext = new FakeServerError(MONGO_ERROR.Unauthorized, 'not authorized on shop to execute command');
    await expect(users.dropUser('shop', 'alice')).rejects.toThrow(/not authorized/);
    fake.failNext = new FakeServerError(MONGO_ERROR.Unauthorized, 'not authorized');
    await expect(users.listUsers('shop')).rejects.toThrow(/not authorized/);
  });
});

describe('sameRoles', () => {
  it('compares role lists as sets', () => {
    expect(sameRoles([READ, WRITE], [WRITE, READ])).toBe(true);
    expect(sameRoles([READ, READ], [READ])).toBe(true);
    expect(sameRoles([READ], [{ role: 'read', db: 'blog' }])).toBe(false);
    expect(sameRoles([], [READ])).toBe(false);
  });
});
