import type { EdgeRoute } from '../domain/endpoints.js';
import type { Instance, RedisUser } from '../domain/model.js';
import type { EdgeTls, EngineUser, InstanceSpec } from '../domain/units.js';
import { productNamed } from './products.js';

/** The edge listeners of an instance as its product lays them out for its TLS mode. */
export function instanceRoutes(inst: Pick<Instance, 'engine' | 'type' | 'ports' | 'tlsMode'>): EdgeRoute[] {
  return productNamed(inst.engine).edgeRoutes(inst.type, inst.ports, inst.tlsMode);
}

/**
 * What the runtime runs for an instance: its desired engine and version (another than it runs
 * while a switch of engines is under way) and the edge routes its product gives it, its desired
 * plan, credentials and ports, and, when the reconciler read them, its application users and
 * settings, and what its TLS listeners present.
 */
export function toSpec(
  inst: Instance,
  extra: { users?: readonly RedisUser[]; settings?: Readonly<Record<string, string>>; tls?: EdgeTls } = {},
): InstanceSpec {
  return {
    id: inst.id,
    service: inst.service,
    engine: inst.desiredEngine,
    routes: instanceRoutes({ ...inst, engine: inst.desiredEngine }),
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
    ...(extra.tls ? { tls: extra.tls } : {}),
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
