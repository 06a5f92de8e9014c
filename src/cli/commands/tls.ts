import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { HangarClient, InstanceTls } from '../../client/index.js';
import { TLS_MODES } from '../../domain/tls.js';
import { REMOTE_OPTIONS, type ClientCommand, type ClientContext, str } from '../client-command.js';
import { UsageError, json } from '../io.js';
import { type Env, configDir } from '../session.js';
import { fields, table } from '../table.js';

/**
 * Where the CLI keeps the CA certificate of the hangar at `url` (for the shells `hangar connect`
 * opens, and for the command it prints): `<config dir>/tls/<digest of the URL>-ca.pem`.
 */
export function caFileOf(env: Env, url: string): string {
  const digest = createHash('sha256').update(url).digest('hex').slice(0, 16);
  return join(configDir(env), 'tls', `${digest}-ca.pem`);
}

/** Fetches the CA certificate of the hangar at `url` and keeps it in caFileOf (written each time: the CA may have changed). */
export async function saveCaFile(client: HangarClient, env: Env, url: string): Promise<string> {
  const file = caFileOf(env, url);
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  // a CA certificate holds no secret
  writeFileSync(file, await client.tlsCaCertificate(), { mode: 0o644 });
  return file;
}

/** Writes a file for its owner alone (a private key). */
function writePrivate(file: string, content: string): void {
  writeFileSync(file, content, { mode: 0o600 });
  chmodSync(file, 0o600);
}

function showTls(name: string, t: InstanceTls): string {
  return fields([
    ['instance', name],
    ['mode', t.mode],
    ['client certificates', t.tls_client_auth ? 'required' : 'not asked for'],
    ['serial', t.serial],
    ['sha-256', t.fingerprint_sha256],
    ['valid', `${t.not_before} to ${t.not_after}`],
    ['ca sha-256', t.ca_fingerprint_sha256],
  ]);
}

async function ca(ctx: ClientContext): Promise<void> {
  const { client } = ctx.connection();
  const out = str(ctx.opts.out);
  const pem = await client.tlsCaCertificate();
  if (out === undefined) {
    ctx.io.out(pem.trimEnd());
    return;
  }
  writeFileSync(out, pem, { mode: 0o644 });
  ctx.io.out(ctx.opts.json === true ? json({ file: out }) : `The CA certificate is in ${out}: give it to clients (--cacert, tlsCAFile).`);
}

async function show(ctx: ClientContext): Promise<void> {
  const name = ctx.args[0]!;
  const t = await ctx.connection().client.instanceTls(name);
  ctx.io.out(ctx.opts.json === true ? json(t) : showTls(name, t));
}

async function rotate(ctx: ClientContext): Promise<void> {
  const name = ctx.args[0]!;
  const { client } = ctx.connection();
  const before = await client.instanceTls(name);
  let operation: string | undefined;
  const t = await client.rotateTlsCertificate(name, { onOperation: (id) => (operation = id) });
  if (ctx.opts.json === true) ctx.io.out(json({ ...t, previous_serial: before.serial, operation: operation ?? null }));
  else
    ctx.io.out(
      `${name} has a new certificate, ${t.serial} (was ${before.serial}); connections open keep theirs.${operation ? ` Follow it: hangar operations show ${operation}` : ''}`,
    );
}

async function mode(ctx: ClientContext): Promise<void> {
  const [name, wanted] = ctx.args as [string, string];
  if (!(TLS_MODES as readonly string[]).includes(wanted))
    throw new UsageError(`MODE must be one of ${TLS_MODES.join(', ')}; got "${wanted}"`);
  if (ctx.opts['client-auth'] === true && ctx.opts['no-client-auth'] === true)
    throw new UsageError('--client-auth and --no-client-auth go one at a time');
  const clientAuth = ctx.opts['client-auth'] === true ? true : ctx.opts['no-client-auth'] === true ? false : undefined;
  let operation: string | undefined;
  const t = await ctx
    .connection()
    .client.setTlsMode(
      name,
      { mode: wanted, ...(clientAuth !== undefined ? { tls_client_auth: clientAuth } : {}) },
      { onOperation: (id) => (operation = id) },
    );
  if (ctx.opts.json === true) ctx.io.out(json({ ...t, operation: operation ?? null }));
  else if (!operation) ctx.io.out(`${name} is ${t.mode} already${t.tls_client_auth ? ', with client certificates' : ''}.`);
  else
    ctx.io.out(
      `${name} is ${t.mode}${t.tls_client_auth ? ', with client certificates' : ''} (operation ${operation}); its record names its addresses: hangar instances show ${name}`,
    );
}

async function clientCert(ctx: ClientContext): Promise<void> {
  const name = ctx.args[0]!;
  const cn = str(ctx.opts.cn);
  if (cn === undefined) throw new UsageError("--cn is required: the name of the client (its certificate's common name)");
  const days = str(ctx.opts.days);
  if (days !== undefined && !/^\d+$/.test(days)) throw new UsageError(`--days must be a number of days, got "${days}"`);
  const out = str(ctx.opts.out);
  const made = await ctx
    .connection()
    .client.createClientCertificate(name, { common_name: cn, ...(days !== undefined ? { valid_days: Number(days) } : {}) });
  if (out === undefined) {
    // the key is shown this once: to stdout, where the caller asked for it
    ctx.io.out(json(made));
    return;
  }
  writeFileSync(`${out}.crt`, made.certificate, { mode: 0o644 });
  writePrivate(`${out}.key`, made.private_key);
  ctx.io.out(
    ctx.opts.json === true
      ? json({
          serial: made.serial,
          common_name: made.common_name,
          not_after: made.not_after,
          certificate: `${out}.crt`,
          private_key: `${out}.key`,
        })
      : `Client certificate ${made.serial} for "${cn}" (until ${made.not_after}): ${out}.crt, its key in ${out}.key (0600; hangar does not keep it).`,
  );
}

