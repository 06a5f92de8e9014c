import { isAbsolute } from 'node:path';

/** The file that marks a finished install: `<cache>/<product>/<version>/hangar-engine.json`. */
export const MANIFEST_FILE = 'hangar-engine.json';

/** Where an install came from, and the checksums it was checked with. */
export type EngineSource =
  | {
      readonly kind: 'download';
      /** The file fetched (the publisher's, or a mirror's). */
      readonly url: string;
      /** SHA-1 as published (a `.sha1` file beside the download, or given), which the download matched. */
      readonly sha1: string;
      /** Where that SHA-1 came from: a URL, a file, or `given` (--sha1). */
      readonly sha1From: string;
      /** SHA-256 of the same bytes, computed here. */
      readonly sha256: string;
    }
  | {
      readonly kind: 'file';
      /** A local distribution (--from FILE). */
      readonly file: string;
      readonly sha1: string;
      readonly sha1From: string;
      readonly sha256: string;
    }
  | {
      readonly kind: 'go-module';
      /** `path@version`, as the Go module proxy serves it. */
      readonly module: string;
      /** The module's `h1:` hash, which the Go command checked against the checksum database. */
      readonly sum: string;
      /** The Go toolchain that built it (`go1.24.3`). */
      readonly go: string;
      /** SHA-256 of the program built. */
      readonly sha256: string;
    }
  | {
      readonly kind: 'program';
      /** A program the operator named (--from), copied into the cache. */
      readonly file: string;
      readonly sha256: string;
    };

/** One installed engine, as its manifest describes it. */
export interface InstalledEngine {
  readonly product: string;
  readonly version: string;
  /** The directory of the install: `<cache>/<product>/<version>`. */
  readonly dir: string;
  /** The program to run, absolute. */
  readonly program: string;
  readonly source: EngineSource;
  /** The Java runtime it runs on (JVM engines): its home and version when installed. */
  readonly java: { readonly home: string; readonly version: string } | undefined;
  /**
   * Environment the engine must be started with (JAVA_HOME, ES_GC_OPTS...): what this version
   * needs on the Java found, said once here instead of edited into the distribution's scripts.
   */
  readonly env: Readonly<Record<string, string>>;
  /** Changes made to the cached distribution, one line each (e.g. the GC lines of config/jvm.options). */
  readonly patches: readonly string[];
  /** ISO 8601, UTC. */
  readonly installedAt: string;
}

/** A source as the manifest (and `--json`) write it: snake_case. */
export function sourceJson(source: EngineSource): Record<string, string> {
  switch (source.kind) {
    case 'go-module':
      return { kind: source.kind, module: source.module, sum: source.sum, go: source.go, sha256: source.sha256 };
    case 'program':
      return { kind: source.kind, file: source.file, sha256: source.sha256 };
    default:
      return {
        kind: source.kind,
        ...(source.kind === 'download' ? { url: source.url } : { file: source.file }),
        sha1: source.sha1,
        sha1_from: source.sha1From,
        sha256: source.sha256,
      };
  }
}

/** The manifest as written: snake_case JSON, versioned. */
export function manifestJson(engine: InstalledEngine): string {
  const src = sourceJson(engine.source);
  return `${JSON.stringify(
    {
      manifest: 1,
      product: engine.product,
      version: engine.version,
      program: engine.program,
      source: src,
      java_home: engine.java?.home ?? null,
      java_version: engine.java?.version ?? null,
      env: engine.env,
      patches: engine.patches,
      installed_at: engine.installedAt,
    },
    null,
    2,
  )}\n`;
}

/** A manifest that does not say what it must. */
export class BrokenManifestError extends Error {
  override name = 'BrokenManifestError';
}

const str = (o: Record<string, unknown>, key: string): string => {
  const v = o[key];
  if (typeof v !== 'string' || v === '') throw new BrokenManifestError(`"${key}" is missing or not a string`);
  return v;
};

const SHA1 = /^[0-9a-f]{40}$/;
const SHA256 = /^[0-9a-f]{64}$/;

function hex(o: Record<string, unknown>, key: string, pattern: RegExp): string {
  const v = str(o, key);
  if (!pattern.test(v)) throw new BrokenManifestError(`"${key}" is not a checksum: ${v}`);
  return v;
}

function parseSource(raw: unknown): EngineSource {
  if (typeof raw !== 'object' || raw === null) throw new BrokenManifestError('"source" is missing');
  const o = raw as Record<string, unknown>;
  switch (o.kind) {
    case 'download':
      return {
        kind: 'download',
        url: str(o, 'url'),
        sha1: hex(o, 'sha1', SHA1),
        sha1From: str(o, 'sha1_from'),
        sha256: hex(o, 'sha256', SHA256),
      };
    case 'file':
      return {
        kind: 'file',
        file: str(o, 'file'),
        sha1: hex(o, 'sha1', SHA1),
        sha1From: str(o, 'sha1_from'),
        sha256: hex(o, 'sha256', SHA256),
      };
    case 'go-module':
      return { kind: 'go-module', module: str(o, 'module'), sum: str(o, 'sum'), go: str(o, 'go'), sha256: hex(o, 'sha256', SHA256) };
    case 'program':
      return { kind: 'program', file: str(o, 'file'), sha256: hex(o, 'sha256', SHA256) };
    default:
      throw new BrokenManifestError(`"source.kind" is unknown: ${String(o.kind)}`);
  }
}

/** Reads a manifest's text; throws BrokenManifestError naming what is wrong. */
export function parseManifest(text: string, dir: string): InstalledEngine {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new BrokenManifestError(`not JSON: ${(err as Error).message}`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new BrokenManifestError('not a JSON object');
  const o = raw as Record<string, unknown>;
  if (o.manifest !== 1) throw new BrokenManifestError(`unknown manifest version ${String(o.manifest)}`);
  const program = str(o, 'program');
  if (!isAbsolute(program)) throw new BrokenManifestError(`"program" is not an absolute path: ${program}`);
  const env = o.env ?? {};
  if (typeof env !== 'object' || env === null || Object.values(env).some((v) => typeof v !== 'string')) {
    throw new BrokenManifestError('"env" is not an object of strings');
  }
  const patches = o.patches ?? [];
  if (!Array.isArray(patches) || patches.some((p) => typeof p !== 'string'))
    throw new BrokenManifestError('"patches" is not a list of strings');
  const javaHome = o.java_home;
  if (javaHome !== null && javaHome !== undefined && typeof javaHome !== 'string')
    throw new BrokenManifestError('"java_home" is not a string');
  return {
    product: str(o, 'product'),
    version: str(o, 'version'),
    dir,
    program,
    source: parseSource(o.source),
    java:
      typeof javaHome === 'string'
        ? { home: javaHome, version: typeof o.java_version === 'string' ? o.java_version : 'unknown' }
        : undefined,
    env: env as Record<string, string>,
    patches: patches as string[],
    installedAt: str(o, 'installed_at'),
  };
}
