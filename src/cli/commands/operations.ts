import type { HangarEvent, Operation } from '../../client/index.js';
import { REMOTE_OPTIONS, WAIT_OPTIONS, type ClientCommand, type ClientContext, str, timeoutMs } from '../client-command.js';
import { UsageError, json } from '../io.js';
import { Progress } from '../progress.js';
import { fields, table } from '../table.js';

const when = (d: { $date: number } | null | undefined) => (d ? new Date(d.$date).toISOString().slice(0, 19).replace('T', ' ') : undefined);
const csv = (v: string | undefined) =>
  v === undefined
    ? undefined
    : v
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x !== '');

function limitOf(raw: string | undefined, max: number, dflt: number): number {
  if (raw === undefined) return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > max) throw new UsageError(`--limit must be an integer from 1 to ${max}`);
  return n;
}

export function showOperation(op: Operation): string {
  return [
    fields([
      ['id', op.id],
      ['kind', op.kind],
      ['state', op.state],
      ['instance', op.instance_name],
      ['progress', op.progress === null ? undefined : `${op.progress}%`],
      ['error', op.error ? `${op.error.code}: ${op.error.message}` : undefined],
      ['requested by', op.requested_by ? `${op.requested_by.login} (${op.requested_by.credential})` : undefined],
      ['request id', op.request_id],
      ['created', `${op.created} UTC`],
      ['finished', when(op.date_finished)],
      ['deadline', when(op.deadline)],
    ]),
    'steps:',
    ...op.steps.map((s) => `  ${when(s.at)}  ${s.name}${s.message ? `  ${s.message}` : ''}`),
  ].join('\n');
}

async function ls(ctx: ClientContext): Promise<void> {
  const { opts } = ctx;
  const page = await ctx.connection().client.listOperations({
    ...(str(opts.instance) ? { instance: str(opts.instance)! } : {}),
    ...(csv(str(opts.state)) ? { states: csv(str(opts.state))! } : {}),
    ...(csv(str(opts.kind)) ? { kinds: csv(str(opts.kind))! } : {}),
    limit: limitOf(str(opts.limit), 200, 20),
    ...(str(opts.cursor) ? { cursor: str(opts.cursor)! } : {}),
  });
  if (opts.json === true) {
    ctx.io.out(json({ operations: page.operations, next_cursor: page.nextCursor }));
    return;
  }
  if (page.operations.length === 0) {
    ctx.io.out('No operations.');
    return;
  }
  ctx.io.out(
    table(
      ['ID', 'KIND', 'INSTANCE', 'STATE', 'CREATED', 'LAST STEP'],
      page.operations.map((o) => [o.id, o.kind, o.instance_name, o.state, o.created, o.error?.code ?? o.steps.at(-1)?.name]),
    ),
  );
  if (page.nextCursor) ctx.io.err(`more: hangar operations ls --cursor ${page.nextCursor}`);
}

async function show(ctx: ClientContext): Promise<void> {
  const op = await ctx.connection().client.getOperation(ctx.args[0]!);
  ctx.io.out(ctx.opts.json === true ? json(op) : showOperation(op));
}

async function cancel(ctx: ClientContext): Promise<void> {
  const op = await ctx.connection().client.cancelOperation(ctx.args[0]!);
  ctx.io.out(ctx.opts.json === true ? json(op) : `Operation ${op.id} (${op.kind} of "${op.instance_name ?? ''}") is ${op.state}.`);
}

async function wait(ctx: ClientContext): Promise<void> {
  const id = ctx.args[0]!;
  const { client } = ctx.connection();
  const first = await client.getOperation(id);
  const progress = new Progress(ctx.io, `${first.kind} ${first.instance_name ?? id}`);
  let op: Operation;
  try {
    op = await client.waitForOperation(id, {
      timeoutMs: timeoutMs(ctx.opts),
      onEvent: (e: HangarEvent) => {
        if (e.operation_id === id) {
          const o = e.data as unknown as Operation;
          progress.update(`${o.state} ${o.steps.at(-1)?.name ?? ''}`.trim());
        }
      },
    });
  } catch (err) {
    progress.stop();
    throw err;
  }
  progress.finish(op.state);
  ctx.io.out(ctx.opts.json === true ? json(op) : showOperation(op));
  if (op.state !== 'SUCCEEDED') throw new Error(`operation ${id} ${op.state}${op.error ? `: ${op.error.message}` : ''}`);
}

export const operationCommands: readonly ClientCommand[] = [
  {
    kind: 'client',
    name: 'operations ls',
    summary: 'List operations (creates, resizes, deletes, ACL and user changes...), newest first',
    args: [],
    remote: true,
    options: {
      ...REMOTE_OPTIONS,
      instance: { type: 'string', value: 'NAME', description: 'only those of this instance' },
      state: {
        type: 'string',
        value: 'STATES',
        description: 'only in these states (comma-separated): PENDING, RUNNING, SUCCEEDED, FAILED, CANCELLED',
      },
      kind: { type: 'string', value: 'KINDS', description: 'only of these kinds (comma-separated), e.g. create,delete' },
      limit: { type: 'string', value: 'N', description: 'how many (1-200, default 20)' },
      cursor: { type: 'string', value: 'CURSOR', description: 'the next page (printed on stderr after a full page)' },
    },
    examples: [
      'hangar operations ls',
      'hangar operations ls --instance cache --state RUNNING',
      'hangar operations ls --kind create --json',
    ],
    run: ls,
  },
  {
    kind: 'client',
    name: 'operations show',
    summary: 'Show an operation: state, steps with their times, error',
    args: ['ID'],
    remote: true,
    options: REMOTE_OPTIONS,
    examples: ['hangar operations show 6560a1f2c3d4e5f607182950'],
    details: 'ID is an operation id: the X-Operation-Id of the answer that started it, or from hangar operations ls.',
    run: show,
  },
  {
    kind: 'client',
    name: 'operations cancel',
    summary: 'Cancel an operation where that is safe (a create not started yet, a backup)',
    args: ['ID'],
    remote: true,
    options: REMOTE_OPTIONS,
    examples: ['hangar operations cancel 6560a1f2c3d4e5f607182950'],
    details: 'hangar says why when it cannot be cancelled (exit code 1).',
    run: cancel,
  },
  {
    kind: 'client',
    name: 'operations wait',
    summary: 'Follow an operation on the event stream until it is finished',
    args: ['ID'],
    remote: true,
    options: { ...REMOTE_OPTIONS, timeout: WAIT_OPTIONS.timeout! },
    examples: ['hangar operations wait 6560a1f2c3d4e5f607182950', 'hangar operations wait 6560a1f2c3d4e5f607182950 --json --timeout 60'],
    details: 'Exit code 0 when it SUCCEEDED, 1 when it FAILED or was CANCELLED, 5 when --timeout passed first.',
    run: wait,
  },
];
