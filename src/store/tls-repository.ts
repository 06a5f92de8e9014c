import type { Keyring } from '../lib/secrets.js';
import type { ClientCertificate, ServerCertificate } from '../domain/tls.js';
import type { Db, TlsClientCertificateRow, TlsServerCertificateRow } from './database.js';
import { isForeignKeyViolation, isUniqueViolation } from './errors.js';

/** The one row of the deployment's generated CA. */
const AUTHORITY_ID = 'deployment';

export interface StoredAuthority {
  readonly certPem: string;
  /** Unsealed. */
  readonly keyPem: string;
  readonly fingerprint256: string;
}

/** The generated CA, its key unsealed; undefined before the first start made one. */
export async function findAuthority(db: Db, keyring: Keyring): Promise<StoredAuthority | undefined> {
  const row = await db.selectFrom('tls_authorities').selectAll().where('id', '=', AUTHORITY_ID).executeTakeFirst();
  return row && { certPem: row.cert_pem, keyPem: keyring.decrypt(row.key_enc), fingerprint256: row.fingerprint };
}

/**
 * Records `ca` as the deployment's CA unless one is recorded already, and returns the one that
 * is: of replicas starting at once, each inserts the CA it made, the first insert wins and the
 * others' do nothing (a primary key, in SQLite and PostgreSQL alike), so all end with one CA.
 */
export async function insertAuthorityOnce(
  db: Db,
  keyring: Keyring,
  ca: StoredAuthority & { readonly createdBy: string; readonly now: number },
): Promise<StoredAuthority> {
  await db
    .insertInto('tls_authorities')
    .values({
      id: AUTHORITY_ID,
      cert_pem: ca.certPem,
      key_enc: keyring.encrypt(ca.keyPem),
      fingerprint: ca.fingerprint256,
      created_by: ca.createdBy,
      created_at: ca.now,
    })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
  const stored = await findAuthority(db, keyring);
  if (!stored) throw new Error('the CA just recorded is not in the store');
  return stored;
}

function toServerCertificate(row: TlsServerCertificateRow, keyring: Keyring): ServerCertificate {
  return {
    instanceId: row.instance_id,
    generation: Number(row.generation),
    serial: row.serial,
    fingerprint256: row.fingerprint,
    caFingerprint256: row.ca_fingerprint,
    names: JSON.parse(row.names) as string[],
    certPem: row.cert_pem,
    keyPem: keyring.decrypt(row.key_enc),
    notBefore: Number(row.not_before),
    notAfter: Number(row.not_after),
    createdAt: Number(row.created_at),
    servedAt: row.served_at === null ? null : Number(row.served_at),
    retiredAt: row.retired_at === null ? null : Number(row.retired_at),
  };
}

/** The instance's newest server certificate (the one to serve), or undefined. */
export async function findCurrentServerCertificate(db: Db, keyring: Keyring, instanceId: string): Promise<ServerCertificate | undefined> {
  const row = await db
    .selectFrom('tls_server_certificates')
    .selectAll()
    .where('instance_id', '=', instanceId)
    .orderBy('generation', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row && toServerCertificate(row, keyring);
}

/** Every server certificate the instance has, newest first (retired ones included until pruned). */
export async function listServerCertificates(db: Db, keyring: Keyring, instanceId: string): Promise<ServerCertificate[]> {
  const rows = await db
    .selectFrom('tls_server_certificates')
    .selectAll()
    .where('instance_id', '=', instanceId)
    .orderBy('generation', 'desc')
    .execute();
  return rows.map((r) => toServerCertificate(r, keyring));
}

/** How an insert of a certificate went: `taken` another of that generation is there; `gone` the instance is. */
export type CertificateInsert = 'inserted' | 'taken' | 'gone';

/**
 * Records a server certificate, its key sealed; `taken` when the instance already has one of
 * that generation (another request or replica renewed it first: read the current one again).
 */
export async function insertServerCertificate(db: Db, keyring: Keyring, c: ServerCertificate): Promise<CertificateInsert> {
  try {
    await db
      .insertInto('tls_server_certificates')
      .values({
        serial: c.serial,
        instance_id: c.instanceId,
        generation: c.generation,
        fingerprint: c.fingerprint256,
        ca_fingerprint: c.caFingerprint256,
        names: JSON.stringify(c.names),
        cert_pem: c.certPem,
        key_enc: keyring.encrypt(c.keyPem),
        not_before: c.notBefore,
        not_after: c.notAfter,
        created_at: c.createdAt,
        served_at: c.servedAt,
        retired_at: c.retiredAt,
      })
      .execute();
    return 'inserted';
  } catch (err) {
    if (isUniqueViolation(err)) return 'taken';
    if (isForeignKeyViolation(err)) return 'gone';
    throw err;
  }
}

/**
 * Records that an edge serves the certificate `serial` of the instance: the instance's older
 * certificates are retired from then on, and those retired and expired are removed. False
 * when the instance has no certificate of that serial.
 */
export async function markServerCertificateServed(db: Db, instanceId: string, serial: string, now: number): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const row = await trx
      .selectFrom('tls_server_certificates')
      .select(['generation', 'served_at'])
      .where('instance_id', '=', instanceId)
      .where('serial', '=', serial)
      .executeTakeFirst();
    if (!row) return false;
    if (row.served_at === null) {
      await trx.updateTable('tls_server_certificates').set({ served_at: now }).where('serial', '=', serial).execute();
    }
    await trx
      .updateTable('tls_server_certificates')
      .set({ retired_at: now })
      .where('instance_id', '=', instanceId)
      .where('generation', '<', row.generation)
      .where('retired_at', 'is', null)
      .execute();
    await trx
      .deleteFrom('tls_server_certificates')
      .where('instance_id', '=', instanceId)
      .where('retired_at', 'is not', null)
      .where('not_after', '<', now)
      .execute();
    return true;
  });
}

