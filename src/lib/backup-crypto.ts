import { createCipheriv, createDecipheriv, createHash, randomBytes, type DecipherGCM } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';

/**
 * Backups at rest: AES-256-GCM over the whole snapshot, streamed, under a data key of the backup's
 * own (sealed with hangar's keyring in the store, so a key rotation reseals the data key and the
 * object stays as it is). The object is `HGBK`, a version byte (1), the 12-byte IV, the ciphertext
 * and the 16-byte GCM tag. Decryption checks the tag at the end: a changed byte anywhere fails the
 * stream there, so what was decrypted must not be used before the stream ended without error.
 */

const MAGIC = Buffer.from('HGBK');
const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const HEADER_BYTES = MAGIC.length + 1 + IV_BYTES;

/** A new random data key (32 bytes). */
export function newDataKey(): Buffer {
  return randomBytes(32);
}

/** Bytes of the encrypted object of a snapshot of `plainBytes`. */
export function encryptedSize(plainBytes: number): number {
  return HEADER_BYTES + plainBytes + TAG_BYTES;
}

/** Encrypts what flows through it into the backup object format. */
export function encryptStream(key: Buffer): Transform {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  let headerSent = false;
  const header = (t: Transform) => {
    if (headerSent) return;
    headerSent = true;
    t.push(Buffer.concat([MAGIC, Buffer.from([VERSION]), iv]));
  };
  return new Transform({
    transform(chunk: Buffer, _enc, done: TransformCallback) {
      header(this);
      done(null, cipher.update(chunk));
    },
    flush(done: TransformCallback) {
      header(this);
      this.push(cipher.final());
      done(null, cipher.getAuthTag());
    },
  });
}

/** The object does not decrypt: tampered with, truncated, or not a hangar backup. */
export class BackupIntegrityError extends Error {
  override name = 'BackupIntegrityError';
}

/** Decrypts a backup object; fails at its end when the GCM tag does not match. */
export function decryptStream(key: Buffer): Transform {
  let header = Buffer.alloc(0);
  let decipher: DecipherGCM | undefined;
  // The last TAG_BYTES seen are held back: they are the tag once the stream ends.
  let held = Buffer.alloc(0);
  return new Transform({
    transform(chunk: Buffer, _enc, done: TransformCallback) {
      let data = chunk;
      if (!decipher) {
        header = Buffer.concat([header, data]);
        if (header.length < HEADER_BYTES) return done();
        if (!header.subarray(0, MAGIC.length).equals(MAGIC) || header[MAGIC.length] !== VERSION) {
          return done(new BackupIntegrityError('not a hangar backup object (wrong header)'));
        }
        decipher = createDecipheriv('aes-256-gcm', key, header.subarray(MAGIC.length + 1, HEADER_BYTES));
        data = header.subarray(HEADER_BYTES);
      }
      const all = Buffer.concat([held, data]);
      const cut = Math.max(0, all.length - TAG_BYTES);
      held = all.subarray(cut);
      done(null, cut > 0 ? decipher.update(all.subarray(0, cut)) : undefined);
    },
    flush(done: TransformCallback) {
      if (!decipher || held.length < TAG_BYTES) return done(new BackupIntegrityError('the backup object is truncated'));
      decipher.setAuthTag(held);
      try {
        done(null, decipher.final());
      } catch {
        done(
          new BackupIntegrityError(
            'the backup object does not decrypt: it was changed, or its data key is wrong (AES-GCM authentication failed)',
          ),
        );
      }
    },
  });
}

/** Counts and hashes (SHA-256) what flows through it, unchanged. */
export class Digest extends Transform {
  private readonly hash = createHash('sha256');
  bytes = 0;
  private hex: string | undefined;

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    done(null, chunk);
  }

  override _flush(done: TransformCallback): void {
    this.hex = this.hash.digest('hex');
    done();
  }

  /** The SHA-256 in hex, once the stream ended. */
  get sha256(): string {
    if (this.hex === undefined) throw new Error('the stream has not ended');
    return this.hex;
  }
}

/**
 * Passes a snapshot through and fails at its end unless it has the SHA-256 and size recorded for
 * it: what was written from it must then be thrown away. The last chunk is held back until the
 * check passes, so a reader of a snapshot that fails it never gets all its bytes (a download is
 * cut short rather than complete and wrong).
 */
export function verifyStream(expected: { sha256: string; sizeBytes: number }): Transform {
  const hash = createHash('sha256');
  let bytes = 0;
  let held: Buffer | undefined;
  return new Transform({
    transform(chunk: Buffer, _enc, done: TransformCallback) {
      hash.update(chunk);
      bytes += chunk.length;
      const previous = held;
      held = chunk;
      done(null, previous);
    },
    flush(done: TransformCallback) {
      const sha = hash.digest('hex');
      if (sha !== expected.sha256 || bytes !== expected.sizeBytes) {
        return done(
          new BackupIntegrityError(
            `its SHA-256 is ${sha} (${bytes} bytes), not the ${expected.sha256} (${expected.sizeBytes} bytes) recorded when it was taken`,
          ),
        );
      }
      done(null, held);
    },
  });
}
