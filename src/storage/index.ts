import { join } from 'node:path';
import type { Config } from '../config.js';
import type { BackupStorage } from './backup-storage.js';
import { DirectoryStorage } from './directory-storage.js';

export { type BackupStorage, StorageError, type StorageFailure } from './backup-storage.js';

/**
 * The backup storage the settings name: S3 when a bucket is set, else the backup directory. The
 * AWS SDK is loaded only for S3 (it is a large part of a start otherwise).
 */
export async function openBackupStorage(
  config: Pick<
    Config,
    | 'dataDir'
    | 'backupDir'
    | 'backupS3Bucket'
    | 'backupS3Prefix'
    | 'backupS3Endpoint'
    | 'backupS3Region'
    | 'backupS3AccessKeyId'
    | 'backupS3SecretAccessKey'
  >,
): Promise<BackupStorage> {
  if (config.backupS3Bucket) {
    const { S3Storage } = await import('./s3-storage.js');
    return new S3Storage({
      bucket: config.backupS3Bucket,
      prefix: config.backupS3Prefix,
      region: config.backupS3Region,
      ...(config.backupS3Endpoint ? { endpoint: config.backupS3Endpoint } : {}),
      ...(config.backupS3AccessKeyId && config.backupS3SecretAccessKey
        ? { credentials: { accessKeyId: config.backupS3AccessKeyId, secretAccessKey: config.backupS3SecretAccessKey } }
        : {}),
    });
  }
  return new DirectoryStorage(config.backupDir ?? join(config.dataDir, 'backups'));
}
