import { execFile } from 'node:child_process';
import { chmod, copyFile, cp, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { hashFile } from '../install/download.js';
import type { BuiltEngine } from '../install/engine-cache.js';
import { type GoToolchain, findGo } from '../install/go-toolchain.js';
import type { InstallContext, InstallRecipe } from '../install/install-recipe.js';

const run = promisify(execFile);

/**
 * FerretDB (a MongoDB-compatible server over SQLite or PostgreSQL), built from its Go module.
 *
 * Where it comes from: the Go module proxy, through the Go command, which checks the module
 * against the Go checksum database (its `h1:` sum is kept in the manifest). `go install
 * github.com/FerretDB/FerretDB/cmd/ferretdb@v1.24.2` builds, but the program panics at start
 * ("Invalid build/version/version.txt"): the module as published lacks that file, which
 * FerretDB's own build writes. So hangar downloads the module (`go mod download -json` gives
 * its read-only `Dir`), copies it, writes `v1.24.2` into `build/version/version.txt`, and runs
 * `go build -o <install>/bin/ferretdb ./cmd/ferretdb` in the copy, with GOFLAGS=-mod=mod and
 * GOTOOLCHAIN=local. Go's own module and build caches are used (`go env GOMODCACHE GOCACHE`:
 * `~/go/pkg/mod` and `~/.cache/go-build` by default), so a second build reuses the first's
 * downloads: 76 s on 2 cores with an empty build cache, 7 s with a warm one (22 to 28 s under
 * heavy load).
 *
 * How it starts (verified with 1.24.2, SQLite backend, the Node `mongodb` driver 6 logging in
 * with SCRAM):
 *
 *     ferretdb --handler=sqlite --sqlite-url=file:<dir>/ --state-dir=<dir>
 *       --listen-addr=127.0.0.1:<port> --debug-addr=- --test-enable-new-auth
 *       --setup-database=admin --setup-username=<user> --setup-password=<password>
 *       --telemetry=disable
 *
 * It listens in 0.3 s. `--sqlite-url` must end with a slash (a directory: one SQLite file per
 * database); `--test-enable-new-auth` turns on SCRAM users stored in the backend, which
 * `--setup-username/--setup-password` creates at the first start; `--telemetry=disable` keeps it
 * from reporting to FerretDB's beacon; `--debug-addr=-` turns off its metrics and profiling
 * listener, which otherwise takes 127.0.0.1:8088, so that a second process exits at once ("Failed
 * to create debug handler ... address already in use"). A wrong password is refused
 * ("Authentication failed"); `buildInfo` says 7.0.42.
 */

const MODULE = 'github.com/FerretDB/FerretDB';
/** The `go` line of FerretDB 1.24's go.mod. */
const GO_MINIMUM = '1.24';
const VERSIONS = ['1.24.2'] as const;

/** The version a ferretdb program says it is (`version: v1.24.2` in `ferretdb --version`). */
export async function ferretdbVersion(program: string): Promise<string | undefined> {
  try {
    const { stdout } = await run(program, ['--version'], { timeout: 30_000 });
    return /^version:\s*v?(\S+)/m.exec(stdout)?.[1];
  } catch {
    return undefined;
  }
}

/** Makes a copied module writable (the module cache's files are read-only), so it can be changed and removed. */
async function makeWritable(dir: string): Promise<void> {
  await chmod(dir, 0o755);
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) await makeWritable(p);
    else if (e.isFile()) await chmod(p, 0o644);
  }
}

const goEnv = (env: NodeJS.ProcessEnv) => ({ ...env, GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'local' });

/** The last lines of what a failed command said. */
const tail = (err: unknown): string =>
  String((err as { stderr?: string }).stderr || (err as Error).message)
    .trim()
    .split('\n')
    .slice(-15)
    .join('\n');