/** Each instance's current server certificate's end, with what the metrics label it by. */
export async function currentServerCertificateEnds(
  db: Db,
): Promise<{ instanceId: string; instanceName: string; service: string; notAfter: number }[]> {
  const rows = await db
    .selectFrom('tls_server_certificates as c')
    .innerJoin('instances as i', 'i.id', 'c.instance_id')
    .select(['i.id', 'i.name', 'i.service', 'c.not_after'])
    .where(({ eb, selectFrom }) =>
      eb(
        'c.generation',
        '=',
        selectFrom('tls_server_certificates as c2')
          .select(({ fn }) => fn.max('c2.generation').as('g'))
          .whereRef('c2.instance_id', '=', 'c.instance_id'),
      ),
    )
    .execute();
  return rows.map((r) => ({ instanceId: r.id, instanceName: r.name, service: r.service, notAfter: Number(r.not_after) }));
}

function toClientCertificate(row: TlsClientCertificateRow): ClientCertificate {
  return {
    instanceId: row.instance_id,
    serial: row.serial,
    commonName: row.common_name,
    fingerprint256: row.fingerprint,
    caFingerprint256: row.ca_fingerprint,
    certPem: row.cert_pem,
    notBefore: Number(row.not_before),
    notAfter: Number(row.not_after),
    createdAt: Number(row.created_at),
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
  };
}

/** Records a client certificate as issued (its key is not kept); `gone` when the instance is. */
export async function insertClientCertificate(db: Db, c: ClientCertificate): Promise<CertificateInsert> {
  try {
    await db
      .insertInto('tls_client_certificates')
      .values({
        serial: c.serial,
        instance_id: c.instanceId,
        common_name: c.commonName,
        fingerprint: c.fingerprint256,
        ca_fingerprint: c.caFingerprint256,
        cert_pem: c.certPem,
        not_before: c.notBefore,
        not_after: c.notAfter,
        created_at: c.createdAt,
        revoked_at: c.revokedAt,
      })
      .execute();
    return 'inserted';
  } catch (err) {
    if (isForeignKeyViolation(err)) return 'gone';
    throw err;
  }
}

/** The instance's client certificates, oldest first, revoked ones included. */
export async function listClientCertificates(db: Db, instanceId: string): Promise<ClientCertificate[]> {
  const rows = await db
    .selectFrom('tls_client_certificates')
    .selectAll()
    .where('instance_id', '=', instanceId)
    .orderBy('created_at')
    .orderBy('serial')
    .execute();
  return rows.map(toClientCertificate);
}

/** The instance's client certificate `serial`, or undefined. */
export async function findClientCertificate(db: Db, instanceId: string, serial: string): Promise<ClientCertificate | undefined> {
  const row = await db
    .selectFrom('tls_client_certificates')
    .selectAll()
    .where('instance_id', '=', instanceId)
    .where('serial', '=', serial)
    .executeTakeFirst();
  return row && toClientCertificate(row);
}

/**
 * Revokes the instance's client certificate `serial` (a second revocation keeps the first
 * time); undefined when the instance has none of that serial.
 */
export async function revokeClientCertificate(
  db: Db,
  instanceId: string,
  serial: string,
  now: number,
): Promise<ClientCertificate | undefined> {
  await db
    .updateTable('tls_client_certificates')
    .set({ revoked_at: now })
    .where('instance_id', '=', instanceId)
    .where('serial', '=', serial)
    .where('revoked_at', 'is', null)
    .execute();
  const row = await db
    .selectFrom('tls_client_certificates')
    .selectAll()
    .where('instance_id', '=', instanceId)
    .where('serial', '=', serial)
    .executeTakeFirst();
  return row && toClientCertificate(row);
}

/** The instance's revoked client certificates that have not expired yet: what its CRL lists. */
export async function revokedClientCertificates(db: Db, instanceId: string, now: number): Promise<ClientCertificate[]> {
  const rows = await db
    .selectFrom('tls_client_certificates')
    .selectAll()
    .where('instance_id', '=', instanceId)
    .where('revoked_at', 'is not', null)
    .where('not_after', '>', now)
    .orderBy('serial')
    .execute();
  return rows.map(toClientCertificate);
}
