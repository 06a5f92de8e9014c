import type { Instance, RedisUser } from '../domain/model.js';
import type { EngineUser, InstanceSpec } from '../domain/units.js';
import { productNamed } from './products.js';

/**
 * What the runtime runs for an instance: its desired engine and version (another than it runs
 * while a switch of engines is under way) and the edge routes its product gives it, its desired
 * plan, credentials and ports, and, when the reconciler read them, its application users and
 * settings.
 */
export function toSpec(
  inst: Instance,
  extra: { users?: readonly RedisUser[]; settings?: Readonly<Record<string, string>> } = {},
): InstanceSpec {
  return {
    id: inst.id,
    service: inst.service,
    engine: inst.desiredEngine,
    routes: productNamed(inst.desiredEngine).edgeRoutes(inst.type, inst.ports),
    type: inst.type,
    version: inst.desiredVersion,
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
