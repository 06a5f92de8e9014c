import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { errors } from '../../domain/errors.js';
import { type AppDeps, answerStarted, callerOf, originOf } from '../context.js';
import { IdempotencyHeaders } from '../plugins/idempotency.js';
import {
  BACKUP_EXAMPLE,
  BackupParams,
  BackupRecord,
  PENDING_BACKUP_EXAMPLE,
  POLICY_EXAMPLE,
  PolicyBody,
  PolicyRecord,
  RESTORE_EXAMPLE,
  RestoreBody,
  RestoreRecord,
} from '../schemas/backups.js';
import { Data, NameParams } from '../schemas/common.js';
import { IDEMPOTENT, WITH_BODY, WITH_PATH, errorResponses } from '../schemas/error-responses.js';
import { OPERATION_HEADERS } from '../schemas/operations.js';
import { backupRecord, policyRecord, restoreRecord } from '../serializers.js';

/**
 * Backups and restores of an instance (an addition to the ObjectRocket API): take one now, list,
 * read, remove and download them, restore one in place, and the schedule that takes them.
 */
export function backupRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const backups = deps.services.backups;
  const tags = ['backups'];

  app.get(
    '/instances/:instance_name/backups/',
    {
      schema: {
        summary: "The instance's backups, newest first",
        description: 'Once the instance is deleted, its backups stay (until their retention ends) and are listed under the name it had.',
        tags,
        params: NameParams,
        response: { 200: Data(Type.Array(BackupRecord), [BACKUP_EXAMPLE]), ...errorResponses([...WITH_PATH, 'INSTANCE_NOT_FOUND']) },
      },
    },
    async (req) => ({ data: (await backups.list(callerOf(req), req.params.instance_name)).map(backupRecord) }),
  );

  app.post(
    '/instances/:instance_name/backups/',
    {
      config: { audit: 'backup.create' },
      schema: {
        summary: 'Take a backup now',
        description:
          'Answers at once with the backup PENDING; it turns RUNNING, then COMPLETED (with its size and SHA-256) or FAILED with a `state_reason`. Takes no body (or `{}`). The `backup` operation of the same id (`X-Operation-Id`) follows it with its steps and progress; cancelling that operation stops the backup, which is then FAILED and keeps nothing.',
        tags,
        params: NameParams,
        headers: IdempotencyHeaders,
        response: {
          200: { ...Data(BackupRecord, PENDING_BACKUP_EXAMPLE), headers: OPERATION_HEADERS },
          ...errorResponses([
            ...WITH_PATH,
            ...WITH_BODY,
            ...IDEMPOTENT,
            'INSTANCE_NOT_FOUND',
            'INSTANCE_DELETING',
            'INSTANCE_NOT_READY',
            'BACKUP_IN_PROGRESS',
            'BACKUP_UNAVAILABLE',
          ]),
        },
      },
    },
    async (req, reply) => {
      const body = req.body as unknown;
      if (body !== undefined && body !== null && !(typeof body === 'object' && !Array.isArray(body) && Object.keys(body).length === 0)) {
        throw errors.invalidBody('this request takes no body (or {})');
      }
      return { data: backupRecord(answerStarted(reply, await backups.create(callerOf(req), req.params.instance_name, originOf(req)))) };
    },
  );

  app.get(
    '/instances/:instance_name/backups/:backup_id/',
    {
      schema: {
        summary: 'One backup',
        tags,
        params: BackupParams,
        response: { 200: Data(BackupRecord, BACKUP_EXAMPLE), ...errorResponses([...WITH_PATH, 'BACKUP_NOT_FOUND']) },
      },
    },
    async (req) => ({ data: backupRecord(await backups.get(callerOf(req), req.params.instance_name, req.params.backup_id)) }),
  );

  app.delete(
    '/instances/:instance_name/backups/:backup_id/',
    {
      config: { audit: 'backup.delete' },
      schema: {
        summary: 'Remove a backup from the storage',
        tags,
        params: BackupParams,
        response: {
          200: Data(
            Type.String({ description: 'Confirmation naming the backup' }),
            `Backup "${BACKUP_EXAMPLE.id}" of instance "cache" deleted`,
          ),
          ...errorResponses([...WITH_PATH, 'BACKUP_NOT_FOUND', 'BACKUP_IN_PROGRESS', 'BACKUP_STORAGE_UNAVAILABLE']),
        },
      },
    },
    async (req) => ({ data: await backups.delete(callerOf(req), req.params.instance_name, req.params.backup_id) }),
  );

  app.get(
    '/instances/:instance_name/backups/:backup_id/download',
    {
      config: { audit: 'backup.download' },
      schema: {
        summary: 'Download a completed backup: the snapshot itself, decrypted (an RDB file for redis)',
        description:
          'Streams the snapshot with its size in Content-Length and its SHA-256 in `X-Backup-Sha256`. It is checked as it is sent: a backup that no longer matches its SHA-256 is cut short (the connection closes before Content-Length bytes).',
        tags,
        params: BackupParams,
        response: {
          200: {
            description: 'The snapshot',
            content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
          },
          ...errorResponses([...WITH_PATH, 'BACKUP_NOT_FOUND', 'BACKUP_NOT_COMPLETED', 'BACKUP_CORRUPT', 'BACKUP_STORAGE_UNAVAILABLE']),
        },
      },
    },
    async (req, reply) => {
      const content = await backups.download(callerOf(req), req.params.instance_name, req.params.backup_id);
      return (
        reply
          .type('application/octet-stream')
          // the instance's data itself: no cache keeps it
          .header('cache-control', 'no-store')
          .header('content-length', String(content.backup.sizeBytes))
          .header('content-disposition', `attachment; filename="${content.fileName}"`)
          .header('x-backup-sha256', content.backup.sha256!)
          .send(content.stream as never)
      );
    },
  );

  app.post(
    '/instances/:instance_name/restore/',
    {
      config: { audit: 'instance.restore' },
      schema: {
        summary: 'Restore a backup into the instance, replacing its data',
        description:
          'The backup is read and checked (its SHA-256) before anything changes: a corrupt one is a 422 and the instance is untouched. Then the instance turns RESTORING (clients are cut off while its engines restart on the restored data) and ACTIVE again, its replica resynced; its Redis users and settings stay. The `restore` operation of the same id (`X-Operation-Id`) follows it with its steps and SUCCEEDS once the instance serves the restored data; `GET .../restores/` lists restores.',
        tags,
        params: NameParams,
        headers: IdempotencyHeaders,
        body: RestoreBody,
        response: {
          200: { ...Data(RestoreRecord, RESTORE_EXAMPLE), headers: OPERATION_HEADERS },
          ...errorResponses([
            ...WITH_PATH,
            ...WITH_BODY,
            ...IDEMPOTENT,
            'INVALID_VALUE',
            'INSTANCE_NOT_FOUND',
            'BACKUP_NOT_FOUND',
            'INSTANCE_DELETING',
            'OPERATION_IN_PROGRESS',
            'BACKUP_IN_PROGRESS',
            'BACKUP_NOT_COMPLETED',
            'BACKUP_CORRUPT',
            'BACKUP_UNAVAILABLE',
            'BACKUP_STORAGE_UNAVAILABLE',
          ]),
        },
      },
    },
    async (req, reply) => ({
      data: restoreRecord(
        answerStarted(reply, await backups.restore(callerOf(req), req.params.instance_name, req.body.backup_id, originOf(req))),
      ),
    }),
  );

  app.get(
    '/instances/:instance_name/restores/',
    {
      schema: {
        summary: "The instance's restores, newest first",
        tags,
        params: NameParams,
        response: {
          200: Data(Type.Array(RestoreRecord), [
            { ...RESTORE_EXAMPLE, state: 'COMPLETED', started: '2026-11-26 09:00:00', finished: '2026-11-26 09:00:03' },
          ]),
          ...errorResponses([...WITH_PATH, 'INSTANCE_NOT_FOUND']),
        },
      },
    },
    async (req) => ({ data: (await backups.restores(callerOf(req), req.params.instance_name)).map(restoreRecord) }),
  );

  app.get(
    '/instances/:instance_name/backup-policy/',
    {
      schema: {
        summary: "The instance's backup policy: schedule and retention",
        description: 'Until it is set, the default policy of this hangar (HANGAR_BACKUP_POLICY when the instance was created).',
        tags,
        params: NameParams,
        response: { 200: Data(PolicyRecord, POLICY_EXAMPLE), ...errorResponses([...WITH_PATH, 'INSTANCE_NOT_FOUND']) },
      },
    },
    async (req) => ({ data: policyRecord(await backups.policy(callerOf(req), req.params.instance_name)) }),
  );

  app.put(
    '/instances/:instance_name/backup-policy/',
    {
      config: { audit: 'backup.policy' },
      schema: {
        summary: "Set the instance's backup policy",
        description: 'The schedule counts from now. Retention applies to every finished backup of the instance, also after it is deleted.',
        tags,
        params: NameParams,
        body: PolicyBody,
        response: {
          200: Data(PolicyRecord, POLICY_EXAMPLE),
          ...errorResponses([...WITH_PATH, ...WITH_BODY, 'INVALID_VALUE', 'INSTANCE_NOT_FOUND', 'INSTANCE_DELETING', 'BACKUP_UNAVAILABLE']),
        },
      },
    },
    async (req) => ({ data: policyRecord(await backups.setPolicy(callerOf(req), req.params.instance_name, req.body)) }),
  );
}
