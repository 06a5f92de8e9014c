import type { FastifyInstance, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { ClientCertificate } from '../../domain/tls.js';
import type { Operation } from '../../domain/operations.js';
import type { InstanceTls } from '../../service/tls.js';
import { type AppDeps, answerStarted, callerOf, originOf } from '../context.js';
import { OPERATION_HEADERS } from '../schemas/operations.js';
import { IdempotencyHeaders } from '../plugins/idempotency.js';
import { Data, NameParams } from '../schemas/common.js';
import { IDEMPOTENT, WITH_BODY, WITH_PATH, errorResponses } from '../schemas/error-responses.js';
import {
  CLIENT_CERT_CREATED_EXAMPLE,
  CLIENT_CERT_EXAMPLE,
  ClientCertCreateBody,
  ClientCertCreated,
  ClientCertParams,
  ClientCertRecord,
  INSTANCE_TLS_EXAMPLE,
  InstanceTlsRecord,
  PEM_EXAMPLE,
  TlsModeBody,
} from '../schemas/tls.js';

/** The media type of the CA certificate's answer. */
export const PEM_TYPE = 'application/x-pem-file';

const iso = (ms: number) => new Date(ms).toISOString();

function clientCertRecord(c: ClientCertificate) {
  return {
    serial: c.serial,
    common_name: c.commonName,
    fingerprint_sha256: c.fingerprint256,
    not_before: iso(c.notBefore),
    not_after: iso(c.notAfter),
    revoked_at: c.revokedAt === null ? null : iso(c.revokedAt),
  };
}

function instanceTlsRecord(t: InstanceTls) {
  return {
    mode: t.mode,
    tls_client_auth: t.clientAuth,
    serial: t.certificate.serial,
    fingerprint_sha256: t.certificate.fingerprint256,
    not_before: iso(t.certificate.notBefore),
    not_after: iso(t.certificate.notAfter),
    ca_fingerprint_sha256: t.caFingerprint256,
  };
}

/** The body of an answer that may have started an operation (named in the headers when it did). */
function maybeStarted<T>(reply: FastifyReply, out: { result: T; operation?: Operation }): T {
  return out.operation ? answerStarted(reply, { result: out.result, operation: out.operation }) : out.result;
}

/**
 * TLS of instance connections (an addition to the ObjectRocket API): the deployment's CA,
 * each instance's server certificate, and client certificates of mutual TLS.
 */
export function tlsRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { tls } = deps.services;
  const tags = ['tls'];

  app.get(
    '/tls/ca',
    {
      // Public: a CA certificate holds no secret, and clients need it before they hold a token
      // (README, "TLS on instance connections").
      config: { auth: 'none' },
      schema: {
        summary: "The deployment's CA certificate (PEM), which signs every instance's certificate (no authentication)",
        description:
          'Put it in the trust store of clients (`tlsCAFile`, `--cacert`, `ca`); it is the same for every instance of this hangar.',
        tags,
        response: {
          200: {
            description: 'The CA certificate, PEM',
            content: { [PEM_TYPE]: { schema: { type: 'string' }, example: PEM_EXAMPLE } },
          },
          ...errorResponses(['RATE_LIMITED', 'STORE_UNAVAILABLE', 'TLS_UNAVAILABLE'], { authenticated: false }),
        },
      },
    },
    async (_req, reply) =>
      reply
        .type(PEM_TYPE)
        .header('content-disposition', 'inline; filename="hangar-ca.pem"')
        .send(await tls.caCertificatePem()),
  );

  app.get(
    '/instances/:instance_name/tls/',
    {
      schema: {
        summary: "The instance's TLS: mode and current server certificate",
        description:
          'The certificate is signed by the CA of GET /v2/tls/ca and names the address clients connect to; it is made on the first read, and replaced 30 days before its end.',
        tags,
        params: NameParams,
        response: {
          200: Data(InstanceTlsRecord, INSTANCE_TLS_EXAMPLE),
          ...errorResponses([...WITH_PATH, 'INSTANCE_NOT_FOUND', 'INSTANCE_DELETING', 'TLS_UNAVAILABLE']),
        },
      },
    },
    async (req) => ({ data: instanceTlsRecord(await tls.instanceTls(callerOf(req), req.params.instance_name)) }),
  );

  app.post(
    '/instances/:instance_name/tls/',
    {
      config: { audit: 'tls.mode' },
      schema: {
        summary: 'Change how clients reach a redis instance over TLS (mode, mutual TLS), without interrupting the listeners that stay',
        description:
          'An operation (X-Operation-Id) that succeeds once the edge serves the new mode; the answer comes when it did, or after 5 s. `off` -> `preferred` adds the TLS listeners beside the plain ones; `preferred` -> `required` makes the plain ones refuse clients and closes their open connections (`connect_string` then names the TLS address, rediss://). No operation when the instance is so already.',
        tags,
        params: NameParams,
        headers: IdempotencyHeaders,
        body: TlsModeBody,
        response: {
          200: { ...Data(InstanceTlsRecord, { ...INSTANCE_TLS_EXAMPLE, mode: 'required' }), headers: OPERATION_HEADERS },
          ...errorResponses([
            ...WITH_PATH,
            ...WITH_BODY,
            ...IDEMPOTENT,
            'INVALID_VALUE',
            'INSTANCE_NOT_FOUND',
            'INSTANCE_DELETING',
            'TLS_UNAVAILABLE',
          ]),
        },
      },
    },
    async (req, reply) => {
      const change = { mode: req.body.mode, ...(req.body.tls_client_auth === undefined ? {} : { clientAuth: req.body.tls_client_auth }) };
      const out = await tls.setMode(callerOf(req), req.params.instance_name, change, originOf(req));
      return { data: instanceTlsRecord(maybeStarted(reply, out)) };
    },
  );

  app.post(
    '/instances/:instance_name/tls/rotate',
    {
      config: { audit: 'tls.rotate' },
      schema: {
        summary: 'Give the instance a new server certificate now, without dropping a connection',
        description:
          'An operation (X-Operation-Id) that succeeds once the edge presents the new certificate: connections open before keep working, new ones see the new serial. The answer is the new certificate.',
        tags,
        params: NameParams,
        headers: IdempotencyHeaders,
        response: {
          200: { ...Data(InstanceTlsRecord, INSTANCE_TLS_EXAMPLE), headers: OPERATION_HEADERS },
          ...errorResponses([...WITH_PATH, ...IDEMPOTENT, 'INSTANCE_NOT_FOUND', 'INSTANCE_DELETING', 'TLS_UNAVAILABLE']),
        },
      },
    },
    async (req, reply) => ({
      data: instanceTlsRecord(answerStarted(reply, await tls.rotate(callerOf(req), req.params.instance_name, originOf(req)))),
    }),
  );

  const certs = '/instances/:instance_name/tls/client-certs';
  app.get(
    certs,
    {
      schema: {
        summary: "The instance's client certificates, oldest first, revoked ones included",
        tags,
        params: NameParams,
        response: {
          200: Data(Type.Array(ClientCertRecord), [CLIENT_CERT_EXAMPLE]),
          ...errorResponses([...WITH_PATH, 'INSTANCE_NOT_FOUND']),
        },
      },
    },
    async (req) => ({ data: (await tls.listClientCertificates(callerOf(req), req.params.instance_name)).map(clientCertRecord) }),
  );
  app.post(
    certs,
    {
      config: { audit: 'tls.client_cert.create' },
      schema: {
        summary: 'Issue a client certificate for mutual TLS; the answer is the only time its private key is shown',
        description:
          'Signed by the CA of GET /v2/tls/ca, extended key usage clientAuth, subject `O=hangar, OU=<instance id>, CN=<common_name>`. hangar keeps the certificate, not its key (an answer kept for an Idempotency-Key replay aside).',
        tags,
        params: NameParams,
        headers: IdempotencyHeaders,
        body: ClientCertCreateBody,
        response: {
          200: Data(ClientCertCreated, CLIENT_CERT_CREATED_EXAMPLE),
          ...errorResponses([
            ...WITH_PATH,
            ...WITH_BODY,
            ...IDEMPOTENT,
            'INVALID_VALUE',
            'INSTANCE_NOT_FOUND',
            'INSTANCE_DELETING',
            'TLS_UNAVAILABLE',
          ]),
        },
      },
    },
    async (req) => {
      const c = await tls.issueClientCertificate(callerOf(req), req.params.instance_name, {
        commonName: req.body.common_name,
        ...(req.body.valid_days === undefined ? {} : { validDays: req.body.valid_days }),
      });
      return {
        data: { certificate: c.certPem, private_key: c.keyPem, serial: c.serial, common_name: c.commonName, not_after: iso(c.notAfter) },
      };
    },
  );
  app.delete(
    `${certs}/:serial`,
    {
      config: { audit: 'tls.client_cert.revoke' },
      schema: {
        summary: 'Revoke a client certificate: the CRL of the instance lists it from then on',
        description:
          'An operation (X-Operation-Id) that succeeds once the edge refuses the certificate. Revoking a revoked certificate answers its record again, with the first revocation time (and no operation).',
        tags,
        params: ClientCertParams,
        response: {
          200: {
            ...Data(ClientCertRecord, { ...CLIENT_CERT_EXAMPLE, revoked_at: '2026-12-09T10:00:00.000Z' }),
            headers: OPERATION_HEADERS,
          },
          ...errorResponses([...WITH_PATH, 'INSTANCE_NOT_FOUND', 'INSTANCE_DELETING', 'CLIENT_CERTIFICATE_NOT_FOUND']),
        },
      },
    },
    async (req, reply) => ({
      data: clientCertRecord(
        maybeStarted(reply, await tls.revokeClientCertificate(callerOf(req), req.params.instance_name, req.params.serial, originOf(req))),
      ),
    }),
  );
}
