/**
 * The typed client of the hangar API: `import { HangarClient } from 'hangar/client'`.
 */
export { HangarClient, type BackupDownload, type HangarClientOptions, type WaitOptions } from './hangar-client.js';
export { HangarApiError } from './errors.js';
export type {
  AccountInfo, Acl, AclDetail, ApiErrorBody, ApiKey, AuditEvent, Backup, BackupPolicy, BackupPolicyRequest, Restore, CreateAclRequest, CreateInstanceRequest, CreateMongoUserRequest,
  CreatedApiKey, CreatedInstance, Instance, MongoRole, MongoUser, SpaceUsage, UpdateMongoUserRequest, Whoami, Zone,
} from './types.js';
export { READY_STATES } from './types.js';
