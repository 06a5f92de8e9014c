import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_BIN } from './hangar.js';

export interface BenchOptions {
  /** Fewer rounds, shorter runs, a smaller density: under 2 minutes. */
  readonly quick: boolean;
  /** Figures to run (all when empty). */
  readonly only: readonly string[];
  /** Rounds per figure (each round measures the ceiling and hangar, interleaved). */
  readonly rounds: number;
  /** The hangar binary under test. */
  readonly bin: string;
  /** Where results.json is written; empty: not written. */
  readonly out: string;
  /** PostgreSQL server for the store figure; a fresh database is made on it and dropped after. */
  readonly databaseUrl: string;
  /** Directory for CPU profiles of the hangar processes (node --cpu-prof), or undefined. */
  readonly profileDir: string | undefined;
  readonly list: boolean;
  readonly help: boolean;
}

export const USAGE = `npm run bench -- [options]

Measures hangar against the ceilings of this machine (each ceiling measured in the same run),
prints a table of ratios and writes bench/results.json.

  --quick             one round, shorter runs, 30 idle instances instead of up to 1,000 (under 2 minutes)
  --only NAME[,NAME]  run these figures only (see --list)
  --list              list the figures and exit
  --rounds N          rounds per figure (default 3, 1 with --quick)
  --bin PATH          hangar binary to measure (default: this checkout's dist/src/cli/bin.js)
  --out PATH          where to write the results (default bench/results.json; "" to skip)
  --database-url URL  PostgreSQL server for the store figure (default postgres://postgres@127.0.0.1:5432/test)
  --profile DIR       run hangar under node --cpu-prof, profiles written to DIR when it stops
  --help              this text
`;

/** The repository root, from dist/bench/lib. */
export const REPO_ROOT = join(import.meta.dirname, '..', '..', '..');

export function parseBenchArgs(argv: readonly string[]): BenchOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      quick: { type: 'boolean', default: false },
      only: { type: 'string', multiple: true },
      list: { type: 'boolean', default: false },
      rounds: { type: 'string' },
      bin: { type: 'string' },
      out: { type: 'string' },
      'database-url': { type: 'string' },
      profile: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  const quick = values.quick ?? false;
  const rounds = values.rounds !== undefined ? Number(values.rounds) : quick ? 1 : 3;
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds must be a positive integer, got ${values.rounds}`);
  return {
    quick,
    only: (values.only ?? [])
      .flatMap((s) => s.split(','))
      .map((s) => s.trim())
      .filter(Boolean),
    rounds,
    bin: values.bin ?? DEFAULT_BIN,
    out: values.out ?? join(REPO_ROOT, 'bench', 'results.json'),
    databaseUrl: values['database-url'] ?? 'postgres://postgres@127.0.0.1:5432/test',
    profileDir: values.profile,
    list: values.list ?? false,
    help: values.help ?? false,
  };
}
