import { hostname } from 'node:os';
import type { CreateInstanceRequest, Instance, Zone } from '../../client/index.js';
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
import { productOfRecord } from './connect.js';
import { ENGINE_NAMES, PRODUCTS, productsOf } from '../../engines/products.js';

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
    ['plan', productOfRecord(inst)?.planUnit === 'MB' ? `${inst.plan} MB` : inst.plan],
    ['engine', inst.engine],
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
  if (str(opts.version) === undefined || str(opts.zone) === undefined) {
    const zones = await Promise.resolve()
      .then(() => ctx.connection().client.listZones())
      .catch(() => undefined);
    need(
      opts.version,
      'version',
      zones ? offeredVersions(zones, service, str(opts.zone), str(opts.engine)) : 'hangar zones ls lists the versions offered',
    );
    need(opts.zone, 'zone', zones ? offeredZones(zones, service) : `${service}: ${ZONES[service].join(', ')}`);
  }
  const version = str(opts.version)!;
  const zone = str(opts.zone)!;
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
    ...(str(opts.engine) ? { engine: str(opts.engine)! } : {}),
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
  // A new instance admits nobody until it has an ACL; said here, not first at hangar connect.
  const noAcl = () =>
    cidrs.length === 0 &&
    io.err(
      `hangar: no address can connect to "${name}" yet (it has no ACL): admit this machine with hangar acls add ${name} --my-ip, or an address or range with hangar acls add ${name} CIDR`,
    );
  if (opts['no-wait'] === true) {
    if (opts.json === true) io.out(json(created));
    else
      io.out(
        `Instance "${name}" is ${created.state}; follow it with: hangar instances show ${name}${operation ? ` (or hangar operations wait ${operation})` : ''}`,
      );
    noAcl();
    return;
  }
  // A hangar without operations (an older one) is polled instead.
  const ready = operation ? (await followOperation(client, io, name, operation, opts, 'ready'))! : await waitReady(client, io, name, opts);
  io.out(opts.json === true ? json(ready) : showInstance(ready));
  noAcl();
}

/** The zones of this hangar that offer a service now (on `engine` when given, else its default engine), with its versions. */
const offering = (zones: readonly Zone[], service: string, engine?: string) =>
  zones.flatMap((z) =>
    z.services
      .filter((s) => s.service === service)
      .flatMap((s) => {
        const versions =
          engine === undefined
            ? s.available
              ? s.versions
              : undefined
            : s.engines?.find((e) => e.engine === engine && e.available)?.versions;
        return versions ? [{ zone: z.name, versions }] : [];
      }),
  );

/**
 * The versions of a service this hangar offers (its /v2/zones/), in the zone given or in each:
 * `redis: 7.0.15, 7.0` or `redis: 7.0.15, 7.0 in US-Dallas; 7.0.15 in US-West`.
 */
export function offeredVersions(zones: readonly Zone[], service: string, zone?: string, engine?: string): string {
  const offers = offering(zones, service, engine).filter(
    (o) => zone === undefined || o.zone === zone || !zones.some((z) => z.name === zone),
  );
  const what = engine === undefined ? service : `${service} on ${engine}`;
  if (offers.length === 0) return `this hangar offers no ${what}${zone ? ` in ${zone}` : ''} now: see hangar zones ls`;
  const byVersions = new Map<string, string[]>();
  for (const o of offers) byVersions.set(o.versions.join(', '), [...(byVersions.get(o.versions.join(', ')) ?? []), o.zone]);
  if (byVersions.size === 1) return `${what}${zone ? ` in ${zone}` : ''}: ${[...byVersions.keys()][0]}`;
  return `${what}: ${[...byVersions].map(([versions, where]) => `${versions} in ${where.join(', ')}`).join('; ')}`;
}

/** The zones of this hangar that offer a service: `redis: US-Dallas, US-West`. */
export function offeredZones(zones: readonly Zone[], service: string): string {
  const offers = offering(zones, service);
  return offers.length === 0
    ? `this hangar offers no ${service} now: see hangar zones ls`
    : `${service}: ${offers.map((o) => o.zone).join(', ')}`;
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
      version: {
        type: 'string',
        value: 'VERSION',
        description: 'datastore version (when it is missing or wrong, hangar lists those it offers)',
      },
      engine: {
        type: 'string',
        value: 'ENGINE',
        description: `the product that runs it (default: the first its zone can run; hangar zones ls lists them): ${PRODUCTS.map((p) => `${p.service} ${p.name}`).join(', ')}`,
        choices: ENGINE_NAMES,
        choicesBy: { on: 'service', by: Object.fromEntries(SERVICES.map((s) => [s, productsOf(s).map((p) => p.name)])) },
      },
      zone: {
        type: 'string',
        value: 'ZONE',
        description: 'datacenter',
        choices: [...new Set(Object.values(ZONES).flat())],
        choicesBy: { on: 'service', by: ZONES },
      },
      plan: {
        type: 'string',
        value: 'PLAN',
        description: 'plan size (default the smallest; redis: MB)',
        choices: [...new Set(Object.values(PLANS).flat().map(String))],
        choicesBy: { on: 'service', by: Object.fromEntries(SERVICES.map((s) => [s, PLANS[s].map(String)])) },
      },
      type: {
        type: 'string',
        value: 'TYPE',
        description: 'instance type (needed for mongodb)',
        choices: Object.values(INSTANCE_TYPES).flat(),
        choicesBy: { on: 'service', by: INSTANCE_TYPES },
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
    fields: {
      name: 'NAME',
      service: '--service',
      type: '--type',
      plan: '--plan',
      version: '--version',
      zone: '--zone',
      storage_engine: '--storage-engine',
      restore_from: '--restore-from',
      'acls[].cidr_mask': '--acl',
    },
    examples: [
      'hangar instances create cache --service redis --version 7.0.15 --zone US-Dallas',
      'hangar instances create cache --service redis --engine valkey --version 8.0.1 --zone US-Dallas --my-ip',
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
    fields: { name: 'NEW_NAME' },
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
