import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const PREFIX = 'v1';

/** Decrypted values kept in memory (ciphertexts never change: each has its own random IV). */
const PLAIN_CACHE_SIZE = 50_000;

export class SecretKeyError extends Error {
  override name = 'SecretKeyError';
}

/**
 * AES-256-GCM encryption of the secrets hangar stores (engine passwords, admin credentials,
 * per-instance api keys, MongoDB user passwords). A keyring: the first key encrypts, every key
 * decrypts, so a rotation can re-encrypt row by row without a window where anything is unreadable.
 * Ciphertexts are `v1.<key id>.<iv>.<tag>.<data>`, base64url parts.
 */
export class Keyring {
  private byId: Map<string, Buffer>;
  /**
   * Ciphertext -> plaintext of what was decrypted already. Rows are read (and their secrets
   * decrypted) on every request and every reconcile pass; AES-GCM setup dominated the list route.
   * A sealed value is immutable, so a hit is always right; the map is emptied when full.
   */
  private readonly plain = new Map<string, string>();
  readonly currentId: string;

  /** `reload` re-reads the keys when a value names a key not seen yet (a rotation by another process). */
  constructor(
    keys: readonly Buffer[],
    private readonly reload?: () => readonly Buffer[],
  ) {
    if (keys.length === 0) throw new SecretKeyError('no secret key');
    for (const k of keys) if (k.length !== 32) throw new SecretKeyError('a secret key must be 32 bytes (base64 of 32 random bytes)');
    this.byId = new Map(keys.map((k) => [keyId(k), k]));
    this.currentId = keyId(keys[0]!);
  }

  get ids(): string[] {
    return [...this.byId.keys()];
  }

  encrypt(plain: string): string {
    const key = this.byId.get(this.currentId)!;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return [PREFIX, this.currentId, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), data.toString('base64url')].join(
      '.',
    );
  }

  decrypt(sealed: string): string {
    const hit = this.plain.get(sealed);
    if (hit !== undefined) return hit;
    const plain = this.decryptNow(sealed);
    if (this.plain.size >= PLAIN_CACHE_SIZE) this.plain.clear();
    this.plain.set(sealed, plain);
    return plain;
  }

  private decryptNow(sealed: string): string {
    const [prefix, id, iv, tag, data] = sealed.split('.');
    if (prefix !== PREFIX || !id || iv === undefined || tag === undefined || data === undefined) {
      throw new SecretKeyError('not a hangar ciphertext');
    }
    let key = this.byId.get(id);
    if (!key && this.reload) {
      for (const k of this.reload()) if (!this.byId.has(keyId(k))) this.byId.set(keyId(k), k);
      key = this.byId.get(id);
    }
    if (!key) throw new SecretKeyError(`the secret key ${id} that encrypted this value is not configured`);
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    try {
      return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      throw new SecretKeyError(`secret key ${id} does not decrypt this value (tampered or wrong key)`);
    }
  }

  /** True when the value was encrypted with the current key. */
  isCurrent(sealed: string): boolean {
    return sealed.split('.')[1] === this.currentId;
  }
}

function keyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8);
}

export function newKey(): Buffer {
  return randomBytes(32);
}

export function parseKeys(text: string, source: string): Buffer[] {
  const keys = text
    .split(/[\s,]+/)
    .filter(Boolean)
    .map((k) => Buffer.from(k, 'base64'));
  if (keys.length === 0 || keys.some((k) => k.length !== 32)) {
    throw new SecretKeyError(`${source} must hold base64-encoded 32-byte keys (make one with: openssl rand -base64 32)`);
  }
  return keys;
}

export const keyFilePath = (dataDir: string): string => join(dataDir, 'secret.key');

/**
 * The keyring from HANGAR_SECRET_KEY, or from `secret.key` in the data dir, created with mode
 * 0600 on first use.
 */
export function loadKeyring(secretKey: string | undefined, dataDir: string): Keyring {
  if (secretKey) return new Keyring(parseKeys(secretKey, 'HANGAR_SECRET_KEY'));
  const file = keyFilePath(dataDir);
  if (!existsSync(file)) {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    writeKeyFile(file, [newKey()]);
  }
  const read = () => parseKeys(readFileSync(file, 'utf8'), file);
  return new Keyring(read(), read);
}

/** Writes the key file atomically with mode 0600, the current key first. */
export function writeKeyFile(file: string, keys: readonly Buffer[]): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${keys.map((k) => k.toString('base64')).join('\n')}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}
