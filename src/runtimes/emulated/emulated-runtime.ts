import { join } from 'node:path';
import { Readable } from 'node:stream';
import type {
  AccessRule,
  EnsureResult,
  Health,
  InstancePlace,
  InstanceSpec,
  StepContext,
  UnitDefinition,
  UnitDriver,
  UnitHost,
} from '../../domain/units.js';
import { accessGroups } from '../../domain/endpoints.js';
import { matcher } from '../../lib/cidr.js';
import type { AccessEnforcer, DeniedConnection, Runtime, RuntimeHealth, RuntimeStats } from '../runtime.js';

/** Refused connections the emulated edge keeps per instance. */
const DENIED_KEPT = 100;

/** What runs of one instance: its units (by role), their files, and the rules its edge admits. */
interface Placed {
  readonly units: Set<string>;
  /** Files by path: text (configuration) or bytes (data). */
  readonly files: Map<string, string | Buffer>;
  rules: readonly AccessRule[];
  /** Refused connections, oldest first (recorded by `refuse`). */
  denied: DeniedConnection[];
}

/**
 * A runtime without processes, ports or network: a unit "runs" from the moment it is started
 * until it is stopped, and its files live in memory. Paired with the emulated engines (models of
 * each product), it lets API clients be developed and tested against hangar without installing
 * anything. Its state lives in memory: after a restart the reconciler rebuilds it from the store.
 */
export class EmulatedRuntime implements Runtime {
  readonly kind = 'emulated' as const;
  private readonly placed = new Map<string, Placed>();
  private readonly host: UnitHost;
  private holds = 0;
  private failure: Error | undefined;

  constructor() {
    const of = (u: UnitDefinition): Placed => {
      let p = this.placed.get(u.instanceId);
      if (!p) {
        p = { units: new Set(), files: new Map(), rules: [], denied: [] };
        this.placed.set(u.instanceId, p);
      }
      return p;
    };
    this.host = {
      ensureUnit: async (u) => {
        const p = of(u);
        const started = !p.units.has(u.role);
        p.units.add(u.role);
        return { pid: 0, started };
      },
      stopUnit: async (u) => {
        this.placed.get(u.instanceId)?.units.delete(u.role);
      },
      isRunning: (u) => this.placed.get(u.instanceId)?.units.has(u.role) ?? false,
      logTail: () => '',
      logEnd: () => 0,
      logFrom: () => '',
      writeFile: (u, name, content) => {
        const files = of(u).files;
        const key = join(u.dir, name);
        if (files.get(key) === content) return false;
        files.set(key, content);
        return true;
      },
      readFile: (u, name) => {
        const f = this.placed.get(u.instanceId)?.files.get(join(u.dir, name));
        return f === undefined ? undefined : f.toString();
      },
      exists: (u, name) => this.placed.get(u.instanceId)?.files.has(join(u.dir, name)) ?? false,
      readStream: (u, name) => {
        const f = this.placed.get(u.instanceId)?.files.get(join(u.dir, name));
        if (f === undefined) throw Object.assign(new Error(`ENOENT: ${join(u.dir, name)}`), { code: 'ENOENT' });
        return Readable.from([Buffer.from(f)]);
      },
      writeStream: async (u, name, source) => {
        const chunks: Buffer[] = [];
        for await (const c of source) chunks.push(Buffer.from(c as Buffer));
        const data = Buffer.concat(chunks);
        of(u).files.set(join(u.dir, name), data);
        return data.length;
      },
      rename: (u, from, to) => {
        const files = of(u).files;
        const src = join(u.dir, from);
        const dst = join(u.dir, to);
        for (const key of [...files.keys()]) if (key === dst || key.startsWith(`${dst}/`)) files.delete(key);
        for (const [key, value] of [...files]) {
          if (key !== src && !key.startsWith(`${src}/`)) continue;
          files.delete(key);
          files.set(dst + key.slice(src.length), value);
        }
      },
      // one owner for everything here
      handOver: () => {},
      remove: (u, name) => {
        const files = this.placed.get(u.instanceId)?.files;
        const path = join(u.dir, name);
        for (const key of [...(files?.keys() ?? [])]) if (key === path || key.startsWith(`${path}/`)) files!.delete(key);
      },
      size: (u, name) => {
        const f = this.placed.get(u.instanceId)?.files.get(join(u.dir, name));
        return f === undefined ? undefined : Buffer.byteLength(f);
      },
      // no program runs here: its engines are models
      runTool: async (_u, bin) => {
        throw new Error(`the emulated runtime runs no program (${bin})`);
      },
      toolOutput: (_u, bin) => {
        throw new Error(`the emulated runtime runs no program (${bin})`);
      },
    };
  }

  async start(): Promise<void> {}
  async close(): Promise<void> {}

  async portIsFree(): Promise<boolean> {
    return true;
  }

  place(spec: Pick<InstanceSpec, 'id'>): InstancePlace {
    return { dir: join('emulated', spec.id), host: this.host };
  }

