import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** PostgreSQL is tested when HANGAR_TEST_DATABASE_URL points at a server (CI always sets it). */
export const POSTGRES_URL = process.env.HANGAR_TEST_DATABASE_URL;

if (process.env.CI === 'true' && !POSTGRES_URL) {
  throw new Error('CI=true but HANGAR_TEST_DATABASE_URL is not set: the PostgreSQL half of the suite would not run');
}

export type Dialect = 'sqlite' | 'postgres';
export const DIALECTS: readonly Dialect[] = POSTGRES_URL ? ['sqlite', 'postgres'] : ['sqlite'];

/** A new, empty PostgreSQL database for one test; `drop` removes it. */
export async function freshPostgres(): Promise<{ url: string; drop(): Promise<void> }> {
  if (!POSTGRES_URL) throw new Error('HANGAR_TEST_DATABASE_URL is not set');
  const name = `hangar_t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: POSTGRES_URL });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}
