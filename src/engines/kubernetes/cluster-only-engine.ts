import type { Service } from '../../domain/catalog.js';
import type { ClusterDriver } from '../../domain/cluster.js';
import { TerminalError } from '../../domain/errors.js';
import type { EnsureResult, Health, UnitDefinition } from '../../domain/units.js';
import type { Engine } from '../engine.js';

/**
 * An engine of a Kubernetes zone that has no process form where it runs (its binaries are not on
 * this host): only its cluster form is used; asked for local units it says so.
 */
export class ClusterOnlyEngine implements Engine {
  constructor(
    readonly service: Service,
    readonly cluster: ClusterDriver,
  ) {}

  private refuse(): never {
    throw new TerminalError(`${this.service} runs on Kubernetes zones only here`);
  }

  units(): UnitDefinition[] {
    return [];
  }

  async ensureUnits(): Promise<EnsureResult> {
    return this.refuse();
  }

  async readiness(): Promise<string | undefined> {
    return `${this.service} runs on Kubernetes zones only here`;
  }

  async check(): Promise<Health> {
    return { healthy: false, reason: `${this.service} runs on Kubernetes zones only here` };
  }

  forget(): void {}

  closeIdle(): void {}

  async close(): Promise<void> {}
}
