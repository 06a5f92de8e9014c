import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Processes } from './processes.js';

/** A database made for this run on the given server, dropped at the end (or on Ctrl-C). */
export interface FreshDatabase {
  readonly url: string;
  drop(): Promise<void>;
}

/** Whether the server answers. */
export async function reachable(serverUrl: string): Promise<boolean> {
  const c = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 2000 });
  try {
    await c.connect();
    return true;
  } catch {
    return false;
  } finally {
    await c.end().catch(() => {});
  }
}

async function admin(serverUrl: string, sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 5000 });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

export async function freshDatabase(procs: Processes, serverUrl: string): Promise<FreshDatabase> {
  const name = `hangar_bench_${randomBytes(6).toString('hex')}`;
  await admin(serverUrl, `CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const handle = procs.defer(() => admin(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  return { url: url.toString(), drop: () => handle.release() };
}
