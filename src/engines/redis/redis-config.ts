/** The user hangar administers a Redis engine as (CONFIG, INFO, SHUTDOWN); clients never get it. */
export const REDIS_ADMIN_USER = 'hangar';

/**
 * Commands of the client's `default` user: everything except the `@admin` category (CONFIG SET,
 * SHUTDOWN, REPLICAOF, DEBUG, ACL SETUSER, MONITOR, ...), so a client cannot reconfigure,
 * stop or detach the engine hangar supervises. Given back on top of that: CONFIG GET (read only,
 * and common client libraries read settings with it) and the replication handshake (REPLCONF,
 * PSYNC, SYNC), because the replica authenticates to its primary with `masterauth`, i.e. as
 * `default` with the instance password.
 */
export const REDIS_CLIENT_RULES = '~* &* +@all -@admin +config|get +replconf +psync +sync';

export type RedisRole = 'primary' | 'replica';

export interface RedisUnitConfig {
  readonly instanceId: string;
  readonly role: RedisRole;
  /** Loopback port the engine listens on. */
  readonly port: number;
  /** The unit's directory: AOF (the runtime keeps its pid file and log there too). */
  readonly dir: string;
  /** The instance password (`default` user, `requirepass`, `masterauth`). */
  readonly password: string;
  /** Password of the `hangar` user. */
  readonly adminSecret: string;
  /** The plan: `maxmemory` in MB. */
  readonly maxmemoryMb: number;
  readonly maxmemoryPolicy: string;
  /** Port of the primary (replica only). */
  readonly primaryPort?: number;
}

/** A value as redis.conf reads it: double-quoted, with `\` and `"` escaped. */
function quote(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/**
 * The redis.conf of one engine of a redis_ha_instance. Pure: the same input gives the same
 * text, so comparing it with the file on disk tells whether anything changed.
 */
export function renderRedisConfig(c: RedisUnitConfig): string {
  if (c.role === 'replica' && c.primaryPort === undefined) throw new Error('a replica needs the port of its primary');
  const lines = [
    `# redis-server ${c.role} of hangar instance ${c.instanceId}.`,
    '# Written by hangar from the instance record; hangar rewrites it, so edits here are lost.',
    '',
    '# Loopback only: clients come through the edge (HAProxy), which enforces the ACLs.',
    'bind 127.0.0.1',
    `port ${c.port}`,
    'protected-mode yes',
    // hangar supervises the process: it stays in the foreground, its stdout is the log, and the
    // supervisor alone writes its pid file.
    'daemonize no',
    'logfile ""',
    `dir ${quote(c.dir)}`,
    // The config path in the process title lets hangar tell its engines from a reused pid.
    'proc-title-template "{title} {listen-addr} {server-mode} {config-file}"',
    '',
    '# Clients authenticate as `default` with the instance password; hangar as its own user.',
    `requirepass ${quote(c.password)}`,
    `masterauth ${quote(c.password)}`,
    `user default on ${quote(`>${c.password}`)} ${REDIS_CLIENT_RULES}`,
    `user ${REDIS_ADMIN_USER} on ${quote(`>${c.adminSecret}`)} ~* &* +@all`,
    '',
    '# The plan.',
    `maxmemory ${c.maxmemoryMb}mb`,
    `maxmemory-policy ${c.maxmemoryPolicy}`,
    '',
    '# Persistence: append-only file in the unit directory, no RDB snapshots.',
    'appendonly yes',
    'appendfilename "appendonly.aof"',
    'appenddirname "appendonlydir"',
    'appendfsync everysec',
    'save ""',
    '',
    // Without a delay of 0 a new replica waits 5 s before its first sync.
    '# Replication.',
    'repl-diskless-sync yes',
    'repl-diskless-sync-delay 0',
  ];
  if (c.role === 'replica') lines.push(`replicaof 127.0.0.1 ${c.primaryPort}`, 'replica-read-only yes');
  return `${lines.join('\n')}\n`;
}

/** The `maxmemory-policy` written in an existing redis.conf, if any. */
export function readMaxmemoryPolicy(configText: string): string | undefined {
  return /^maxmemory-policy\s+(\S+)\s*$/m.exec(configText)?.[1];
}
