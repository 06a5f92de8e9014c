import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { IdempotencyService } from '../../service/idempotency.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The Idempotency-Key this request reserved, to record its answer under. */
    idempotency?: { accountId: string; key: string };
  }
}

/** The header, documented (and bounded) on every route that changes something. */
export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      description:
        'Makes a POST or PATCH safe to repeat: a repeat with the same key and body gets the first answer without the work being done again; the same key with another body is a 409. Keys are kept 24 hours.',
    }),
  ),
});

const REPLAYED = 'idempotent-replayed';

/**
 * `Idempotency-Key` on POST and PATCH: the first request with a key reserves it and its answer
 * is recorded; a repeat with the same key and the same request gets that answer again (with
 * `Idempotent-Replayed: true`) and does nothing; the same key with another request is a 409,
 * and so is a repeat while the first is still running. A 5xx is not recorded, so a retry runs
 * the request again. Keys belong to the account and expire after 24 hours.
 */
export function registerIdempotency(app: FastifyInstance, deps: { services: { idempotency: IdempotencyService } }): void {
  const { idempotency } = deps.services;
  app.decorateRequest('idempotency', undefined);

  // Callback hooks: a request without a key (every read) goes on without a promise of its own.
  app.addHook('preHandler', (req, reply, done) => {
    if (req.method !== 'POST' && req.method !== 'PATCH') {
      done();
      return;
    }
    const key = req.headers['idempotency-key'];
    if (typeof key !== 'string' || !req.caller) {
      done();
      return;
    }
    const accountId = req.caller.accountId;
    idempotency.reserve(accountId, key, requestHash(req)).then(
      (reservation) => {
        if (reservation.kind === 'replay') {
          // The answer is sent here; the handler does not run.
          replay(reply, reservation.statusCode, reservation.body, reservation.operationId);
          return;
        }
        req.idempotency = { accountId, key };
        done();
      },
      (err: unknown) => done(err as Error),
    );
  });

  app.addHook('onSend', (req, reply, payload, done) => {
    const held = req.idempotency;
    if (!held || reply.getHeader(REPLAYED)) {
      done(null, payload);
      return;
    }
    settle(req, reply, held, payload).then(
      () => done(null, payload),
      (err: unknown) => done(err as Error),
    );
  });

  async function settle(
    req: FastifyRequest,
    reply: FastifyReply,
    held: { accountId: string; key: string },
    payload: unknown,
  ): Promise<void> {
    req.idempotency = undefined;
    if (reply.statusCode >= 500 || typeof payload !== 'string') {
      await idempotency.release(held.accountId, held.key).catch((err: unknown) => req.log.warn({ err }, 'idempotency key not released'));
    } else {
      const operation = reply.getHeader('x-operation-id');
      await idempotency
        .complete(held.accountId, held.key, reply.statusCode, payload, typeof operation === 'string' ? operation : undefined)
        .catch((err: unknown) => req.log.warn({ err }, 'idempotent answer not recorded'));
    }
  }
}

function replay(reply: FastifyReply, status: number, body: string, operationId: string | undefined): FastifyReply {
  // The operation the first request started is named again, as in its answer.
  if (operationId) void reply.header('x-operation-id', operationId).header('location', `/v2/operations/${operationId}/`);
  return reply.code(status).header(REPLAYED, 'true').type('application/json; charset=utf-8').send(body);
}

/** What makes two requests "the same": method, route, path parameters and body. */
function requestHash(req: FastifyRequest): string {
  return createHash('sha256')
    .update(JSON.stringify([req.method, req.routeOptions.url, req.params ?? null, req.body ?? null]))
    .digest('hex');
}
