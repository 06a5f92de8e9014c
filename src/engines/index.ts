import type { Config } from '../config.js';
import type { FoundProgram, Offering } from '../domain/units.js';
import { type EngineBinaries, foundVersions, HAPROXY_PROGRAM, type ProgramSpec, versionsOf, versionsOfAll } from '../lib/binaries.js';
import { emulatedEngines } from './emulated/emulated-engines.js';
import { installedEngines } from './install/engine-cache.js';
import type { InstalledEngine } from './install/engine-manifest.js';
import type { Engine } from './engine.js';
import type { Product } from './product.js';
import { PRODUCTS } from './products.js';
import { type EngineRegistry, registryOf } from './registry.js';

/** Every program the local runtime looks for: the edge, then each product's. */
export function localPrograms(): ProgramSpec[] {
  const all = [HAPROXY_PROGRAM, ...PRODUCTS.flatMap((p) => [...p.local.programs, ...(p.local.optional ?? [])])];
  // a program two products use (Kibana) is looked for once
  return all.filter((s, i) => all.findIndex((x) => x.key === s.key) === i);
}

/**
 * What this machine can run of one product, given the programs found and its installs in the
 * engine cache: available at the versions its engine serves (its first program's, or its
 * installs') when the edge is here, its programs or installs are, and its engine can run them;
 * else why not, naming what is missing and the variable that points to it.
 */
function localOffering(p: Product, binaries: EngineBinaries, installs: readonly InstalledEngine[], engine: Engine | undefined): Offering {
  // the product's programs are not needed where installs of the cache stand in for them
  const needed = installs.length > 0 ? [HAPROXY_PROGRAM] : [HAPROXY_PROGRAM, ...p.local.programs];
  const programs = [
    ...installs.map((i) => ({ name: i.product, path: i.program, version: i.version })),
    ...[...p.local.programs, HAPROXY_PROGRAM, ...(p.local.optional ?? [])].flatMap((s) => foundVersions(binaries[s.key])),
  ];
  const problems = needed.flatMap((s) => {
    const b = binaries[s.key];
    return !b ? [`${s.names[0]} was not looked for`] : 'problem' in b ? [b.problem] : [];
  });
  const base = { engine: p.name, service: p.service, programs };
  const support = problems.length === 0 ? engine?.support?.() : undefined;
  const versions =
    problems.length > 0 || !engine || support?.unavailableReason !== undefined
      ? []
      : // else every version found of its first program (the engine cache may hold several)
        (support?.versions ?? versionsOfAll(foundVersions(binaries[p.local.programs[0]!.key]).map((f) => f.version)));
  const unavailableVersions = p.local.unavailableVersions?.(versions);
  const extra = {
    ...(unavailableVersions && unavailableVersions.length > 0 ? { unavailableVersions } : {}),
    ...(support?.notes && support.notes.length > 0 ? { notes: support.notes } : {}),
  };
  if (problems.length > 0 || !engine) {
    return {
      ...base,
      ...extra,
      available: false,
      versions: [],
      unavailableReason: `${p.name} cannot run here: ${problems.join('; ')}`,
      installHint: p.local.install,
    };
  }
  if (support?.unavailableReason !== undefined) {
    return {
      ...base,
      ...extra,
      available: false,
      versions: [],
      unavailableReason: `${p.name} cannot run here: ${support.unavailableReason}`,
    };
  }
  return {
    ...base,
    ...extra,
    available: true,
    versions,
    ...(support?.storageEngines !== undefined ? { storageEngines: support.storageEngines } : {}),
  };
}

/**
 * The engines that run as processes on this machine, with the programs found and the installs of
 * the engine cache. A product whose programs are missing is offered as unavailable, naming what
 * to install.
 */
export function localEngines(config: Config, binaries: EngineBinaries, searchPath?: string): EngineRegistry {
  const engines: Record<string, Engine> = {};
  const offerings: Offering[] = [];
  const cached = PRODUCTS.some((p) => p.local.cached) ? installedEngines(config.engineCache) : [];
  for (const p of PRODUCTS) {
    const found: Record<string, FoundProgram> = {};
    const installed: Record<string, FoundProgram[]> = {};
    for (const s of [...p.local.programs, ...(p.local.optional ?? [])]) {
      const all = foundVersions(binaries[s.key]);
      if (all[0]) found[s.key] = all[0];
      if (all.length > 0) installed[s.key] = all;
    }
    const installs = cached.filter((i) => p.local.cached?.includes(i.product));
    const complete = installs.length > 0 || p.local.programs.every((s) => found[s.key] !== undefined);
    const engine = complete ? p.local.engine(found, { config, installed, installs, ...(searchPath ? { searchPath } : {}) }) : undefined;
    if (engine) engines[p.name] = engine;
    offerings.push(localOffering(p, binaries, installs, engine));
  }
  return registryOf(engines, offerings);
}

/** The versions of a product named by a zone's images (`images["redis:7.0.15"]`), or undefined when it names none. */
function imageVersions(images: Readonly<Record<string, string>>, product: string): string[] | undefined {
  const named = Object.keys(images)
    .filter((k) => k.startsWith(`${product}:`))
    .map((k) => k.slice(product.length + 1));
  return named.length > 0 ? [...new Set(named.flatMap(versionsOf))] : undefined;
}

/**
 * The engines of a Kubernetes zone: each in its cluster form. The versions offered are those the
 * zone names images for (`images["redis:7.0.15"]`), or, where it names none for a product, the
 * versions of the official images.
 */
export function kubernetesEngines(config: Config, images: Readonly<Record<string, string>>): EngineRegistry {
  const engines: Record<string, Engine> = {};
  const offerings: Offering[] = [];
  for (const p of PRODUCTS) {
    engines[p.name] = p.cluster.engine(config);
    const why = p.cluster.unavailableReason;
    offerings.push(
      why === undefined
        ? { engine: p.name, service: p.service, available: true, versions: imageVersions(images, p.name) ?? p.cluster.defaultVersions }
        : { engine: p.name, service: p.service, available: false, versions: [], unavailableReason: `${p.name} cannot run here: ${why}` },
    );
  }
  return registryOf(engines, offerings);
}

export { emulatedEngines, registryOf, type EngineRegistry };
