/**
 * The typed client of the hangar API: `import { HangarClient } from 'hangar/client'`.
 */
export { HangarClient, type HangarClientOptions, type WaitOptions } from './hangar-client.js';
export { HangarApiError } from './errors.js';
export type {
  AccountInfo, Acl, AclDetail, ApiErrorBody, ApiKey, AuditEvent, CreatedApiKey, Whoami, Zone, ZoneService, CreateAclRequest, CreateInstanceRequest, CreateMongoUserRequest,
  CreatedInstance, Instance, MongoRole, MongoUser, SpaceUsage, UpdateMongoUserRequest,
} from './types.js';
export { READY_STATES } from './types.js';
