import { hostname } from 'node:os';
import { REMOTE_OPTIONS, type ClientCommand, type ClientContext, myAddress, str } from '../client-command.js';
import { UsageError, json } from '../io.js';
import { table } from '../table.js';

async function ls(ctx: ClientContext): Promise<void> {
  const acls = await ctx.connection().client.listAcls(ctx.args[0]!);
  if (ctx.opts.json === true) {
    ctx.io.out(json(acls));
    return;
  }
  if (acls.length === 0) {
    ctx.io.out(`No ACLs: no address is admitted. Add yours: hangar acls add ${ctx.args[0]} --my-ip`);
    return;
  }
  // elasticsearch ACLs say which listeners they open besides http(s).
  const es = acls.some((a) => a.transport !== undefined);
  const also = (a: (typeof acls)[number]) => [a.transport ? 'transport' : '', a.kibana ? 'kibana' : ''].filter(Boolean).join(',');
  const created = (a: (typeof acls)[number]) => new Date(a.date_created.$date).toISOString().slice(0, 19).replace('T', ' ');
  ctx.io.out(
    table(
      ['ID', 'CIDR', 'PORT', 'DESCRIPTION', 'CREATED', ...(es ? ['ALSO'] : [])],
      acls.map((a) => [a._id.$oid, a.cidr_mask, a.port, a.description, created(a), ...(es ? [also(a)] : [])]),
    ),
  );
}

async function add(ctx: ClientContext): Promise<void> {
  const { opts, io } = ctx;
  const [name, given] = ctx.args as [string, string | undefined];
  if ((given === undefined) === (opts['my-ip'] !== true)) throw new UsageError('give an address or range (CIDR), or --my-ip; one of the two');
  const { url, client } = ctx.connection();
  const cidr = given ?? (await myAddress(url));
  if (given === undefined && opts.json !== true) io.err(`admitting ${cidr}: the address this machine reaches ${url} from`);
  const description = str(opts.description) ?? (given === undefined ? `hangar acls add --my-ip on ${hostname()}` : `hangar acls add on ${hostname()}`);
  const id = await client.createAcl(name, {
    cidr_mask: cidr,
    description,
    ...(opts.transport === true ? { transport: true } : {}),
    ...(opts.kibana === true ? { kibana: true } : {}),
  });
  io.out(opts.json === true ? json({ id, cidr_mask: cidr, instance: name }) : `ACL ${id} admits ${cidr} to ${name}.`);
}

async function rm(ctx: ClientContext): Promise<void> {
  const [name, id] = ctx.args as [string, string];
  await ctx.connection().client.deleteAcl(name, id);
  ctx.io.out(ctx.opts.json === true ? json({ id, instance: name, deleted: true }) : `ACL ${id} removed from ${name}; its open connections are closed.`);
}

export const aclCommands: readonly ClientCommand[] = [
  {
    kind: 'client',
    name: 'acls ls',
    summary: 'List the addresses admitted to an instance',
    args: ['NAME'],
    remote: true,
    options: REMOTE_OPTIONS,
    examples: ['hangar acls ls cache', 'hangar acls ls cache --json'],
    run: ls,
  },
  {
    kind: 'client',
    name: 'acls add',
    summary: 'Admit an address or range to an instance',
    args: ['NAME', 'CIDR?'],
    remote: true,
    options: {
      ...REMOTE_OPTIONS,
      'my-ip': { type: 'boolean', description: 'admit the address this machine reaches hangar from' },
      description: { type: 'string', value: 'TEXT', description: 'what the address is (default: names this machine)' },
      transport: { type: 'boolean', description: 'elasticsearch: also on the transport port' },
      kibana: { type: 'boolean', description: 'elasticsearch: on Kibana instead' },
    },
    examples: ['hangar acls add cache --my-ip', 'hangar acls add cache 198.51.100.0/24 --description office'],
    details:
      '--my-ip admits the local address of a connection from this machine to the hangar URL: what hangar sees when nothing translates addresses in between (same host, same network, a VPN). Behind NAT or a proxy, give your public address instead.',
    run: add,
  },
  {
    kind: 'client',
    name: 'acls rm',
    summary: 'Stop admitting an ACL (and close its open connections)',
    args: ['NAME', 'ACL_ID'],
    remote: true,
    options: REMOTE_OPTIONS,
    examples: ['hangar acls rm cache 6560a1f2c3d4e5f60718293a'],
    run: rm,
  },
];
