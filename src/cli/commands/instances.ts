import { hostname } from 'node:os';
import type { CreateInstanceRequest, Instance } from '../../client/index.js';
import { INSTANCE_TYPES, PLANS, SERVICES, STORAGE_ENGINES, ZONES, isService } from '../../domain/catalog.js';
import {
  REMOTE_OPTIONS,
  WAIT_OPTIONS,
  type ClientCommand,
  type ClientContext,
  followOperation,
  list,
  myAddress,
  need,
  str,
  waitGone,
  waitReady,
} from '../client-command.js';
import { UsageError, json } from '../io.js';
import { fields, table } from '../table.js';

/** The addresses to connect to, as one line per kind. */
export function connectionLines(inst: Instance): [string, string | undefined][] {
  const cs = inst.connection_strings;
  return [
    ['connect string', inst.connect_string],
    ['public', inst.public_connect_string],
    ['servicenet', inst.servicenet_connect_string],
    ['tls connect string', inst.ssl_connect_string],
    ['http', cs?.public.http],
    ['https', cs?.public.https],
    ['kibana', cs?.public.kibana_https],
    ['transport', cs?.public.transport],
  ];
}

export function showInstance(inst: Instance): string {
  return fields([
    ['name', inst.name],
    ['id', inst.id],
    ['service', inst.service],
    ['type', inst.type],
    ['plan', inst.service === 'redis' ? `${inst.plan} MB` : inst.plan],
    ['version', inst.version],
    ['zone', inst.zone],
    ['state', inst.state],
    ['reason', inst.state_reason],
    ['created', `${inst.created} UTC`],
    ...connectionLines(inst),
    ['password', inst.password],
    ['encrypted', inst.encrypted],
  ]);
}

async function ls(ctx: ClientContext): Promise<void> {
  const all = await ctx.connection().client.listInstances();
  if (ctx.opts.quiet === true) {
    if (all.length > 0) ctx.io.out(all.map((i) => i.name).join('\n'));
    return;
  }
  if (ctx.opts.json === true) {
    ctx.io.out(json(all));
    return;
  }
  if (all.length === 0) {
    ctx.io.out('No instances. Create one: hangar instances create NAME --service redis --version VERSION --zone ZONE');
    return;
  }
  ctx.io.out(
    table(
      ['NAME', 'SERVICE', 'TYPE', 'PLAN', 'VERSION', 'ZONE', 'STATE', 'CREATED'],
      all.map((i) => [i.name, i.service, i.type, i.plan, i.version, i.zone, i.state, i.created]),
    ),
  );
}

async function create(ctx: ClientContext): Promise<void> {
  const { opts, io } = ctx;
  const name = ctx.args[0]!;
  const service = need(opts.service, 'service', SERVICES.join(', '));
  if (!isService(service)) throw new UsageError(`--service must be one of ${SERVICES.join(', ')}`);
  const types = INSTANCE_TYPES[service];
  const type = str(opts.type) ?? (types.length === 1 ? types[0] : undefined);
  if (!type) throw new UsageError(`--type is required for ${service}: ${types.join(', ')}`);
  const planRaw = str(opts.plan) ?? String(PLANS[service][0]);
  const plan = Number(planRaw);
  if (!Number.isInteger(plan)) throw new UsageError(`--plan must be an integer (${service}: ${PLANS[service].join(', ')})`);
  const version = need(opts.version, 'version', 'hangar lists the versions it offers when one is wrong');
  const zone = need(opts.zone, 'zone', `${service}: ${ZONES[service].join(', ')}`);
  const { url, client } = ctx.connection();
  const cidrs = list(opts.acl);
  if (opts['my-ip'] === true) cidrs.push(await myAddress(url));
  const body: CreateInstanceRequest = {
    name,
    service,
    type,
    plan,
    version,
    zone,
    ...(opts.encryption === true ? { encryption: true } : {}),
    ...(str(opts['storage-engine']) ? { storage_engine: str(opts['storage-engine'])! } : {}),
    ...(cidrs.length > 0
      ? { acls: cidrs.map((cidr_mask) => ({ cidr_mask, description: `hangar instances create on ${hostname()}` })) }
      : {}),
    ...(str(opts['restore-from']) ? { restore_from: str(opts['restore-from'])! } : {}),
  };
  let operation: string | undefined;
  const created = await client.createInstance(body, {
    onOperation: (id) => (operation = id),
    onWarning: (w) => io.err(`hangar: warning: ${w}`),
  });
  if (opts['no-wait'] === true) {
    if (opts.json === true) io.out(json(created));
    else
      io.out(
        `Instance "${name}" is ${created.state}; follow it with: hangar instances show ${name}${operation ? ` (or hangar operations wait ${operation})` : ''}`,
      );
    return;
  }
  // A hangar without operations (an older one) is polled instead.
  const ready = operation ? (await followOperation(client, io, name, operation, opts, 'ready'))! : await waitReady(client, io, name, opts);
  io.out(opts.json === true ? json(ready) : showInstance(ready));
}

