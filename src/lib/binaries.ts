import { execFile } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Config } from '../config.js';
import type { Service } from '../domain/catalog.js';
import type { FoundProgram, Offering, Offerings } from '../domain/units.js';
import { compareVersions } from './versions.js';

/** An engine binary found on this machine. */
export type FoundBinary = FoundProgram;

/** The result of looking for one binary: found, or why not (naming the variable that points to it). */
export type BinaryLookup = { readonly found: FoundBinary } | { readonly problem: string };

export type BinaryKey = 'redisServer' | 'haproxy' | 'mongod' | 'mongos' | 'elasticsearch' | 'kibana';

export type EngineBinaries = Readonly<Record<BinaryKey, BinaryLookup>>;

interface BinarySpec {
  /** Names tried on PATH, in order, when no path is configured. */
  readonly names: readonly string[];
  /** Oldest version hangar works with, and why. */
  readonly minimum?: { readonly version: string; readonly because: string };
  /** The variable that points to it. */
  readonly variable: string;
  readonly versionArgs: readonly string[];
  readonly versionPattern: RegExp;
}

const SPECS: Readonly<Record<BinaryKey, BinarySpec>> = {
  redisServer: {
    names: ['redis-server'],
    variable: 'HANGAR_REDIS_SERVER_BIN',
    versionArgs: ['--version'],
    versionPattern: /\bv=(\d+\.\d+\.\d+)/,
    minimum: { version: '7.0.0', because: 'its configuration uses the AOF directory and ACL rules of Redis 7' },
  },
  haproxy: {
    names: ['haproxy'],
    variable: 'HANGAR_HAPROXY_BIN',
    versionArgs: ['-v'],
    versionPattern: /version (\d+\.\d+\.\d+)/i,
    minimum: { version: '2.2.0', because: 'the edge relies on its master CLI and seamless reloads' },
  },
  mongod: { names: ['mongod'], variable: 'HANGAR_MONGOD_BIN', versionArgs: ['--version'], versionPattern: /db version v(\d+\.\d+\.\d+)/ },
  mongos: { names: ['mongos'], variable: 'HANGAR_MONGOS_BIN', versionArgs: ['--version'], versionPattern: /version v(\d+\.\d+\.\d+)/ },
  elasticsearch: {
    names: ['elasticsearch', 'opensearch'],
    variable: 'HANGAR_ELASTICSEARCH_BIN',
    versionArgs: ['--version'],
    versionPattern: /Version: (\d+\.\d+\.\d+)/,
  },
  kibana: {
    names: ['kibana', 'opensearch-dashboards'],
    variable: 'HANGAR_KIBANA_BIN',
    versionArgs: ['--version'],
    versionPattern: /(\d+\.\d+\.\d+)/,
  },
};

/** Debian installs daemons in sbin, which a non-root PATH often lacks. */
const SYSTEM_DIRS = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

/** Java-based engines print their version slowly. */
const VERSION_TIMEOUT_MS = 30_000;

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** A program by name (searched on `searchPath`, then the system directories) or by path. */
export function findExecutable(nameOrPath: string, searchPath: string): string | undefined {
  if (nameOrPath.includes('/')) {
    const p = resolve(nameOrPath);
    return isExecutableFile(p) ? p : undefined;
  }
  for (const dir of [...searchPath.split(':').filter(Boolean), ...SYSTEM_DIRS]) {
    const p = join(dir, nameOrPath);
    if (isExecutableFile(p)) return p;
  }
  return undefined;
}

/** `X.Y.Z` from a program's version output, or undefined. */
export function parseVersion(key: BinaryKey, output: string): string | undefined {
  return SPECS[key].versionPattern.exec(output)?.[1];
}

function run(path: string, args: readonly string[], searchPath: string): Promise<string> {
  return new Promise((resolvePromise) => {
    execFile(path, args, { timeout: VERSION_TIMEOUT_MS, env: { PATH: searchPath } }, (_err, stdout, stderr) => {
      resolvePromise(`${stdout}\n${stderr}`);
    });
  });
}

