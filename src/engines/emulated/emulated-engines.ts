import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { Service } from '../../domain/catalog.js';
import type { MongoRole } from '../../domain/model.js';
import type { EngineUser, EnsureResult, Health, InstancePlace, InstanceSpec, StepContext, UnitDefinition } from '../../domain/units.js';
import { bytesToHuman } from '../../lib/redis-format.js';
import type { BackupDriver, Engine, MongoUserAdmin, RedisInspector } from '../engine.js';
import { PRODUCTS } from '../products.js';
import { registryOf, type EngineRegistry } from '../registry.js';

/** What an untouched redis-server 7 answers to CONFIG GET for the settings a tenant may change. */
const EMULATED_REDIS_DEFAULTS: Readonly<Record<string, string>> = {
  'maxmemory-samples': '5',
  timeout: '0',
  'tcp-keepalive': '300',
  'notify-keyspace-events': '',
  'slowlog-log-slower-than': '10000',
  'slowlog-max-len': '128',
  maxclients: '10000',
  hz: '10',
  'lazyfree-lazy-eviction': 'no',
  'lazyfree-lazy-expire': 'no',
  'lazyfree-lazy-server-del': 'no',
  'lazyfree-lazy-user-del': 'no',
  'lazyfree-lazy-user-flush': 'no',
};

const BASE_USED_MEMORY = 1_048_576 - 182_176; // an empty redis-server reports ~850K

/** What an emulated instance holds: the state a real engine would keep inside itself. */
interface Model {
  spec: InstanceSpec;
  maxmemoryPolicy: string;
  /** database -> user name -> user */
  users: Map<string, Map<string, { password: string; roles: MongoRole[] }>>;
  /** What clients stored (keys of redis, documents of mongodb...), as key -> value: what backups hold. */
  data: Map<string, string>;
}

/**
 * In-process models of the engines, for the emulated target: no process, no port, no network.
 * Each models its product consistently (a redis_ha_instance has one replica and `maxmemory` =
 * plan MB; MongoDB users are kept in memory) so that API clients can be developed and tested
 * against hangar without installing anything. The model of an instance lives as long as its one
 * unit runs on the (emulated) runtime: a unit started again starts an empty model.
 */
export class EmulatedEngine implements Engine {
  /** Snapshots of the model: what the instance holds (its MongoDB users), as JSON. */
  readonly backups: BackupDriver;