async function build(ctx: InstallContext, go: GoToolchain): Promise<BuiltEngine> {
  const ref = `${MODULE}@v${ctx.version}`;
  ctx.progress.note(`go ${go.version} at ${go.go}; its module cache ${go.modCache} and build cache ${go.buildCache}`);
  ctx.progress.step(`downloading ${ref} from the Go module proxy`);
  let mod: { Dir?: string; Sum?: string; Error?: string };
  try {
    const { stdout } = await run(go.go, ['mod', 'download', '-json', ref], { cwd: ctx.dir, env: goEnv(ctx.env), maxBuffer: 1 << 20 });
    mod = JSON.parse(stdout);
  } catch (err) {
    const out = (err as { stdout?: string }).stdout;
    throw new Error(`go mod download ${ref} failed: ${out ? (JSON.parse(out).Error ?? tail(err)) : tail(err)}`);
  }
  if (!mod.Dir || !mod.Sum) throw new Error(`go mod download ${ref} gave no directory: ${mod.Error ?? 'no reason given'}`);
  const src = join(ctx.dir, '.src');
  await cp(mod.Dir, src, { recursive: true });
  await makeWritable(src);
  // what FerretDB's own build writes, and the published module lacks
  await writeFile(join(src, 'build', 'version', 'version.txt'), `v${ctx.version}\n`);
  ctx.progress.step('building (go build ./cmd/ferretdb; minutes the first time, seconds with a warm build cache)');
  await mkdir(join(ctx.dir, 'bin'), { mode: 0o755 });
  const program = join(ctx.dir, 'bin', 'ferretdb');
  try {
    await run(go.go, ['build', '-o', program, './cmd/ferretdb'], { cwd: src, env: goEnv(ctx.env), maxBuffer: 16 << 20 });
  } catch (err) {
    throw new Error(`go build of ${ref} failed:\n${tail(err)}`);
  }
  await rm(src, { recursive: true, force: true });
  const said = await ferretdbVersion(program);
  if (said !== ctx.version) throw new Error(`the ferretdb built says it is version ${said ?? '(nothing)'}, not ${ctx.version}`);
  return {
    program: 'bin/ferretdb',
    source: { kind: 'go-module', module: ref, sum: mod.Sum, go: `go${go.version}`, sha256: (await hashFile(program)).sha256 },
    java: undefined,
    env: {},
    patches: [],
  };
}

/** `--from PROGRAM`: a ferretdb the operator built or fetched, copied into the cache once it says the right version. */
async function fromProgram(ctx: InstallContext, from: string): Promise<BuiltEngine> {
  const file = resolve(from);
  const said = await ferretdbVersion(file);
  if (said === undefined) throw new Error(`--from ${from}: not a ferretdb program (\`${file} --version\` printed no version)`);
  if (said !== ctx.version) throw new Error(`--from ${from}: that ferretdb is version ${said}, not ${ctx.version}`);
  await mkdir(join(ctx.dir, 'bin'), { mode: 0o755 });
  const program = join(ctx.dir, 'bin', 'ferretdb');
  await copyFile(file, program);
  await chmod(program, 0o755);
  return {
    program: 'bin/ferretdb',
    source: { kind: 'program', file, sha256: (await hashFile(program)).sha256 },
    java: undefined,
    env: {},
    patches: [],
  };
}

export const FERRETDB_INSTALL: InstallRecipe = {
  product: 'ferretdb',
  summary: 'FerretDB, built from its Go module (the Go module proxy) with the Go toolchain',
  versions: VERSIONS,
  refused: {},
  from: 'a ferretdb program of that version (`ferretdb --version` must say it), copied into the cache',
  async preflight(ctx) {
    if (ctx.from !== undefined) {
      if (/^[a-z]+:\/\//i.test(ctx.from)) throw new Error(`--from ${ctx.from}: ferretdb takes a program on this machine, not a URL`);
      return;
    }
    await findGo(ctx.env, GO_MINIMUM, `FerretDB ${ctx.version}`);
  },
  async install(ctx) {
    if (ctx.from !== undefined) return fromProgram(ctx, ctx.from);
    return build(ctx, await findGo(ctx.env, GO_MINIMUM, `FerretDB ${ctx.version}`));
  },
};
