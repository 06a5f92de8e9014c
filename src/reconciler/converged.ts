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
 */
export class ConvergedSpecs {
  private readonly byInstance = new Map<string, { readonly digest: string; readonly version: number }>();

  /** The units of `spec.id` run `spec`, carried out as version `version`. */
  remember(spec: InstanceSpec, version: number): void {
    this.byInstance.set(spec.id, { digest: digest(spec), version });
  }

  /** Whether the units were last brought to `spec` by this process, and nothing was carried out since `observedVersion`. */
  matches(spec: InstanceSpec, observedVersion: number): boolean {
    const known = this.byInstance.get(spec.id);
    return known !== undefined && known.version === observedVersion && known.digest === digest(spec);
  }

  forget(id: string): void {
    this.byInstance.delete(id);
  }

  clear(): void {
    this.byInstance.clear();
  }

  get size(): number {
    return this.byInstance.size;
  }
}

function digest(spec: InstanceSpec): string {
  return createHash('sha256').update(JSON.stringify(spec)).digest('base64');
}
