import { Type } from 'typebox';
import { EVENT_KINDS } from '../../domain/operations.js';
import { DateRef } from './common.js';

const T0 = 1795251600000;
const OP_ID = '6560a1f2c3d4e5f607182950';
const INSTANCE_ID = '6560a1f2c3d4e5f607182930';

export const OPERATION_EXAMPLE = {
  id: OP_ID,
  kind: 'create',
  state: 'SUCCEEDED',
  instance_id: INSTANCE_ID,
  instance_name: 'cache',
  account_id: '6560a1f2c3d4e5f607182920',
  steps: [
    { name: 'recorded', at: { $date: T0 } },
    { name: 'started', at: { $date: T0 + 40 } },
    { name: 'create:building', at: { $date: T0 + 45 } },
    { name: 'create:primary-started', at: { $date: T0 + 80 } },
    { name: 'create:replica-started', at: { $date: T0 + 130 } },
    { name: 'succeeded', at: { $date: T0 + 210 }, message: 'ACTIVE' },
  ],
  progress: 100,
  error: null,
  requested_by: { login: 'ops@example.com', credential: 'token', id: '6560a1f2c3d4e5f607182921' },
  request_id: '0b7e4c1d-5a2f-4f0e-9c61-3d2b8a9e7f10',
  detail: { service: 'redis', type: 'redis_ha_instance', plan: 500, version: '7.0.15', zone: 'US-Dallas' },
  cancellable: false,
  created: '2026-11-21 09:00:00',
  date_created: { $date: T0 },
  date_updated: { $date: T0 + 210 },
  date_started: { $date: T0 + 40 },
  date_finished: { $date: T0 + 210 },
  deadline: { $date: T0 + 300_000 },
  last_event_id: 42,
};

export const FAILED_OPERATION_EXAMPLE = {
  ...OPERATION_EXAMPLE,
  id: '6560a1f2c3d4e5f607182951',
  kind: 'resize',
  state: 'FAILED',
  steps: [
    { name: 'recorded', at: { $date: T0 } },
    { name: 'started', at: { $date: T0 + 30 } },
    { name: 'state:DEGRADED', at: { $date: T0 + 3100 }, message: 'the engine of the primary does not answer' },
    {
      name: 'failed',
      at: { $date: T0 + 600_000 },
      message: 'resize not finished within its deadline of 600 s; the instance is DEGRADED until hangar has carried the change out',
    },
  ],
  progress: null,
  error: {
    code: 'DEADLINE_EXCEEDED',
    message: 'resize not finished within its deadline of 600 s; the instance is DEGRADED until hangar has carried the change out',
  },
  detail: { from_plan: 500, to_plan: 1000, engine: 'redis' },
  date_updated: { $date: T0 + 600_000 },
  date_started: { $date: T0 + 30 },
  date_finished: { $date: T0 + 600_000 },
  deadline: { $date: T0 + 600_000 },
  last_event_id: 57,
};

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);
const NullableDate = Type.Union([DateRef, Type.Null()]);

export const OperationStepRecord = Type.Object(
  {
    name: Type.String({
      description:
        '`recorded`, `started`, a step of the work (e.g. `create:primary-started`), `state:<STATE>` of the instance, then `succeeded`, `failed` or `cancelled`',
    }),
    at: DateRef,
    message: Type.Optional(Type.String({ description: 'What the step says (a reason, a state)' })),
  },
  { description: 'A step the operation went through' },
);