/** Looks for one binary: the configured name or path, else its usual names on PATH. */
export async function lookupBinary(key: BinaryKey, configured: string | undefined, searchPath: string): Promise<BinaryLookup> {
  const spec = SPECS[key];
  const candidates = configured !== undefined && configured !== '' ? [configured] : spec.names;
  for (const candidate of candidates) {
    const path = findExecutable(candidate, searchPath);
    if (!path) continue;
    const output = await run(path, spec.versionArgs, searchPath);
    const version = parseVersion(key, output);
    if (!version) {
      return {
        problem: `\`${path} ${spec.versionArgs.join(' ')}\` did not print a version (${output.trim().split('\n')[0] ?? 'no output'}); set ${spec.variable} to a working binary`,
      };
    }
    if (spec.minimum && compareVersions(version, spec.minimum.version) < 0) {
      return {
        problem: `\`${path}\` is version ${version}, older than ${spec.minimum.version}, which hangar needs because ${spec.minimum.because}; install a newer one or set ${spec.variable}`,
      };
    }
    return { found: { name: candidate.split('/').pop()!, path, version } };
  }
  if (configured !== undefined && configured !== '') {
    return { problem: `\`${configured}\` (${spec.variable}) was not found or is not executable` };
  }
  const names = spec.names.map((n) => `\`${n}\``).join(' or ');
  return { problem: `${names} was not found on PATH; install it or set ${spec.variable} to its path` };
}

/** Every engine binary the local runtime can use, with its version. Looks them up concurrently. */
export async function detectBinaries(
  config: Pick<Config, 'redisServerBin' | 'haproxyBin' | 'mongodBin' | 'mongosBin' | 'elasticsearchBin' | 'kibanaBin'>,
  searchPath: string,
): Promise<EngineBinaries> {
  const configured: Record<BinaryKey, string | undefined> = {
    redisServer: config.redisServerBin,
    haproxy: config.haproxyBin,
    mongod: config.mongodBin,
    mongos: config.mongosBin,
    elasticsearch: config.elasticsearchBin,
    kibana: config.kibanaBin,
  };
  const keys = Object.keys(SPECS) as BinaryKey[];
  const found = await Promise.all(keys.map((k) => lookupBinary(k, configured[k], searchPath)));
  return Object.fromEntries(keys.map((k, i) => [k, found[i]!])) as unknown as EngineBinaries;
}

/** The binaries each service needs, and what to install when they are missing. */
const NEEDS: Readonly<Record<Service, { readonly keys: readonly BinaryKey[]; readonly install: string }>> = {
  redis: {
    keys: ['redisServer', 'haproxy'],
    install: 'apt-get install redis-server haproxy (Debian/Ubuntu), or set HANGAR_REDIS_SERVER_BIN and HANGAR_HAPROXY_BIN',
  },
  mongodb: {
    keys: ['mongod', 'mongos', 'haproxy'],
    install: 'install MongoDB Community Server (mongod and mongos), or set HANGAR_MONGOD_BIN and HANGAR_MONGOS_BIN',
  },
  elasticsearch: {
    keys: ['elasticsearch', 'haproxy'],
    install: 'install Elasticsearch or OpenSearch, or set HANGAR_ELASTICSEARCH_BIN (and HANGAR_KIBANA_BIN for Kibana)',
  },
};

/** `X.Y.Z` and `X.Y`: the versions a create body may name for an engine found here. */
export function versionsOf(version: string): string[] {
  const minor = version.split('.').slice(0, 2).join('.');
  return minor === version ? [version] : [version, minor];
}

/**
 * What this machine can host, given the binaries found and the services the runtime has an
 * engine for. A service is available when its engine is implemented and every binary it needs
 * is here; otherwise the reason names the missing binary and the variable that points to it.
 */
export function offeringsOf(binaries: EngineBinaries, implemented: ReadonlySet<Service>): Offerings {
  const offering = (service: Service): Offering => {
    const need = NEEDS[service];
    const engines = need.keys.flatMap((k) => {
      const b = binaries[k];
      return 'found' in b ? [b.found] : [];
    });
    // Kibana is optional next to Elasticsearch: shown when present.
    const kibana = binaries.kibana;
    if (service === 'elasticsearch' && 'found' in kibana) engines.push(kibana.found);
    const problems = need.keys.flatMap((k) => {
      const b = binaries[k];
      return 'problem' in b ? [b.problem] : [];
    });
    if (problems.length > 0) {
      return {
        available: false,
        versions: [],
        engines,
        unavailableReason: `${service} cannot run here: ${problems.join('; ')}`,
        installHint: need.install,
      };
    }
    const main = binaries[need.keys[0]!];
    if (!implemented.has(service) || !('found' in main)) {
      return {
        available: false,
        versions: [],
        engines,
        unavailableReason: `${service} instances are not supported by this version of the local runtime (found ${engines.map((e) => `${e.name} ${e.version}`).join(', ')})`,
      };
    }
    return { available: true, versions: versionsOf(main.found.version), engines };
  };
  return { redis: offering('redis'), mongodb: offering('mongodb'), elasticsearch: offering('elasticsearch') };
}