async function show(ctx: ClientContext): Promise<void> {
  const inst = await ctx.connection().client.getInstance(ctx.args[0]!);
  ctx.io.out(ctx.opts.json === true ? json(inst) : showInstance(inst));
}

async function rotatePassword(ctx: ClientContext): Promise<void> {
  const name = ctx.args[0]!;
  const { client } = ctx.connection();
  if (ctx.opts.finish === true) {
    const retired = await client.finishInstancePasswordRotation(name);
    ctx.io.out(
      ctx.opts.json === true
        ? json({ retired })
        : retired
          ? `The old password of ${name} no longer works.`
          : `No rotation of ${name} was in progress.`,
    );
    return;
  }
  const r = await client.rotateInstancePassword(name);
  if (ctx.opts.json === true) ctx.io.out(json(r));
  else {
    ctx.io.err(
      `New password of ${name} (the record shows it); the old one works until ${r.previous_valid_until} (or: hangar instances rotate-password ${name} --finish):`,
    );
    ctx.io.out(r.password);
  }
}

async function rename(ctx: ClientContext): Promise<void> {
  const [name, newName] = ctx.args as [string, string];
  const message = await ctx.connection().client.renameInstance(name, newName);
  ctx.io.out(ctx.opts.json === true ? json({ name: newName, message }) : message);
}

async function rm(ctx: ClientContext): Promise<void> {
  const { opts, io } = ctx;
  const name = ctx.args[0]!;
  if (opts.yes !== true) {
    if (!io.inIsTty || !io.prompt) throw new UsageError(`deleting "${name}" destroys its data: confirm with --yes`);
    const answer = await io.prompt(`Delete instance "${name}" and all its data? Type its name to confirm: `);
    if (answer.trim() !== name) throw new UsageError('not confirmed; nothing was deleted');
  }
  const { client } = ctx.connection();
  let operation: string | undefined;
  const message = await client.deleteInstance(name, { onOperation: (id) => (operation = id) });
  if (opts['no-wait'] !== true) {
    if (operation) await followOperation(client, io, name, operation, opts, 'gone');
    else await waitGone(client, io, name, opts);
  }
  if (opts.json === true) io.out(json({ name, deleted: opts['no-wait'] !== true, message }));
  else if (opts['no-wait'] === true) io.out(message);
}

const NAME_HELP = 'NAME is the instance name';

