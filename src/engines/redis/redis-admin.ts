import type { createClient } from '@redis/client';
import { parseInfo } from '../../lib/redis-format.js';
import { REDIS_ADMIN_USER } from './redis-config.js';
import { withTimeout } from '../../lib/timeout.js';

/** One engine as hangar administers it: its loopback port and the `hangar` user's password. */
export interface RedisEndpoint {
  /** Names the connection: `<instanceId>/<role>`. */
  readonly key: string;
  /** Address of the engine; loopback when left out. */
  readonly host?: string;
  readonly port: number;
  readonly adminSecret: string;
  /** The user to authenticate as: hangar's own (default), or `default` for a Sentinel. */
  readonly user?: string;
}

/**
 * The version of the server that answered `INFO server`: Valkey reports the Redis version it is
 * compatible with as `redis_version` (7.2.4) and its own as `valkey_version`.
 */
export function serverVersion(server: Readonly<Record<string, string>>): string | undefined {
  return server.valkey_version ?? server.redis_version;
}

/** A command that takes longer than this fails (and its connection is dropped). */
const COMMAND_TIMEOUT_MS = 2000;
const CONNECT_TIMEOUT_MS = 1000;
const LOOPBACK = '127.0.0.1';

type Client = ReturnType<typeof createClient>;

/**
 * The client every administrative connection is duplicated from: @redis/client alone, without
 * the modules' commands (search, JSON, time series, bloom) that the `redis` package loads and
 * attaches and hangar never sends. createClient builds a client class with every command
 * attached, and caches it only for options equal to the last ones: with a port and a password per engine, each connection paid for a new
 * class (some 30 ms of CPU and garbage enough to grow hangar's heap by hundreds of MB while
 * instances start). `duplicate` makes a connection of the same class with other options.
 * Never connected itself; made on first use.
 */
let template: Client | undefined;

interface Held {
  /** The connection, or its attempt in progress (shared by concurrent callers). */
  readonly client: Promise<Client>;
  readonly host: string;
  readonly port: number;
  readonly adminSecret: string;
  lastUsed: number;
}

/** Closes a client now; one the server already closed is fine. */
function destroy(client: Client): void {
  try {
    client.destroy();
  } catch {
    /* closed already */
  }
}

/**
 * Administrative connections to Redis engines, as the `hangar` user over loopback (never through
 * the edge), with the official client. A connection is kept per engine and reused by the passes
 * and inspections that follow; it is dropped on any failure, when idle, and when its instance goes.
 */
export class RedisAdmin {
  private readonly held = new Map<string, Held>();
  /** What was last applied to an engine under a name (`<endpoint key>/<what>`), while this process runs. */
  private readonly appliedRules = new Map<string, string>();

  /** What was last applied under `name` to the engine `ep` by this process, if anything. */
  applied(ep: RedisEndpoint, name: string): string | undefined {
    return this.appliedRules.get(`${ep.key}/${name}`);
  }

  /** Remembers what was applied under `name` to the engine `ep`. */
  remember(ep: RedisEndpoint, name: string, value: string): void {
    this.appliedRules.set(`${ep.key}/${name}`, value);
  }

  private async client(ep: RedisEndpoint): Promise<Client> {
    const h = this.held.get(ep.key);
    if (h && h.host === (ep.host ?? LOOPBACK) && h.port === ep.port && h.adminSecret === ep.adminSecret) {
      const client = await h.client.catch(() => undefined);
      if (client?.isReady) {
        h.lastUsed = Date.now();
        return client;
      }
    }
    if (this.held.get(ep.key) === h) this.drop(ep.key);
    const attempt = this.connect(ep);
    this.held.set(ep.key, { client: attempt, host: ep.host ?? LOOPBACK, port: ep.port, adminSecret: ep.adminSecret, lastUsed: Date.now() });
    try {
      return await attempt;
    } catch (err) {
      if (this.held.get(ep.key)?.client === attempt) this.held.delete(ep.key);
      throw err;
    }
  }

