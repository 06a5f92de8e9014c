import { execFile } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Config } from '../config.js';
import type { FoundProgram } from '../domain/units.js';
import { installedEngines } from '../engines/install/engine-cache.js';
import { compareVersions } from './versions.js';

/** An engine binary found on this machine. */
export type FoundBinary = FoundProgram;

/**
 * The result of looking for one binary: found, or why not (naming the variable that points to it).
 * A program of the engine cache may be there in several versions: `found` is the newest, `more`
 * the others, newest first.
 */
export type BinaryLookup = { readonly found: FoundBinary; readonly more?: readonly FoundBinary[] } | { readonly problem: string };

/** Every version a lookup found, newest first (none for a problem). */
export function foundVersions(b: BinaryLookup | undefined): FoundBinary[] {
  return b && 'found' in b ? [b.found, ...(b.more ?? [])] : [];
}

/** The programs looked for, by key (`redisServer`, `haproxy`, ...). */
export type EngineBinaries = Readonly<Record<string, BinaryLookup>>;

/** Settings of the configuration that name a program. */
export type ProgramSetting = {
  [K in keyof Config]: Config[K] extends string | undefined ? K : never;
}[keyof Config];

/** How to find one program and read its version. Each product module declares its own. */
export interface ProgramSpec {
  /** Its key in lookups (`redisServer`). */
  readonly key: string;
  /** Names tried on PATH, in order, when no path is configured. */
  readonly names: readonly string[];
  /** The variable that points to it. */
  readonly variable: string;
  /** The setting that holds the configured name or path. */
  readonly setting: ProgramSetting;
  readonly versionArgs: readonly string[];
  readonly versionPattern: RegExp;
  /** Oldest version hangar works with, and why. */
  readonly minimum?: { readonly version: string; readonly because: string };
  /**
   * The product of the engine cache (`hangar engines install`) whose installs provide this
   * program. When no path is configured, every version installed there is found (the manifests
   * say each one's program and version); only when none is, the names are looked for on PATH.
   */
  readonly cached?: string;
  /** For operators (`hangar doctor`): what it is for, where it comes from, a page about it. */
  readonly about: { readonly purpose: string; readonly install: string; readonly page: string };
}

/** The edge of the local runtime: every service needs it. */
export const HAPROXY_PROGRAM: ProgramSpec = {
  key: 'haproxy',
  names: ['haproxy'],
  variable: 'HANGAR_HAPROXY_BIN',
  setting: 'haproxyBin',
  versionArgs: ['-v'],
  versionPattern: /version (\d+\.\d+\.\d+)/i,
  minimum: { version: '2.2.0', because: 'the edge relies on its master CLI and seamless reloads' },
  about: {
    purpose: 'the edge of every instance (ACLs, TLS)',
    install: 'Debian/Ubuntu package haproxy (apt-get install haproxy)',
    page: 'https://www.haproxy.org/',
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
export function parseVersion(spec: ProgramSpec, output: string): string | undefined {
  return spec.versionPattern.exec(output)?.[1];
}

function run(path: string, args: readonly string[], searchPath: string): Promise<string> {
  return new Promise((resolvePromise) => {
    execFile(path, args, { timeout: VERSION_TIMEOUT_MS, env: { PATH: searchPath } }, (_err, stdout, stderr) => {
      resolvePromise(`${stdout}\n${stderr}`);
    });
  });
}

/** Looks for one program: the configured name or path, else its usual names on PATH. */
export async function lookupProgram(spec: ProgramSpec, configured: string | undefined, searchPath: string): Promise<BinaryLookup> {
  const candidates = configured !== undefined && configured !== '' ? [configured] : spec.names;
  for (const candidate of candidates) {
    const path = findExecutable(candidate, searchPath);
    if (!path) continue;
    const output = await run(path, spec.versionArgs, searchPath);
    const version = parseVersion(spec, output);
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

/**
 * The versions of a program installed in the engine cache, newest first, or undefined when none
 * is. Each install's manifest names its program and version, checked when it was installed.
 */
export function cachedProgram(spec: ProgramSpec, cacheDir: string): BinaryLookup | undefined {
  if (spec.cached === undefined) return undefined;
  const name = spec.names[0]!;
  const installs = installedEngines(cacheDir)
    .filter((e) => e.product === spec.cached)
    .map((e): FoundBinary => ({ name, path: e.program, version: e.version }))
    .reverse();
  const [newest, ...more] = installs;
  if (!newest) return undefined;
  return more.length > 0 ? { found: newest, more } : { found: newest };
}

/** Looks for a program as the configuration names it: the configured path, else the engine cache (when it has the program), else PATH. */
async function lookup(spec: ProgramSpec, config: Config, searchPath: string): Promise<BinaryLookup> {
  const configured = config[spec.setting];
  if (spec.cached !== undefined && (configured === undefined || configured === '')) {
    const cached = cachedProgram(spec, config.engineCache);
    if (cached) return cached;
    const onPath = await lookupProgram(spec, configured, searchPath);
    if ('found' in onPath) return onPath;
    return {
      problem: `no ${spec.cached} is installed in the engine cache (${config.engineCache}) and \`${spec.names.join('` or `')}\` is not on PATH; install one with \`hangar engines install ${spec.cached}@VERSION\`, or set ${spec.variable} to its path`,
    };
  }
  return lookupProgram(spec, configured, searchPath);
}

/** Looks for every program of `specs` (once each, concurrently), as the configuration names them. */
export async function detectPrograms(specs: readonly ProgramSpec[], config: Config, searchPath: string): Promise<EngineBinaries> {
  const unique = [...new Map(specs.map((s) => [s.key, s])).values()];
  const found = await Promise.all(unique.map((s) => lookup(s, config, searchPath)));
  return Object.fromEntries(unique.map((s, i) => [s.key, found[i]!]));
}

/** `X.Y.Z` and `X.Y` of each version, newest first (`X.Y` names the newest of its series), without repeats. */
export function versionsOfAll(versions: readonly string[]): string[] {
  const sorted = [...versions].sort((a, b) => compareVersions(b, a));
  return [...new Set(sorted.flatMap(versionsOf))];
}

/** `X.Y.Z` and `X.Y`: the versions a create body may name for an engine found here. */
export function versionsOf(version: string): string[] {
  const minor = version.split('.').slice(0, 2).join('.');
  return minor === version ? [version] : [version, minor];
}