async function clientCerts(ctx: ClientContext): Promise<void> {
  const name = ctx.args[0]!;
  const certs = await ctx.connection().client.listClientCertificates(name);
  if (ctx.opts.json === true) ctx.io.out(json(certs));
  else if (certs.length === 0)
    ctx.io.out(`No client certificates for ${name}. Issue one: hangar tls client-cert ${name} --cn NAME --out FILE`);
  else
    ctx.io.out(
      table(
        ['SERIAL', 'COMMON NAME', 'UNTIL', 'REVOKED'],
        certs.map((c) => [c.serial, c.common_name, c.not_after, c.revoked_at ?? '-']),
      ),
    );
}

async function revoke(ctx: ClientContext): Promise<void> {
  const [name, serial] = ctx.args as [string, string];
  let operation: string | undefined;
  const c = await ctx.connection().client.revokeClientCertificate(name, serial, { onOperation: (id) => (operation = id) });
  ctx.io.out(
    ctx.opts.json === true
      ? json({ ...c, operation: operation ?? null })
      : `Client certificate ${c.serial} ("${c.common_name}") of ${name} is revoked since ${c.revoked_at}: the edge refuses it.`,
  );
}

const NAME_ONLY = { ...REMOTE_OPTIONS };

export const tlsCommands: readonly ClientCommand[] = [
  {
    kind: 'client',
    name: 'tls ca',
    summary: "Print (or save) the deployment's CA certificate, which clients verify instances against",
    args: [],
    remote: true,
    options: { ...REMOTE_OPTIONS, out: { type: 'string', value: 'FILE', description: 'write it to FILE instead of printing it' } },
    examples: ['hangar tls ca --out hangar-ca.pem', 'hangar tls ca | openssl x509 -noout -fingerprint -sha256'],
    details:
      'Needs no login. Fetched over plain HTTP it proves nothing about who answered: compare its fingerprint out of band, or use the API over HTTPS.',
    run: ca,
  },
  {
    kind: 'client',
    name: 'tls show',
    summary: "An instance's TLS: mode, client certificates, its certificate's serial and validity",
    args: ['NAME'],
    remote: true,
    options: NAME_ONLY,
    examples: ['hangar tls show cache', 'hangar tls show cache --json'],
    run: show,
  },
  {
    kind: 'client',
    name: 'tls rotate',
    summary: 'Give an instance a new certificate now (connections open keep working)',
    args: ['NAME'],
    remote: true,
    options: NAME_ONLY,
    examples: ['hangar tls rotate cache'],
    run: rotate,
  },
  {
    kind: 'client',
    name: 'tls mode',
    fields: { mode: 'MODE', tls_client_auth: '--client-auth' },
    summary: 'How clients reach a redis instance over TLS: off, preferred (plain and TLS) or required',
    args: ['NAME', 'MODE'],
    remote: true,
    options: {
      ...REMOTE_OPTIONS,
      'client-auth': { type: 'boolean', description: 'ask clients for a certificate of the instance (mutual TLS)' },
      'no-client-auth': { type: 'boolean', description: 'stop asking for client certificates' },
    },
    examples: ['hangar tls mode cache preferred', 'hangar tls mode cache required', 'hangar tls mode cache required --client-auth'],
    details:
      'Listeners that stay keep their connections: off -> preferred adds the TLS listeners, preferred -> required makes the plain ones refuse and closes their connections. Without --client-auth or --no-client-auth, mutual TLS stays as it is (off with mode off).',
    run: mode,
  },
  {
    kind: 'client',
    name: 'tls client-cert',
    fields: { common_name: '--cn', valid_days: '--days' },
    summary: 'Issue a client certificate for mutual TLS (its key is shown, or written, this once)',
    args: ['NAME'],
    remote: true,
    options: {
      ...REMOTE_OPTIONS,
      cn: { type: 'string', value: 'NAME', description: "the client's name (the certificate's common name)" },
      days: { type: 'string', value: 'DAYS', description: 'how long it is valid (default 397, at most 825)' },
      out: { type: 'string', value: 'PREFIX', description: 'write PREFIX.crt and PREFIX.key (0600) instead of printing them' },
    },
    examples: [
      'hangar tls client-cert cache --cn billing-worker --out billing',
      'hangar connect cache --cert billing.crt --key billing.key',
    ],
    run: clientCert,
  },
  {
    kind: 'client',
    name: 'tls client-certs',
    summary: "An instance's client certificates (revoked ones too)",
    args: ['NAME'],
    remote: true,
    options: NAME_ONLY,
    examples: ['hangar tls client-certs cache'],
    run: clientCerts,
  },
  {
    kind: 'client',
    name: 'tls revoke',
    summary: 'Revoke a client certificate: the edge refuses it from then on',
    args: ['NAME', 'SERIAL'],
    remote: true,
    options: NAME_ONLY,
    examples: ['hangar tls revoke cache 5C1F0A9B2E7D4C38A6B0E1F2D3C4B5A6'],
    run: revoke,
  },
];
