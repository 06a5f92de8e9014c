import { createHash } from 'node:crypto';
import type { InstanceSpec } from '../domain/units.js';

/**
 * What this process last brought each instance's units to: the spec (as a digest) and the
 * version of the instance it carried out. A pass of a later version whose spec is the same (the
 * change concerns access, or the name) finds here that the units already run it: it applies the
 * access and leaves the units alone, which the periodic passes and the process supervision check.
 *
 * Only what this process did counts: the entry holds only while the instance's observed version
 * is the one it recorded (no other replica carried out a version since), and it is dropped when
 * the runtime reports a change of the instance (a unit died, the edge restarted), when a pass
 * of it fails, and when this process stops owning the runtime.
 *
 * It also knows which instances this process has tried to bring up at all since it took the
 * runtime (whatever came of it). Until then, units that do not run are units nobody has started
 * yet (after `hangar down`, a reboot, or when this process takes the runtime over), not units
 * that died: the first pass of an instance converges it before anything judges it.
 */
export class ConvergedSpecs {
  private readonly byInstance = new Map<string, { readonly digest: string; readonly version: number }>();
  private readonly tried = new Set<string>();

  /** The units of `spec.id` run `spec`, carried out as version `version`. */
  remember(spec: InstanceSpec, version: number): void {
    this.byInstance.set(spec.id, { digest: digest(spec), version });
  }

  /** Whether the units were last brought to `spec` by this process, and nothing was carried out since `observedVersion`. */
  matches(spec: InstanceSpec, observedVersion: number): boolean {
    const known = this.byInstance.get(spec.id);
    return known !== undefined && known.version === observedVersion && known.digest === digest(spec);
  }

  /** Whatever this process knew of the units of `id` no longer holds; that it tried to bring them up still does. */
  forget(id: string): void {
    this.byInstance.delete(id);
  }

  /** A pass of this process is bringing the units of `id` up (or trying to). */
  markTried(id: string): void {
    this.tried.add(id);
  }

  /** Whether a pass of this process has tried to bring the units of `id` up since it took the runtime. */
  wasTried(id: string): boolean {
    return this.tried.has(id);
  }

  /** The instance is gone: nothing is kept of it. */
  drop(id: string): void {
    this.byInstance.delete(id);
    this.tried.delete(id);
  }

  /** This process no longer owns the runtime: nothing it knew holds. */
  clear(): void {
    this.byInstance.clear();
    this.tried.clear();
  }

  get size(): number {
    return this.byInstance.size;
  }
}

function digest(spec: InstanceSpec): string {
  return createHash('sha256').update(JSON.stringify(spec)).digest('base64');
}
