import type { Static } from 'typebox';
import { formatCreated } from '../lib/time.js';
import { publicPort } from '../domain/endpoints.js';
import type { Acl, Instance, RecordedAuditEvent, RedisUser } from '../domain/model.js';
import { productNamed } from '../engines/products.js';
import type { DeniedConnection } from '../domain/units.js';
import type { EffectiveAccess } from '../service/acls.js';
import type { RedisStats, SlowlogEntry } from '../service/redis.js';
import type { AclRecord as AclRecordSchema, AclRecordExtended as AclRecordExtendedSchema } from './schemas/acls.js';
import type { CreationRecord as CreationRecordSchema, InstanceRecord as InstanceRecordSchema } from './schemas/instances.js';
import type { EventRecord as EventRecordSchema, OperationRecord as OperationRecordSchema } from './schemas/operations.js';
import type { AuditEventRecord as AuditEventRecordSchema } from './schemas/events.js';
import type { Operation, StreamEvent } from '../domain/operations.js';
import type { BackupRecord, PolicyRecord, RestoreRecord } from './schemas/backups.js';
import { formatTimeOfDay, type Backup, type BackupPolicy, type Restore } from '../domain/backups.js';

/**
 * Domain -> wire, in one place. Each function is an allowlist of the fields the spec shows, in
 * its order; nothing else of the domain object (admin secrets, leases) can leak out.
 */

export type InstanceRecord = Static<typeof InstanceRecordSchema>;
export type CreationRecord = Static<typeof CreationRecordSchema>;
export type AclRecord = Static<typeof AclRecordSchema>;
export type AclRecordExtended = Static<typeof AclRecordExtendedSchema>;

/**
 * The instance record of list and detail responses (spec 2.1). Connect strings name `host` (the
 * advertised host), or the address the instance's runtime gave it (a Kubernetes zone's edge).
 */
export function instanceRecord(inst: Instance, advertised: string): InstanceRecord {
  const host = inst.address ?? advertised;
  const base: InstanceRecord = {
    id: inst.id,
    name: inst.name,
    service: inst.service,
    type: inst.type,
    plan: inst.plan,
    version: inst.version,
    engine: inst.engine,
    zone: inst.zone,
    created: formatCreated(inst.createdAt),
    api_key: inst.apiKey,
    caster: null,
    state: inst.state,
  };
  Object.assign(base, productNamed(inst.engine).recordFields(inst, host));
  // Why it is DEGRADED or FAILED, or what a build or resize waits for (a pod the scheduler cannot place).
  if (inst.stateReason !== null) base.state_reason = inst.stateReason;
  return base;
}

/** The creation response: the record of spec 2.3 plus the instance record's fields. */
export function creationRecord(inst: Instance, host: string): CreationRecord {
  return {
    _id: { $oid: inst.id },
    ansible_group: null,
    build_id: inst.buildId,
    dtcreated: { $date: inst.createdAt },
    [`${inst.service}_version` as 'redis_version']: inst.version,
    instance_name_prior: inst.namePrior,
    instance_service: inst.service,
    instance_type: inst.type,
    login: inst.login,
    login_prior: null,
    ...instanceRecord(inst, host),
  };
}

/** An ACL list entry (spec 2.4). */
export function aclRecord(acl: Acl, inst: Instance): AclRecord {
  const rec: AclRecord = {
    _cls: 'Acl',
    _id: { $oid: acl.id },
    cidr_mask: acl.cidrMask,
    date_created: { $date: acl.createdAt },
    description: acl.description,
    instance: inst.name,
    login: inst.login,
    metadata: {},
    port: publicPort(inst.ports),
  };
  // the flags of the product's extra listeners (Elasticsearch's transport and Kibana)
  const groups = productNamed(inst.engine).features.aclGroups;
  if (groups.includes('transport')) rec.transport = acl.transport;
  if (groups.includes('kibana')) rec.kibana = acl.kibana;
  if (acl.expiresAt !== null) rec.expires_at = new Date(acl.expiresAt).toISOString();
  return rec;
}

/** The single-ACL response: the list entry plus the instance's id and types. */
export function aclRecordExtended(acl: Acl, inst: Instance): AclRecordExtended {
  return {
    ...aclRecord(acl, inst),
    instance_id: { $oid: inst.id },
    instance_type: inst.type,
    service_type: inst.service,
  };
}

export type OperationRecord = Static<typeof OperationRecordSchema>;
export type EventRecord = Static<typeof EventRecordSchema>;

const date = (ms: number | null) => (ms === null ? null : { $date: ms });

/** An operation as the API shows it. */
export function operationRecord(op: Operation): OperationRecord {
  return {
    id: op.id,
    kind: op.kind,
    state: op.state,
    instance_id: op.instanceId,
    instance_name: op.instanceName,
    account_id: op.accountId,
    steps: op.steps.map((s) => ({ name: s.name, at: { $date: s.at }, ...(s.message !== undefined ? { message: s.message } : {}) })),
    progress: op.progress,
    error: op.error === null ? null : { code: op.error.code, message: op.error.message },
    requested_by:
      op.requestedBy === null ? null : { login: op.requestedBy.login, credential: op.requestedBy.credential, id: op.requestedBy.id },
    request_id: op.requestId,
    detail: { ...op.detail },
    cancellable: op.cancellable,
    created: formatCreated(op.createdAt),
    date_created: { $date: op.createdAt },
    date_updated: { $date: op.updatedAt },
    date_started: date(op.startedAt),
    date_finished: date(op.finishedAt),
    deadline: { $date: op.deadlineAt },
    last_event_id: op.lastEventId,
  };
}

