import { join } from 'node:path';
import type { UnitDefinition, UnitHost } from '../../domain/units.js';

/** The configuration file of an engine, in its unit's directory. */
export const CONFIG_FILE = 'redis.conf';

/**
 * The two engines of an instance by the role each plays now. A unit keeps its directory (its
 * files, its process, the name the runtime supervises it by) for good; the primary is whichever
 * listens on the instance's primary port, where the edge sends clients. Both start as the
 * directory names say; a switch of engines (Redis to Valkey) hands the primary's port to the
 * replica, so that clients see no more than a failover, and the roles stay switched after it.
 */
export interface RedisPair {
  readonly primary: UnitDefinition;
  readonly replica: UnitDefinition;
}

/** The port a redis.conf gives its engine, or undefined. */
export function configuredPort(text: string | undefined): number | undefined {
  const m = /^port (\d+)$/m.exec(text ?? '');
  return m ? Number(m[1]) : undefined;
}

/**
 * The pair as the engines' configuration files say: the unit whose file has the primary's port
 * plays the primary; the unit first named (the `primary` directory) when the files do not say
 * otherwise (an instance not built yet).
 */
export function pairFromFiles(units: readonly [UnitDefinition, UnitDefinition], host: UnitHost, primaryPort: number): RedisPair {
  const [first, second] = units;
  const swapped =
    configuredPort(host.readFile(second, CONFIG_FILE)) === primaryPort && configuredPort(host.readFile(first, CONFIG_FILE)) !== primaryPort;
  return swapped ? { primary: second, replica: first } : { primary: first, replica: second };
}

/** The pair with `primary` as the primary. */
export function pairWith(units: readonly [UnitDefinition, UnitDefinition], primary: UnitDefinition): RedisPair {
  return primary === units[1] ? { primary: units[1], replica: units[0] } : { primary: units[0], replica: units[1] };
}

/** Which of the units an engine was started as, by the configuration file it names (`INFO server`'s `config_file`). */
export function unitOfConfigFile(units: readonly UnitDefinition[], file: string | undefined): UnitDefinition | undefined {
  if (!file) return undefined;
  return units.find((u) => file === join(u.dir, CONFIG_FILE));
}
