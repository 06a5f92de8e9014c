import type { Config } from '../config.js';
import type { FoundProgram, Offering } from '../domain/units.js';
import { type EngineBinaries, foundVersions, HAPROXY_PROGRAM, type ProgramSpec, versionsOf, versionsOfAll } from '../lib/binaries.js';
import { emulatedEngines } from './emulated/emulated-engines.js';
import type { Engine } from './engine.js';
import type { Product } from './product.js';
import { PRODUCTS } from './products.js';
import { type EngineRegistry, registryOf } from './registry.js';

/** Every program the local runtime looks for: the edge, then each product's. */
export function localPrograms(): ProgramSpec[] {
  return [HAPROXY_PROGRAM, ...PRODUCTS.flatMap((p) => [...p.local.programs, ...(p.local.optional ?? [])])];
}

/**
 * What this machine can run of one product, given the programs found: available at the version
 * of its first program when every program it needs (and the edge) is here and its engine can run
 * it; else why not, naming what is missing and the variable that points to it.
 */
function localOffering(p: Product, binaries: EngineBinaries, engine: Engine | undefined): Offering {
  const needed = [HAPROXY_PROGRAM, ...p.local.programs];
  const programs = [...p.local.programs, HAPROXY_PROGRAM, ...(p.local.optional ?? [])].flatMap((s) => foundVersions(binaries[s.key]));
  const problems = needed.flatMap((s) => {
    const b = binaries[s.key];
    return !b ? [`${s.names[0]} was not looked for`] : 'problem' in b ? [b.problem] : [];
  });
  const base = { engine: p.name, service: p.service, programs };
  if (problems.length > 0 || !engine) {
    return {
      ...base,
      available: false,
      versions: [],
      unavailableReason: `${p.name} cannot run here: ${problems.join('; ')}`,
      installHint: p.local.install,
    };
  }
  const support = engine.support?.();
  if (support?.unavailableReason !== undefined) {
    return { ...base, available: false, versions: [], unavailableReason: `${p.name} cannot run here: ${support.unavailableReason}` };
  }
  // every version found of its first program (the engine cache may hold several)
  const main = foundVersions(binaries[p.local.programs[0]!.key]);
  return {
    ...base,
    available: true,
    versions: versionsOfAll(main.map((f) => f.version)),
    ...(support?.storageEngines !== undefined ? { storageEngines: support.storageEngines } : {}),
  };
}

/**
 * The engines that run as processes on this machine, with the programs found. A product whose
 * programs are missing is offered as unavailable, naming what to install.
 */
export function localEngines(config: Config, binaries: EngineBinaries, searchPath?: string): EngineRegistry {
  const engines: Record<string, Engine> = {};
  const offerings: Offering[] = [];
  for (const p of PRODUCTS) {
    const found: Record<string, FoundProgram> = {};
    const installed: Record<string, FoundProgram[]> = {};
    for (const s of [...p.local.programs, ...(p.local.optional ?? [])]) {
      const all = foundVersions(binaries[s.key]);
      if (all[0]) found[s.key] = all[0];
      if (all.length > 0) installed[s.key] = all;
    }
    const complete = p.local.programs.every((s) => found[s.key] !== undefined);
    const engine = complete ? p.local.engine(found, { config, installed, ...(searchPath ? { searchPath } : {}) }) : undefined;
    if (engine) engines[p.name] = engine;
    offerings.push(localOffering(p, binaries, engine));
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
