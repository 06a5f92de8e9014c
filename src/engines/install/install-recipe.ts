import type { BuiltEngine } from './engine-cache.js';

/** What a long install says while it works (stderr in the CLI). */
export interface InstallProgress {
  /** A step begins: `downloading <url>`, `unpacking`, `building`. */
  step(text: string): void;
  /** How far the current step is: bytes downloaded, files unpacked. */
  amount(done: number, total: number | undefined, unit: 'bytes' | 'files'): void;
  /** A fact worth telling (the Java chosen, the Go caches used). */
  note(text: string): void;
}

export const SILENT: InstallProgress = { step: () => {}, amount: () => {}, note: () => {} };

/** What a recipe is given to install one version. */
export interface InstallContext {
  readonly version: string;
  /** The directory to fill; it becomes `<cache>/<product>/<version>`. */
  readonly dir: string;
  /** `--from`: a mirror's base URL, a file's URL, or a local file (what it may be is the recipe's). */
  readonly from: string | undefined;
  /** `--sha1`: the checksum to expect, instead of the published one. */
  readonly sha1: string | undefined;
  /** The environment to find Java or Go in (JAVA_HOME, PATH...). */
  readonly env: NodeJS.ProcessEnv;
  /** Where to look for JDKs besides JAVA_HOME and PATH (tests point it elsewhere). */
  readonly jvmDir?: string;
  readonly progress: InstallProgress;
}

/** How hangar installs one product: the versions it can, those it refuses and why, and the install itself. */
export interface InstallRecipe {
  /** As in `hangar engines install <product>@<version>`. */
  readonly product: string;
  /** One line: what it is and where it comes from. */
  readonly summary: string;
  /** The versions it installs, oldest first. */
  readonly versions: readonly string[];
  /** Versions it refuses, with the reason. */
  readonly refused: Readonly<Record<string, string>>;
  /** What `--from` takes for it. */
  readonly from: string;
  /** Checks what the install needs (a Java, a Go) before anything is fetched; throws saying how to get it. */
  preflight(ctx: Omit<InstallContext, 'dir'>): Promise<void>;
  /** Fetches, checks and unpacks (or builds) the version into `ctx.dir`. */
  install(ctx: InstallContext): Promise<BuiltEngine>;
}
