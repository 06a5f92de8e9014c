import type { Readable } from 'node:stream';
import { AbortMultipartUploadCommand, DeleteObjectCommand, GetObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { type BackupStorage, StorageError } from './backup-storage.js';

export interface S3StorageOptions {
  readonly bucket: string;
  /** Prepended to every key (`hangar/`). */
  readonly prefix: string;
  /** An S3-compatible endpoint (`http://127.0.0.1:9000`); unset: AWS. Path-style addressing with one. */
  readonly endpoint?: string;
  readonly region: string;
  /** Unset: the AWS SDK's default chain (environment, profile, instance role). */
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string };
}

/** How long a request to the object storage may take before the storage counts as unreachable. */
const REQUEST_TIMEOUT_MS = 30_000;
const CONNECT_TIMEOUT_MS = 5_000;

/**
 * Backup objects in S3-compatible object storage, with @aws-sdk/client-s3. An upload (multipart
 * for large objects) only makes an object visible once complete, which is what the directory's
 * rename does; an upload cut short leaves no object (its parts are aborted, or expire by the
 * bucket's lifecycle rule for incomplete uploads).
 */
export class S3Storage implements BackupStorage {
  readonly kind = 's3' as const;
  private readonly client: S3Client;

  constructor(private readonly opts: S3StorageOptions) {
    this.client = new S3Client({
      region: opts.region,
      ...(opts.endpoint ? { endpoint: opts.endpoint, forcePathStyle: true } : {}),
      ...(opts.credentials ? { credentials: opts.credentials } : {}),
      maxAttempts: 2,
      requestHandler: { requestTimeout: REQUEST_TIMEOUT_MS, connectionTimeout: CONNECT_TIMEOUT_MS },
    });
  }

  private key(key: string): string {
    return `${this.opts.prefix}${key}`;
  }

  location(key: string): string {
    return `s3://${this.opts.bucket}/${this.key(key)}`;
  }

  async put(key: string, body: Readable, signal?: AbortSignal): Promise<number> {
    let bytes = 0;
    body.on('data', (c: Buffer) => (bytes += c.length));
    const upload = new Upload({
      client: signal ? abortable(this.client, signal) : this.client,
      params: { Bucket: this.opts.bucket, Key: this.key(key), Body: body, ContentType: 'application/octet-stream' },
      partSize: 16 * 1024 * 1024,
      queueSize: 2,
      leavePartsOnError: false,
    });
    const abort = () => void upload.abort().catch(() => {});
    signal?.addEventListener('abort', abort, { once: true });
    try {
      await upload.done();
      return bytes;
    } catch (err) {
      throw this.failure(err, `storing ${this.location(key)}`);
    } finally {
      signal?.removeEventListener('abort', abort);
    }
  }

  async get(key: string): Promise<Readable> {
    try {
      const r = await this.client.send(new GetObjectCommand({ Bucket: this.opts.bucket, Key: this.key(key) }));
      return r.Body as Readable;
    } catch (err) {
      throw this.failure(err, `reading ${this.location(key)}`);
    }
  }

  async remove(key: string): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.opts.bucket, Key: this.key(key) }));
    } catch (err) {
      const e = this.failure(err, `removing ${this.location(key)}`);
      if (e instanceof StorageError && e.kind === 'not-found') return;
      throw e;
    }
  }

  /** A failure of the object storage as a StorageError (the body's own errors pass through). */
  private failure(err: unknown, what: string): unknown {
    if (err instanceof S3ServiceException) {
      const status = err.$metadata?.httpStatusCode;
      if (err.name === 'NoSuchKey' || err.name === 'NotFound' || status === 404)
        return new StorageError('not-found', `${what}: no such object`, { cause: err });
      if (err.name === 'EntityTooLarge' || err.name === 'QuotaExceeded')
        return new StorageError('full', `${what}: ${err.name}`, { cause: err });
      return new StorageError('unavailable', `${what}: the object storage answered ${err.name}${status ? ` (HTTP ${status})` : ''}`, {
        cause: err,
      });
    }
    const code = (err as NodeJS.ErrnoException)?.code;
    if (code && /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENOTFOUND|EHOSTUNREACH|EPIPE|EAI_AGAIN)$/.test(code)) {
      return new StorageError('unavailable', `${what}: the object storage is unreachable (${code})`, { cause: err });
    }
    if ((err as Error)?.name === 'TimeoutError' || (err as Error)?.name === 'RequestTimeout') {
      return new StorageError('unavailable', `${what}: the object storage did not answer in time`, { cause: err });
    }
    return err;
  }
}

/**
 * The client for one upload whose requests end when `signal` aborts: the upload's own abort
 * stops waiting for them but leaves them running (an object could appear after the backup was
 * given up). The abort of a multipart upload is sent all the same.
 */
function abortable(client: S3Client, signal: AbortSignal): S3Client {
  return new Proxy(client, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      return (command: Parameters<S3Client['send']>[0], options?: Record<string, unknown>) =>
        command instanceof AbortMultipartUploadCommand
          ? target.send(command, options)
          : target.send(command, { ...options, abortSignal: signal });
    },
  });
}
