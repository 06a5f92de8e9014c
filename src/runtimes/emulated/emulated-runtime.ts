import { bytesToHuman } from '../../lib/redis-format.js';
import { SPEC_VERSIONS } from '../../service/catalog.js';
import type { MongoRole } from '../../service/model.js';
import type {
  AccessRule, EnsureResult, Health, InstanceSpec, MongoUserAdmin, Offerings, RedisInspector, Runtime, RuntimeHealth, RuntimeStats, StepContext,
} from '../runtime.js';

/** Redis versions the emulated runtime pretends to run. */
export const EMULATED_REDIS_VERSIONS = ['7.2.4', '7.2', '7.0.15', '7.0', '6.2.14', '6.2'] as const;

const BASE_USED_MEMORY = 1_048_576 - 182_176; // an empty redis-server reports ~850K

interface Unit {
  spec: InstanceSpec;
  maxmemoryPolicy: string;
  rules: readonly AccessRule[];
  /** database -> user name -> user */
  users: Map<string, Map<string, { password: string; roles: MongoRole[] }>>;
}

/**
 * An in-process stand-in for real engines: no process, no port, no network. It models each
 * engine consistently (a redis_ha_instance has one replica and `maxmemory` = plan MB; MongoDB
 * users are kept in memory) so that API clients can be developed and tested against hangar
 * without installing anything. Its state lives in memory: after a restart the reconciler
 * rebuilds it from the store.
 */
export class EmulatedRuntime implements Runtime {
  readonly kind = 'emulated' as const;
  private readonly units = new Map<string, Unit>();
  private holds = 0;
  private failure: Error | undefined;

  constructor(private readonly opts: { redisMaxmemoryPolicy: string }) {}

  async start(): Promise<void> {}
  async close(): Promise<void> {}

  offerings(): Offerings {
    return {
      redis: { available: true, versions: EMULATED_REDIS_VERSIONS },
      mongodb: { available: true, versions: SPEC_VERSIONS.mongodb },
      elasticsearch: { available: true, versions: SPEC_VERSIONS.elasticsearch },
    };
  }

  async portIsFree(): Promise<boolean> {
    return true;
  }

  /**
   * Holds every build, change and removal at its start until the returned function is called,
   * so that a client under test can see the transitional states (BUILDING, RESIZING,
   * DELETING) and what the API answers in them. A held pass still ends when hangar stops.
   */
  hold(): () => void {
    this.holds++;
    let released = false;
    return () => {
      if (!released) this.holds--;
      released = true;
    };
  }

  private async whileHeld(ctx: StepContext): Promise<void> {
    while (this.holds > 0) {
      await new Promise((r) => setTimeout(r, 10));
      ctx.step('emulated:held');
    }
  }

  /**
   * Makes every build and change fail with `error` until the returned function is called, so
   * that a client under test can see the failure states: a TerminalError fails a build (FAILED,
   * with the error as the reason); any other error is retried, and turns an instance that
   * served DEGRADED until it passes again.
   */
  failWith(error: Error): () => void {
    this.failure = error;
    return () => {
      if (this.failure === error) this.failure = undefined;
    };
  }

  async ensureInstance(spec: InstanceSpec, rules: readonly AccessRule[], ctx: StepContext): Promise<EnsureResult> {
    await this.whileHeld(ctx);
    if (this.failure) throw this.failure;
    let unit = this.units.get(spec.id);
    const fresh = unit === undefined;
    if (!unit) {
      unit = { spec, maxmemoryPolicy: this.opts.redisMaxmemoryPolicy, rules: [], users: new Map() };
      this.units.set(spec.id, unit);
      ctx.step('create:engine-started');
    }
    unit.spec = spec;
    unit.rules = [...rules];
    ctx.step('ensure:access-applied');
    return { fresh };
  }

  async ensureAccess(spec: InstanceSpec, rules: readonly AccessRule[]): Promise<void> {
    const unit = this.units.get(spec.id);
    if (unit) unit.rules = [...rules];
  }

  async removeInstance(id: string, ctx: StepContext): Promise<void> {
    await this.whileHeld(ctx);
    ctx.step('delete:engine-stopping');
    this.units.delete(id);
  }

  async listInstanceIds(): Promise<string[]> {
    return [...this.units.keys()];
  }

  async checkInstance(spec: InstanceSpec): Promise<Health> {
    return this.units.has(spec.id) ? { healthy: true } : { healthy: false, reason: 'not running' };
  }

  /** Access rules in force for an instance (tests of the emulated edge read this). */
  rulesOf(id: string): readonly AccessRule[] | undefined {
    return this.units.get(id)?.rules;
  }

  /** Whether a MongoDB user of the instance would log in with this password (as `db.auth` would). */
  authenticate(id: string, database: string, name: string, password: string): boolean {
    return this.units.get(id)?.users.get(database)?.get(name)?.password === password;
  }

  redis(spec: InstanceSpec): RedisInspector {
    const unit = () => {
      const u = this.units.get(spec.id);
      if (!u) throw new Error('instance is not running');
      return u;
    };
    return {
      info: async (section): Promise<Record<string, string>> => {
        const u = unit();
        if (section === 'replication') return { role: 'master', connected_slaves: '1' };
        if (section === 'server') return { redis_version: u.spec.version, redis_mode: 'standalone' };
        const maxmemory = u.spec.plan * 1024 * 1024;
        return {
          used_memory: String(BASE_USED_MEMORY),
          used_memory_human: bytesToHuman(BASE_USED_MEMORY),
          maxmemory: String(maxmemory),
          maxmemory_human: bytesToHuman(maxmemory),
          maxmemory_policy: u.maxmemoryPolicy,
        };
      },
      configGet: async (name) => {
        const u = unit();
        switch (name) {
          case 'maxmemory':
            return String(u.spec.plan * 1024 * 1024);
          case 'maxmemory-policy':
            return u.maxmemoryPolicy;
          case 'maxclients':
            return '10000';
          default:
            return '';
        }
      },
    };
  }

  mongodbUsers(spec: InstanceSpec): MongoUserAdmin {
    const db = (database: string) => {
      const u = this.units.get(spec.id);
      if (!u) throw new Error('instance is not running');
      let users = u.users.get(database);
      if (!users) u.users.set(database, (users = new Map()));
      return users;
    };
    return {
      listUsers: async (database) => [...db(database).entries()].map(([name, u]) => ({ name, roles: u.roles.map((r) => ({ ...r })) })),
      createUser: async (database, name, password, roles) => {
        const users = db(database);
        if (users.has(name)) throw new Error(`User "${name}@${database}" already exists`);
        users.set(name, { password, roles: roles.map((r) => ({ ...r })) });
      },
      updateUser: async (database, name, change) => {
        const user = db(database).get(name);
        if (!user) throw new Error(`User ${name}@${database} not found`);
        if (change.password !== undefined) user.password = change.password;
        if (change.roles !== undefined) user.roles = change.roles.map((r) => ({ ...r }));
      },
      dropUser: async (database, name) => {
        db(database).delete(name);
      },
    };
  }

  health(): RuntimeHealth {
    return { problems: [], degraded: [] };
  }

  /** The emulated runtime runs no process and no edge: units count as processes, nothing is admitted or refused. */
  async stats(): Promise<RuntimeStats> {
    return { processesUp: this.units.size, processesExpected: this.units.size, edge: [] };
  }
}
