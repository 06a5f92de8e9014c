import { hostname } from 'node:os';
import { REMOTE_OPTIONS, type ClientCommand, type ClientContext, myAddress, str } from '../client-command.js';
import { UsageError, json } from '../io.js';
import { table } from '../table.js';
import { ExitCode } from './connect.js';

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
  if ((given === undefined) === (opts['my-ip'] !== true))
    throw new UsageError('give an address or range (CIDR), or --my-ip; one of the two');
  const { url, client } = ctx.connection();
  const cidr = given ?? (await myAddress(url));
  if (given === undefined && opts.json !== true) io.err(`admitting ${cidr}: the address this machine reaches ${url} from`);
  const description =
    str(opts.description) ?? (given === undefined ? `hangar acls add --my-ip on ${hostname()}` : `hangar acls add on ${hostname()}`);
  const expires = str(opts.expires);
  const id = await client.createAcl(
    name,
    {
      cidr_mask: cidr,
      description,
      ...(opts.transport === true ? { transport: true } : {}),
      ...(opts.kibana === true ? { kibana: true } : {}),
      ...(expires !== undefined ? { expires_at: expiresAt(expires) } : {}),
    },
    // what hangar says of the range (stored otherwise than typed, the whole internet admitted)
    { onWarning: (w) => io.err(`hangar: warning: ${w}`) },
  );
  // the range as hangar stored it, which may not be as it was typed (10.1.2.3/8 is 10.0.0.0/8)
  const stored = (await client.getAcl(name, id)).cidr_mask;
  const until = expires !== undefined ? ` until ${expiresAt(expires)}` : '';
  io.out(opts.json === true ? json({ id, cidr_mask: stored, instance: name }) : `ACL ${id} admits ${stored} to ${name}${until}.`);
}

/** `--expires`: an RFC 3339 time, or a duration from now (`30m`, `8h`, `7d`). */
export function expiresAt(text: string, now = Date.now()): string {
  const m = /^(\d+)([smhd])$/.exec(text);
  if (m)
    return new Date(now + Number(m[1]) * { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 's' | 'm' | 'h' | 'd']).toISOString();
  if (!Number.isFinite(Date.parse(text)))
    throw new UsageError(`--expires "${text}": give a time (2026-12-01T18:00:00Z) or a duration from now (30m, 8h, 7d)`);
  return text;
}

async function check(ctx: ClientContext): Promise<void> {
  const [name, ip] = ctx.args as [string, string];
  const result = await ctx.connection().client.checkAcl(name, ip);
  if (ctx.opts.json === true) ctx.io.out(json(result));
  else if (result.acl)
    ctx.io.out(`${result.ip} is admitted to ${name} by ACL ${result.acl._id.$oid} (${result.acl.cidr_mask}, ${result.acl.description}).`);
  else ctx.io.out(`${result.ip} is not admitted to ${name}: no ACL covers it.`);
  // a script can test the answer: 0 admitted, 1 not
  if (!result.admitted) throw new ExitCode(1);
}

async function effective(ctx: ClientContext): Promise<void> {
  const name = ctx.args[0]!;
  const e = await ctx.connection().client.effectiveAcls(name);
  if (ctx.opts.json === true) {
    ctx.io.out(json(e));
    return;
  }
  const groups = (s: Record<string, string[] | undefined>) =>
    Object.entries(s)
      .map(([g, list]) => `${g}: ${(list ?? []).join(' ') || '-'}`)
      .join('; ') || '-';
  ctx.io.out(e.in_sync ? `${name}: the edge enforces exactly the ACLs.` : `${name}: DRIFT between the edge and the ACLs.`);
  ctx.io.out(
    table(
      ['ENFORCER', 'IN SYNC', 'ADMITS', 'MISSING', 'EXTRA'],
      e.enforcers.map((x) => [x.name, x.problem ?? (x.in_sync ? 'yes' : 'no'), groups(x.sources), groups(x.missing), groups(x.extra)]),
    ),
  );
}

async function denied(ctx: ClientContext): Promise<void> {
  const name = ctx.args[0]!;
  const limit = str(ctx.opts.limit);
  const list = await ctx.connection().client.deniedConnections(name, limit !== undefined ? { limit: Number(limit) } : {});
  if (ctx.opts.json === true) ctx.io.out(json(list));
  else if (list.length === 0) ctx.io.out(`No refused connection to ${name} on record.`);
  else
    ctx.io.out(
      table(
        ['TIME', 'SOURCE', 'LISTENER'],
        list.map((d) => [d.time, d.source, d.listener]),
      ),
    );
}

async function rm(ctx: ClientContext): Promise<void> {
  const [name, id] = ctx.args as [string, string];
  await ctx.connection().client.deleteAcl(name, id);
  ctx.io.out(
    ctx.opts.json === true
      ? json({ id, instance: name, deleted: true })
      : `ACL ${id} removed from ${name}; its open connections are closed.`,
  );
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
    fields: { cidr_mask: 'CIDR', description: '--description', expires_at: '--expires', transport: '--transport', kibana: '--kibana' },
    summary: 'Admit an address or range to an instance',
    args: ['NAME', 'CIDR?'],
    remote: true,
    options: {
      ...REMOTE_OPTIONS,
      'my-ip': { type: 'boolean', description: 'admit the address this machine reaches hangar from' },
      description: { type: 'string', value: 'TEXT', description: 'what the address is (default: names this machine)' },
      transport: { type: 'boolean', description: 'elasticsearch: also on the transport port' },
      kibana: { type: 'boolean', description: 'elasticsearch: on Kibana instead' },
      expires: {
        type: 'string',
        value: 'TIME',
        description: 'stop admitting then: a time (2026-12-01T18:00:00Z) or a duration from now (30m, 8h, 7d)',
      },
    },
    examples: [
      'hangar acls add cache --my-ip',
      'hangar acls add cache 198.51.100.0/24 --description office',
      'hangar acls add cache 192.0.2.44 --description contractor --expires 7d',
    ],
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
  {
    kind: 'client',
    name: 'acls check',
    summary: 'Would an address be admitted to an instance, and by which ACL?',
    args: ['NAME', 'IP'],
    remote: true,
    options: REMOTE_OPTIONS,
    examples: ['hangar acls check cache 198.51.100.23', 'hangar acls check cache 2001:db8::7 --json'],
    details: 'Exit code 0 when the address is admitted, 1 when it is not.',
    run: check,
  },
  {
    kind: 'client',
    name: 'acls effective',
    summary: 'What the edge enforces right now for an instance, against its ACLs (drift shows)',
    args: ['NAME'],
    remote: true,
    options: REMOTE_OPTIONS,
    examples: ['hangar acls effective cache'],
    run: effective,
  },
  {
    kind: 'client',
    name: 'acls denied',
    summary: 'The last connections the edge refused for an instance',
    args: ['NAME'],
    remote: true,
    options: { ...REMOTE_OPTIONS, limit: { type: 'string', value: 'N', description: 'how many, 1-100 (default 20)' } },
    examples: ['hangar acls denied cache', 'hangar acls denied cache --limit 100 --json'],
    run: denied,
  },
];
