/**
 * The allowed values of the API (spec 4.2 and 4.4). Versions of redis, and on the local runtime
 * of every service, come from the runtime's offerings instead.
 */
export const SERVICES = ['elasticsearch', 'mongodb', 'redis'] as const;
export type Service = (typeof SERVICES)[number];

export const INSTANCE_TYPES = {
  elasticsearch: ['elasticsearch'],
  mongodb: ['mongodb_sharded', 'mongodb_replica_set', 'mongodb_singledb', 'mongodb_jumbo_replica_set'],
  redis: ['redis_ha_instance'],
} as const satisfies Record<Service, readonly string[]>;

export type InstanceType = (typeof INSTANCE_TYPES)[Service][number];

export const PLANS: Record<Service, readonly number[]> = {
  elasticsearch: [4, 8, 16, 32, 64, 128, 256, 512],
  mongodb: [1, 5, 20, 50, 100],
  redis: [500, 1000, 2500, 5000, 10000, 20000, 50000, 75000, 100000],
};

export const ZONES: Record<Service, readonly string[]> = {
  elasticsearch: ['US-East-IAD1', 'US-Chicago-ORD2', 'EU-London-LON5', 'US-Dallas'],
  mongodb: ['US-East-IAD3', 'US-West', 'EU-London', 'AP-HongKong', 'US-Chicago', 'AP-Sydney', 'US-Dallas'],
  redis: ['EU-London', 'US-Chicago', 'US-East-IAD3', 'US-Dallas'],
};

/** Versions the spec lists; the emulated runtime offers these (and its own for redis). */
export const SPEC_VERSIONS: Record<Exclude<Service, 'redis'>, readonly string[]> = {
  elasticsearch: ['2.4.6', '5.2.2', '5.4.3', '5.5.1', '5.6.9', '6.1.2', '6.3.2', '6.4.1'],
  mongodb: ['2.6.11', '3.2.8', '3.4.2'],
};

export const STORAGE_ENGINES = ['mmapv1', 'wiredtiger'] as const;

/**
 * Role names a MongoDB user may hold. Left out: roles that administer the users of `admin`,
 * hangar's own among them (`userAdminAnyDatabase`, `restore`, which writes `admin.system.users`,
 * and `root`): a client holding one could take the instance from hangar.
 */
export const MONGODB_ROLES = [
  'read',
  'readWrite',
  'dbAdmin',
  'dbOwner',
  'userAdmin',
  'readAnyDatabase',
  'readWriteAnyDatabase',
  'dbAdminAnyDatabase',
  'clusterMonitor',
  'enableSharding',
  'backup',
] as const;

/** Roles that MongoDB only grants on the `admin` database. */
export const ADMIN_DB_ROLES: readonly string[] = [
  'readAnyDatabase',
  'readWriteAnyDatabase',
  'dbAdminAnyDatabase',
  'clusterMonitor',
  'enableSharding',
  'backup',
];

/** Roles that administer the users of the database they are granted on: not on `admin`. */
export const USER_ADMIN_ROLES: readonly string[] = ['userAdmin', 'dbOwner'];

export const INSTANCE_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

export function isService(s: string): s is Service {
  return (SERVICES as readonly string[]).includes(s);
}
