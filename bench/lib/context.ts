import type { BenchOptions } from './args.js';
import { BenchHangar, cpuProfileArgs, type Api, type HangarStart } from './hangar.js';
import { createActive, type RedisRecord } from './instances.js';
import type { Processes } from './processes.js';
import type { Row } from './result.js';
import { now } from './time.js';

/** Instances in the account whose list the `list` figure reads. */
export const LIST_SIZE = 100;

/** Ports of the hangars the figures start: private ranges below the kernel's ephemeral ports. */
export const PORT_RANGES = { list: '30000-30999', ops: '31000-31999', density: '22000-27999' } as const;

/** A hangar with its logged-in accounts. */
export interface Deployment {
  readonly hangar: BenchHangar;
  readonly api: Api;
}

/** A hangar holding an account with LIST_SIZE ACTIVE instances. */
export interface ListDeployment extends Deployment {
  readonly records: readonly RedisRecord[];
}

/**
 * What the figures share: options, the process registry, progress output, and the hangars
 * that several figures measure, started on first use. One of them runs at a time, so that a
 * figure never shares the machine with another hangar's engines.
 */
export class BenchContext {
  private current: { key: string; value: Deployment } | undefined;
  private readonly startedAt = now();

  constructor(
    readonly opts: BenchOptions,
    readonly procs: Processes,
  ) {}

  log(message: string): void {
    process.stderr.write(`[bench ${((now() - this.startedAt) / 1000).toFixed(0).padStart(4)} s] ${message}\n`);
  }

  /** Start options of every hangar: the binary under test, and profiling when asked. */
  hangarStart(o: Omit<HangarStart, 'bin' | 'nodeArgs'>): HangarStart {
    const nodeArgs = this.opts.profileDir ? cpuProfileArgs(this.opts.profileDir, o.label) : [];
    return { ...o, bin: this.opts.bin, nodeArgs };
  }

  private async exclusive<T extends Deployment>(key: string, make: () => Promise<T>): Promise<T> {
    if (this.current?.key === key) return this.current.value as T;
    await this.release();
    const value = await make();
    this.current = { key, value };
    return value;
  }

  /** Stops the shared hangar that runs, if any (its engines too). */
  async release(): Promise<void> {
    const c = this.current;
    this.current = undefined;
    if (c) {
      this.log(`stopping the ${c.key} hangar`);
      await c.value.hangar.stop();
    }
  }

  /** hangar with one account of LIST_SIZE ACTIVE redis instances (local runtime, SQLite). */
  listDeployment(): Promise<ListDeployment> {
    return this.exclusive('list', async () => {
      this.log(`starting a hangar and creating ${LIST_SIZE} instances for the list`);
      const hangar = await BenchHangar.start(
        this.procs,
        this.hangarStart({ label: 'list', runtime: 'local', accounts: ['list@bench.test'], portRange: PORT_RANGES.list }),
      );
      const api = await hangar.login('list@bench.test');
      const t0 = now();
      const names = Array.from({ length: LIST_SIZE }, (_, i) => `list-${String(i).padStart(3, '0')}`);
      const records = await createActive(api, names, { concurrency: 10, timeoutMs: 300_000 });
      this.log(`${LIST_SIZE} instances ACTIVE in ${((now() - t0) / 1000).toFixed(1)} s`);
      return { hangar, api, records };
    });
  }

  /** hangar for operations on instances (local runtime, SQLite), with one account. */
  opsDeployment(): Promise<Deployment> {
    return this.exclusive('ops', async () => {
      this.log('starting a hangar for instance operations');
      const hangar = await BenchHangar.start(
        this.procs,
        this.hangarStart({ label: 'ops', runtime: 'local', accounts: ['ops@bench.test'], portRange: PORT_RANGES.ops }),
      );
      return { hangar, api: await hangar.login('ops@bench.test') };
    });
  }
}

/** One figure of the benchmark: a name for --only, and what it measures against what. */
export interface Figure {
  readonly name: string;
  /** What is measured, in a line. */
  readonly title: string;
  /** The ceiling it is measured against. */
  readonly ceiling: string;
  readonly target: string;
  run(ctx: BenchContext): Promise<Row[]>;
}
