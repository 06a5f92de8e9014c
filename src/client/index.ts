/**
 * The typed client of the hangar API: `import { HangarClient } from 'hangar/client'`.
 */
export { HangarClient, type HangarClientOptions, type WaitOptions } from './hangar-client.js';
export { HangarApiError } from './errors.js';
export type {
  AccountInfo, Acl, AclCheck, AclDetail, ApiErrorBody, ApiKey, AuditEvent, CreateAclRequest, CreateInstanceRequest, CreateMongoUserRequest,
  CreateRedisUserRequest, CreatedApiKey, CreatedInstance, DeniedConnection, EffectiveAccess, Instance, MongoRole, MongoUser, PasswordRotation,
  PasswordRotationEnd, RedisConfig, RedisConfigChange, RedisSlowlogEntry, RedisStats, RedisUser, RedisUserCreated, SpaceUsage,
  UpdateMongoUserRequest, UpdateRedisUserRequest, Whoami, Zone,
} from './types.js';
export { READY_STATES } from './types.js';
