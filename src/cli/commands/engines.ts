import { existsSync, lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../../config.js';
import {
  type InstalledEngine,
  type InstallProgress,
  type InstallRecipe,
  findInstalledEngine,
  installEngine,
  scanEngineCache,
  sourceJson,
} from '../../engines/install/index.js';
import { UnknownEngineError, resolveEngineRef } from '../../engines/installs.js';
import { type Io, UsageError, json } from '../io.js';
import { duration, table } from '../table.js';

type Values = Readonly<Record<string, string | boolean | undefined>>;

export interface EngineInstallOptions {
  readonly cacheDir: string;
  readonly recipe: InstallRecipe;
  readonly version: string;
  readonly from: string | undefined;
  readonly sha1: string | undefined;
  readonly force: boolean;
  readonly json: boolean;
  /** Where Java and Go are looked for (JAVA_HOME, PATH). */
  readonly env: NodeJS.ProcessEnv;
}

const str = (v: string | boolean | undefined): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** `hangar engines install <product>@<version> [--from X] [--sha1 HEX] [--force] [--json]`, checked. */
export function parseEngineInstall(config: Config, values: Values, args: readonly string[], env: NodeJS.ProcessEnv): EngineInstallOptions {
  const ref = args[0];
  if (ref === undefined) throw new UsageError('name the engine to install, as PRODUCT@VERSION (e.g. elasticsearch@7.17.25)');
  let resolved: ReturnType<typeof resolveEngineRef>;
  try {
    resolved = resolveEngineRef(ref);
  } catch (err) {
    if (err instanceof UnknownEngineError) throw new UsageError(err.message);
    throw err;
  }
  const sha1 = str(values.sha1);
  if (sha1 !== undefined && !/^[0-9a-fA-F]{40}$/.test(sha1)) throw new UsageError(`--sha1 must be 40 hex digits, got "${sha1}"`);
  if (values.from === '') throw new UsageError('--from needs a URL or a file');
  return {
    cacheDir: config.engineCache,
    ...resolved,
    from: str(values.from),
    sha1,
    force: values.force === true,
    json: values.json === true,
    env,
  };
}

const MB = (n: number) => `${(n / 1e6).toFixed(1)} MB`;

/**
 * Progress on stderr: on a terminal one line rewritten in place; otherwise a line per step and
 * one per tenth of a download or unpacking, so that logs stay short.
 */
function progressOn(io: Io): InstallProgress & { end(): void } {
  const started = Date.now();
  const live = io.errIsTty === true && io.errRaw !== undefined;
  let shownTenth = -1;
  let drawn = false;
  const clear = () => {
    if (live && drawn) io.errRaw!('\r\x1b[2K');
    drawn = false;
  };
  return {
    step(text) {
      clear();
      shownTenth = -1;
      io.err(`[${duration(Date.now() - started)}] ${text}`);
    },
    amount(done, total, unit) {
      const what = unit === 'bytes' ? (total ? `${MB(done)} / ${MB(total)}` : MB(done)) : `${done}${total ? ` / ${total}` : ''} files`;
      const tenth = total ? Math.floor((done / total) * 10) : Math.floor(done / (unit === 'bytes' ? 10e6 : 1000));
      if (live) {
        io.errRaw!(`\r\x1b[2K  ${what}${total ? ` (${Math.floor((done / total) * 100)}%)` : ''}`);
        drawn = true;
      } else if (tenth > shownTenth) {
        shownTenth = tenth;
        io.err(`  ${what}`);
      }
      if (total && done >= total) clear();
    },
    note(text) {
      clear();
      io.err(text);
    },
    end: clear,
  };
}

/** The engine as `--json` shows it: snake_case, as the manifest. */
function engineJson(e: InstalledEngine, extra: Record<string, unknown> = {}) {
  return {
    product: e.product,
    version: e.version,
    program: e.program,
    dir: e.dir,
    java_home: e.java?.home ?? null,
    java_version: e.java?.version ?? null,
    env: e.env,
    patches: e.patches,
    source: sourceJson(e.source),
    installed_at: e.installedAt,
    ...extra,
  };
}

/** Installs one engine into the cache; a finished install of it is left alone unless --force. */
export async function engineInstall(opts: EngineInstallOptions, io: Io): Promise<void> {
  const { recipe, version } = opts;
  const report = reportOn(io, opts);
  const existing = opts.force ? undefined : findInstalledEngine(opts.cacheDir, recipe.product, version);
  if (existing) {
    report(existing, true);
    return;
  }
  await recipe.preflight({ version, from: opts.from, sha1: opts.sha1, env: opts.env, progress: progressOn(io) });
  const progress = progressOn(io);
  const started = Date.now();
  let outcome: Awaited<ReturnType<typeof installEngine>>;
  try {
    outcome = await installEngine(opts.cacheDir, recipe.product, version, { force: opts.force }, (dir) =>
      recipe.install({ version, dir, from: opts.from, sha1: opts.sha1, env: opts.env, progress }),
    );
  } finally {
    progress.end();
  }
  if (!outcome.already) io.err(`[${duration(Date.now() - started)}] installed`);
  report(outcome.engine, outcome.already);
}

function reportOn(io: Io, opts: EngineInstallOptions) {
  return (engine: InstalledEngine, already: boolean) => {
    const name = `${engine.product} ${engine.version}`;
    if (opts.json) {
      io.out(json(engineJson(engine, { already_installed: already })));
      return;
    }
    const java = engine.java ? `, on Java ${engine.java.version} (${engine.java.home})` : '';
    io.out(
      already
        ? `${name} is installed already: ${engine.program}${java}; nothing done (--force installs it again)`
        : `${name} installed: ${engine.program}${java}`,
    );
  };
}

/** Bytes under a directory (files and links as stored; directories themselves not counted). */
function sizeOf(dir: string): number {
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) total += sizeOf(p);
    else total += lstatSync(p).size;
  }
  return total;
}

/** Which Java an engine will use: its manifest's, if that is still there. */
const javaOf = (e: InstalledEngine): { text: string; present: boolean } | undefined =>
  e.java && { text: `${e.java.version} ${e.java.home}`, present: existsSync(join(e.java.home, 'bin', 'java')) };

/** `hangar engines ls`: the engines in the cache; broken and unfinished installs are said on stderr. */
export async function engineList(config: Config, values: Values, io: Io): Promise<void> {
  const scan = scanEngineCache(config.engineCache);
  const rows = scan.engines.map((e) => ({ engine: e, size: sizeOf(e.dir), java: javaOf(e) }));
  if (values.json === true) {
    io.out(
      json(rows.map(({ engine, size, java }) => engineJson(engine, { size_bytes: size, ...(java ? { java_present: java.present } : {}) }))),
    );
  } else if (rows.length === 0) {
    io.err(`no engine in ${config.engineCache}; install one with hangar engines install PRODUCT@VERSION`);
  } else {
    io.out(
      table(
        ['PRODUCT', 'VERSION', 'PROGRAM', 'SIZE', 'INSTALLED', 'JAVA'],
        rows.map(({ engine, size, java }) => [
          engine.product,
          engine.version,
          engine.program,
          `${Math.round(size / 1e6)} MB`,
          engine.installedAt.slice(0, 19).replace('T', ' '),
          java ? `${java.text}${java.present ? '' : ' (missing: install it again, or reinstall the engine with --force)'}` : '',
        ]),
      ),
    );
  }
  for (const b of scan.broken) io.err(`hangar: left out ${b.dir}: ${b.reason}`);
  for (const u of scan.unfinished)
    io.err(`hangar: an unfinished install at ${u} (interrupted, or running now); the next install of that version removes it`);
}
