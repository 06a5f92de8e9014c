import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { errors } from '../../domain/errors.js';
import { isKindFilter, kindSelected, type StreamEvent } from '../../domain/operations.js';
import { isObjectId } from '../../lib/ids.js';
import { type AppDeps, callerOf } from '../context.js';
import { errorResponses } from '../schemas/error-responses.js';
import { EVENT_EXAMPLE, StreamHeaders, StreamQuery } from '../schemas/operations.js';
import { eventRecord } from '../serializers.js';

/** A comment line every this often keeps proxies and the server's idle timeout from closing a quiet stream. */
const HEARTBEAT_MS = 15_000;
/** A client that lets this much pile up unread is disconnected; it resumes with Last-Event-ID. */
const MAX_BUFFERED = 4 * 1024 * 1024;
/** What EventSource waits before reconnecting. */
const RETRY_MS = 2000;
/** How often a stream checks that its credentials still hold (a revoked or expired token ends it). */
const CREDENTIAL_CHECK_MS = 5000;

const SSE_EXAMPLE = `retry: ${RETRY_MS}\n: connected\n\nid: 43\nevent: instance.state\ndata: ${JSON.stringify(EVENT_EXAMPLE)}\n\n`;

/** One SSE message: `id`, `event` (its kind) and `data` (the event record as JSON, one line). */
function message(e: StreamEvent): string {
  return `id: ${e.id}\nevent: ${e.kind}\ndata: ${JSON.stringify(eventRecord(e))}\n\n`;
}

/**
 * `GET /v2/events/stream`: Server-Sent Events of the account as they happen. The stream is
 * established when the headers arrive: every event after that moment is sent, in id order, and
 * a client that reconnects with `Last-Event-ID` (or `?last_event_id=`) first gets every event it
 * missed (within HANGAR_EVENT_RETENTION; older ones are announced by an `event: gap`).
 */
export function streamRoute(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { events, instances, accounts } = deps.services;
  const open = new Set<() => void>();
  app.addHook('preClose', async () => {
    for (const end of [...open]) end();
  });

  app.get(
    '/events/stream',
    {
      schema: {
        summary: "The account's events as they happen: Server-Sent Events (an addition to the ObjectRocket API)",
        description:
          'Each message has `id` (increasing), `event` (the kind) and `data` (the event as JSON: see the Event schema). Instance state changes and operation progress of the account, from now on, or after `Last-Event-ID` when resuming (every event in between is sent first). A comment line comes every 15 s. `event: gap` says events after the given id were pruned (HANGAR_EVENT_RETENTION): read the state again. `event: unauthorized` ends a stream whose token was revoked or expired (checked every 5 s): log in again and resume.',
        tags: ['events'],
        querystring: StreamQuery,
        headers: StreamHeaders,
        response: {
          200: {
            description: 'text/event-stream, until the client disconnects',
            content: {
              'text/event-stream': {
                schema: Type.String({ description: 'SSE messages' }),
                examples: { 'a state change': { summary: 'the stream as it starts, then one event', value: SSE_EXAMPLE } },
              },
            },
          },
          ...errorResponses(['INVALID_VALUE', 'INSTANCE_NOT_FOUND']),
        },
      },
    },
    async (req, reply) => {
      const caller = callerOf(req);
      const kinds = (req.query.kinds ?? '*')
        .split(',')
        .map((k) => k.trim())
        .filter((k) => k !== '');
      for (const k of kinds) {
        if (!isKindFilter(k))
          throw errors.invalidValue(
            'kinds',
            `"kinds": ${JSON.stringify(k)} is no kind of event; give kinds, families (operation, instance) or *`,
          );
      }
      let instanceId: string | undefined;
      if (req.query.instance !== undefined) {
        const inst = await instances.find(caller, req.query.instance);
        if (inst) instanceId = inst.id;
        else if (isObjectId(req.query.instance)) instanceId = req.query.instance;
        else throw errors.instanceNotFound(req.query.instance);
      }
      const header = req.headers['last-event-id'];
      const resumeFrom =
        typeof header === 'string' ? Number(header) : req.query.last_event_id !== undefined ? Number(req.query.last_event_id) : undefined;
      const { cursor, lost } = await events.start(resumeFrom);

      reply.hijack();
      const raw = reply.raw;
      const headers: Record<string, string | number | string[]> = {};
      for (const [k, v] of Object.entries(reply.getHeaders())) if (v !== undefined) headers[k] = v as string | number | string[];
      raw.writeHead(200, {
        ...headers,
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        'x-accel-buffering': 'no',
        connection: 'keep-alive',
      });
      raw.write(`retry: ${RETRY_MS}\n: connected\n\n`);
      if (lost)
        raw.write(
          `event: gap\ndata: ${JSON.stringify({ message: `events after ${resumeFrom} were pruned (HANGAR_EVENT_RETENTION): read the current state again` })}\n\n`,
        );

      let unsubscribe: (() => void) | undefined;
      let ended = false;
      const heartbeat = setInterval(() => raw.write(': keep-alive\n\n'), HEARTBEAT_MS);
      // A stream outlives no credential: once the token is revoked or expired (or the key pair
      // deleted), it says so and ends; the client logs in again and resumes with Last-Event-ID.
      const credentials = setInterval(() => {
        accounts.stillValid(caller).then(
          (valid) => {
            if (valid || ended) return;
            raw.write(
              `event: unauthorized\ndata: ${JSON.stringify({ message: 'the credentials of this stream are no longer valid (revoked or expired): log in again at GET /v2/tokens/ and resume with Last-Event-ID' })}\n\n`,
            );
            end();
          },
          (err: unknown) => req.log.warn({ err }, 'event stream credentials not checked'),
        );
      }, CREDENTIAL_CHECK_MS);
      const end = () => {
        if (ended) return;
        ended = true;
        clearInterval(heartbeat);
        clearInterval(credentials);
        unsubscribe?.();
        open.delete(end);
        if (!raw.writableEnded) raw.end();
      };
      open.add(end);
      raw.on('close', end);
      req.raw.on('close', () => {
        if (req.raw.destroyed || raw.destroyed) end();
      });
      try {
        const stop = await events.subscribe(
          {
            accountId: caller.accountId,
            wants: (e) => kindSelected(e.kind, kinds) && (instanceId === undefined || e.instanceId === instanceId),
            send: (e) => {
              if (ended) return;
              raw.write(message(e));
              if (raw.writableLength > MAX_BUFFERED) end();
            },
            onClose: end,
          },
          cursor,
        );
        if (ended) stop();
        else unsubscribe = stop;
      } catch (err) {
        if (!ended) req.log.warn({ err }, 'event stream ended');
        end();
      }
    },
  );
}
