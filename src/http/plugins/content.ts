import { isUtf8 } from 'node:buffer';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errors } from '../../domain/errors.js';

const JSON_TYPE = /^application\/([\w.+-]+\+)?json\s*(;|$)/i;

/**
 * Why the strict parser refused a body: it is not JSON at all, or it is, with a key that is
 * refused (`__proto__`, or `constructor` holding `prototype`), named with where it is.
 */
function refusal(body: string): Error {
  let plain: unknown;
  try {
    plain = JSON.parse(body);
  } catch {
    return errors.invalidBody('the body is not valid JSON');
  }
  const where = forbiddenKey(plain);
  if (where === undefined) return errors.invalidBody('the body is not valid JSON');
  return errors.invalidBody(
    `the body is valid JSON, but its key "${where.key}" (at ${where.path}) is refused: a key that can reach an object's prototype (__proto__, constructor.prototype) could change how the server's own objects behave (prototype pollution); remove it`,
    where.path,
  );
}

/** The first refused key of a parsed body and its path (`acls[0].__proto__`); walked without recursion (bodies nest deep). */
function forbiddenKey(root: unknown): { key: string; path: string } | undefined {
  const stack: { value: unknown; path: string }[] = [{ value: root, path: '' }];
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (typeof value !== 'object' || value === null) continue;
    const isArray = Array.isArray(value);
    const children = Object.entries(value).map(([k, v]) => ({ k, value: v, path: isArray ? `${path}[${k}]` : path ? `${path}.${k}` : k }));
    for (const c of isArray ? [] : children) {
      if (c.k === '__proto__') return { key: '__proto__', path: c.path };
      if (c.k === 'constructor' && typeof c.value === 'object' && c.value !== null && Object.hasOwn(c.value, 'prototype')) {
        return { key: 'constructor.prototype', path: `${c.path}.prototype` };
      }
    }
    // depth first, in the body's order
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
  }
  return undefined;
}

/**
 * Bodies are JSON. Real clients send them with `Content-Type: application/json`, or with no
 * Content-Type at all (a Go SDK), or send an empty body labelled JSON (the python client, on
 * body-less requests): all three are accepted, and an empty Content-Type header counts as
 * none. Any other declared type is a 415.
 * `__proto__` and `constructor.prototype` keys are refused (secure-json-parse), and so are
 * bytes that are not UTF-8 (decoding them would slip replacement characters into names).
 */
export function registerJsonBodies(app: FastifyInstance): void {
  const strictJson = app.getDefaultJsonParser('error', 'error');
  const parse = (req: FastifyRequest, raw: Buffer, done: (err: Error | null, body?: unknown) => void) => {
    if (!isUtf8(raw)) return done(errors.invalidBody('the body is not valid UTF-8'));
    const body = raw.toString('utf8');
    if (body.trim() === '') return done(null, undefined);
    strictJson(req, body, (err, value) => {
      if (err) return done(refusal(body));
      done(null, value);
    });
  };
  // An empty `Content-Type:` header declares nothing: it is taken like none (the framework
  // would refuse it as an invalid media type before any parser is asked).
  app.addHook('onRequest', async (req) => {
    const type = req.raw.headers['content-type'];
    if (typeof type === 'string' && type.trim() === '') delete req.raw.headers['content-type'];
  });
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser(JSON_TYPE, { parseAs: 'buffer' }, (req, body, done) => parse(req, body as Buffer, done));
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (req, body, done) => {
    if (req.headers['content-type'] !== undefined) {
      const e = new Error('unsupported media type') as Error & { code: string; statusCode: number };
      e.code = 'FST_ERR_CTP_INVALID_MEDIA_TYPE';
      e.statusCode = 415;
      return done(e);
    }
    parse(req, body as Buffer, done);
  });
}
