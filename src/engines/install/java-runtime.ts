import { execFileSync } from 'node:child_process';
import { accessSync, constants, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';

/** A Java runtime found on this machine. */
export interface JavaRuntime {
  /** Its home (the directory holding bin/java), symbolic links resolved. */
  readonly home: string;
  /** `17.0.13`, or `1.8.0_392` for Java 8. */
  readonly version: string;
  /** 8, 11, 17... */
  readonly major: number;
  /** How it was found: `JAVA_HOME`, `/usr/lib/jvm`, or `PATH`. */
  readonly foundBy: string;
}

/** Java versions a distribution runs on, as verified. */
export interface JavaRange {
  readonly min: number;
  readonly max: number;
}

/** Where Debian (and most distributions) keep their JDKs. */
export const JVM_DIR = '/usr/lib/jvm';

/** What to run when no Java fits (Debian 12's JRE of Java 17, headless). */
export const JAVA_INSTALL_HINT = 'apt-get install openjdk-17-jre-headless';

const executable = (p: string): boolean => {
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

/** `17.0.13` -> 17, `1.8.0_392` -> 8. */
export function javaMajor(version: string): number {
  const parts = version.split(/[._+-]/).map(Number);
  return parts[0] === 1 ? (parts[1] ?? 0) : (parts[0] ?? 0);
}

/** The version of the runtime at `home`: its `release` file, else what `java -version` prints. */
function versionOf(home: string): string | undefined {
  try {
    const m = /^JAVA_VERSION="([^"]+)"/m.exec(readFileSync(join(home, 'release'), 'utf8'));
    if (m) return m[1];
  } catch {
    // no release file: ask the program
  }
  try {
    const out = execFileSync(join(home, 'bin', 'java'), ['-version'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 15_000,
    });
    return /version "([^"]+)"/.exec(out)?.[1];
  } catch (err) {
    // java -version writes to stderr
    return /version "([^"]+)"/.exec(String((err as { stderr?: string }).stderr ?? ''))?.[1];
  }
}

function runtimeAt(home: string, foundBy: string): JavaRuntime | undefined {
  if (!executable(join(home, 'bin', 'java'))) return undefined;
  let real: string;
  try {
    real = realpathSync(home);
  } catch {
    return undefined;
  }
  const version = versionOf(real);
  return version ? { home: real, version, major: javaMajor(version), foundBy } : undefined;
}

/**
 * Every Java runtime found: JAVA_HOME first, then each directory of /usr/lib/jvm, then the
 * `java` on PATH (its home is two levels above the program, links resolved). One entry per home.
 */
export function findJavaRuntimes(env: NodeJS.ProcessEnv, jvmDir = JVM_DIR): JavaRuntime[] {
  const found: JavaRuntime[] = [];
  const add = (r: JavaRuntime | undefined) => {
    if (r && !found.some((f) => f.home === r.home)) found.push(r);
  };
  if (env.JAVA_HOME) add(runtimeAt(env.JAVA_HOME, 'JAVA_HOME'));
  let names: string[] = [];
  try {
    names = readdirSync(jvmDir).sort();
  } catch {
    // no such directory
  }
  for (const name of names) add(runtimeAt(join(jvmDir, name), jvmDir));
  for (const dir of (env.PATH ?? '').split(delimiter).filter(Boolean)) {
    const java = join(dir, 'java');
    if (!executable(java)) continue;
    try {
      add(runtimeAt(dirname(dirname(realpathSync(java))), 'PATH'));
    } catch {
      // a dangling link
    }
    break;
  }
  return found;
}

/** No Java runtime fits: says what was found and how to get one. */
export class NoJavaError extends Error {
  override name = 'NoJavaError';
}

/**
 * The runtime to use for a distribution that runs on `range`: JAVA_HOME when it fits, else the
 * newest that fits. Throws NoJavaError naming what was found and what to install.
 */
export function chooseJava(runtimes: readonly JavaRuntime[], range: JavaRange, what: string): JavaRuntime {
  const fits = runtimes.filter((r) => r.major >= range.min && r.major <= range.max);
  const chosen = fits.find((r) => r.foundBy === 'JAVA_HOME') ?? [...fits].sort((a, b) => b.major - a.major)[0];
  if (chosen) return chosen;
  const wanted = range.min === range.max ? `Java ${range.min}` : `Java ${range.min} to ${range.max}`;
  const seen =
    runtimes.length === 0
      ? `no Java runtime was found (JAVA_HOME, ${JVM_DIR}/*, java on PATH)`
      : `found only ${runtimes.map((r) => `Java ${r.version} at ${r.home}`).join(', ')}`;
  throw new NoJavaError(`${what} needs ${wanted}: ${seen}; install one (${JAVA_INSTALL_HINT}) or set JAVA_HOME to one`);
}
