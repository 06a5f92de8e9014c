import { existsSync, readFileSync } from 'node:fs';
import type { Config } from '../../config.js';
import { lockDataDir } from '../../lib/data-dir-lock.js';
import { Keyring, SecretKeyError, keyFilePath, newKey, parseKeys, writeKeyFile } from '../../lib/secrets.js';
import { appendAuditEvent } from '../../store/audit-repository.js';
import { assertStoreExists, openStore } from '../../store/database.js';
import { assertKeysOpenStore, reencryptAll, sealingKeyIds } from '../../store/keyring.js';
import { type Io, json } from '../io.js';

/**
 * Re-encrypts every stored secret with a new key.
 *
 * With the key file (`secret.key` in the data dir): hangar must be stopped (the data dir lock
 * says so for SQLite). A new key is made and put in front of the old ones in the file; every
 * value is re-encrypted; only once no value needs an old key is the file rewritten with the new
 * key alone. A crash at any point leaves everything readable.
 *
 * With HANGAR_SECRET_KEY: the new key first, the old ones after (`NEW,OLD`). Run it with hangar
 * serving (restarted with `NEW,OLD` first, so it already writes with the new key), then set
 * HANGAR_SECRET_KEY to the new key alone and restart.
 */
export async function secretsRotate(config: Config, opts: Record<string, string | boolean | undefined>, io: Io): Promise<void> {
  // there must be a store to rotate (--init makes an empty one, whose key is then made new)
  if (opts.init !== true) await assertStoreExists(config);
  const unlock = config.secretKey ? () => {} : lockDataDir(config.dataDir);
  try {
    const store = await openStore({ ...config, poolSize: 2 });
    try {
      let keyring: Keyring;
      let finish = () => {};
      if (config.secretKey) {
        keyring = new Keyring(parseKeys(config.secretKey, 'HANGAR_SECRET_KEY'));
        await assertKeysOpenStore(store.db, keyring);
      } else {
        const file = keyFilePath(config.dataDir);
        if (!existsSync(file)) throw new SecretKeyError(`no key file at ${file}: is --data-dir the data dir hangar serves from?`);
        const old = parseKeys(readFileSync(file, 'utf8'), file);
        await assertKeysOpenStore(store.db, new Keyring(old));
        const fresh = newKey();
        writeKeyFile(file, [fresh, ...old]);
        keyring = new Keyring([fresh, ...old]);
        finish = () => writeKeyFile(file, [fresh]);
      }
      const count = await reencryptAll(store.db, keyring);
      const stale = [...(await sealingKeyIds(store.db)).keys()].filter((id) => id !== keyring.currentId);
      if (stale.length > 0)
        throw new SecretKeyError(
          `values still encrypted with ${stale.length === 1 ? 'key' : 'keys'} ${stale.join(', ')} (written meanwhile?); run hangar secrets rotate again`,
        );
      finish();
      await appendAuditEvent(store.db, {
        accountId: null,
        login: null,
        action: 'secrets.rotate',
        target: `key:${keyring.currentId}`,
        sourceIp: null,
        outcome: 'success',
        statusCode: null,
        requestId: null,
        createdAt: Date.now(),
      });
      io.out(
        json({
          key: keyring.currentId,
          reencrypted: count,
          ...(config.secretKey ? { next: 'set HANGAR_SECRET_KEY to the new key alone and restart hangar' } : {}),
        }),
      );
    } finally {
      await store.close();
    }
  } finally {
    unlock();
  }
}
