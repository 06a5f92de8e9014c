import type { Config } from '../config.js';
import { type Keyring, SecretKeyError, loadKeyring } from '../lib/secrets.js';
import type { Db } from './database.js';
import { getMeta, setMeta } from './lease-repository.js';

/**
 * The store's sealed secrets as a whole: the key check, which keys sealed what, and re-sealing
 * everything with the current key. Every encrypted column of the store is listed here and nowhere
 * else.
 */

/** The keyring, checked against the store: a wrong key fails the start instead of every request. */
export async function openKeyring(config: Pick<Config, 'secretKey' | 'dataDir'>, db: Db): Promise<Keyring> {
  const keyring = loadKeyring(config.secretKey, config.dataDir);
  const check = await getMeta(db, 'secret_check');
  if (check === undefined) {
    await setMeta(db, 'secret_check', keyring.encrypt('hangar'));
  } else {
    try {
      keyring.decrypt(check);
    } catch (err) {
      throw new SecretKeyError(
        `the secret key does not decrypt this store (${(err as Error).message}); set HANGAR_SECRET_KEY to the key(s) it was encrypted with`,
      );
    }
  }
  return keyring;
}

/** The id of the key that sealed each encrypted value in the store, with how many it sealed. */
export async function sealingKeyIds(db: Db): Promise<Map<string, number>> {
  const ids = new Map<string, number>();
  const add = (sealed: string | null) => {
    if (sealed === null) return;
    const id = sealed.split('.')[1] ?? '?';
    ids.set(id, (ids.get(id) ?? 0) + 1);
  };
  for (const r of await db
    .selectFrom('instances')
    .select(['api_key_enc', 'password_enc', 'admin_secret_enc', 'password_prior_enc'])
    .execute()) {
    add(r.api_key_enc);
    add(r.password_enc);
    add(r.admin_secret_enc);
    add(r.password_prior_enc);
  }
  for (const r of await db.selectFrom('mongodb_users').select('password_enc').execute()) add(r.password_enc);
  for (const r of await db.selectFrom('webhooks').select(['secret_enc', 'previous_secret_enc']).execute()) {
    add(r.secret_enc);
    add(r.previous_secret_enc);
  }
  for (const r of await db.selectFrom('redis_users').select(['password_enc', 'password_prior_enc']).execute()) {
    add(r.password_enc);
    add(r.password_prior_enc);
  }
  for (const r of await db.selectFrom('backups').select('data_key_enc').execute()) add(r.data_key_enc);
  for (const r of await db.selectFrom('tls_authorities').select('key_enc').execute()) add(r.key_enc);
  for (const r of await db.selectFrom('tls_server_certificates').select('key_enc').execute()) add(r.key_enc);
  add((await getMeta(db, 'secret_check')) ?? null);
  return ids;
}

/**
 * Every stored secret must be readable with the configured keys: a key dropped too early (before
 * `hangar secrets rotate` finished) fails the start, naming what is missing, instead of
 * failing instances one by one later.
 */
export async function assertKeysOpenStore(db: Db, keyring: Keyring): Promise<void> {
  const missing = [...(await sealingKeyIds(db))].filter(([id]) => !keyring.ids.includes(id));
  if (missing.length === 0) return;
  const n = missing.reduce((sum, [, count]) => sum + count, 0);
  throw new SecretKeyError(
    `${n} stored secret(s) are encrypted with key(s) ${missing.map(([id]) => id).join(', ')}, which are not configured; ` +
      'give hangar those keys again (after the current one in HANGAR_SECRET_KEY) and run hangar secrets rotate',
  );
}

/** Re-encrypts, in one transaction, every value not sealed with the keyring's current key. */
export async function reencryptAll(db: Db, keyring: Keyring): Promise<number> {
  const reseal = (v: string) => (keyring.isCurrent(v) ? v : keyring.encrypt(keyring.decrypt(v)));
  const resealOrNull = (v: string | null) => (v === null ? null : reseal(v));
  let n = 0;
  await db.transaction().execute(async (trx) => {
    for (const r of await trx
      .selectFrom('instances')
      .select(['id', 'api_key_enc', 'password_enc', 'admin_secret_enc', 'password_prior_enc'])
      .execute()) {
      await trx
        .updateTable('instances')
        .set({
          api_key_enc: reseal(r.api_key_enc),
          password_enc: resealOrNull(r.password_enc),
          admin_secret_enc: reseal(r.admin_secret_enc),
          password_prior_enc: resealOrNull(r.password_prior_enc),
        })
        .where('id', '=', r.id)
        .execute();
      n += 2 + (r.password_enc === null ? 0 : 1) + (r.password_prior_enc === null ? 0 : 1);
    }
    for (const r of await trx.selectFrom('mongodb_users').select(['id', 'password_enc']).execute()) {
      await trx
        .updateTable('mongodb_users')
        .set({ password_enc: reseal(r.password_enc) })
        .where('id', '=', r.id)
        .execute();
      n++;
    }
    for (const r of await trx.selectFrom('webhooks').select(['id', 'secret_enc', 'previous_secret_enc']).execute()) {
      await trx
        .updateTable('webhooks')
        .set({
          secret_enc: reseal(r.secret_enc),
          previous_secret_enc: r.previous_secret_enc === null ? null : reseal(r.previous_secret_enc),
        })
        .where('id', '=', r.id)
        .execute();
      n += r.previous_secret_enc === null ? 1 : 2;
    }
    for (const r of await trx.selectFrom('redis_users').select(['id', 'password_enc', 'password_prior_enc']).execute()) {
      await trx
        .updateTable('redis_users')
        .set({ password_enc: reseal(r.password_enc), password_prior_enc: resealOrNull(r.password_prior_enc) })
        .where('id', '=', r.id)
        .execute();
      n += r.password_prior_enc === null ? 1 : 2;
    }
    // A backup's object is encrypted with a data key of its own, sealed here: resealing the key
    // keeps the object readable without rewriting it.
    for (const r of await trx.selectFrom('backups').select(['id', 'data_key_enc']).execute()) {
      await trx
        .updateTable('backups')
        .set({ data_key_enc: reseal(r.data_key_enc) })
        .where('id', '=', r.id)
        .execute();
      n++;
    }
    // The private keys of the deployment's CA and of the instances' server certificates.
    for (const r of await trx.selectFrom('tls_authorities').select(['id', 'key_enc']).execute()) {
      await trx
        .updateTable('tls_authorities')
        .set({ key_enc: reseal(r.key_enc) })
        .where('id', '=', r.id)
        .execute();
      n++;
    }
    for (const r of await trx.selectFrom('tls_server_certificates').select(['serial', 'key_enc']).execute()) {
      await trx
        .updateTable('tls_server_certificates')
        .set({ key_enc: reseal(r.key_enc) })
        .where('serial', '=', r.serial)
        .execute();
      n++;
    }
    await setMeta(trx, 'secret_check', keyring.encrypt('hangar'));
  });
  return n;
}