  constructor(
    readonly service: Service,
    private readonly models: Map<string, Model>,
    private readonly maxmemoryPolicy: string,
  ) {
    this.backups = {
      format: 'emulated',
      unavailableReason: () => undefined,
      // The data, not the users: users are hangar's (the store's), applied again after a restore.
      snapshot: async (spec, place) => {
        const m = this.model(spec, place);
        const json = JSON.stringify({ service: this.service, data: [...m.data] });
        return { stream: Readable.from([Buffer.from(json)]), usedBytes: BASE_USED_MEMORY, engineVersion: spec.version };
      },
      restore: async (spec, place, source, ctx) => {
        // read (and so checked) whole before the model changes
        const chunks: Buffer[] = [];
        for await (const c of source) chunks.push(Buffer.from(c as Buffer));
        const snapshot = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data: [string, string][] };
        ctx.step('emulated:restore-staged');
        this.model(spec, place).data = new Map(snapshot.data);
      },
    };
  }

  units(spec: InstanceSpec, instanceDir: string): UnitDefinition[] {
    return [{ instanceId: spec.id, role: 'engine', dir: join(instanceDir, 'engine'), bin: `emulated-${this.service}`, args: [] }];
  }

  async ensureUnits(spec: InstanceSpec, place: InstancePlace, ctx: StepContext): Promise<EnsureResult> {
    const [unit] = this.units(spec, place.dir) as [UnitDefinition];
    const { started } = await place.host.ensureUnit(unit);
    const model = this.models.get(spec.id);
    if (started || !model) {
      this.models.set(spec.id, {
        spec,
        maxmemoryPolicy: spec.settings?.['maxmemory-policy'] ?? this.maxmemoryPolicy,
        users: new Map(),
        data: new Map(),
      });
      ctx.step('create:engine-started');
      return { fresh: true };
    }
    model.spec = spec;
    if (spec.settings?.['maxmemory-policy']) model.maxmemoryPolicy = spec.settings['maxmemory-policy'];
    return { fresh: false };
  }

  async readiness(spec: InstanceSpec, place: InstancePlace): Promise<string | undefined> {
    return (await this.check(spec, place)).reason;
  }

  async check(spec: InstanceSpec, place: InstancePlace): Promise<Health> {
    const [unit] = this.units(spec, place.dir) as [UnitDefinition];
    return place.host.isRunning(unit) && this.models.has(spec.id) ? { healthy: true } : { healthy: false, reason: 'not running' };
  }

  private model(spec: InstanceSpec, place: InstancePlace): Model {
    const [unit] = this.units(spec, place.dir) as [UnitDefinition];
    const m = this.models.get(spec.id);
    if (!m || !place.host.isRunning(unit)) throw new Error('instance is not running');
    return m;
  }

  redis(spec: InstanceSpec, place: InstancePlace): RedisInspector {
    return {
      info: async (section): Promise<Record<string, string>> => {
        const m = this.model(spec, place);
        if (section === 'replication')
          return {
            role: 'master',
            connected_slaves: '1',
            slave0: 'ip=127.0.0.1,port=0,state=online,offset=0,lag=0',
            master_repl_offset: '0',
          };
        if (section === 'server') return { redis_version: m.spec.version, redis_mode: 'standalone' };
        // the replica's link to the primary
        if (section === 'clients') return { connected_clients: '1', blocked_clients: '0' };
        if (section === 'stats') {
          return {
            instantaneous_ops_per_sec: '0',
            total_commands_processed: '0',
            keyspace_hits: '0',
            keyspace_misses: '0',
            evicted_keys: '0',
            expired_keys: '0',
          };
        }
        if (section === 'keyspace') return {};
        const maxmemory = m.spec.plan * 1024 * 1024;
        return {
          used_memory: String(BASE_USED_MEMORY),
          used_memory_human: bytesToHuman(BASE_USED_MEMORY),
          maxmemory: String(maxmemory),
          maxmemory_human: bytesToHuman(maxmemory),
          maxmemory_policy: m.maxmemoryPolicy,
          mem_fragmentation_ratio: '1.00',
        };
      },
      configGet: async (name) => {
        const m = this.model(spec, place);
        switch (name) {
          case 'maxmemory':
            return String(m.spec.plan * 1024 * 1024);
          case 'maxmemory-policy':
            return m.maxmemoryPolicy;
          default:
            return m.spec.settings?.[name] ?? EMULATED_REDIS_DEFAULTS[name] ?? '';
        }
      },
      // the model runs no command: nothing is ever slow
      slowlog: async () => [],
    };
  }

  mongodbUsers(spec: InstanceSpec, place: InstancePlace): MongoUserAdmin {
    const db = (database: string) => {
      const m = this.model(spec, place);
      let users = m.users.get(database);
      if (!users) {
        users = new Map();
        m.users.set(database, users);
      }
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

  /** Stores a value in an instance, as a client would (tests of backups). */
  write(id: string, key: string, value: string): void {
    const m = this.models.get(id);
    if (!m) throw new Error(`instance ${id} is not running`);
    m.data.set(key, value);
  }

  /** What an instance holds, as key -> value (tests of backups). */
  dataOf(id: string): Record<string, string> {
    return Object.fromEntries(this.models.get(id)?.data ?? []);
  }

  /** Whether a MongoDB user of the instance would log in with this password (as `db.auth` would). */
  authenticate(id: string, database: string, name: string, password: string): boolean {
    return this.models.get(id)?.users.get(database)?.get(name)?.password === password;
  }

  /** The Redis users and settings the model runs with (tests compare them with the store). */
  redisAccessOf(
    id: string,
  ): { users: readonly EngineUser[]; settings: Readonly<Record<string, string>>; passwords: readonly string[] } | undefined {
    const m = this.models.get(id);
    if (!m) return undefined;
    return {
      users: m.spec.users ?? [],
      settings: m.spec.settings ?? {},
      passwords: [m.spec.password ?? '', ...(m.spec.priorPasswords ?? [])],
    };
  }

  /** The users of a database as the model holds them (tests compare them with the store). */
  usersOf(id: string, database: string): { name: string; roles: MongoRole[] }[] {
    return [...(this.models.get(id)?.users.get(database)?.entries() ?? [])].map(([name, u]) => ({
      name,
      roles: u.roles.map((r) => ({ ...r })),
    }));
  }

  forget(instanceId: string): void {
    this.models.delete(instanceId);
  }

  closeIdle(): void {}

  async close(): Promise<void> {}
}

/** The emulated engines of every product, sharing one set of models, and the versions they pretend to run. */
export function emulatedEngines(config: { redisMaxmemoryPolicy: string }): EngineRegistry {
  const models = new Map<string, Model>();
  const engines = Object.fromEntries(PRODUCTS.map((p) => [p.name, new EmulatedEngine(p.service, models, config.redisMaxmemoryPolicy)]));
  return registryOf(
    engines,
    PRODUCTS.map((p) => ({ engine: p.name, service: p.service, available: true, versions: p.emulatedVersions })),
  );
}
