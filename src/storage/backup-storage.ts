import type { Readable } from 'node:stream';

/**
 * Where backup objects are kept: a directory, or S3-compatible object storage. Objects are
 * encrypted before they get here and are named by keys of the form `<instance id>/<file>`. A
 * reader never sees part of an object: `put` makes an object appear whole, or not at all.
 */
export interface BackupStorage {
  readonly kind: 'directory' | 's3';
  /** Where an object is, for people and records: never a credential. */
  location(key: string): string;
  /**
   * Stores `body` under `key`, whole or not at all (a temporary name renamed when complete, or an
   * upload that only appears once finished). Resolves with the bytes stored. Fails with a
   * StorageError (full, unreachable) or with `body`'s own error; nothing is left under `key` then.
   */
  put(key: string, body: Readable, signal?: AbortSignal): Promise<number>;
  /** The object; fails with StorageError `not-found` when there is none. */
  get(key: string): Promise<Readable>;
  /** Removes the object and any temporary leftover of a `put` cut short; nothing when there is none. */
  remove(key: string): Promise<void>;
}

export type StorageFailure = 'not-found' | 'full' | 'unavailable';

/** A failure of the storage itself, with what kind it is. */
export class StorageError extends Error {
  override name = 'StorageError';
  constructor(
    readonly kind: StorageFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
