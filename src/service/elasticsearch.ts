import { NO_ORIGIN, requestStep, type Caller, type Origin, type ServiceDeps } from './deps.js';
import type { InstanceService, Started } from './instances.js';
import { recordResize } from './resize.js';
import type { ZoneService } from './zones.js';

/** What hangar adds to the spec for elasticsearch instances: resize (the node's heap follows the plan). */
export class ElasticsearchService {
  private readonly step: (name: string) => void;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly instances: InstanceService,
    private readonly zones: ZoneService,
  ) {
    this.step = requestStep(deps);
  }

  /** Records the larger plan; the reconciler restarts the node with the heap of the new plan, its data kept. */
  resize(caller: Caller, name: string, newPlan: number, origin: Origin = NO_ORIGIN): Promise<Started<string>> {
    return recordResize(this.deps, this.instances, this.zones, caller, 'elasticsearch', name, newPlan, origin, this.step);
  }
}