export const OperationRecord = Type.Object(
  {
    id: Type.String({ pattern: '^[0-9a-f]{24}$', description: 'Operation id: GET /v2/operations/{operation_id}/' }),
    kind: Type.String({
      description: 'create, resize, rename, delete, acl.add, acl.delete, user.create, user.update, user.delete, backup, restore',
    }),
    state: Type.Union(
      [Type.Literal('PENDING'), Type.Literal('RUNNING'), Type.Literal('SUCCEEDED'), Type.Literal('FAILED'), Type.Literal('CANCELLED')],
      {
        description: 'PENDING, RUNNING, then SUCCEEDED, FAILED or CANCELLED',
      },
    ),
    instance_id: Nullable(Type.String({ description: 'The instance it is about' })),
    instance_name: Nullable(Type.String({ description: 'Its name when the operation was recorded' })),
    account_id: Type.String({ description: 'The account' }),
    steps: Type.Array(OperationStepRecord, { description: 'The steps so far, oldest first, with their times' }),
    progress: Type.Union([Type.Integer({ minimum: 0, maximum: 100 }), Type.Null()], {
      description: 'Percent done where it can be known (100 once it succeeded); null otherwise',
    }),
    error: Type.Union(
      [Type.Object({ code: Type.String({ description: 'e.g. DEADLINE_EXCEEDED, INSTANCE_FAILED' }), message: Type.String() }), Type.Null()],
      {
        description: 'Why it FAILED; null otherwise',
      },
    ),
    requested_by: Type.Union(
      [
        Type.Object({
          login: Type.String(),
          credential: Type.String({ description: 'token, password or api_key' }),
          id: Nullable(Type.String({ description: "The token's id or the key pair's user_key; null for a password" })),
        }),
        Type.Null(),
      ],
      { description: 'Who asked for it' },
    ),
    request_id: Nullable(Type.String({ description: 'X-Request-Id of the request that started it' })),
    detail: Type.Record(Type.String(), Type.Unknown(), {
      description: 'Facts of its kind: plans of a resize, names of a rename, the ACL of an ACL change, the user of a user change',
    }),
    cancellable: Type.Boolean({ description: 'Whether POST .../cancel may cancel it while open (a create also before its build starts)' }),
    created: Type.String({ description: 'YYYY-MM-DD HH:MM:SS, UTC' }),
    date_created: DateRef,
    date_updated: DateRef,
    date_started: NullableDate,
    date_finished: NullableDate,
    deadline: Type.Object(
      { $date: Type.Integer({ description: 'epoch milliseconds' }) },
      { description: 'When it is FAILED if still open (HANGAR_OPERATION_DEADLINES)' },
    ),
    last_event_id: Type.Union([Type.Integer(), Type.Null()], {
      description:
        'Id of the event of its latest change: GET /v2/events/stream with Last-Event-ID set to it misses none of its later changes',
    }),
  },
  { $id: 'Operation', description: 'An asynchronous action and how it went', examples: [OPERATION_EXAMPLE] },
);

export const OperationList = Type.Object(
  {
    data: Type.Array(OperationRecord),
    next_cursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next page; null on the last page' }),
  },
  {
    description: 'A page of operations, newest first',
    examples: [{ data: [OPERATION_EXAMPLE, FAILED_OPERATION_EXAMPLE], next_cursor: 'MTc5NTI1MTYwMDAwMC42NTYwYTFmMmMzZDRlNWY2MDcxODI5NTE' }],
  },
);

export const OperationsQuery = Type.Object(
  {
    instance: Type.Optional(
      Type.String({ minLength: 1, maxLength: 64, description: 'Only those of this instance (its name, or its id)', examples: ['cache'] }),
    ),
    state: Type.Optional(
      Type.String({ maxLength: 100, description: 'Only in these states, comma-separated', examples: ['PENDING,RUNNING'] }),
    ),
    kind: Type.Optional(Type.String({ maxLength: 200, description: 'Only of these kinds, comma-separated', examples: ['create,delete'] })),
    limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,3}$', description: 'Page size, 1-200, default 50', examples: ['20'] })),
    cursor: Type.Optional(
      Type.String({
        maxLength: 200,
        description: '`next_cursor` of the previous page',
        examples: ['MTc5NTI1MTYwMDAwMC42NTYwYTFmMmMzZDRlNWY2MDcxODI5NTE'],
      }),
    ),
  },
  { additionalProperties: false },
);

