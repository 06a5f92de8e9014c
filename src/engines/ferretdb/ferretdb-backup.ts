import type { Readable } from 'node:stream';
import type { InstancePlace, InstanceSpec, StepContext, UnitDefinition, UnitHost } from '../../domain/units.js';
import type { BackupDriver, Snapshot } from '../engine.js';
import type { MongoCommands } from '../mongodb/mongodb-commands.js';
import { DATA_DIR } from './ferretdb-config.js';

/** Where a snapshot's copies are made, and where a restore unpacks, in the unit's directory. */
const BACKUP_DIR = 'backup';
const RESTORE_DIR = 'restore';
const STAGED_FILE = 'restore.tar';
/** FerretDB's names of databases (internal/backends/validation.go): also the names of their files. */
const DATABASE_NAME = /^[a-zA-Z0-9_-]{1,63}$/;
/** FerretDB's table of collections in each database file, and the one column of a collection's table. */
const COLLECTIONS_TABLE = '_ferretdb_collections';
const DOCUMENT_COLUMN = '_ferretdb_sjson';
/** Where FerretDB keeps every user (of every database), as MongoDB does. */
const USERS_COLLECTION = 'system.users';

export interface FerretdbBackupParts {
  /** The sqlite3 shell and tar; undefined when not installed. */
  readonly sqlite3?: string;
  readonly tar?: string;
  unit(spec: InstanceSpec, instanceDir: string): UnitDefinition;
  /** Commands as hangar's user on the instance. */
  commands(spec: InstanceSpec): MongoCommands;
  /** Starts the unit and waits until hangar's user logs in. */
  start(spec: InstanceSpec, place: InstancePlace, ctx: StepContext): Promise<void>;
}

/** An SQL string literal. */
const literal = (s: string): string => `'${s.replace(/'/g, "''")}'`;
/** An SQL name. */
const quoted = (s: string): string => `"${s.replace(/"/g, '""')}"`;

/**
 * Backups of FerretDB instances with SQLite itself: FerretDB keeps one SQLite file per database,
 * and each is copied live with `VACUUM INTO` by the sqlite3 shell, which reads the database in one
 * read transaction (a snapshot of it, consistent, while FerretDB goes on writing: the files are in
 * WAL mode) and writes a compacted copy; the copies are packed with tar. (SQLite's backup API, the
 * shell's `.backup`, copies page by page and starts again whenever another process writes the
 * database meanwhile: under steady writes it may never end.) Each database is consistent in
 * itself, taken one after the other, as `mongodump` without an oplog takes collections.
 *
 * Users are the instance's, not the data's (hangar's own among them, with this instance's
 * password): the copy of `admin` is stripped of them (`secure_delete`, so their hashes are not left
 * in free pages), and a restore keeps the users the instance has, then hangar applies the store's
 * users again. So a snapshot restores into the instance it came from and into a new one alike.
 *
 * Every tool runs in the unit's directory as the unit's user (UnitHost.runTool): hangar, which may
 * be root, never opens files there that the engine's user could have replaced with links.
 */
export class FerretdbBackupDriver implements BackupDriver {
  readonly format = 'ferretdb-sqlite';

  constructor(private readonly parts: FerretdbBackupParts) {}

  unavailableReason(): string | undefined {
    const missing = [this.parts.sqlite3 ? undefined : 'sqlite3', this.parts.tar ? undefined : 'tar'].filter(Boolean);
    if (missing.length === 0) return undefined;
    return `backups of FerretDB need ${missing.join(' and ')}, which ${missing.length > 1 ? 'are' : 'is'} not installed on this host (Debian: apt-get install ${missing.join(' ')})`;
  }

  private tools(): { sqlite3: string; tar: string } {
    const reason = this.unavailableReason();
    if (reason) throw new Error(reason);
    return { sqlite3: this.parts.sqlite3!, tar: this.parts.tar! };
  }

  /** The table holding a collection in a database file, or undefined when the collection does not exist there. */
  private async tableOf(host: UnitHost, unit: UnitDefinition, file: string, collection: string): Promise<string | undefined> {
    const { sqlite3 } = this.tools();
    const sql = `SELECT table_name FROM ${quoted(COLLECTIONS_TABLE)} WHERE name = ${literal(collection)};`;
    const out = (await host.runTool(unit, sqlite3, ['-readonly', '-bail', file, sql])).trim();
    return out === '' ? undefined : out.split('\n')[0];
  }