/** An event as the stream and webhooks carry it; an operation's is its record as of that event. */
export function eventRecord(e: StreamEvent): EventRecord {
  const isOperation = e.kind.startsWith('operation.');
  return {
    id: e.id,
    kind: e.kind,
    instance_id: e.instanceId,
    instance_name: e.instanceName,
    operation_id: e.operationId,
    created: formatCreated(e.createdAt),
    date_created: { $date: e.createdAt },
    data: isOperation ? { ...operationRecord(e.data as unknown as Operation), last_event_id: e.id } : { ...e.data },
  };
}

const iso = (ms: number) => new Date(ms).toISOString();

/** What the edge enforces, against the store. */
export function effectiveRecord(e: EffectiveAccess) {
  return {
    in_sync: e.inSync,
    desired: e.desired,
    enforcers: e.enforcers.map((x) => ({
      name: x.name,
      sources: Object.fromEntries(Object.entries(x.groups).map(([g, list]) => [g, [...list]])),
      in_sync: x.inSync,
      missing: x.missing,
      extra: x.extra,
      ...(x.problem !== undefined ? { problem: x.problem } : {}),
    })),
    checked_at: iso(e.checkedAt),
  };
}

/** A refused connection. */
export function deniedRecord(d: DeniedConnection) {
  return { source: d.source, time: iso(d.at), listener: d.listener };
}

/** A Redis user, without its password. */
export function redisUserRecord(u: RedisUser) {
  return {
    name: u.username,
    keys: [...u.keys],
    channels: [...u.channels],
    commands: [...u.commands],
    date_created: { $date: u.createdAt },
    ...(u.rotationEndsAt !== null ? { previous_password_valid_until: iso(u.rotationEndsAt) } : {}),
  };
}

/** A slow log entry. */
export function slowlogRecord(e: SlowlogEntry) {
  return {
    id: e.id,
    time: iso(e.time * 1000),
    duration_us: e.durationMicros,
    command: [...e.args],
    client: e.client,
    client_name: e.clientName,
  };
}

/** Live statistics of a Redis primary. */
export function statsRecord(s: RedisStats) {
  return {
    ops_per_sec: s.opsPerSec,
    total_commands: s.totalCommands,
    keyspace_hits: s.keyspaceHits,
    keyspace_misses: s.keyspaceMisses,
    hit_ratio: s.hitRatio,
    evicted_keys: s.evictedKeys,
    expired_keys: s.expiredKeys,
    keys: s.keys,
    connected_clients: s.connectedClients,
    maxclients: s.maxclients,
    blocked_clients: s.blockedClients,
    used_memory: s.usedMemory,
    maxmemory: s.maxmemory,
    fragmentation_ratio: s.fragmentationRatio,
    role: s.role,
    replication_offset: s.replicationOffset,
    replicas: s.replicas.map((r) => ({ state: r.state, offset: r.offset, lag_bytes: r.lagBytes, lag_seconds: r.lagSeconds })),
    uptime_seconds: s.uptimeSeconds,
    version: s.version,
  };
}

/** A backup as the API shows it: never its data key. */
export function backupRecord(b: Backup): BackupRecord {
  return {
    id: b.id,
    instance_id: b.instanceId,
    instance_name: b.instanceName,
    service: b.service,
    engine: b.engine,
    engine_version: b.engineVersion,
    format: b.format,
    state: b.state,
    state_reason: b.stateReason,
    step: b.step,
    trigger: b.scheduled ? 'scheduled' : 'on_demand',
    scheduled: b.scheduled,
    requested: formatCreated(b.requestedAt),
    started: b.startedAt === null ? null : formatCreated(b.startedAt),
    finished: b.finishedAt === null ? null : formatCreated(b.finishedAt),
    size_bytes: b.sizeBytes,
    sha256: b.sha256,
    used_memory_bytes: b.usedBytes,
    location: b.location,
  };
}

export function restoreRecord(r: Restore): RestoreRecord {
  return {
    id: r.id,
    instance_id: r.instanceId,
    instance_name: r.instanceName,
    backup_id: r.backupId,
    kind: r.kind,
    state: r.state,
    state_reason: r.stateReason,
    step: r.step,
    requested: formatCreated(r.requestedAt),
    started: r.startedAt === null ? null : formatCreated(r.startedAt),
    finished: r.finishedAt === null ? null : formatCreated(r.finishedAt),
  };
}

export function policyRecord(p: BackupPolicy & { nextRunAt: number | null }): PolicyRecord {
  const s = p.schedule;
  return {
    schedule: s.kind,
    every_hours: s.kind === 'every' ? s.hours : null,
    daily_at: s.kind === 'daily' ? formatTimeOfDay(s.minuteOfDay) : null,
    keep_last: p.retention.keepLast,
    keep_days: p.retention.keepDays,
    next_run: p.nextRunAt === null ? null : formatCreated(p.nextRunAt),
  };
}

export type AuditEventRecord = Static<typeof AuditEventRecordSchema>;

/**
 * An event of the audit log, as `GET /v2/events/` shows it; `hangar audit` (the operator's, over
 * every account) prints the same fields with the account's id and login beside.
 */
export function auditEventRecord(e: RecordedAuditEvent): AuditEventRecord {
  return {
    id: e.id,
    action: e.action,
    target: e.target,
    source_ip: e.sourceIp,
    outcome: e.outcome,
    status: e.statusCode,
    request_id: e.requestId,
    created: formatCreated(e.createdAt),
    date_created: { $date: e.createdAt },
  };
}
