import type { MongoClient, MongoClientOptions } from 'mongodb';
import { MONGODB_ADMIN_DB, MONGODB_ADMIN_USER } from './mongodb-config.js';
import type { MongoCommands, MongoDocument } from './mongodb-commands.js';
import type { MongoConnector } from './mongodb-cluster.js';
import { withTimeout } from '../../lib/timeout.js';

/** A command (replSetInitiate included) that takes longer than this fails, and its connection is dropped. */
const COMMAND_TIMEOUT_MS = 20_000;
const CONNECT_TIMEOUT_MS = 1000;
const SELECTION_TIMEOUT_MS = 2000;

/** Where an administrative connection goes: engine ports on loopback, and who it authenticates as. */
export interface MongoTarget {
  /** The instance it belongs to (connections are closed with it). */
  readonly instanceId: string;
  readonly ports: readonly number[];
  /** Connect to the replica set (the driver finds its primary) rather than to one process. */
  readonly replicaSet?: string;
  /** hangar's admin password, or undefined to connect without credentials (localhost exception). */
  readonly adminSecret?: string;
}

interface Held {
  /** The connection, or its attempt in progress (shared by concurrent callers). */
  readonly client: Promise<MongoClient>;
  readonly adminSecret: string | undefined;
  lastUsed: number;
}

/** The driver's options for a connection to `target` (exported for tests: no server is needed to read them). */
export function clientOptions(target: MongoTarget): MongoClientOptions {
  return {
    ...(target.replicaSet !== undefined ? { replicaSet: target.replicaSet } : { directConnection: true }),
    ...(target.adminSecret !== undefined
      ? { auth: { username: MONGODB_ADMIN_USER, password: target.adminSecret }, authSource: MONGODB_ADMIN_DB }
      : {}),
    appName: 'hangar',
    connectTimeoutMS: CONNECT_TIMEOUT_MS,
    serverSelectionTimeoutMS: SELECTION_TIMEOUT_MS,
    socketTimeoutMS: COMMAND_TIMEOUT_MS,
    maxPoolSize: 2,
    retryReads: false,
    retryWrites: false,
  };
}

export const targetUri = (target: MongoTarget): string => `mongodb://${target.ports.map((p) => `127.0.0.1:${p}`).join(',')}/`;

/**
 * Administrative connections to the MongoDB processes of instances, with the official driver,
 * over loopback (never through the edge). A connection is kept per target and reused by the
 * passes and user changes that follow; it is dropped when it fails other than with a server's
 * answer, when idle, and when its instance goes.
 */
export class MongoAdmin {
  private readonly held = new Map<string, Held>();

  private key(t: MongoTarget): string {
    return `${t.instanceId}/${t.replicaSet ?? t.ports.join(',')}/${t.adminSecret === undefined ? 'anonymous' : 'admin'}`;
  }

  private async client(t: MongoTarget): Promise<MongoClient> {
    const key = this.key(t);
    const h = this.held.get(key);
    if (h && h.adminSecret === t.adminSecret) {
      const client = await h.client.catch(() => undefined);
      if (client) {
        h.lastUsed = Date.now();
        return client;
      }
    }
    if (this.held.get(key) === h) this.drop(key);
    const attempt = this.connect(t);
    this.held.set(key, { client: attempt, adminSecret: t.adminSecret, lastUsed: Date.now() });
    try {
      return await attempt;
    } catch (err) {
      if (this.held.get(key)?.client === attempt) this.held.delete(key);
      throw err;
    }
  }

  private async connect(t: MongoTarget): Promise<MongoClient> {
    // The driver is loaded with the first MongoDB instance, not by every hangar.
    const { MongoClient } = await import('mongodb');
    const client = new MongoClient(targetUri(t), clientOptions(t));
    try {
      // connect() authenticates: a wrong password fails here, with the server's code (18)
      await withTimeout(client.connect(), SELECTION_TIMEOUT_MS + CONNECT_TIMEOUT_MS, `connecting to mongodb on ${t.ports.join(', ')}`);
    } catch (err) {
      void client.close().catch(() => {});
      throw err;
    }
    return client;
  }

  /** Commands on `target`; each call finds (or makes) the connection. */
  commands(target: MongoTarget): MongoCommands {
    return {
      run: async (database: string, command: MongoDocument): Promise<MongoDocument> => {
        const client = await this.client(target);
        try {
          const what = `${Object.keys(command)[0]} on ${target.ports.join(', ')}`;
          return (await withTimeout(client.db(database).command(command), COMMAND_TIMEOUT_MS, what)) as MongoDocument;
        } catch (err) {
          // a server's answer leaves the connection sound; anything else (network, timeout) drops it
          if (!(err instanceof (await import('mongodb')).MongoServerError)) this.drop(this.key(target));
          throw err;
        }
      },
    };
  }

  /** A connector over one instance's processes, as hangar's admin (with `adminSecret`) or anonymously. */
  connector(instanceId: string, adminSecret: string): MongoConnector {
    return {
      direct: (port, as) => this.commands({ instanceId, ports: [port], ...(as === 'admin' ? { adminSecret } : {}) }),
    };
  }

  private drop(key: string): void {
    const h = this.held.get(key);
    if (!h) return;
    this.held.delete(key);
    h.client
      .then(
        (c) => c.close(),
        () => {},
      )
      .catch(() => {});
  }

  /** Closes the connections of one instance. */
  forget(instanceId: string): void {
    for (const key of [...this.held.keys()]) if (key.startsWith(`${instanceId}/`)) this.drop(key);
  }

  /** Closes connections unused for `idleMs`. */
  closeIdle(idleMs: number): void {
    const now = Date.now();
    for (const [key, h] of [...this.held]) if (now - h.lastUsed > idleMs) this.drop(key);
  }

  async close(): Promise<void> {
    const clients = [...this.held.values()].map((h) => h.client);
    this.held.clear();
    await Promise.all(
      clients.map((c) =>
        c
          .then(
            (client) => client.close(),
            () => {},
          )
          .catch(() => {}),
      ),
    );
  }
}
