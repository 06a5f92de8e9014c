import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions, onSendHookHandler } from 'fastify';

/**
 * Fields whose value is a credential: an answer carrying one must not be kept by any cache. `env`
 * is the environment of a shell command, where an engine's password travels (REDISCLI_AUTH).
 */
export const SECRET_FIELDS: ReadonlySet<string> = new Set(['password', 'api_key', 'token', 'pass_key', 'secret', 'private_key', 'env']);

/** Whether a field of this name and schema holds a credential: a flag named `password` does not. */
function secretField(name: string, schema: unknown): boolean {
  return SECRET_FIELDS.has(name) && (schema as { type?: unknown } | null)?.type !== 'boolean';
}

/**
 * Whether a JSON schema describes a value with a secret field at any depth (objects, arrays and
 * unions of them). References to shared schemas are not followed: secret records are inline.
 */
export function carriesSecret(schema: unknown): boolean {
  if (schema === null || typeof schema !== 'object') return false;
  const s = schema as Record<string, unknown>;
  const props = s.properties as Record<string, unknown> | undefined;
  if (props && Object.entries(props).some(([name, sub]) => secretField(name, sub) || carriesSecret(sub))) return true;
  if (carriesSecret(s.items)) return true;
  return ['anyOf', 'oneOf', 'allOf'].some((k) => Array.isArray(s[k]) && (s[k] as unknown[]).some(carriesSecret));
}

const noStore: onSendHookHandler = (_req: FastifyRequest, reply: FastifyReply, payload: unknown, done) => {
  void reply.header('cache-control', 'no-store');
  done(null, payload);
};

/**
 * `Cache-Control: no-store` on every answer of a route whose success carries a secret (instance
 * records with their password and api_key, lists of them, tokens, new API key pairs, webhook
 * signing secrets, the private keys of client certificates, shell commands), derived
 * from the route's response schema so that no such route can be left out: an onSend hook of
 * its own, which also covers answers replayed for an Idempotency-Key and errors.
 */
export function registerNoStore(app: FastifyInstance): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    const ok = (route.schema?.response as Record<string, unknown> | undefined)?.[200];
    if (!carriesSecret(ok)) return;
    const existing = route.onSend === undefined ? [] : Array.isArray(route.onSend) ? route.onSend : [route.onSend];
    route.onSend = [...existing, noStore] as RouteOptions['onSend'];
  });
}
