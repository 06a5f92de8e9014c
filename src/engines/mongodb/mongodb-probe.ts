import type { ProbeTarget } from '../../domain/units.js';
import { MONGODB_ADMIN_DB, MONGODB_ADMIN_USER } from './mongodb-config.js';

/**
 * What a client sees: connects to `target` (the edge) from its source address, authenticates as
 * hangar's user and runs `ping`. Resolves when it answers; rejects with what went wrong (refused
 * or closed by the edge, authentication refused, no answer).
 */
export async function probeMongo(target: ProbeTarget, adminSecret: string, timeoutMs = 1000): Promise<void> {
  // The driver is loaded with the first MongoDB instance, not by every hangar.
  const { MongoClient } = await import('mongodb');
  const client = new MongoClient(`mongodb://${target.host}:${target.port}/`, {
    // one listener is one process behind the edge: no discovery of the others from here
    directConnection: true,
    localAddress: target.localAddress,
    auth: { username: MONGODB_ADMIN_USER, password: adminSecret },
    authSource: MONGODB_ADMIN_DB,
    appName: 'hangar-probe',
    connectTimeoutMS: timeoutMs,
    serverSelectionTimeoutMS: timeoutMs,
    socketTimeoutMS: timeoutMs,
    maxPoolSize: 1,
  });
  try {
    await client.connect();
    await client.db(MONGODB_ADMIN_DB).command({ ping: 1 });
  } catch (err) {
    throw new Error(`probe of ${target.host}:${target.port} from ${target.localAddress}: ${(err as Error).message}`, { cause: err });
  } finally {
    await client.close().catch(() => {});
  }
}
