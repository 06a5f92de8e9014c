import { Type } from 'typebox';
import { DateRef } from './common.js';

const T0 = 1795251600000;
const WEBHOOK_ID = '6560a1f2c3d4e5f607182960';

export const WEBHOOK_EXAMPLE = {
  id: WEBHOOK_ID,
  url: 'https://hooks.example.com/hangar',
  kinds: ['operation', 'instance.state'],
  description: 'deploy bot',
  created: '2026-11-21 09:00:00',
  date_created: { $date: T0 },
  date_updated: { $date: T0 },
  previous_secret_until: null,
};

export const CREATED_WEBHOOK_EXAMPLE = { ...WEBHOOK_EXAMPLE, secret: 'whsec_3q2-7wKqQ0m1J8V4b6p5Xr9Tz2Yc1Nf0Hs4Dk7Lg8Aw' };

export const DELIVERY_EXAMPLE = {
  id: '6560a1f2c3d4e5f607182970',
  webhook_id: WEBHOOK_ID,
  event_id: 43,
  event_kind: 'instance.state',
  state: 'PENDING',
  attempts: 2,
  last_status: 500,
  last_error: 'the receiver answered 500',
  created: '2026-11-21 09:00:00',
  date_created: { $date: T0 },
  date_updated: { $date: T0 + 3000 },
  next_attempt: { $date: T0 + 5000 },
  date_delivered: null,
};

const webhookFields = {
  id: Type.String({ pattern: '^[0-9a-f]{24}$', description: 'The webhook id' }),
  url: Type.String({ description: 'Where deliveries are POSTed' }),
  kinds: Type.Array(Type.String(), { description: 'Event kinds sent: kinds, families (operation, instance) or *' }),
  description: Type.String(),
  created: Type.String({ description: 'YYYY-MM-DD HH:MM:SS, UTC' }),
  date_created: DateRef,
  date_updated: DateRef,
  previous_secret_until: Type.Union([DateRef, Type.Null()], {
    description: 'After a rotation: until when the old secret signs too (a second v1=)',
  }),
};

export const WebhookRecord = Type.Object(webhookFields, {
  $id: 'Webhook',
  description: 'A webhook (without its secret)',
  examples: [WEBHOOK_EXAMPLE],
});

export const CreatedWebhook = Type.Object(
  {
    ...webhookFields,
    secret: Type.String({
      description:
        'The signing secret, shown in this answer only: X-Hangar-Signature is t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + body)>',
    }),
  },
  { description: 'The webhook with its secret (shown this once)', examples: [CREATED_WEBHOOK_EXAMPLE] },
);

export const WebhookCreateBody = Type.Object(
  {
    url: Type.String({
      minLength: 1,
      maxLength: 2048,
      description:
        'https:// URL (http:// with HANGAR_WEBHOOK_ALLOW_HTTP); loopback, private and link-local addresses only with HANGAR_WEBHOOK_ALLOW_PRIVATE',
    }),
    kinds: Type.Optional(
      Type.Array(Type.String({ maxLength: 64 }), {
        minItems: 1,
        maxItems: 20,
        description: 'Event kinds, families (operation, instance) or *; default *',
      }),
    ),
    description: Type.Optional(Type.String({ maxLength: 200 })),
  },
  {
    additionalProperties: false,
    examples: [{ url: 'https://hooks.example.com/hangar', kinds: ['operation', 'instance.state'], description: 'deploy bot' }],
  },
);

export const WebhookParams = Type.Object({ webhook_id: Type.String({ description: 'The webhook id', examples: [WEBHOOK_ID] }) });

export const DeliveryRecord = Type.Object(
  {
    id: Type.String({
      description: 'The delivery id, also in X-Hangar-Delivery: the same on every attempt (receivers drop repeats by it)',
    }),
    webhook_id: Type.String(),
    event_id: Type.Integer({ description: 'The event delivered (its id in the stream)' }),
    event_kind: Type.String(),
    state: Type.Union([Type.Literal('PENDING'), Type.Literal('DELIVERED'), Type.Literal('FAILED')], {
      description: 'PENDING (to be tried, again), DELIVERED (a 2xx answer), FAILED (given up after HANGAR_WEBHOOK_RETRY_WINDOW)',
    }),
    attempts: Type.Integer({ description: 'Attempts so far' }),
    last_status: Type.Union([Type.Integer(), Type.Null()], { description: 'HTTP status of the last answer; null when there was none' }),
    last_error: Type.Union([Type.String(), Type.Null()], { description: 'Why the last attempt failed' }),
    created: Type.String({ description: 'YYYY-MM-DD HH:MM:SS, UTC' }),
    date_created: DateRef,
    date_updated: DateRef,
    next_attempt: Type.Union([DateRef, Type.Null()], { description: 'When it is tried next (PENDING)' }),
    date_delivered: Type.Union([DateRef, Type.Null()]),
  },
  { $id: 'WebhookDelivery', description: 'One event sent to one webhook, and how its attempts went', examples: [DELIVERY_EXAMPLE] },
);

export const DeliveriesQuery = Type.Object(
  {
    limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,3}$', description: 'How many, 1-500, default 100', examples: ['20'] })),
    before: Type.Optional(
      Type.String({ pattern: '^[0-9]{1,15}$', description: 'Only deliveries of events with a smaller id (paging)', examples: ['43'] }),
    ),
    state: Type.Optional(Type.String({ maxLength: 100, description: 'Only in these states, comma-separated', examples: ['FAILED'] })),
  },
  { additionalProperties: false },
);