  async snapshot(spec: InstanceSpec, place: InstancePlace, ctx: StepContext): Promise<Snapshot> {
    const { sqlite3, tar } = this.tools();
    const { host } = place;
    const unit = this.parts.unit(spec, place.dir);
    const reply = await this.parts.commands(spec).run('admin', { listDatabases: 1 });
    const databases = ((reply.databases ?? []) as { name: string }[]).map((d) => d.name);
    const odd = databases.filter((d) => !DATABASE_NAME.test(d));
    if (odd.length > 0) throw new Error(`ferretdb lists databases hangar cannot back up by name: ${odd.join(', ')}`);
    const usedBytes = typeof reply.totalSize === 'number' ? reply.totalSize : null;
    host.remove(unit, BACKUP_DIR);
    host.writeFile(unit, `${BACKUP_DIR}/README`, 'copies of the databases for a backup, removed once read\n');
    const files = databases.map((d) => `${d}.sqlite`);
    for (const file of files) {
      // one read transaction of the live file: FerretDB keeps writing meanwhile (WAL)
      await host.runTool(unit, sqlite3, ['-readonly', '-bail', `${DATA_DIR}/${file}`, `VACUUM INTO ${literal(`${BACKUP_DIR}/${file}`)};`]);
    }
    ctx.step('ferretdb-backup:copied');
    if (files.includes('admin.sqlite')) {
      const users = await this.tableOf(host, unit, `${BACKUP_DIR}/admin.sqlite`, USERS_COLLECTION);
      if (users !== undefined) {
        await host.runTool(unit, sqlite3, [
          '-bail',
          `${BACKUP_DIR}/admin.sqlite`,
          `PRAGMA secure_delete = ON; DELETE FROM ${quoted(users)}; VACUUM;`,
        ]);
      }
    }
    const stream = host.toolOutput(unit, tar, ['-c', '-f', '-', '-C', BACKUP_DIR, '--', ...files]);
    stream.once('close', () => host.remove(unit, BACKUP_DIR));
    return { stream, usedBytes, engineVersion: spec.version };
  }

  async restore(spec: InstanceSpec, place: InstancePlace, source: Readable, ctx: StepContext): Promise<void> {
    const { sqlite3, tar } = this.tools();
    const { host } = place;
    const unit = this.parts.unit(spec, place.dir);
    // Read and checked to its end before anything of the instance is touched.
    await host.writeStream(unit, STAGED_FILE, source);
    ctx.step('ferretdb-restore:staged');
    try {
      const entries = (await host.runTool(unit, tar, ['-t', '-f', STAGED_FILE])).split('\n').filter(Boolean);
      const files = entries.filter((e) => e.endsWith('.sqlite') && DATABASE_NAME.test(e.slice(0, -'.sqlite'.length)));
      if (files.length !== entries.length || !files.includes('admin.sqlite')) {
        throw new Error(`the backup is not a snapshot of FerretDB's databases (it holds ${entries.slice(0, 5).join(', ') || 'nothing'})`);
      }
      host.remove(unit, RESTORE_DIR);
      host.writeFile(unit, `${RESTORE_DIR}/README`, "FerretDB's SQLite files, one per database (<database>.sqlite).\n");
      await host.runTool(unit, tar, [
        '-x',
        '-f',
        STAGED_FILE,
        '-C',
        RESTORE_DIR,
        '--no-same-owner',
        '--no-same-permissions',
        '--',
        ...files,
      ]);
      // The instance's users (hangar's among them) stay the instance's: copied from its live admin database.
      const into = await this.tableOf(host, unit, `${RESTORE_DIR}/admin.sqlite`, USERS_COLLECTION);
      const from = await this.tableOf(host, unit, `${DATA_DIR}/admin.sqlite`, USERS_COLLECTION);
      if (into === undefined || from === undefined)
        throw new Error(`no ${USERS_COLLECTION} collection in the admin database to restore users into`);
      const sql = [
        `ATTACH ${literal(`${DATA_DIR}/admin.sqlite`)} AS current;`,
        'BEGIN;',
        `DELETE FROM main.${quoted(into)};`,
        `INSERT INTO main.${quoted(into)} (${DOCUMENT_COLUMN}) SELECT ${DOCUMENT_COLUMN} FROM current.${quoted(from)};`,
        'COMMIT;',
      ].join(' ');
      await host.runTool(unit, sqlite3, ['-bail', `${RESTORE_DIR}/admin.sqlite`, sql]);
      ctx.step('ferretdb-restore:unpacked');
      // FerretDB keeps its catalogue of collections in memory: stopped while its files change
      await host.stopUnit(unit);
      ctx.step('ferretdb-restore:engine-stopped');
      host.rename(unit, RESTORE_DIR, DATA_DIR);
      ctx.step('ferretdb-restore:data-swapped');
    } finally {
      host.remove(unit, STAGED_FILE);
      host.remove(unit, RESTORE_DIR);
    }
    await this.parts.start(spec, place, ctx);
  }
}
