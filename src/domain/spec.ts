import type { EngineUser, InstanceSpec } from './units.js';
import type { Instance, RedisUser } from './model.js';

/**
 * What the runtime runs for an instance: its desired plan, credentials and ports, and, when the
 * reconciler read them, its application users and settings.
 */
export function toSpec(
  inst: Instance,
  extra: { users?: readonly RedisUser[]; settings?: Readonly<Record<string, string>> } = {},
): InstanceSpec {
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
    ...(inst.passwordPrior !== null ? { priorPasswords: [inst.passwordPrior] } : {}),
    ...(extra.users ? { users: extra.users.filter((u) => !u.deleting).map(engineUser) } : {}),
    ...(extra.settings ? { settings: extra.settings } : {}),
  };
}

function engineUser(u: RedisUser): EngineUser {
  return {
    name: u.username,
    passwords: u.passwordPrior !== null ? [u.password, u.passwordPrior] : [u.password],
    keys: u.keys,
    channels: u.channels,
    commands: u.commands,
  };
}