export const instanceCommands: readonly ClientCommand[] = [
  {
    kind: 'client',
    name: 'instances ls',
    summary: 'List your instances',
    args: [],
    remote: true,
    options: { ...REMOTE_OPTIONS, quiet: { type: 'boolean', short: 'q', description: 'print the names only, one per line' } },
    examples: ['hangar instances ls', 'hangar instances ls --json', 'hangar instances ls -q'],
    run: ls,
  },
  {
    kind: 'client',
    name: 'instances create',
    summary: 'Create an instance and wait until it serves',
    args: ['NAME'],
    remote: true,
    options: {
      ...REMOTE_OPTIONS,
      ...WAIT_OPTIONS,
      service: { type: 'string', value: 'SERVICE', description: SERVICES.join(', '), choices: SERVICES },
      version: { type: 'string', value: 'VERSION', description: 'datastore version (a wrong one is answered with those offered)' },
      zone: { type: 'string', value: 'ZONE', description: 'datacenter', choices: [...new Set(Object.values(ZONES).flat())] },
      plan: {
        type: 'string',
        value: 'PLAN',
        description: 'plan size (default the smallest; redis: MB)',
        choices: [...new Set(Object.values(PLANS).flat().map(String))],
      },
      type: {
        type: 'string',
        value: 'TYPE',
        description: 'instance type (needed for mongodb)',
        choices: Object.values(INSTANCE_TYPES).flat(),
      },
      encryption: { type: 'boolean', description: 'encryption at rest (elasticsearch, mongodb)' },
      'storage-engine': {
        type: 'string',
        value: 'ENGINE',
        description: `mongodb: ${STORAGE_ENGINES.join(' or ')}`,
        choices: STORAGE_ENGINES,
      },
      acl: { type: 'string', multiple: true, value: 'CIDR', description: 'admit this address or range from the start' },
      'my-ip': { type: 'boolean', description: 'admit the address this machine reaches hangar from (see hangar acls add --help)' },
      'restore-from': {
        type: 'string',
        value: 'BACKUP_ID',
        description: 'build it from a backup (hangar backups ls): RESTORING, then ACTIVE',
      },
    },
    examples: [
      'hangar instances create cache --service redis --version 7.0.15 --zone US-Dallas',
      'hangar instances create cache --service redis --plan 1000 --version 7.0.15 --zone US-Dallas --my-ip',
      'hangar instances create docs --service mongodb --type mongodb_replica_set --plan 5 --version 3.4.2 --zone US-West --no-wait',
    ],
    details: `Shows the state on a live line until the instance is ACTIVE (COMPLETED for elasticsearch), then prints it: it follows the create's operation on the event stream; --no-wait answers at once with the state REQUESTED. Plans: ${SERVICES.map((s) => `${s} ${PLANS[s].join(', ')}`).join('; ')}. Zones: ${SERVICES.map((s) => `${s} ${ZONES[s].join(', ')}`).join('; ')}.`,
    run: create,
  },
  {
    kind: 'client',
    name: 'instances show',
    summary: 'Show an instance: state, addresses, password',
    args: ['NAME'],
    remote: true,
    options: REMOTE_OPTIONS,
    examples: ['hangar instances show cache', 'hangar instances show cache --json | jq -r .password'],
    details: NAME_HELP,
    run: show,
  },
  {
    kind: 'client',
    name: 'instances rotate-password',
    summary: 'Give a redis instance a new password; the old one works until the grace period ends (or --finish)',
    args: ['NAME'],
    remote: true,
    options: { ...REMOTE_OPTIONS, finish: { type: 'boolean', description: 'retire the old password now' } },
    examples: ['hangar instances rotate-password cache', 'hangar instances rotate-password cache --finish'],
    details: 'Clients holding the old password keep connecting meanwhile: move them to the new one, then --finish.',
    run: rotatePassword,
  },
  {
    kind: 'client',
    name: 'instances rename',
    summary: 'Rename an instance (its ACLs and users stay with it)',
    args: ['NAME', 'NEW_NAME'],
    remote: true,
    options: REMOTE_OPTIONS,
    examples: ['hangar instances rename cache sessions'],
    run: rename,
  },
  {
    kind: 'client',
    name: 'instances rm',
    summary: 'Delete an instance and its data, and wait until it is gone',
    args: ['NAME'],
    remote: true,
    options: {
      ...REMOTE_OPTIONS,
      ...WAIT_OPTIONS,
      yes: { type: 'boolean', short: 'y', description: 'do not ask for confirmation (needed when not in a terminal)' },
    },
    examples: ['hangar instances rm cache', 'hangar instances rm cache --yes --no-wait'],
    details: 'In a terminal, asks to type the name to confirm; elsewhere --yes is required.',
    run: rm,
  },
];
