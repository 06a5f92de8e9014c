import { REMOTE_OPTIONS, type ClientCommand, type ClientContext, list, str } from '../client-command.js';
import { UsageError, json } from '../io.js';
import { fields, table } from '../table.js';

const when = (d: { $date: number } | null | undefined) => (d ? new Date(d.$date).toISOString().slice(0, 19).replace('T', ' ') : undefined);

async function ls(ctx: ClientContext): Promise<void> {
  const hooks = await ctx.connection().client.listWebhooks();
  if (ctx.opts.json === true) {
    ctx.io.out(json(hooks));
    return;
  }
  if (hooks.length === 0) {
    ctx.io.out('No webhooks. Add one: hangar webhooks add https://hooks.example.com/hangar');
    return;
  }
  ctx.io.out(
    table(
      ['ID', 'URL', 'KINDS', 'CREATED', 'DESCRIPTION'],
      hooks.map((w) => [w.id, w.url, w.kinds.join(','), w.created, w.description]),
    ),
  );
}

async function add(ctx: ClientContext): Promise<void> {
  const kinds = list(ctx.opts.kind)
    .flatMap((k) => k.split(','))
    .filter((k) => k !== '');
  const w = await ctx.connection().client.createWebhook({
    url: ctx.args[0]!,
    ...(kinds.length > 0 ? { kinds } : {}),
    ...(str(ctx.opts.description) ? { description: str(ctx.opts.description)! } : {}),
  });
  if (ctx.opts.json === true) {
    ctx.io.out(json(w));
    return;
  }
  ctx.io.err('the secret is shown this once: keep it where your receiver checks X-Hangar-Signature');
  ctx.io.out(
    fields([
      ['id', w.id],
      ['url', w.url],
      ['kinds', w.kinds.join(',')],
      ['secret', w.secret],
    ]),
  );
}

async function rm(ctx: ClientContext): Promise<void> {
  const id = ctx.args[0]!;
  await ctx.connection().client.deleteWebhook(id);
  ctx.io.out(ctx.opts.json === true ? json({ id, deleted: true }) : `Webhook ${id} deleted: its receiver gets nothing more.`);
}

async function rotate(ctx: ClientContext): Promise<void> {
  const w = await ctx.connection().client.rotateWebhookSecret(ctx.args[0]!);
  if (ctx.opts.json === true) {
    ctx.io.out(json(w));
    return;
  }
  ctx.io.err(`the new secret is shown this once; the old one also signs until ${when(w.previous_secret_until)} UTC`);
  ctx.io.out(
    fields([
      ['id', w.id],
      ['secret', w.secret],
    ]),
  );
}

async function deliveries(ctx: ClientContext): Promise<void> {
  const raw = str(ctx.opts.limit);
  const limit = raw === undefined ? 20 : Number(raw);
  if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw new UsageError('--limit must be an integer from 1 to 500');
  const states = str(ctx.opts.state)
    ?.split(',')
    .filter((s) => s !== '');
  const list = await ctx.connection().client.listWebhookDeliveries(ctx.args[0]!, { limit, ...(states ? { states } : {}) });
  if (ctx.opts.json === true) {
    ctx.io.out(json(list));
    return;
  }
  if (list.length === 0) {
    ctx.io.out('No deliveries yet.');
    return;
  }
  ctx.io.out(
    table(
      ['ID', 'EVENT', 'KIND', 'STATE', 'ATTEMPTS', 'LAST STATUS', 'NEXT ATTEMPT', 'LAST ERROR'],
      list.map((d) => [d.id, d.event_id, d.event_kind, d.state, d.attempts, d.last_status, when(d.next_attempt), d.last_error]),
    ),
  );
}

const ID_HELP = 'ID is the webhook id (from hangar webhooks ls).';

export const webhookCommands: readonly ClientCommand[] = [
  {
    kind: 'client',
    name: 'webhooks ls',
    summary: 'List your webhooks (without their secrets)',
    args: [],
    remote: true,
    options: REMOTE_OPTIONS,
    examples: ['hangar webhooks ls', 'hangar webhooks ls --json'],
    run: ls,
  },
  {
    kind: 'client',
    name: 'webhooks add',
    fields: { url: 'URL', kinds: '--kind', description: '--description' },
    summary: 'Register a URL to be sent your events, signed; prints its secret once',
    args: ['URL'],
    remote: true,
    options: {
      ...REMOTE_OPTIONS,
      kind: {
        type: 'string',
        multiple: true,
        value: 'KIND',
        description: 'only these kinds or families (operation, instance, operation.failed...); default all',
      },
      description: { type: 'string', value: 'TEXT', description: 'what it is for' },
    },
    examples: [
      'hangar webhooks add https://hooks.example.com/hangar',
      'hangar webhooks add https://hooks.example.com/hangar --kind operation.failed --kind instance.state',
    ],
    details:
      'Each delivery is a POST of the event as JSON with X-Hangar-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + body)>; a receiver checks it (verifyWebhookSignature of hangar/client does) and drops repeats by X-Hangar-Delivery.',
    run: add,
  },
  {
    kind: 'client',
    name: 'webhooks rm',
    summary: 'Delete a webhook: its receiver gets nothing more',
    args: ['ID'],
    remote: true,
    options: REMOTE_OPTIONS,
    examples: ['hangar webhooks rm 6560a1f2c3d4e5f607182960'],
    details: ID_HELP,
    run: rm,
  },
  {
    kind: 'client',
    name: 'webhooks rotate',
    summary: 'Give a webhook a new secret (printed once); the old one signs too for a day',
    args: ['ID'],
    remote: true,
    options: REMOTE_OPTIONS,
    examples: ['hangar webhooks rotate 6560a1f2c3d4e5f607182960'],
    details: ID_HELP,
    run: rotate,
  },
  {
    kind: 'client',
    name: 'webhooks deliveries',
    summary: "A webhook's deliveries, newest first: state, attempts, last status and error",
    args: ['ID'],
    remote: true,
    options: {
      ...REMOTE_OPTIONS,
      state: { type: 'string', value: 'STATES', description: 'only in these states (comma-separated): PENDING, DELIVERED, FAILED' },
      limit: { type: 'string', value: 'N', description: 'how many (1-500, default 20)' },
    },
    examples: ['hangar webhooks deliveries 6560a1f2c3d4e5f607182960', 'hangar webhooks deliveries 6560a1f2c3d4e5f607182960 --state FAILED'],
    details: ID_HELP,
    run: deliveries,
  },
];