  /**
   * Holds every build, change and removal at its start until the returned function is called,
   * so that a client under test can see the transitional states (BUILDING, RESIZING,
   * DELETING) and what the API answers in them. A held pass still ends when hangar stops.
   */
  hold(): () => void {
    this.holds++;
    let released = false;
    return () => {
      if (!released) this.holds--;
      released = true;
    };
  }

  /** The instances whose pass waits at the hold now (a pass of an instance runs alone: one at most each). */
  readonly held = new Set<string>();

  private async whileHeld(id: string, ctx: StepContext): Promise<void> {
    if (this.holds === 0) return;
    this.held.add(id);
    try {
      while (this.holds > 0) {
        await new Promise((r) => setTimeout(r, 10));
        ctx.step('emulated:held');
      }
    } finally {
      this.held.delete(id);
    }
  }

  /**
   * Makes every build and change fail with `error` until the returned function is called, so
   * that a client under test can see the failure states: a TerminalError fails a build (FAILED,
   * with the error as the reason); any other error is retried, and turns an instance that
   * served DEGRADED until it passes again.
   */
  failWith(error: Error): () => void {
    this.failure = error;
    return () => {
      if (this.failure === error) this.failure = undefined;
    };
  }

  /** Passes that converged an instance whole (its units, then its access), by instance; tests read it. */
  readonly wholePasses = new Map<string, number>();

  async ensureInstance(spec: InstanceSpec, rules: readonly AccessRule[], driver: UnitDriver, ctx: StepContext): Promise<EnsureResult> {
    await this.whileHeld(spec.id, ctx);
    if (this.failure) throw this.failure;
    this.wholePasses.set(spec.id, (this.wholePasses.get(spec.id) ?? 0) + 1);
    const result = await driver.ensureUnits(spec, this.place(spec), ctx);
    const placed = this.placed.get(spec.id);
    if (placed) placed.rules = [...rules];
    ctx.step('ensure:access-applied');
    return result;
  }

  async ensureAccess(spec: InstanceSpec, rules: readonly AccessRule[], ctx: StepContext): Promise<{ changed: boolean } | undefined> {
    await this.whileHeld(spec.id, ctx);
    if (this.failure) throw this.failure;
    const placed = this.placed.get(spec.id);
    if (!placed) return undefined;
    placed.rules = [...rules];
    ctx.step('ensure:access-applied');
    return { changed: true };
  }

  async removeInstance(id: string, ctx: StepContext): Promise<void> {
    await this.whileHeld(id, ctx);
    ctx.step('delete:engine-stopping');
    this.placed.delete(id);
  }

  async listInstanceIds(): Promise<string[]> {
    return [...this.placed.keys()];
  }

  async checkInstance(spec: InstanceSpec, driver: UnitDriver): Promise<Health> {
    return driver.check(spec, this.place(spec));
  }

  /** Access rules in force for an instance (tests of the emulated edge read this). */
  rulesOf(id: string): readonly AccessRule[] | undefined {
    return this.placed.get(id)?.rules;
  }

  health(): RuntimeHealth {
    return { problems: [], degraded: [] };
  }

  /**
   * Changes what the emulated edge of an instance admits behind hangar's back, as someone editing
   * a real edge by hand would: a client under test sees the drift in `GET .../acls/effective`
   * until the next pass puts the ACLs back.
   */
  tamper(id: string, rules: readonly AccessRule[]): void {
    const placed = this.placed.get(id);
    if (placed) placed.rules = [...rules];
  }

  /**
   * A connection attempt from `source` to an instance, as its edge would judge it: refused (and
   * recorded) unless an ACL in force admits it. Says whether it was admitted.
   */
  connect(id: string, source: string, listener = 'public', at = Date.now()): boolean {
    const placed = this.placed.get(id);
    if (!placed) return false;
    const admitted = matcher(placed.rules.filter((r) => !r.kibana).map((r) => r.cidr))(source);
    if (!admitted) {
      placed.denied.push({ source, at, listener });
      if (placed.denied.length > DENIED_KEPT) placed.denied.splice(0, placed.denied.length - DENIED_KEPT);
    }
    return admitted;
  }

  async effectiveAccess(spec: InstanceSpec): Promise<AccessEnforcer[]> {
    const placed = this.placed.get(spec.id);
    if (!placed) return [{ name: 'emulated', groups: {}, problem: 'the instance does not run' }];
    const groups = accessGroups(spec.routes, placed.rules);
    return [{ name: 'emulated', groups: Object.fromEntries([...groups].map(([g, list]) => [g, [...new Set(list)].sort()])) }];
  }

  async deniedConnections(spec: InstanceSpec, limit: number): Promise<DeniedConnection[]> {
    return [...(this.placed.get(spec.id)?.denied ?? [])].reverse().slice(0, limit);
  }

  /** The emulated runtime runs no process and no edge: units count as processes, nothing is admitted or refused. */
  async stats(): Promise<RuntimeStats> {
    const units = [...this.placed.values()].reduce((n, p) => n + p.units.size, 0);
    return { processesUp: units, processesExpected: units, edge: [] };
  }
}
