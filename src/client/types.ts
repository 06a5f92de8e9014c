import type { Static } from 'typebox';
import type {
  AclCheckRecord,
  AclCreateBody as AclCreateBodySchema,
  AclRecord,
  AclRecordExtended,
  DeniedConnectionRecord,
  EffectiveAccessRecord,
} from '../http/schemas/acls.js';
import type { BackupRecord, PolicyBody, PolicyRecord, RestoreRecord } from '../http/schemas/backups.js';
import type { ErrorBody, ProblemBody } from '../http/schemas/common.js';
import type { AuditEventRecord } from '../http/schemas/events.js';
import type { CreateInstanceBody as CreateInstanceBodySchema, CreationRecord, InstanceRecord } from '../http/schemas/instances.js';
import type { Role, UserCreateBody, UserPatchBody, UserRecord } from '../http/schemas/mongodb-users.js';
import type {
  RedisConfigPatchBody,
  RedisConfigRecord,
  RedisStatsRecord,
  SlowlogEntryRecord,
  SpaceUsage as SpaceUsageSchema,
} from '../http/schemas/redis.js';
import type {
  FinishRecord,
  RedisUserCreateBody,
  RedisUserCreated as RedisUserCreatedSchema,
  RedisUserPatchBody,
  RedisUserRecord,
  RotationRecord,
} from '../http/schemas/redis-users.js';
import type { ApiKeyRecord, CreatedApiKey as CreatedApiKeySchema, WhoamiRecord } from '../http/schemas/keys.js';
import type { AccountInfo as AccountInfoSchema } from '../http/schemas/tokens.js';
import type { ZoneRecord } from '../http/schemas/zones.js';
import type { EngineRecord, ShellRecord } from '../http/schemas/engines.js';
import type { ClientCertCreateBody, ClientCertCreated, ClientCertRecord, InstanceTlsRecord } from '../http/schemas/tls.js';
import type { EventRecord, OperationRecord } from '../http/schemas/operations.js';
import type { CreatedWebhook as CreatedWebhookSchema, DeliveryRecord, WebhookCreateBody, WebhookRecord } from '../http/schemas/webhooks.js';

// The wire types of the API, derived from the very schemas the server validates and
// serializes with. Type-only imports: the client carries no runtime dependency.

/** An instance, as listed and read (spec 2.1). Fields depend on the service and type. */
export type Instance = Static<typeof InstanceRecord>;
/** The answer to a create: the creation record (spec 2.3) plus the instance's fields. */
export type CreatedInstance = Static<typeof CreationRecord>;
export type CreateInstanceRequest = Static<typeof CreateInstanceBodySchema>;
export type Acl = Static<typeof AclRecord>;
export type AclDetail = Static<typeof AclRecordExtended>;
export type CreateAclRequest = Static<typeof AclCreateBodySchema>;
export type SpaceUsage = Static<typeof SpaceUsageSchema>;
/** Whether an address would be admitted, and by which ACL. */
export type AclCheck = Static<typeof AclCheckRecord>;
/** What the edge enforces now, against the store. */
export type EffectiveAccess = Static<typeof EffectiveAccessRecord>;
/** A connection the edge refused. */
export type DeniedConnection = Static<typeof DeniedConnectionRecord>;
/** An application user of a Redis instance (no password). */
export type RedisUser = Static<typeof RedisUserRecord>;
export type RedisUserCreated = Static<typeof RedisUserCreatedSchema>;
export type CreateRedisUserRequest = Static<typeof RedisUserCreateBody>;
export type UpdateRedisUserRequest = Static<typeof RedisUserPatchBody>;
/** A password rotation started: the new password and until when the old one works. */
export type PasswordRotation = Static<typeof RotationRecord>;
export type PasswordRotationEnd = Static<typeof FinishRecord>;
/** Redis settings of the allow-list, by redis.conf name. */
export type RedisConfig = Static<typeof RedisConfigRecord>;
export type RedisConfigChange = Static<typeof RedisConfigPatchBody>;
export type RedisSlowlogEntry = Static<typeof SlowlogEntryRecord>;
export type RedisStats = Static<typeof RedisStatsRecord>;
export type MongoUser = Static<typeof UserRecord>;
export type MongoRole = Static<typeof Role>;
export type CreateMongoUserRequest = Static<typeof UserCreateBody>;
export type UpdateMongoUserRequest = Static<typeof UserPatchBody>;
export type AccountInfo = Static<typeof AccountInfoSchema>;
/** The body of every error answer. */
export type ApiErrorBody = Static<typeof ErrorBody>;
/** One problem of a refused request, as a 400's `errors` lists it. */
export type ApiProblem = Static<typeof ProblemBody>;

/** An API key pair as listed (no secret). */
export type ApiKey = Static<typeof ApiKeyRecord>;
/** A new API key pair, with its pass_key: shown this once. */
export type CreatedApiKey = Static<typeof CreatedApiKeySchema>;
/** The caller, and the source address hangar sees. */
export type Whoami = Static<typeof WhoamiRecord>;

/** A zone: where instances can be placed, what it offers, how full it is. */
export type Zone = Static<typeof ZoneRecord>;
/** An engine product: its service, plan unit, done state, features and the memory its plans promise. */
export type EngineProduct = Static<typeof EngineRecord>;
/** The command that opens a shell on an instance; null for an engine without one. */
export type InstanceShell = Static<typeof ShellRecord>;

/** One entry of the account's audit log. */
export type AuditEvent = Static<typeof AuditEventRecord>;

/** An asynchronous action (create, resize, rename, delete, ACL and user changes, backups, restores) and how it went. */
export type Operation = Static<typeof OperationRecord>;
/** An event of the live stream (and the body of a webhook delivery). */
export type HangarEvent = Static<typeof EventRecord>;
export type Webhook = Static<typeof WebhookRecord>;
/** A new (or rotated) webhook, with its secret: shown this once. */
export type CreatedWebhook = Static<typeof CreatedWebhookSchema>;
export type CreateWebhookRequest = Static<typeof WebhookCreateBody>;
export type WebhookDelivery = Static<typeof DeliveryRecord>;

/** States in which an operation is finished. */
export const FINISHED_OPERATION_STATES: readonly string[] = ['SUCCEEDED', 'FAILED', 'CANCELLED'];

/** A backup of an instance. */
export type Backup = Static<typeof BackupRecord>;
/** A restore of a backup into an instance. */
export type Restore = Static<typeof RestoreRecord>;
/** An instance's backup policy, as read. */
export type BackupPolicy = Static<typeof PolicyRecord>;
/** A backup policy, as set. */
export type BackupPolicyRequest = Static<typeof PolicyBody>;

/** An instance's TLS: its mode and current server certificate. */
export type InstanceTls = Static<typeof InstanceTlsRecord>;
/** A client certificate of mutual TLS as listed (no key). */
export type ClientCertificate = Static<typeof ClientCertRecord>;
/** A new client certificate with its private key: shown this once. */
export type CreatedClientCertificate = Static<typeof ClientCertCreated>;
export type CreateClientCertificateRequest = Static<typeof ClientCertCreateBody>;

/** States in which an instance serves (ACTIVE; COMPLETED for elasticsearch). */
export const READY_STATES: readonly string[] = ['ACTIVE', 'COMPLETED'];
