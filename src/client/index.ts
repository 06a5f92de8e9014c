/**
 * The typed client of the hangar API: `import { HangarClient } from 'hangar/client'`.
 */
export {
  HangarClient, type BackupDownload, type CallOptions, type EventsOptions, type HangarClientOptions, type OperationWaitOptions, type WaitOptions,
} from './hangar-client.js';
export { verifyWebhookSignature } from './webhook-signature.js';
export { HangarApiError } from './errors.js';
export type {
  AccountInfo, Acl, AclCheck, AclDetail, ApiErrorBody, ApiKey, AuditEvent, Backup, BackupPolicy, BackupPolicyRequest, CreateAclRequest, CreateInstanceRequest,
  CreateMongoUserRequest, CreateRedisUserRequest, CreatedApiKey, CreatedInstance, CreatedWebhook, CreateWebhookRequest, DeniedConnection, EffectiveAccess,
  HangarEvent, Instance, MongoRole, MongoUser, Operation, PasswordRotation, PasswordRotationEnd, RedisConfig, RedisConfigChange, RedisSlowlogEntry, RedisStats,
  RedisUser, RedisUserCreated, Restore, SpaceUsage, UpdateMongoUserRequest, UpdateRedisUserRequest, Webhook, WebhookDelivery, Whoami, Zone,
} from './types.js';
export { FINISHED_OPERATION_STATES, READY_STATES } from './types.js';