export const OperationParams = Type.Object({
  operation_id: Type.String({ description: 'The operation id (X-Operation-Id of the answer that started it)', examples: [OP_ID] }),
});

/** Headers of an answer that started an operation. */
export const OPERATION_HEADERS = {
  'x-operation-id': { type: 'string', description: 'The operation this request started: GET /v2/operations/{id}/' },
  location: { type: 'string', description: 'Where the operation is: /v2/operations/{id}/' },
} as const;

/** The headers of a change that records ACLs: its operation's, and a Warning for each range stored otherwise than written. */
export const ACL_CHANGE_HEADERS = {
  ...OPERATION_HEADERS,
  warning: {
    type: 'string',
    description:
      'One per thing to know about a range as stored, as Kubernetes warns: `299 hangar "10.1.2.3/8 was stored as 10.0.0.0/8"` (host bits cleared), `299 hangar "0.0.0.0/0 admits every IPv4 address: anyone on the internet can reach the instance"`',
  },
} as const;

/** The headers of a change of a Redis user: its operation's, and a Warning for each pattern stored otherwise than written. */
export const REDIS_USER_CHANGE_HEADERS = {
  ...OPERATION_HEADERS,
  warning: {
    type: 'string',
    description:
      'One per pattern stored otherwise than written, as Kubernetes warns: `299 hangar "keys[0] \\"~app:*\\" was stored as \\"app:*\\": hangar writes the \\"~\\" of Redis\'s key patterns itself"`',
  },
} as const;

export const EVENT_EXAMPLE = {
  id: 43,
  kind: 'instance.state',
  instance_id: INSTANCE_ID,
  instance_name: 'cache',
  operation_id: null,
  created: '2026-11-21 09:00:00',
  date_created: { $date: T0 + 200 },
  data: { from: 'BUILDING', to: 'ACTIVE', reason: null, plan: 500 },
};

export const EventRecord = Type.Object(
  {
    id: Type.Integer({ description: 'Event id, increasing: the SSE id to resume after (Last-Event-ID)' }),
    kind: Type.String({ description: `What happened: ${EVENT_KINDS.join(', ')}` }),
    instance_id: Type.Union([Type.String(), Type.Null()]),
    instance_name: Type.Union([Type.String(), Type.Null()]),
    operation_id: Type.Union([Type.String(), Type.Null()]),
    created: Type.String({ description: 'YYYY-MM-DD HH:MM:SS, UTC' }),
    date_created: DateRef,
    data: Type.Record(Type.String(), Type.Unknown(), {
      description:
        'operation.*: the operation record; instance.state: {from, to, reason, plan}; instance.created: {state, service, type, plan, zone}; instance.renamed: {from, to}; instance.deleted: {state}',
    }),
  },
  {
    $id: 'Event',
    description: 'An instance state change or an operation change, as streamed and sent to webhooks',
    examples: [EVENT_EXAMPLE],
  },
);

export const StreamQuery = Type.Object(
  {
    kinds: Type.Optional(
      Type.String({
        maxLength: 500,
        description: 'Only these kinds, comma-separated: a kind, a family (`operation`, `instance`) or `*`',
        examples: ['operation,instance.state'],
      }),
    ),
    instance: Type.Optional(
      Type.String({ minLength: 1, maxLength: 64, description: 'Only events of this instance (its name, or its id)', examples: ['cache'] }),
    ),
    last_event_id: Type.Optional(
      Type.String({
        pattern: '^[0-9]{1,15}$',
        description: 'Resume after this event (as the Last-Event-ID header does)',
        examples: ['42'],
      }),
    ),
  },
  { additionalProperties: false },
);

export const StreamHeaders = Type.Object({
  'last-event-id': Type.Optional(
    Type.String({
      pattern: '^[0-9]{1,15}$',
      description: 'Resume after this event: every later event of the account is sent first (within HANGAR_EVENT_RETENTION)',
    }),
  ),
});
