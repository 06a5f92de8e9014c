/**
 * Ceiling of the store figure: raw inserts of instance-sized rows (a primary key and a unique
 * (account, name) index, as hangar's instances table has), one insert and commit each, straight
 * through the driver: better-sqlite3 on a file in WAL mode with synchronous=NORMAL (hangar's
 * settings), or pg with a pool of CONCURRENCY connections, CONCURRENCY inserts in flight.
 * Usage: node raw-inserts.js sqlite FILE ROWS  |  node raw-inserts.js postgres URL ROWS CONCURRENCY
 * Prints one JSON line: {"insertsPerSecond": n}.
 */
import { randomBytes } from 'node:crypto';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { SQLITE_WAL_AUTOCHECKPOINT } from '../../src/store/database.js';
import { now } from '../lib/time.js';

const [kind, where, rowsArg, concArg] = process.argv.slice(2);
if ((kind !== 'sqlite' && kind !== 'postgres') || !where)
  throw new Error('usage: raw-inserts.js sqlite FILE ROWS | postgres URL ROWS CONCURRENCY');
const rows = Number(rowsArg ?? 1000);
const concurrency = Number(concArg ?? 10);
const run = randomBytes(4).toString('hex');

const COLUMNS = [
  'id',
  'account_id',
  'name',
  'service',
  'type',
  'version',
  'zone',
  'plan',
  'api_key_enc',
  'password_enc',
  'admin_secret_enc',
  'state',
  'ports',
  'created_at',
  'updated_at',
];
const CREATE = `CREATE TABLE IF NOT EXISTS bench_raw_inserts (
  id TEXT PRIMARY KEY, account_id TEXT NOT NULL, name TEXT NOT NULL, service TEXT NOT NULL, type TEXT NOT NULL,
  version TEXT NOT NULL, zone TEXT NOT NULL, plan INTEGER NOT NULL, api_key_enc TEXT NOT NULL, password_enc TEXT,
  admin_secret_enc TEXT NOT NULL, state TEXT NOT NULL, ports TEXT NOT NULL, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL,
  UNIQUE (account_id, name))`;

/** A row of the size hangar writes: ids, encrypted secrets (base64 of 60-70 bytes), a port map. */
function values(i: number): (string | number)[] {
  const t = Date.now();
  const secret = () => randomBytes(52).toString('base64');
  return [
    `${run}-${i}`,
    'account',
    `${run}-name-${i}`,
    'redis',
    'redis_ha_instance',
    '7.0',
    'US-Dallas',
    500,
    secret(),
    secret(),
    secret(),
    'REQUESTED',
    JSON.stringify({ public: 20000 + i, servicenet: 20001 + i, 'engine.primary': 20002 + i, 'engine.replica': 20003 + i }),
    t,
    t,
  ];
}

let perSecond: number;
if (kind === 'sqlite') {
  const db = new SQLite(where);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  // as hangar's store has it
  db.pragma(`wal_autocheckpoint = ${SQLITE_WAL_AUTOCHECKPOINT}`);
  db.exec(CREATE);
  const insert = db.prepare(`INSERT INTO bench_raw_inserts (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map(() => '?').join(', ')})`);
  const t0 = now();
  for (let i = 0; i < rows; i++) insert.run(...values(i));
  perSecond = rows / ((now() - t0) / 1000);
  db.close();
} else {
  const pool = new pg.Pool({ connectionString: where, max: concurrency });
  await pool.query(CREATE);
  const text = `INSERT INTO bench_raw_inserts (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map((_, i) => `$${i + 1}`).join(', ')})`;
  // one round trip each first, so that connecting is not counted
  await Promise.all(Array.from({ length: concurrency }, () => pool.query('SELECT 1')));
  let next = 0;
  const t0 = now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < rows; i = next++) await pool.query(text, values(i));
    }),
  );
  perSecond = rows / ((now() - t0) / 1000);
  await pool.end();
}
process.stdout.write(`${JSON.stringify({ insertsPerSecond: perSecond })}\n`);
