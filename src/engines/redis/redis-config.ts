import type { EngineUser } from '../../domain/units.js';
import { REDIS_ADMIN_USER, userRules } from './redis-users.js';

export { REDIS_ADMIN_USER };

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
  /**
   * On a pod network rather than loopback: the address to bind, the address the engine announces
   * to its primary and to Sentinel (its Service's, stable across restarts), and its primary's
   * address (replica only).
   */
  readonly network?: { readonly bind: string; readonly announceIp: string; readonly primaryHost?: string };
  /** Passwords the `default` user still accepts besides `password` (a rotation's grace period). */
  readonly priorPasswords?: readonly string[];
  /** Application users (Redis ACL users). */
  readonly users?: readonly EngineUser[];
  /** Settings the tenant chose from the allow-list (redis-settings.ts), by name. */
  readonly settings?: Readonly<Record<string, string>>;
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
    ...(c.network
      ? [
          '# On the pod network: clients come through the edge (HAProxy), which enforces the ACLs.',
          `bind ${c.network.bind}`,
          `port ${c.port}`,
          'protected-mode no',
          `replica-announce-ip ${c.network.announceIp}`,
          `replica-announce-port ${c.port}`,
        ]
      : [
          '# Loopback only: clients come through the edge (HAProxy), which enforces the ACLs.',
          'bind 127.0.0.1',
          `port ${c.port}`,
          'protected-mode yes',
        ]),
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
    `user default on ${[c.password, ...(c.priorPasswords ?? [])].map((p) => quote(`>${p}`)).join(' ')} ${REDIS_CLIENT_RULES}`,
    `user ${REDIS_ADMIN_USER} on ${quote(`>${c.adminSecret}`)} ~* &* +@all`,
    ...((c.users ?? []).length > 0 ? ['# Application users (GET/POST /v2/redis/<name>/users/): passwords as SHA-256 only.'] : []),
    ...(c.users ?? []).map((u) => `user ${u.name} ${userRules(u).map(quote).join(' ')}`),
    '',
    '# The plan.',
    `maxmemory ${c.maxmemoryMb}mb`,
    `maxmemory-policy ${c.settings?.['maxmemory-policy'] ?? c.maxmemoryPolicy}`,
    '',
    ...settingLines(c.settings ?? {}),
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
  if (c.role === 'replica') lines.push(`replicaof ${c.network?.primaryHost ?? '127.0.0.1'} ${c.primaryPort}`, 'replica-read-only yes');
  return `${lines.join('\n')}\n`;
}

/** The tenant's settings other than the policy (written with the plan), in name order. */
function settingLines(settings: Readonly<Record<string, string>>): string[] {
  const names = Object.keys(settings)
    .filter((n) => n !== 'maxmemory-policy')
    .sort();
  if (names.length === 0) return [];
  return ['# Settings chosen by the tenant (GET/PATCH /v2/redis/<name>/config/).', ...names.map((n) => `${n} ${quote(settings[n]!)}`), ''];
}

/** The `maxmemory-policy` written in an existing redis.conf, if any. */
export function readMaxmemoryPolicy(configText: string): string | undefined {
  return /^maxmemory-policy\s+(\S+)\s*$/m.exec(configText)?.[1];
}

export interface SentinelConfig {
  readonly instanceId: string;
  /** The name Sentinel monitors the primary under. */
  readonly masterName: string;
  /** Address and port of the primary at the start (Sentinel follows it from then on). */
  readonly primaryHost: string;
  readonly primaryPort: number;
  readonly port: number;
  readonly dir: string;
  /** Password of hangar's user on the engines, and of the sentinels themselves. */
  readonly adminSecret: string;
  readonly quorum: number;
  readonly downAfterMs: number;
  readonly failoverTimeoutMs: number;
}

/**
 * The sentinel.conf of a Redis Sentinel watching an instance: it authenticates to the engines as
 * hangar's user, asks clients (hangar, the other sentinels) for hangar's secret, and names
 * addresses only (no DNS is assumed).
 */
export function renderSentinelConfig(c: SentinelConfig): string {
  const m = c.masterName;
  return `${[
    `# Redis Sentinel of hangar instance ${c.instanceId}. Written by hangar; Sentinel rewrites it as it learns.`,
    `port ${c.port}`,
    'daemonize no',
    'logfile ""',
    `dir ${quote(c.dir)}`,
    'sentinel resolve-hostnames no',
    'sentinel announce-hostnames no',
    `requirepass ${quote(c.adminSecret)}`,
    `sentinel sentinel-pass ${quote(c.adminSecret)}`,
    `sentinel monitor ${m} ${c.primaryHost} ${c.primaryPort} ${c.quorum}`,
    `sentinel auth-user ${m} ${REDIS_ADMIN_USER}`,
    `sentinel auth-pass ${m} ${quote(c.adminSecret)}`,
    `sentinel down-after-milliseconds ${m} ${c.downAfterMs}`,
    `sentinel failover-timeout ${m} ${c.failoverTimeoutMs}`,
    `sentinel parallel-syncs ${m} 1`,
  ].join('\n')}\n`;
}
