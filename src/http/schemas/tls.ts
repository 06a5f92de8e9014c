import { Type } from 'typebox';
import { CLIENT_MAX_VALID_DAYS, CLIENT_VALID_DAYS, TLS_MODES } from '../../domain/tls.js';
import { InstanceNameParam } from './common.js';

const SERIAL = '5C1F0A9B2E7D4C38A6B0E1F2D3C4B5A6';
const FINGERPRINT = '1F:E8:9E:28:8E:54:D6:70:68:38:7B:22:EE:27:6F:A6:4C:79:98:74:46:AF:72:BA:6B:46:45:6B:E5:C8:BB:6E';
const CA_FINGERPRINT = '8A:31:0C:5D:92:7E:44:B1:0F:6A:D3:29:E8:57:1B:C4:60:9D:F2:35:A7:18:4E:CB:03:96:5F:E1:7C:2A:B8:D4';

/** A certificate in PEM, shortened (examples only). */
export const PEM_EXAMPLE =
  '-----BEGIN CERTIFICATE-----\nMIIBtjCCAVugAwIBAgIQXB8Kmy59TDimsOHy08S1pjAKBggqhkjOPQQDAjAvMQ8w\n-----END CERTIFICATE-----\n';
const KEY_EXAMPLE =
  '-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg3a9LqWuZ0v7bS1x0\n-----END PRIVATE KEY-----\n';

const serial = Type.String({
  pattern: '^[0-9A-F]{1,64}$',
  description: 'Serial number, hexadecimal, upper case (as `openssl x509 -serial` shows it, without `serial=`)',
});
const fingerprint = (what: string) =>
  Type.String({ pattern: '^([0-9A-F]{2}:){31}[0-9A-F]{2}$', description: `SHA-256 fingerprint of ${what} (DER), \`AB:CD:...\`` });
const time = (what: string) => Type.String({ format: 'date-time', description: `${what} (RFC 3339, UTC)` });

export const INSTANCE_TLS_EXAMPLE = {
  mode: 'preferred',
  tls_client_auth: false,
  serial: SERIAL,
  fingerprint_sha256: FINGERPRINT,
  not_before: '2026-12-08T08:55:00.000Z',
  not_after: '2028-01-09T09:00:00.000Z',
  ca_fingerprint_sha256: CA_FINGERPRINT,
};

/** An instance's TLS: its mode and its current server certificate. */
export const InstanceTlsRecord = Type.Object(
  {
    mode: Type.Union([Type.Literal('off'), Type.Literal('preferred'), Type.Literal('required')], {
      description:
        'How clients reach the instance over TLS: `off` (plain only), `preferred` (plain and TLS), `required` (TLS only). Redis instances choose it; mongodb_sharded and Elasticsearch, whose TLS listeners serve beside the plain ones, read `preferred`',
    }),
    tls_client_auth: Type.Boolean({ description: 'Its TLS listeners ask for a client certificate of the instance (mutual TLS)' }),
    serial,
    fingerprint_sha256: fingerprint('the certificate'),
    not_before: time('Start of its validity'),
    not_after: time('End of its validity; hangar replaces it 30 days before'),
    ca_fingerprint_sha256: fingerprint('the CA that signed it (GET /v2/tls/ca)'),
  },
  { $id: 'InstanceTls', description: "The instance's TLS and its current server certificate", examples: [INSTANCE_TLS_EXAMPLE] },
);

export const TlsModeBody = Type.Object(
  {
    mode: Type.String({
      description: `${TLS_MODES.join(', ')}: how clients reach the instance over TLS (redis instances). Listeners that stay keep their connections; the plain ones with \`required\` and the TLS ones with \`off\` refuse clients and close what is open`,
    }),
    tls_client_auth: Type.Optional(
      Type.Boolean({
        description:
          'Ask clients for a certificate of the instance (POST .../tls/client-certs), signed by the CA of GET /v2/tls/ca; default: as it is (false with mode off)',
      }),
    ),
  },
  {
    additionalProperties: false,
    examples: [{ mode: 'required' }, { mode: 'preferred', tls_client_auth: true }],
  },
);

export const ClientCertCreateBody = Type.Object(
  {
    common_name: Type.String({
      minLength: 1,
      maxLength: 64,
      description:
        'The certificate subject\'s CN: 1 to 64 letters, digits, spaces, ".", "_", "@", ":" or "-", starting with a letter or digit',
    }),
    valid_days: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: CLIENT_MAX_VALID_DAYS,
        description: `How long it is valid, in days (default ${CLIENT_VALID_DAYS})`,
      }),
    ),
  },
  { additionalProperties: false, examples: [{ common_name: 'billing-worker' }, { common_name: 'ci', valid_days: 30 }] },
);

export const CLIENT_CERT_EXAMPLE = {
  serial: SERIAL,
  common_name: 'billing-worker',
  fingerprint_sha256: FINGERPRINT,
  not_before: '2026-12-08T08:55:00.000Z',
  not_after: '2028-01-09T09:00:00.000Z',
  revoked_at: null,
};

/** A client certificate as listed: never its private key. */
export const ClientCertRecord = Type.Object(
  {
    serial,
    common_name: Type.String({ description: "The subject's CN" }),
    fingerprint_sha256: fingerprint('the certificate'),
    not_before: time('Start of its validity'),
    not_after: time('End of its validity'),
    revoked_at: Type.Union([time('When it was revoked'), Type.Null()], { description: 'When it was revoked (RFC 3339), or null' }),
  },
  {
    $id: 'ClientCertificate',
    description: 'A client certificate of mutual TLS (its private key is not kept)',
    examples: [CLIENT_CERT_EXAMPLE],
  },
);

export const CLIENT_CERT_CREATED_EXAMPLE = {
  certificate: PEM_EXAMPLE,
  private_key: KEY_EXAMPLE,
  serial: SERIAL,
  common_name: 'billing-worker',
  not_after: '2028-01-09T09:00:00.000Z',
};

/** The answer to an issue: the only time the private key is shown. */
export const ClientCertCreated = Type.Object(
  {
    certificate: Type.String({ description: 'The certificate (PEM), signed by the CA of GET /v2/tls/ca' }),
    private_key: Type.String({
      description:
        'Its private key (PEM, EC P-256, unencrypted), shown this once: hangar does not keep it (but in the answer kept 24 hours when the request carries an Idempotency-Key)',
    }),
    serial,
    common_name: Type.String({ description: "The subject's CN" }),
    not_after: time('End of its validity'),
  },
  { description: 'The new client certificate and its private key', examples: [CLIENT_CERT_CREATED_EXAMPLE] },
);

export const ClientCertParams = Type.Object({
  instance_name: InstanceNameParam,
  serial: Type.String({ maxLength: 64, description: 'The serial number (from the list; any case)', examples: [SERIAL] }),
});
