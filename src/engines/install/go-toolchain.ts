import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A Go toolchain found on this machine. */
export interface GoToolchain {
  readonly go: string;
  /** `1.24.3` */
  readonly version: string;
  /** Where it keeps downloaded modules and build results (`go env GOMODCACHE GOCACHE`). */
  readonly modCache: string;
  readonly buildCache: string;
}

/** Where the Go project's own archive installs it. */
export const GO_LOCATIONS = ['/usr/local/go/bin/go'];

export const GO_INSTALL_HINT =
  'install Go from https://go.dev/dl/ (unpack it into /usr/local, so that /usr/local/go/bin/go exists) or put a go of that version on PATH';

/** The toolchain is missing or too old. */
export class NoGoError extends Error {
  override name = 'NoGoError';
}

const executable = (p: string): boolean => {
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

const newer = (a: string, b: string): boolean => {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < 3; i++) if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) > (pb[i] ?? 0);
  return true;
};

/**
 * The first Go toolchain at least `minimum`: `go` on PATH, then /usr/local/go/bin/go. An older
 * one is passed over (Debian 12's golang-go is 1.19); none is a NoGoError saying what to install.
 */
export async function findGo(env: NodeJS.ProcessEnv, minimum: string, what: string, locations = GO_LOCATIONS): Promise<GoToolchain> {
  const candidates = [
    ...(env.PATH ?? '')
      .split(delimiter)
      .filter(Boolean)
      .map((d) => join(d, 'go')),
    ...locations,
  ];
  const seen: string[] = [];
  for (const go of [...new Set(candidates)].filter(executable)) {
    try {
      // GOTOOLCHAIN=local: the version of this program, not one it would download
      const goEnv = { ...env, GOTOOLCHAIN: 'local' };
      const { stdout } = await run(go, ['env', 'GOVERSION', 'GOMODCACHE', 'GOCACHE'], { env: goEnv, timeout: 30_000 });
      const [goVersion = '', modCache = '', buildCache = ''] = stdout.split('\n');
      const version = goVersion.replace(/^go/, '');
      if (!newer(version, minimum)) {
        seen.push(`go ${version} at ${go}`);
        continue;
      }
      if (!modCache || !buildCache || buildCache === 'off') {
        throw new NoGoError(`${go} has no module or build cache (GOMODCACHE, GOCACHE): set HOME or GOPATH and GOCACHE`);
      }
      return { go, version, modCache, buildCache };
    } catch (err) {
      if (err instanceof NoGoError) throw err;
      // `go env` itself failed (an old go without GOVERSION): too old
      seen.push(`an unusable go at ${go}`);
    }
  }
  throw new NoGoError(
    `${what} is built with Go ${minimum} or later: ${seen.length ? `found only ${seen.join(', ')}` : 'no go was found'}; ${GO_INSTALL_HINT}`,
  );
}
