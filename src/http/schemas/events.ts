import { Type } from 'typebox';
import { AUDIT_EVENT } from './examples.js';

export const AuditEventRecord = Type.Object(
  {
    id: Type.Integer({ description: 'Event number, increasing' }),
    action: Type.String({ description: 'What was done, e.g. instance.create, acl.delete, token.create' }),
    target: Type.Union([Type.String(), Type.Null()], {
      description: 'What it was done to, e.g. instance:cache/acl:6560a1f2c3d4e5f60718293a',
    }),
    source_ip: Type.Union([Type.String(), Type.Null()], { description: 'Address the request came from' }),
    outcome: Type.String({ description: 'success or failure' }),
    status: Type.Union([Type.Integer(), Type.Null()], { description: 'HTTP status of the answer' }),
    request_id: Type.Union([Type.String(), Type.Null()], { description: 'X-Request-Id of the request, to find it in the logs' }),
    created: Type.String({ description: 'YYYY-MM-DD HH:MM:SS, UTC' }),
    date_created: Type.Object({ $date: Type.Integer({ description: 'epoch milliseconds' }) }),
  },
  { $id: 'AuditEvent', description: 'One change or login, as recorded in the audit log', examples: [AUDIT_EVENT] },
);

export const EventsQuery = Type.Object(
  {
    limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,4}$', description: 'How many events, 1-1000, default 100', examples: ['20'] })),
    before: Type.Optional(
      Type.String({ pattern: '^[0-9]{1,15}$', description: 'Only events with a smaller id (paging)', examples: ['42'] }),
    ),
  },
  { additionalProperties: false },
);
