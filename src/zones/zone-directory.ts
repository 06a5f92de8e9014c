import { totalmem } from 'node:os';
import type { Logger } from 'pino';
import { ConfigError, type Config } from '../config.js';
import { SERVICES, ZONES } from '../domain/catalog.js';
import type { InstancePlace, InstanceSpec } from '../domain/units.js';
import type { Zone } from '../domain/zones.js';
import { emulatedEngines, kubernetesEngines, localEngines, localPrograms } from '../engines/index.js';
import { detectPrograms } from '../lib/binaries.js';
import { findProduct } from '../engines/products.js';
import { EmulatedRuntime } from '../runtimes/emulated/emulated-runtime.js';
import { engineDirUser, ensureEngineDirs, resolveEngineDir } from '../runtimes/local/engine-dir.js';
import { engineUserName, ensureEngineUser } from '../runtimes/local/engine-user.js';
import { LocalRuntime } from '../runtimes/local/local-runtime.js';
import type { Runtime } from '../runtimes/runtime.js';
import type { PortPool } from '../store/ports.js';
import type { Target, Targets } from '../reconciler/reconcile-instance.js';
import type { CapacityLimit, ZoneView, Zones } from '../service/deps.js';

/** A zone with its target. */
export interface PlacedZone extends ZoneView {
  readonly target: Target;
}

const MB = 1024 * 1024;

/**
 * The zones of this hangar, each mapped to its target. Zones of one kind share one target (one
 * local runtime and edge for every local zone of this host, one emulated runtime), so a target
 * is started, swept and stopped once whatever the number of its zones.
 */
export class ZoneDirectory implements Zones, Targets {
  private readonly byName: Map<string, PlacedZone>;

  constructor(private readonly zones: readonly PlacedZone[]) {
    this.byName = new Map(zones.map((z) => [z.name, z]));
  }

  get(name: string): PlacedZone | undefined {
    return this.byName.get(name);
  }

  list(): readonly PlacedZone[] {
    return this.zones;
  }

  /** The target a zone's instances run on; undefined when the zone is not configured. */
  of(zone: string): Target | undefined {
    return this.byName.get(zone)?.target;
  }

  /** Every target, once. */
  targets(): readonly Target[] {
    return [...new Set(this.zones.map((z) => z.target))];
  }
}

/** The host's memory that local zones may promise: physical memory minus the reserve for hangar, the edge and the system. */
export function hostCapacityMb(config: Pick<Config, 'memoryReserveMb'>, physicalBytes = totalmem()): number {
  return Math.max(0, Math.floor(physicalBytes / MB) - config.memoryReserveMb);
}

/**
 * The zones of this hangar and their targets: from the zones file when there is one, otherwise
 * every zone of the spec on the runtime `--runtime` names (each offering the services the spec
 * lists it for).
 */
export async function buildZones(config: Config, log: Logger, zones: readonly Zone[] | undefined): Promise<ZoneDirectory> {
  const declared: Zone[] = zones
    ? [...zones]
    : [...new Set(SERVICES.flatMap((s) => ZONES[s]))].map((name) => ({
        name,
        runtime: config.runtime,
        services: SERVICES.filter((s) => ZONES[s].includes(name)),
      }));
  // One target for the local zones of this host, one for the emulated ones, one per Kubernetes zone.
  const targets = new Map<string, Target>();
  const targetOf = async (z: Zone): Promise<Target> => {
    const key = z.runtime === 'kubernetes' ? `kubernetes:${z.name}` : z.runtime;
    let t = targets.get(key);
    if (!t) {
      t = await createTarget(z, config, log);
      targets.set(key, t);
    }
    return t;
  };
  // Local zones without a capacity of their own share what the host can promise.
  const shared = declared.filter((z) => z.runtime === 'local' && z.capacityMb === undefined).map((z) => z.name);
  const host: CapacityLimit = { label: `this host (local zones ${shared.join(', ')})`, zones: shared, capacityMb: hostCapacityMb(config) };
  const placed: PlacedZone[] = [];
  for (const z of declared) {
    const target = await targetOf(z);
    const limits: CapacityLimit[] =
      z.capacityMb !== undefined
        ? [{ label: `zone "${z.name}"`, zones: [z.name], capacityMb: z.capacityMb }]
        : z.runtime === 'local'
          ? [host]
          : [];
    placed.push({
      name: z.name,
      runtime: z.runtime,
      target,
      engines: target.engines,
      services: z.services ?? SERVICES,
      limits,
      ports: target.ports,
      place: (spec: InstanceSpec): InstancePlace => target.runtime.place(spec),
      effectiveAccess: (spec) => target.runtime.effectiveAccess(spec),
      deniedConnections: (spec, limit) => target.runtime.deniedConnections(spec, limit),
    });
  }
  log.info({ zones: placed.map((z) => ({ zone: z.name, runtime: z.runtime, capacity_mb: z.limits[0]?.capacityMb ?? null })) }, 'zones');
  return new ZoneDirectory(placed);
}

