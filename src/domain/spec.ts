import type { InstanceSpec } from './units.js';
import type { Instance } from './model.js';

/** What the runtime runs for an instance: its desired plan, credentials and ports. */
export function toSpec(inst: Instance): InstanceSpec {
  return {
    id: inst.id,
    service: inst.service,
    type: inst.type,
    version: inst.version,
    plan: inst.desiredPlan,
    encrypted: inst.encrypted,
    storageEngine: inst.storageEngine,
    password: inst.password,
    adminSecret: inst.adminSecret,
    ports: inst.ports,
  };
}
