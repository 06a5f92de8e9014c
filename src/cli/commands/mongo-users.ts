import { MONGODB_ROLES } from '../../domain/catalog.js';
import type { MongoRole } from '../../client/index.js';
import {
  REMOTE_OPTIONS,
  type ClientCommand,
  type ClientContext,
  type OptionSpec,
  type Values,
  list,
  need,
  str,
} from '../client-command.js';
import { type Io, UsageError, json } from '../io.js';
import { table } from '../table.js';

/** The API's fields of a MongoDB user, as these commands name them. */
const MONGO_USER_FIELDS = {
  username: 'USERNAME',
  password: 'the password',
  database_name: '--db',
  'roles[].role': '--role',
  'roles[].db': '--role',
};
const DB: OptionSpec = { type: 'string', value: 'DATABASE', description: 'the database the users belong to' };
const ROLE: OptionSpec = {
  type: 'string',
  multiple: true,
  value: 'ROLE[@DB]',
  description: 'a role, on --db unless @DB says otherwise',
  choices: MONGODB_ROLES,
};
const PASSWORD_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  password: {
    type: 'string',
    value: 'PASSWORD',
    description: 'the password (visible to other users of this machine: prefer --password-stdin or the prompt)',
  },
  'password-stdin': { type: 'boolean', description: 'read the password from stdin' },
};

/** `readWrite` -> {readWrite, db}; `read@reports` -> {read, reports}. */
function roles(values: string[], db: string): MongoRole[] {
  return values.map((v) => {
    const [role, on] = v.split('@');
    if (!role) throw new UsageError(`--role "${v}": expected ROLE or ROLE@DATABASE`);
    return { role, db: on || db };
  });
}

async function password(io: Io, opts: Values, required: boolean): Promise<string | undefined> {
  if (opts['password-stdin'] === true) {
    if (!io.readStdin) throw new UsageError('--password-stdin: no stdin to read');
    return (await io.readStdin()).replace(/\r?\n$/, '');
  }
  const given = str(opts.password);
  if (given !== undefined || !required) return given;
  if (io.inIsTty && io.prompt) {
    const pw = await io.prompt('Password for the new user: ', { secret: true });
    if (pw) return pw;
  }
  throw new UsageError('give a password: --password-stdin, --password, or run in a terminal to be asked');
}

async function ls(ctx: ClientContext): Promise<void> {
  const db = need(ctx.opts.db, 'db');
  const users = await ctx.connection().client.listMongoUsers(ctx.args[0]!, db);
  if (ctx.opts.json === true) ctx.io.out(json(users));
  else if (users.length === 0) ctx.io.out(`No users in database "${db}".`);
  else
    ctx.io.out(
      table(
        ['USER', 'ROLES'],
        users.map((u) => [u.name, u.roles.map((r) => (r.db === db ? r.role : `${r.role}@${r.db}`)).join(', ')]),
      ),
    );
}

async function add(ctx: ClientContext): Promise<void> {
  const [instance, username] = ctx.args as [string, string];
  const db = need(ctx.opts.db, 'db');
  const pw = (await password(ctx.io, ctx.opts, true))!;
  const message = await ctx
    .connection()
    .client.createMongoUser(instance, db, { username, password: pw, roles: roles(list(ctx.opts.role), db) });
  ctx.io.out(ctx.opts.json === true ? json({ instance, database: db, username, message }) : message);
}

async function set(ctx: ClientContext): Promise<void> {
  const [instance, username] = ctx.args as [string, string];
  const db = need(ctx.opts.db, 'db');
  const pw = await password(ctx.io, ctx.opts, false);
  const given = list(ctx.opts.role);
  if (pw === undefined && given.length === 0 && ctx.opts['no-roles'] !== true)
    throw new UsageError('give a new password, --role, or --no-roles');
  const change = {
    ...(pw !== undefined ? { password: pw } : {}),
    ...(given.length > 0 || ctx.opts['no-roles'] === true ? { roles: roles(given, db) } : {}),
  };
  const message = await ctx.connection().client.updateMongoUser(instance, db, username, change);
  ctx.io.out(ctx.opts.json === true ? json({ instance, database: db, username, message }) : message);
}

async function rm(ctx: ClientContext): Promise<void> {
  const [instance, username] = ctx.args as [string, string];
  const db = need(ctx.opts.db, 'db');
  const message = await ctx.connection().client.deleteMongoUser(instance, db, username);
  ctx.io.out(ctx.opts.json === true ? json({ instance, database: db, username, message }) : message);
}

const INSTANCE_HELP = 'INSTANCE is the instance name or id.';

export const mongoUserCommands: readonly ClientCommand[] = [
  {
    kind: 'client',
    name: 'mongo users ls',
    summary: 'List the users of a MongoDB database',
    args: ['INSTANCE'],
    remote: true,
    options: { ...REMOTE_OPTIONS, db: DB },
    examples: ['hangar mongo users ls docs --db app'],
    details: INSTANCE_HELP,
    run: ls,
  },
  {
    kind: 'client',
    name: 'mongo users add',
    fields: MONGO_USER_FIELDS,
    summary: 'Add a user to a MongoDB database',
    args: ['INSTANCE', 'USERNAME'],
    remote: true,
    options: { ...REMOTE_OPTIONS, db: DB, role: ROLE, ...PASSWORD_OPTIONS },
    examples: [
      'hangar mongo users add docs app-user --db app --role readWrite',
      'printf %s "$PW" | hangar mongo users add docs report --db app --role read --role read@reports --password-stdin',
    ],
    details: `${INSTANCE_HELP} In a terminal the password is asked for when not given. Roles: ${MONGODB_ROLES.join(', ')}.`,
    run: add,
  },
  {
    kind: 'client',
    name: 'mongo users set',
    fields: MONGO_USER_FIELDS,
    summary: "Change a user's password and/or roles (given roles replace the old ones)",
    args: ['INSTANCE', 'USERNAME'],
    remote: true,
    options: {
      ...REMOTE_OPTIONS,
      db: DB,
      role: ROLE,
      'no-roles': { type: 'boolean', description: 'take every role away' },
      ...PASSWORD_OPTIONS,
    },
    examples: [
      'hangar mongo users set docs app-user --db app --role read',
      'hangar mongo users set docs app-user --db app --password-stdin < new-password.txt',
    ],
    details: INSTANCE_HELP,
    run: set,
  },
  {
    kind: 'client',
    name: 'mongo users rm',
    summary: 'Drop a user from a MongoDB database',
    args: ['INSTANCE', 'USERNAME'],
    remote: true,
    options: { ...REMOTE_OPTIONS, db: DB },
    examples: ['hangar mongo users rm docs app-user --db app'],
    details: INSTANCE_HELP,
    run: rm,
  },
];