  private async connect(ep: RedisEndpoint): Promise<Client> {
    // The client is loaded with the first Redis instance hangar talks to, not by every hangar.
    template ??= (await import('@redis/client')).createClient({ disableClientInfo: true });
    const client = template.duplicate({
      socket: { host: ep.host ?? LOOPBACK, port: ep.port, connectTimeout: CONNECT_TIMEOUT_MS, reconnectStrategy: false },
      username: ep.user ?? REDIS_ADMIN_USER,
      password: ep.adminSecret,
      disableClientInfo: true,
    });
    // Failures surface on the command that hit them; without a listener they would crash hangar.
    client.on('error', () => {});
    try {
      await withTimeout(client.connect(), CONNECT_TIMEOUT_MS + 500, `connecting to the engine on port ${ep.port}`);
    } catch (err) {
      destroy(client);
      throw err;
    }
    // An idle administrative connection must never keep hangar from exiting.
    client.unref();
    return client;
  }

  private async run<T>(ep: RedisEndpoint, what: string, fn: (c: Client) => Promise<T>): Promise<T> {
    const client = await this.client(ep);
    try {
      return await withTimeout(fn(client), COMMAND_TIMEOUT_MS, what);
    } catch (err) {
      this.drop(ep.key);
      throw err;
    }
  }

  /** PING; resolves once the engine answers PONG (not while it loads its data). */
  async ping(ep: RedisEndpoint): Promise<void> {
    const reply = await this.run(ep, 'PING', (c) => c.ping());
    if (reply !== 'PONG') throw new Error(`PING answered ${String(reply)}`);
  }

  /** `INFO <section>` as key/value pairs. */
  async info(ep: RedisEndpoint, section: string): Promise<Record<string, string>> {
    return parseInfo(await this.run(ep, `INFO ${section}`, (c) => c.info(section)));
  }

  /** `CONFIG GET <name>`: the value, or an empty string for an unknown setting. */
  async configGet(ep: RedisEndpoint, name: string): Promise<string> {
    const reply = await this.run(ep, `CONFIG GET ${name}`, (c) => c.configGet(name));
    return String((reply as Record<string, unknown>)[name] ?? '');
  }

  async configSet(ep: RedisEndpoint, name: string, value: string): Promise<void> {
    await this.run(ep, `CONFIG SET ${name}`, (c) => c.configSet(name, value));
  }

  /** `REPLICAOF <host> <port>`: follow another primary (on this machine unless `host` says otherwise). */
  async replicaOf(ep: RedisEndpoint, primaryPort: number, primaryHost = LOOPBACK): Promise<void> {
    await this.run(ep, 'REPLICAOF', (c) => c.sendCommand(['REPLICAOF', primaryHost, String(primaryPort)]));
  }

  /** Any command, answered as the client library returns it (Sentinel's, CONFIG REWRITE). */
  async command(ep: RedisEndpoint, args: readonly string[]): Promise<unknown> {
    return this.run(ep, args.slice(0, 2).join(' '), (c) => c.sendCommand([...args]));
  }

  private drop(key: string): void {
    const h = this.held.get(key);
    if (!h) return;
    this.held.delete(key);
    h.client.then(destroy, () => {});
  }

  /** Closes the connections of one instance. */
  forget(instanceId: string): void {
    for (const key of [...this.held.keys()]) if (key.startsWith(`${instanceId}/`)) this.drop(key);
    for (const key of [...this.appliedRules.keys()]) if (key.startsWith(`${instanceId}/`)) this.appliedRules.delete(key);
  }

  /** Closes connections unused for `idleMs`. */
  closeIdle(idleMs: number): void {
    const now = Date.now();
    for (const [key, h] of [...this.held]) if (now - h.lastUsed > idleMs) this.drop(key);
  }

  async close(): Promise<void> {
    for (const key of [...this.held.keys()]) this.drop(key);
  }
}