async function createTarget(zone: Zone, config: Config, log: Logger): Promise<Target> {
  const hostPorts = (runtime: Runtime): PortPool => ({
    scope: config.hostId,
    ...config.portRange,
    setting: 'HANGAR_PORT_RANGE',
    portIsFree: (port) => runtime.portIsFree(port),
  });
  switch (zone.runtime) {
    case 'emulated': {
      const runtime = new EmulatedRuntime();
      return { runtime, engines: emulatedEngines(config), ports: hostPorts(runtime) };
    }
    case 'local': {
      // PATH is not a hangar setting: it locates the engine binaries like a shell would, and is
      // the only variable the engine processes inherit (hangar's own environment holds secrets).
      const searchPath = process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin';
      const binaries = await detectPrograms(localPrograms(), config, searchPath);
      // As root, engines run as the engine user (made now if missing), in directories of theirs.
      const name = engineUserName(config);
      const engineUser = name === undefined ? undefined : await ensureEngineUser(name, searchPath, log);
      // ... where it can reach them: in the data dir, or outside it when it cannot pass through to there
      const engineDir = engineUser
        ? ensureEngineDirs(config.dataDir, engineUser, log)
        : resolveEngineDir(config.dataDir, engineDirUser(undefined));
      if (engineUser) log.info({ user: engineUser.name, uid: engineUser.uid, gid: engineUser.gid }, 'engines run as the engine user');
      else log.info({ uid: process.getuid?.() ?? null }, "engines run as hangar's own user");
      // as root with HANGAR_ENGINE_USER=root, instances an earlier start put outside the data dir stay there
      if (!engineUser && engineDir.outside)
        log.info({ dir: engineDir.path, reason: engineDir.reason }, "the instances' directories are outside the data dir");
      const runtime = new LocalRuntime({
        config,
        log,
        binaries,
        searchPath,
        instancesDir: engineDir.path,
        ...(engineUser ? { engineUser } : {}),
      });
      return { runtime, engines: localEngines(config, binaries, searchPath), ports: hostPorts(runtime) };
    }
    case 'kubernetes': {
      // The Kubernetes client (the largest of hangar's modules) is loaded only by a hangar with a Kubernetes zone.
      const [{ kubeApi, loadKubeConfig }, { KubernetesRuntime }] = await Promise.all([
        import('../runtimes/kubernetes/kube-api.js'),
        import('../runtimes/kubernetes/kubernetes-runtime.js'),
      ]);
      const target = zone.kubernetes!;
      let kc: ReturnType<typeof loadKubeConfig>;
      try {
        kc = loadKubeConfig(target);
      } catch (err) {
        throw new ConfigError(`zone "${zone.name}": cannot load its kubeconfig: ${(err as Error).message}`);
      }
      const runtime = new KubernetesRuntime({
        zone: zone.name,
        target,
        api: kubeApi(kc, target.namespace),
        log,
        officialImage: (product, version) => findProduct(product)?.cluster.officialImage(version),
      });
      return {
        runtime,
        engines: kubernetesEngines(config, target.images),
        ports: {
          scope: `kubernetes:${zone.name}`,
          ...target.nodePortRange,
          setting: `the node_port_range of zone ${zone.name}`,
          portIsFree: async () => true,
        },
      };
    }
  }
}
