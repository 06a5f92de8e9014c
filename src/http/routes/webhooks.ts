import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Webhook, WebhookDelivery } from '../../domain/webhooks.js';
import { errors } from '../../domain/errors.js';
import { formatCreated } from '../../lib/time.js';
import { type AppDeps, callerOf } from '../context.js';
import { Data } from '../schemas/common.js';
import { IDEMPOTENT, WITH_BODY, WITH_PATH, errorResponses } from '../schemas/error-responses.js';
import { IdempotencyHeaders } from '../plugins/idempotency.js';
import {
  CREATED_WEBHOOK_EXAMPLE,
  CreatedWebhook,
  DELIVERY_EXAMPLE,
  DeliveriesQuery,
  DeliveryRecord,
  WEBHOOK_EXAMPLE,
  WebhookCreateBody,
  WebhookParams,
  WebhookRecord,
} from '../schemas/webhooks.js';

const NO_STORE = 'no-store';
const date = (ms: number | null) => (ms === null ? null : { $date: ms });

function webhookRecord(w: Webhook) {
  return {
    id: w.id,
    url: w.url,
    kinds: [...w.kinds],
    description: w.description,
    created: formatCreated(w.createdAt),
    date_created: { $date: w.createdAt },
    date_updated: { $date: w.updatedAt },
    previous_secret_until: date(w.previousSecretUntil),
  };
}

function deliveryRecord(d: WebhookDelivery) {
  return {
    id: d.id,
    webhook_id: d.webhookId,
    event_id: d.eventId,
    event_kind: d.eventKind,
    state: d.state,
    attempts: d.attempts,
    last_status: d.lastStatus,
    last_error: d.lastError,
    created: formatCreated(d.createdAt),
    date_created: { $date: d.createdAt },
    date_updated: { $date: d.updatedAt },
    next_attempt: date(d.nextAttemptAt),
    date_delivered: date(d.deliveredAt),
  };
}

/** A body a route takes none of: nothing, or `{}`. */
function assertNoBody(body: unknown): void {
  if (body !== undefined && body !== null && !(typeof body === 'object' && !Array.isArray(body) && Object.keys(body).length === 0)) {
    throw errors.invalidBody('this request takes no body (or {})');
  }
}

/**
 * `/v2/webhooks/`: URLs the account registers to be sent its events (an addition to the spec).
 * Each delivery is a POST of the event record, signed in `X-Hangar-Signature`.
 */
export function webhookRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { webhooks } = deps.services;
  const tags = ['webhooks'];

  app.get(
    '/webhooks/',
    {
      schema: {
        summary: "The account's webhooks, without their secrets",
        tags,
        response: { 200: Data(Type.Array(WebhookRecord), [WEBHOOK_EXAMPLE]), ...errorResponses([]) },
      },
    },
    async (req) => ({ data: (await webhooks.list(callerOf(req))).map(webhookRecord) }),
  );

  app.post(
    '/webhooks/',
    {
      config: { audit: 'webhook.create' },
      schema: {
        summary: 'Register a webhook; the answer is the only time its secret is shown',
        description:
          'Each event of the kinds asked for is POSTed to `url` as JSON (the Event schema), with `X-Hangar-Event`, `X-Hangar-Event-Id`, `X-Hangar-Delivery` (the same on every attempt) and `X-Hangar-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + body)>`. A non-2xx answer or no answer within 10 s is retried with exponential backoff for HANGAR_WEBHOOK_RETRY_WINDOW. Targets on hangar\'s own listeners and cloud metadata addresses are refused, and loopback, private and link-local ones unless HANGAR_WEBHOOK_ALLOW_PRIVATE.',
        tags,
        headers: IdempotencyHeaders,
        body: WebhookCreateBody,
        response: {
          200: Data(CreatedWebhook, CREATED_WEBHOOK_EXAMPLE),
          ...errorResponses([...WITH_BODY, ...IDEMPOTENT, 'INVALID_VALUE', 'TARGET_NOT_ALLOWED', 'QUOTA_EXCEEDED']),
        },
      },
    },
    async (req, reply) => {
      const w = await webhooks.create(callerOf(req), req.body);
      void reply.header('cache-control', NO_STORE);
      return { data: { ...webhookRecord(w), secret: w.secret } };
    },
  );

  app.get(
    '/webhooks/:webhook_id/',
    {
      schema: {
        summary: 'One webhook, without its secret',
        tags,
        params: WebhookParams,
        response: { 200: Data(WebhookRecord, WEBHOOK_EXAMPLE), ...errorResponses([...WITH_PATH, 'WEBHOOK_NOT_FOUND']) },
      },
    },
    async (req) => ({ data: webhookRecord(await webhooks.get(callerOf(req), req.params.webhook_id)) }),
  );

  app.delete(
    '/webhooks/:webhook_id/',
    {
      config: { audit: 'webhook.delete' },
      schema: {
        summary: 'Delete a webhook: once answered, its receiver gets nothing more',
        tags,
        params: WebhookParams,
        response: { 200: Data(Type.Object({}, { description: 'Empty' }), {}), ...errorResponses([...WITH_PATH, 'WEBHOOK_NOT_FOUND']) },
      },
    },
    async (req) => {
      await webhooks.delete(callerOf(req), req.params.webhook_id);
      return { data: {} };
    },
  );

  app.post(
    '/webhooks/:webhook_id/rotate-secret',
    {
      config: { audit: 'webhook.rotate' },
      schema: {
        summary: 'A new signing secret, shown in this answer only; the old one also signs for 24 hours',
        description:
          "Takes no body (or `{}`). Until `previous_secret_until`, X-Hangar-Signature carries two v1= values: the new secret's and the old one's.",
        tags,
        params: WebhookParams,
        response: {
          200: Data(CreatedWebhook, { ...CREATED_WEBHOOK_EXAMPLE, previous_secret_until: { $date: 1795338000000 } }),
          ...errorResponses([...WITH_PATH, ...WITH_BODY, ...IDEMPOTENT, 'WEBHOOK_NOT_FOUND']),
        },
      },
    },
    async (req, reply) => {
      assertNoBody(req.body);
      const w = await webhooks.rotateSecret(callerOf(req), req.params.webhook_id);
      void reply.header('cache-control', NO_STORE);
      return { data: { ...webhookRecord(w), secret: w.secret } };
    },
  );

  app.get(
    '/webhooks/:webhook_id/deliveries',
    {
      schema: {
        summary: "A webhook's deliveries, newest first: state, attempts, last status and error",
        tags,
        params: WebhookParams,
        querystring: DeliveriesQuery,
        response: {
          200: Data(Type.Array(DeliveryRecord), [DELIVERY_EXAMPLE]),
          ...errorResponses([...WITH_PATH, 'INVALID_VALUE', 'WEBHOOK_NOT_FOUND']),
        },
      },
    },
    async (req) => {
      const q = req.query;
      const states = q.state
        ?.split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
      const list = await webhooks.deliveries(callerOf(req), req.params.webhook_id, {
        limit: Math.min(500, Math.max(1, Number(q.limit ?? 100))),
        ...(q.before !== undefined ? { beforeEventId: Number(q.before) } : {}),
        ...(states ? { states } : {}),
      });
      return { data: list.map(deliveryRecord) };
    },
  );
}
