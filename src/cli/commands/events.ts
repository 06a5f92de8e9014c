import type { HangarEvent } from '../../client/index.js';
import { REMOTE_OPTIONS, type ClientCommand, type ClientContext, list, str } from '../client-command.js';
import { UsageError, json } from '../io.js';
import { table } from '../table.js';

/** The data of an event, as its line reads it: fields of any kind, an operation's steps. */
interface EventData {
  readonly [field: string]: unknown;
  readonly steps?: readonly { readonly name: string; readonly message?: string }[];
}

/** One line of `hangar events --follow`: when, id, kind, instance, what happened. */
export function eventLine(e: HangarEvent): string {
  const d = e.data as EventData;
  let what: string;
  if (e.kind === 'instance.state') what = `${d.from} -> ${d.to}${d.reason ? ` (${d.reason})` : ''}`;
  else if (e.kind === 'instance.renamed') what = `${d.from} -> ${d.to}`;
  else if (e.kind === 'instance.created') what = `${d.service} ${d.type} plan ${d.plan} in ${d.zone}`;
  else if (e.kind.startsWith('operation.')) {
    const step = d.steps?.at(-1);
    what = `${d.kind} ${d.id} ${d.state}${step ? ` ${step.name}${step.message ? `: ${step.message}` : ''}` : ''}`;
  } else what = JSON.stringify(d);
  return `${e.created}  ${String(e.id).padStart(6)}  ${e.kind.padEnd(19)}  ${(e.instance_name ?? '-').padEnd(16)}  ${what}`;
}

function integer(raw: string | undefined, flag: string, min: number, max: number): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new UsageError(`--${flag} must be an integer from ${min} to ${max}`);
  return n;
}

async function follow(ctx: ClientContext): Promise<void> {
  const { opts, io } = ctx;
  const count = integer(str(opts.count), 'count', 1, 1_000_000);
  const since = integer(str(opts.since), 'since', 0, Number.MAX_SAFE_INTEGER);
  const kinds = list(opts.kind)
    .flatMap((k) => k.split(','))
    .filter((k) => k !== '');
  const { client } = ctx.connection();
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let n = 0;
  try {
    for await (const e of client.events({
      ...(since !== undefined ? { lastEventId: since } : {}),
      ...(kinds.length > 0 ? { kinds } : {}),
      ...(str(opts.instance) ? { instance: str(opts.instance)! } : {}),
      onGap: (message) => io.err(`hangar: ${message}`),
      onOpen: () => n === 0 && io.err('following the events of this account (Ctrl-C ends)'),
      signal: stop.signal,
    })) {
      io.out(opts.json === true ? JSON.stringify(e) : eventLine(e));
      if (count !== undefined && ++n >= count) break;
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

async function events(ctx: ClientContext): Promise<void> {
  if (ctx.opts.follow === true) return follow(ctx);
  for (const flag of ['kind', 'instance', 'since', 'count'])
    if (ctx.opts[flag] !== undefined) throw new UsageError(`--${flag} goes with --follow`);
  const limit = integer(str(ctx.opts.limit), 'limit', 1, 1000) ?? 20;
  const log = await ctx.connection().client.listEvents({ limit });
  if (ctx.opts.json === true) {
    ctx.io.out(json(log));
    return;
  }
  ctx.io.out(
    table(
      ['ID', 'WHEN', 'ACTION', 'TARGET', 'OUTCOME', 'FROM'],
      log.map((e) => [e.id, e.created, e.action, e.target, `${e.outcome} ${e.status ?? ''}`.trim(), e.source_ip]),
    ),
  );
}

export const eventCommands: readonly ClientCommand[] = [
  {
    kind: 'client',
    name: 'events',
    summary: "The account's audit log; with --follow, its events as they happen",
    args: [],
    remote: true,
    options: {
      ...REMOTE_OPTIONS,
      follow: { type: 'boolean', short: 'f', description: 'follow the live events (state changes, operation progress) until interrupted' },
      kind: {
        type: 'string',
        multiple: true,
        value: 'KIND',
        description: 'with --follow: only these kinds or families (operation, instance, instance.state...)',
      },
      instance: { type: 'string', value: 'NAME', description: 'with --follow: only the events of this instance' },
      since: {
        type: 'string',
        value: 'ID',
        description: 'with --follow: first the events after this id (resume where a previous run stopped)',
      },
      count: { type: 'string', value: 'N', description: 'with --follow: stop after N events' },
      limit: { type: 'string', value: 'N', description: 'without --follow: how many audit entries (1-1000, default 20)' },
    },
    examples: [
      'hangar events',
      'hangar events --follow',
      'hangar events -f --kind operation --instance cache',
      'hangar events -f --json --since 4211 | jq .kind',
    ],
    details:
      'With --follow, one line per event (--json: one JSON object per line), from GET /v2/events/stream; a dropped connection is resumed without losing events.',
    run: events,
  },
];
