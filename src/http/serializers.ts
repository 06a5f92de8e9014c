import type { Static } from 'typebox';
import { formatCreated } from '../lib/time.js';
import { publicPort } from '../domain/endpoints.js';
import type { Acl, Instance, PortMap } from '../domain/model.js';
import type { AclRecord, AclRecordExtended } from './schemas/acls.js';
import type { CreationRecord, InstanceRecord } from './schemas/instances.js';
import type { BackupRecord, PolicyRecord, RestoreRecord } from './schemas/backups.js';
import { formatTimeOfDay, type Backup, type BackupPolicy, type Restore } from '../domain/backups.js';

/**
 * Domain -> wire, in one place. Each function is an allowlist of the fields the spec shows, in
 * its order; nothing else of the domain object (admin secrets, leases) can leak out.
 */

export type InstanceRecord = Static<typeof InstanceRecord>;
export type CreationRecord = Static<typeof CreationRecord>;
export type AclRecord = Static<typeof AclRecord>;
export type AclRecordExtended = Static<typeof AclRecordExtended>;

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
    zone: inst.zone,
    created: formatCreated(inst.createdAt),
    api_key: inst.apiKey,
    caster: null,
    state: inst.state,
  };
  switch (inst.service) {
    case 'redis':
      Object.assign(base, {
        connect_string: `redis://${host}:${inst.ports.public}`,
        clb_id: null,
        password: inst.password,
        public_connect_string: `redis://${host}:${inst.ports.public}`,
        servicenet_connect_string: `redis://${host}:${inst.ports.servicenet}`,
      });
      break;
    case 'mongodb':
      base.connect_string = mongoConnectString(inst, host);
      if (inst.type === 'mongodb_sharded') base.ssl_connect_string = `${host}:${inst.ports.ssl}`;
      break;
    case 'elasticsearch':
      Object.assign(base, {
        encrypted: inst.encrypted,
        settings: {},
        connection_strings: esConnectionStrings(inst.ports, host),
      });
      break;
  }
  // Why it is DEGRADED or FAILED, or what a build or resize waits for (a pod the scheduler cannot place).
  if (inst.stateReason !== null) base.state_reason = inst.stateReason;
  return base;
}

function mongoConnectString(inst: Instance, host: string): string {
  if (inst.type === 'mongodb_singledb' || inst.type === 'mongodb_sharded') return `${host}:${inst.ports.public}`;
  return [0, 1, 2].map((i) => `${host}:${inst.ports[`public.${i}`]}`).join(',');
}

function esConnectionStrings(p: PortMap, host: string) {
  return {
    public: {
      http: `http://${host}:${p['public.http']}`,
      https: `https://${host}:${p['public.https']}`,
      kibana_http: `http://${host}:${p['public.kibana_http']}`,
      kibana_https: `https://${host}:${p['public.kibana_https']}`,
      transport: `${host}:${p['public.transport']}`,
    },
    servicenet: {
      http: `http://${host}:${p['servicenet.http']}`,
      https: `https://${host}:${p['servicenet.https']}`,
      transport: `${host}:${p['servicenet.transport']}`,
    },
  };
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
  if (inst.service === 'elasticsearch') {
    rec.transport = acl.transport;
    rec.kibana = acl.kibana;
  }
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

/** A backup as the API shows it: never its data key. */
export function backupRecord(b: Backup): BackupRecord {
  return {
    id: b.id,
    instance_id: b.instanceId,
    instance_name: b.instanceName,
    service: b.service,
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
