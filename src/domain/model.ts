import type { InstanceType, Service } from './catalog.js';
import type { TlsMode } from './tls.js';

/**
 * Every state an instance can be in. The spec shows REQUESTED, ACTIVE and COMPLETED; the others
 * are hangar's, and clients that know only the spec's treat them as "not ready yet".
 * RESTORING: a backup replaces the instance's data (clients are cut off meanwhile).
 */
export const INSTANCE_STATES = [
  'REQUESTED',
  'BUILDING',
  'ACTIVE',
  'COMPLETED',
  'RESIZING',
  'RESTORING',
  'DEGRADED',
  'DELETING',
  'FAILED',
] as const;
export type InstanceState = (typeof INSTANCE_STATES)[number];

/** States in which the instance serves and accepts a resize. */
export const READY_STATES: readonly InstanceState[] = ['ACTIVE', 'COMPLETED'];
/** States in which the engine is expected to answer. */
export const SERVING_STATES: readonly InstanceState[] = ['ACTIVE', 'COMPLETED', 'RESIZING', 'DEGRADED'];

/** Named ports of an instance: edge listeners (`public`, `servicenet`, ...) and engine ports. */
export type PortMap = Readonly<Record<string, number>>;

export interface Account {
  readonly id: string;
  readonly login: string;
  readonly createdAt: number;
}

export interface Instance {
  readonly id: string;
  readonly accountId: string;
  readonly login: string;
  readonly name: string;
  readonly namePrior: string | null;
  readonly service: Service;
  /** The product that runs it (`redis`, `valkey`, `mongod`, ...): see engines/products.ts. */
  readonly engine: string;
  readonly type: InstanceType;
  readonly version: string;
  readonly zone: string;
  /** The plan in effect. */
  readonly plan: number;
  /** The plan asked for; differs from `plan` while a resize runs. */
  readonly desiredPlan: number;
  /** The engine asked for; differs from `engine` while a switch of engines runs (Redis to Valkey). */
  readonly desiredEngine: string;
  /** The version asked for; differs from `version` while a switch of engines runs. */
  readonly desiredVersion: string;
  readonly encrypted: boolean;
  readonly storageEngine: string | null;
  readonly apiKey: string;
  /** Engine password given to clients (redis), decrypted. */
  readonly password: string | null;
  /** Credential hangar uses to administer the engine, decrypted. */
  readonly adminSecret: string;
  readonly state: InstanceState;
  readonly stateReason: string | null;
  /** Delete asked for. */
  readonly deleting: boolean;
  readonly specVersion: number;
  readonly observedVersion: number;
  readonly buildId: string;
  readonly ports: PortMap;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** When the current transition (build, resize) began; for the build timeout. */
  readonly transitionAt: number;
  /** Where clients reach it when its runtime says so (a Kubernetes zone's edge); null: the advertised host. */
  readonly address: string | null;
  /** The password a rotation replaced, decrypted: clients may still use it until `passwordRotationEndsAt`. */
  readonly passwordPrior: string | null;
  readonly passwordRotationEndsAt: number | null;
  /** How clients reach it over TLS, where its product offers a choice (`preferred` elsewhere). */
  readonly tlsMode: TlsMode;
  /** Its TLS listeners ask clients for a certificate of the deployment's CA, issued for it (mutual TLS). */
  readonly tlsClientAuth: boolean;
}

/** What a create records: the instance as asked, before any pass ran. */
export interface NewInstance {
  readonly id: string;
  readonly accountId: string;
  readonly login: string;
  readonly name: string;
  readonly service: Service;
  readonly engine: string;
  readonly type: InstanceType;
  readonly version: string;
  readonly zone: string;
  readonly plan: number;
  readonly encrypted: boolean;
  readonly storageEngine: string | null;
  readonly apiKey: string;
  readonly password: string | null;
  readonly adminSecret: string;
  readonly buildId: string;
  readonly ports: PortMap;
  readonly createdAt: number;
  readonly tlsMode: TlsMode;
  readonly tlsClientAuth: boolean;
}

/** The fields of an instance that a request or a pass changes; the store maps them to its columns. */
export interface InstancePatch {
  readonly state?: InstanceState;
  readonly stateReason?: string | null;
  readonly plan?: number;
  readonly desiredPlan?: number;
  readonly engine?: string;
  readonly version?: string;
  readonly desiredEngine?: string;
  readonly desiredVersion?: string;
  readonly deleting?: boolean;
  readonly observedVersion?: number;
  readonly updatedAt?: number;
  readonly transitionAt?: number;
  readonly address?: string | null;
}

/** Where an instance's pending work stands: what the reconciler and replicas look at between passes. */
export interface InstanceProgress {
  readonly accountId: string;
  readonly state: InstanceState;
  readonly specVersion: number;
  readonly observedVersion: number;
  /** The replica holding the instance's claim, if any. */
  readonly leaseOwner: string | null;
}

export interface Acl {
  readonly id: string;
  readonly instanceId: string;
  readonly cidrMask: string;
  readonly description: string;
  readonly transport: boolean;
  readonly kibana: boolean;
  readonly createdAt: number;
  readonly deleting: boolean;
  /** When it stops admitting (epoch ms); null: never. */
  readonly expiresAt: number | null;
}

/** An application user of a Redis instance (a Redis ACL user). */
export interface RedisUser {
  readonly id: string;
  readonly instanceId: string;
  readonly username: string;
  /** Decrypted; never leaves hangar except towards the engine. */
  readonly password: string;
  /** The password a rotation replaced, accepted until `rotationEndsAt`. */
  readonly passwordPrior: string | null;
  readonly rotationEndsAt: number | null;
  /** Key patterns (`app:*`), channel patterns, command rules (`+@read`, `-keys`). */
  readonly keys: readonly string[];
  readonly channels: readonly string[];
  readonly commands: readonly string[];
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly deleting: boolean;
}

export interface MongoRole {
  readonly role: string;
  readonly db: string;
}

export interface MongoUser {
  readonly id: string;
  readonly instanceId: string;
  readonly database: string;
  readonly username: string;
  /** Decrypted; never leaves hangar except towards the engine. */
  readonly password: string;
  readonly roles: readonly MongoRole[];
  readonly specVersion: number;
  readonly appliedVersion: number;
  readonly deleting: boolean;
}

/** One change or login, as the audit log records it. */
export interface AuditEvent {
  readonly accountId: string | null;
  readonly login: string | null;
  readonly action: string;
  readonly target: string | null;
  readonly sourceIp: string | null;
  readonly outcome: 'success' | 'failure';
  readonly statusCode: number | null;
  readonly requestId: string | null;
  readonly createdAt: number;
}

/** An audit event as stored, with its place in the log. */
export interface RecordedAuditEvent extends AuditEvent {
  readonly id: number;
}
