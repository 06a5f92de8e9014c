/**
 * The typed client of the hangar API: `import { HangarClient } from 'hangar/client'`.
 */
export {
  HangarClient, type CallOptions, type EventsOptions, type HangarClientOptions, type OperationWaitOptions, type WaitOptions,
} from './hangar-client.js';
export { verifyWebhookSignature } from './webhook-signature.js';
export { HangarApiError } from './errors.js';
export type {
  AccountInfo, Acl, AclDetail, ApiErrorBody, ApiKey, AuditEvent, CreateAclRequest, CreateInstanceRequest, CreateMongoUserRequest,
  CreatedApiKey, CreatedInstance, CreatedWebhook, CreateWebhookRequest, HangarEvent, Instance, MongoRole, MongoUser, Operation, SpaceUsage,
  UpdateMongoUserRequest, Webhook, WebhookDelivery, Whoami, Zone,
} from './types.js';
export { FINISHED_OPERATION_STATES, READY_STATES } from './types.js';
