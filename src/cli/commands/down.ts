import { pino } from 'pino';
import type { Config } from '../../config.js';
import { DataDirInUseError, lockDataDir } from '../../lib/data-dir-lock.js';
import { localPrograms } from '../../engines/index.js';
import { detectPrograms } from '../../lib/binaries.js';
import { engineDirUser, NO_USER_YET, resolveEngineDir } from '../../runtimes/local/engine-dir.js';
import { engineUserName, findUser } from '../../runtimes/local/engine-user.js';
import { LocalRuntime } from '../../runtimes/local/local-runtime.js';
import { assertStoreExists } from '../../store/database.js';
import { findInstanceNames } from '../../store/instance-repository.js';
import { listLiveLeases } from '../../store/lease-repository.js';
import { type Io, json } from '../io.js';
import { withOperatorContext } from '../operator.js';

/** How long an engine or the edge may take to stop after SIGTERM before it is killed. */
const GRACE_MS = 10_000;

/**
 * `hangar down`: stops every engine and the edge of the data dir (its engines' directories where
 * `hangar serve` keeps them, in the data dir or outside it), which otherwise keep serving
 * while hangar is stopped. Nothing is forgotten: the instances stay in the store with their data,
 * configuration and ACLs, and the next `hangar serve` starts them again. Refused while a hangar
 * serves the data dir (it would start them again at once): on SQLite the data dir's lock tells,
 * on PostgreSQL a live lease on this host's runtime.
 */
export async function down(config: Config, _opts: Record<string, string | boolean | undefined>, io: Io): Promise<void> {
  await assertStoreExists(config);
  let unlock = () => {};
  if (config.databaseUrl) {
    await withOperatorContext(config, async ({ store }) => {
      const held = await listLiveLeases(store.db, 'runtime:', `:${config.hostId}`, Date.now());
      if (held.length > 0) {
        throw new Error(
          `hangar serve (${held.map((l) => l.owner).join(', ')}) runs the engines of host ${config.hostId}: stop it first, or they are started again`,
        );
      }
    });
  } else {
    try {
      unlock = lockDataDir(config.dataDir);
    } catch (err) {
      if (!(err instanceof DataDirInUseError)) throw err;
      throw new Error(
        `hangar serve${err.pid ? ` (pid ${err.pid})` : ''} runs on the data dir ${config.dataDir}: stop it first (SIGTERM), or it starts the engines again`,
      );
    }
  }
  try {
    const searchPath = process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin';
    const binaries = await detectPrograms(localPrograms(), config, searchPath);
    // the instances' directories where hangar serve keeps them (outside the data dir when the engine user cannot reach it)
    const name = engineUserName(config);
    const user = name === undefined ? undefined : ((await findUser(name, searchPath)) ?? NO_USER_YET);
    const instancesDir = resolveEngineDir(config.dataDir, engineDirUser(user)).path;
    const runtime = new LocalRuntime({ config, log: pino({ level: 'silent' }), binaries, searchPath, instancesDir });
    const units = await runtime.stopAll(GRACE_MS);
    // the runtime knows its units by instance id (`<id>/primary`); people know their instances by name
    const ids = [...new Set(units.filter((u) => u.includes('/')).map((u) => u.split('/')[0]!))];
    const names = await withOperatorContext(config, ({ store }) => findInstanceNames(store.db, ids));
    const stopped = units.map((u) => {
      const [id, unit] = u.split('/');
      const known = unit !== undefined ? names.get(id!) : undefined;
      return known ? `${known.name}/${unit}` : u;
    });
    const instances = ids.map((id) => ({ name: names.get(id)?.name ?? null, login: names.get(id)?.login ?? null, id }));
    io.out(json({ data_dir: config.dataDir, instances_dir: instancesDir, stopped, instances }));
  } finally {
    unlock();
  }
}
