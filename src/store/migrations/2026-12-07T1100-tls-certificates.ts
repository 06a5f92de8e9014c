import type { Kysely } from 'kysely';

// Frozen: a migration that has shipped is never edited; add a new one instead.

/**
 * TLS on instance connections:
 * - `tls_authorities`: the CA a hangar generates at its first start, one row (`id` 'deployment'),
 *   its key sealed; replicas starting at once each insert theirs and keep the row that won;
 * - `tls_server_certificates`: each instance's server certificates, one generation per renewal
 *   (a later one replaces an earlier one once an edge serves it), keys sealed;
 * - `tls_client_certificates`: client certificates of mutual TLS, without their keys, and when
 *   each was revoked (what an instance's CRL lists).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('tls_authorities')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('cert_pem', 'text', (c) => c.notNull())
    .addColumn('key_enc', 'text', (c) => c.notNull())
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('tls_server_certificates')
    .addColumn('serial', 'text', (c) => c.primaryKey())
    .addColumn('instance_id', 'text', (c) => c.notNull().references('instances.id').onDelete('cascade'))
    .addColumn('generation', 'integer', (c) => c.notNull())
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('ca_fingerprint', 'text', (c) => c.notNull())
    /** JSON array of the subjectAltName entries */
    .addColumn('names', 'text', (c) => c.notNull())
    .addColumn('cert_pem', 'text', (c) => c.notNull())
    .addColumn('key_enc', 'text', (c) => c.notNull())
    .addColumn('not_before', 'bigint', (c) => c.notNull())
    .addColumn('not_after', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('served_at', 'bigint')
    .addColumn('retired_at', 'bigint')
    // two replicas renewing one instance's certificate at once: the second insert is refused
    .addUniqueConstraint('tls_server_certificates_generation', ['instance_id', 'generation'])
    .execute();

  await db.schema
    .createTable('tls_client_certificates')
    .addColumn('serial', 'text', (c) => c.primaryKey())
    .addColumn('instance_id', 'text', (c) => c.notNull().references('instances.id').onDelete('cascade'))
    .addColumn('common_name', 'text', (c) => c.notNull())
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('ca_fingerprint', 'text', (c) => c.notNull())
    .addColumn('cert_pem', 'text', (c) => c.notNull())
    .addColumn('not_before', 'bigint', (c) => c.notNull())
    .addColumn('not_after', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('revoked_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('tls_client_certificates_instance')
    .on('tls_client_certificates')
    .columns(['instance_id', 'created_at'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('tls_client_certificates').ifExists().execute();
  await db.schema.dropTable('tls_server_certificates').ifExists().execute();
  await db.schema.dropTable('tls_authorities').ifExists().execute();
}
