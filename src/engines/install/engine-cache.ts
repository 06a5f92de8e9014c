import { randomBytes } from 'node:crypto';
import { accessSync, constants, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { chmod, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { compareVersions } from '../../lib/versions.js';
import { BrokenManifestError, type InstalledEngine, MANIFEST_FILE, manifestJson, parseManifest } from './engine-manifest.js';

/**
 * The engine cache: `<cache>/<product>/<version>/` holds an unpacked (or built) engine and its
 * `hangar-engine.json`. An install fills a directory beside it, `.<version>.partial-<pid>-<random>`,
 * and renames it into place once the manifest is written: a version directory exists only
 * finished, and whatever an interrupted install leaves is a dot directory that nothing lists
 * (the next install of that version removes it).
 */

/** An install directory that is not a finished install: why it is left out. */
export interface BrokenInstall {
  readonly dir: string;
  readonly reason: string;
}

export interface CacheScan {
  readonly engines: InstalledEngine[];
  readonly broken: BrokenInstall[];
  /** Directories of installs that did not finish (interrupted, or running now). */
  readonly unfinished: string[];
}

/** What a recipe made in the install directory; the cache adds where it lives and when. */
export interface BuiltEngine extends Omit<InstalledEngine, 'product' | 'version' | 'dir' | 'program' | 'installedAt'> {
  /** The program, relative to the install directory (`bin/elasticsearch`). */
  readonly program: string;
}

/** Names a product or a version may have in the cache: no separators, no leading dot. */
const NAME = /^[a-z0-9][a-z0-9._-]*$/i;

const isExecutable = (p: string): boolean => {
  try {
    accessSync(p, constants.X_OK);
    return statSync(p).isFile();
  } catch {
    return false;
  }
};

const entries = (dir: string): string[] => {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
  } catch {
    return [];
  }
};

/** The manifest of one version directory, checked against where it lies; throws BrokenManifestError. */
function readInstall(dir: string, product: string, version: string): InstalledEngine {
  let text: string;
  try {
    text = readFileSync(join(dir, MANIFEST_FILE), 'utf8');
  } catch {
    throw new BrokenManifestError(`no ${MANIFEST_FILE}: not an install of hangar`);
  }
  const engine = parseManifest(text, dir);
  if (engine.product !== product || engine.version !== version) {
    throw new BrokenManifestError(`its manifest describes ${engine.product}@${engine.version}, not ${product}@${version}`);
  }
  if (!isExecutable(engine.program)) throw new BrokenManifestError(`its program ${engine.program} is missing or not executable`);
  return engine;
}

/** Every install in the cache, the broken ones apart with the reason, and the unfinished ones. */
export function scanEngineCache(cacheDir: string): CacheScan {
  const engines: InstalledEngine[] = [];
  const broken: BrokenInstall[] = [];
  const unfinished: string[] = [];
  for (const product of entries(cacheDir).filter((n) => !n.startsWith('.'))) {
    for (const version of entries(join(cacheDir, product))) {
      const dir = join(cacheDir, product, version);
      if (version.startsWith('.')) {
        if (version.includes('.partial-')) unfinished.push(dir);
        continue;
      }
      try {
        engines.push(readInstall(dir, product, version));
      } catch (err) {
        if (!(err instanceof BrokenManifestError)) throw err;
        broken.push({ dir, reason: err.message });
      }
    }
  }
  engines.sort((a, b) => a.product.localeCompare(b.product) || compareVersions(a.version, b.version));
  return { engines, broken, unfinished };
}

/**
 * A cheap fingerprint of what the cache holds, to tell when to read it again: its product
 * directories, each with its entries and modification time. An install renames its finished
 * directory into place (a forced one moves the old one aside first), which changes both.
 */
export function engineCacheFingerprint(cacheDir: string): string {
  const parts: string[] = [];
  for (const product of entries(cacheDir)) {
    const dir = join(cacheDir, product);
    const mtime = statSync(dir, { throwIfNoEntry: false })?.mtimeMs ?? 0;
    parts.push(`${product}@${mtime}:${entries(dir).join(',')}`);
  }
  return parts.join(';');
}

/**
 * The engines installed in `cacheDir`, read from their manifests (none when the directory does
 * not exist). Directories without a readable manifest, or whose program is gone, are left out:
 * scanEngineCache says why.
 */
export function installedEngines(cacheDir: string): InstalledEngine[] {
  return scanEngineCache(cacheDir).engines;
}

/** The install of `product@version`, when finished and sound. */
export function findInstalledEngine(cacheDir: string, product: string, version: string): InstalledEngine | undefined {
  try {
    return readInstall(join(cacheDir, product, version), product, version);
  } catch {
    return undefined;
  }
}

const pidAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Removes what interrupted installs of `version` left (their process is gone). */
async function removeLeftovers(productDir: string, version: string): Promise<void> {
  for (const name of entries(productDir)) {
    const m = new RegExp(`^\\.${version.replace(/\./g, '\\.')}\\.(?:partial|old)-(\\d+)-`).exec(name);
    if (m && !pidAlive(Number(m[1]))) await rm(join(productDir, name), { recursive: true, force: true });
  }
}

export interface InstallOutcome {
  readonly engine: InstalledEngine;
  /** It was installed already: nothing was done. */
  readonly already: boolean;
}

/**
 * Installs `product@version` into the cache with `build`, which fills the directory it is given
 * (a new one beside the final place) and says what it made. Atomic: the directory is renamed
 * into place only once complete with its manifest, and removed when `build` fails. A finished
 * install is left as it is (`already`) unless `force`, which replaces it.
 */
export async function installEngine(
  cacheDir: string,
  product: string,
  version: string,
  opts: { force?: boolean; now?: () => Date },
  build: (dir: string) => Promise<BuiltEngine>,
): Promise<InstallOutcome> {
  if (!NAME.test(product) || !NAME.test(version)) throw new Error(`"${product}@${version}" is not a product and version hangar can cache`);
  const productDir = join(cacheDir, product);
  const final = join(productDir, version);
  if (!opts.force) {
    const existing = findInstalledEngine(cacheDir, product, version);
    if (existing) return { engine: existing, already: true };
  }
  await mkdir(productDir, { recursive: true, mode: 0o755 });
  await removeLeftovers(productDir, version);
  const tag = `${process.pid}-${randomBytes(4).toString('hex')}`;
  const partial = join(productDir, `.${version}.partial-${tag}`);
  await mkdir(partial, { mode: 0o755 });
  // mkdir's mode is masked by the umask; engines may run as another user than the installer
  await chmod(partial, 0o755);
  try {
    const built = await build(partial);
    if (!isExecutable(join(partial, built.program))) throw new Error(`the install made no program at ${built.program}`);
    const engine: InstalledEngine = {
      ...built,
      product,
      version,
      dir: final,
      program: join(final, built.program),
      installedAt: (opts.now?.() ?? new Date()).toISOString(),
    };
    await writeFile(join(partial, MANIFEST_FILE), manifestJson(engine), { mode: 0o644 });
    if (existsSync(final)) {
      // a forced reinstall, or a directory that is no install: moved aside, then removed
      const old = join(productDir, `.${version}.old-${tag}`);
      await rename(final, old);
      await rename(partial, final);
      await rm(old, { recursive: true, force: true });
    } else {
      await rename(partial, final);
    }
    return { engine, already: false };
  } catch (err) {
    await rm(partial, { recursive: true, force: true });
    throw err;
  }
}
