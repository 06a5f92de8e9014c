import { isUtf8 } from 'node:buffer';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errors } from '../../domain/errors.js';

const JSON_TYPE = /^application\/([\w.+-]+\+)?json\s*(;|$)/i;

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
      if (err) {
        const e = errors.invalidBody(
          /prototype/i.test(err.message)
            ? 'the body contains a forbidden key (__proto__ or constructor.prototype)'
            : 'the body is not valid JSON',
        );
        return done(e);
      }
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
