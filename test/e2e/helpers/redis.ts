import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { createClient } from 'redis';

export type RedisClient = ReturnType<typeof createClient>;

/**
 * How a client speaks TLS: the CA it verifies the server against (the name it connects to, or
 * `servername`, checked against the certificate), and a client certificate for mutual TLS.
 */
export interface ClientTls {
  /** Absent: the system's CAs. */
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
  /** The name to check the certificate for instead of the address connected to. */
  readonly servername?: string;
}

/**
 * A real Redis client, connected to 127.0.0.1:`port` (through the edge, unless `port` is an
 * engine port) from `localAddress`, authenticated with `password`, over TLS when `tls` is given.
 * Rejects when the connection is refused or closed, or the server is not the one `tls` trusts.
 */
export async function connectRedis(port: number, password: string, localAddress?: string, tls?: ClientTls): Promise<RedisClient> {
  const socket = {
    host: '127.0.0.1',
    port,
    connectTimeout: 2000,
    reconnectStrategy: false as const,
    ...(localAddress ? { localAddress } : {}),
  };
  const client = createClient({
    socket: tls
      ? {
          ...socket,
          tls: true as const,
          ...(tls.ca !== undefined ? { ca: tls.ca } : {}),
          ...(tls.cert ? { cert: tls.cert, key: tls.key } : {}),
          ...(tls.servername ? { servername: tls.servername } : {}),
        }
      : socket,
    password,
    disableClientInfo: true,
  });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (err) {
    try {
      client.destroy();
    } catch {
      /* already closed */
    }
    throw err;
  }
  return client;
}

/** A real Redis client authenticated as an application user (`AUTH user password`). */
export async function connectRedisAs(port: number, username: string, password: string): Promise<RedisClient> {
  const client = createClient({
    socket: { host: '127.0.0.1', port, connectTimeout: 2000, reconnectStrategy: false },
    username,
    password,
    disableClientInfo: true,
  });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (err) {
    try {
      client.destroy();
    } catch {
      /* already closed */
    }
    throw err;
  }
  return client;
}

/**
 * What a client gets: PONG, refused (connection refused, reset or closed; over TLS, a handshake
 * the server broke off), or the error it got (over TLS, the client's own refusal of the server
 * names its code: ERR_TLS_CERT_ALTNAME_INVALID, SELF_SIGNED_CERT_IN_CHAIN).
 */
export async function pingOutcome(port: number, password: string, localAddress?: string, tls?: ClientTls): Promise<string> {
  let client: RedisClient | undefined;
  try {
    client = await connectRedis(port, password, localAddress, tls);
    return await client.ping();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? '';
    const text = `${(err as Error).name} ${(err as Error).message} ${code}`;
    if (/closed|ECONNRESET|ECONNREFUSED|EPIPE|Socket|ERR_SSL_|alert/i.test(text)) return 'refused';
    return code ? `${code}: ${(err as Error).message}` : (err as Error).message;
  } finally {
    try {
      client?.destroy();
    } catch {
      /* already closed */
    }
  }
}

/** Whether anything accepts a TCP connection on 127.0.0.1:`port`. */
export function tcpAccepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/**
 * The directory of the engine that plays `role` (the documented layout): `primary/` and
 * `replica/`, unless a switch of engines switched their roles; the primary's redis.conf has no
 * `replicaof`.
 */
export function engineDir(dataDir: string, instanceId: string, role: 'primary' | 'replica'): string {
  const base = join(dataDir, 'instances', instanceId);
  const follows = (dir: string): boolean | undefined => {
    try {
      return /^replicaof /m.test(readFileSync(join(base, dir, 'redis.conf'), 'utf8'));
    } catch {
      return undefined;
    }
  };
  const switched = follows('primary') === true && follows('replica') === false;
  const dir = switched ? (role === 'primary' ? 'replica' : 'primary') : role;
  return join(base, dir);
}

/** A setting of the redis.conf of the engine playing `role`. */
export function engineSetting(dataDir: string, instanceId: string, role: 'primary' | 'replica', name: string): string | undefined {
  const text = readFileSync(join(engineDir(dataDir, instanceId, role), 'redis.conf'), 'utf8');
  return new RegExp(`^${name} (.+)$`, 'm').exec(text)?.[1];
}

/** The loopback port of an instance's engine. */
export function enginePort(dataDir: string, instanceId: string, role: 'primary' | 'replica'): number {
  return Number(engineSetting(dataDir, instanceId, role, 'port'));
}

/** The pid of an engine, from its pid file. */
export function enginePid(dataDir: string, instanceId: string, role: 'primary' | 'replica'): number {
  return Number(readFileSync(join(engineDir(dataDir, instanceId, role), 'process.pid'), 'utf8').trim());
}

/** Polls until `condition` holds (or throws after `ms` with `what`). */
export async function eventually(what: string, condition: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
