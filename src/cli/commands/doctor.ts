import { execFile } from 'node:child_process';
import { userInfo } from 'node:os';
import type { Config } from '../../config.js';
import { detectPrograms, findExecutable, HAPROXY_PROGRAM, type EngineBinaries, type ProgramSpec } from '../../lib/binaries.js';
import { localEngines, localPrograms } from '../../engines/index.js';
import { scanEngineCache } from '../../engines/install/engine-cache.js';
import { INSTALL_RECIPES } from '../../engines/installs.js';
import { productNamed } from '../../engines/products.js';
import { serviceOffering } from '../../engines/registry.js';
import type { Offering, Offerings } from '../../domain/units.js';
import { SERVICES, type Service } from '../../domain/catalog.js';
import type { ZoneCheck } from '../../runtimes/kubernetes/kube-doctor.js';
import { engineDirReport, type EngineDirReport } from '../../runtimes/local/engine-dir.js';
import { engineUserReport, type EngineUserReport } from '../../runtimes/local/engine-user.js';
import { loadZonesFile } from '../../zones/zones-file.js';
import { json, type Io } from '../io.js';

export type ProgramReport =
  | {
      readonly program: string;
      readonly found: true;
      readonly name: string;
      readonly path: string;
      readonly version: string;
      readonly purpose: string;
    }
  | {
      readonly program: string;
      readonly found: false;
      readonly problem: string;
      readonly purpose: string;
      readonly install: string;
      readonly page: string;
      readonly variable: string;
    };

/** One engine (product) of a service, as this machine can run it. */
export interface EngineReport {
  readonly engine: string;
  readonly available: boolean;
  readonly versions: readonly string[];
  /** The programs found that it runs (and the edge), with their versions. */
  readonly programs: readonly { readonly name: string; readonly version: string; readonly path: string }[];
  readonly reason?: string;
  /** What to install (or set) to run it: one line per missing program. */
  readonly install?: readonly string[];
  /** Versions it knows of and does not serve here, with why (and what installs them). */
  readonly unavailable_versions?: readonly { readonly version: string; readonly reason: string }[];
  /** What else to know of it here. */
  readonly notes?: readonly string[];
}

/** The engine cache: what `hangar engines install` put there, and what more it installs. */
export interface EngineCacheReport {
  readonly dir: string;
  readonly installed: readonly { readonly product: string; readonly version: string; readonly program: string }[];
  /** Installs left out, with why (a broken manifest, a program gone). */
  readonly broken: readonly { readonly dir: string; readonly reason: string }[];
  /** `product@version` hangar installs that the cache does not hold yet. */
  readonly installable: readonly string[];
}

export interface ServiceReport {
  /** Whether any of its engines can run. */
  readonly available: boolean;
  /** The engine a create without `engine` gets. */
  readonly default_engine?: string;
  /** Versions of that engine. */
  readonly versions: readonly string[];
  readonly engines: readonly EngineReport[];
  readonly reason?: string;
}

export interface DoctorReport {
  /** Whether redis, the default service, can run: the exit status. */
  readonly ok: boolean;
  readonly programs: readonly ProgramReport[];
  readonly services: Readonly<Record<Service, ServiceReport>>;
  /** The user the local runtime's engines run as (HANGAR_ENGINE_USER when hangar runs as root). */
  readonly engineUser: EngineUserReport;
  /**
   * Where the local runtime keeps the instances' directories: `<data dir>/instances`, or outside
   * the data dir (with the reason) when the engine user cannot reach that.
   */
  readonly instancesDir: EngineDirReport;
  /** The engine cache (`hangar engines install`, `hangar engines ls`). */
  readonly engineCache?: EngineCacheReport;
  /** Things worth knowing that make no service unavailable (Kibana, TLS listeners, the runtime configured). */
  readonly notes: readonly string[];
  /** The zones of the zones file, each checked as hangar will use it (Kubernetes: kubeconfig, API, namespace, RBAC). */
  readonly zones?: readonly { readonly zone: string; readonly runtime: string; readonly checks: readonly ZoneCheck[] }[];
}

/** A program's name for people: its names joined (`elasticsearch or opensearch`). */
const programName = (p: ProgramSpec): string => p.names.join(' or ');

const installLine = (p: ProgramSpec): string =>
  `${programName(p)}: install ${p.about.install}, see ${p.about.page}; or set ${p.variable} to its path`;

/** The report, from the binaries found and what the local runtime offers with them. */
export function doctorReport(
  binaries: EngineBinaries,
  offerings: Offerings,
  engineUser: EngineUserReport,
  instancesDir: EngineDirReport,
  notes: readonly string[],
): DoctorReport {
  const programs = localPrograms().map((p): ProgramReport => {
    const b = binaries[p.key];
    if (b && 'found' in b)
      return {
        program: programName(p),
        found: true,
        name: b.found.name,
        path: b.found.path,
        version: b.found.version,
        purpose: p.about.purpose,
      };
    return {
      program: programName(p),
      found: false,
      problem: b?.problem ?? `${programName(p)} was not looked for`,
      purpose: p.about.purpose,
      install: p.about.install,
      page: p.about.page,
      variable: p.variable,
    };
  });
  const engineReport = (o: Offering): EngineReport => {
    const product = productNamed(o.engine);
    const missing = [HAPROXY_PROGRAM, ...product.local.programs].filter((p) => {
      const b = binaries[p.key];
      return !b || 'problem' in b;
    });
    return {
      engine: o.engine,
      available: o.available,
      versions: o.versions,
      programs: (o.programs ?? []).map((e) => ({ name: e.name, version: e.version, path: e.path })),
      ...(o.available ? {} : { reason: o.unavailableReason ?? `${o.engine} cannot run here` }),
      ...(!o.available && missing.length > 0 ? { install: missing.map(installLine) } : {}),
      ...(o.unavailableVersions && o.unavailableVersions.length > 0
        ? { unavailable_versions: o.unavailableVersions.map((v) => ({ version: v.version, reason: v.reason })) }
        : {}),
      ...(o.notes && o.notes.length > 0 ? { notes: [...o.notes] } : {}),
    };
  };
  const services = Object.fromEntries(
    SERVICES.map((service) => {
      const o = serviceOffering(offerings, service);
      const report: ServiceReport = {
        available: o.default !== undefined,
        ...(o.default ? { default_engine: o.default.engine } : {}),
        versions: o.default?.versions ?? [],
        engines: o.engines.map(engineReport),
        ...(o.default ? {} : { reason: o.unavailableReason ?? `${service} cannot run here` }),
      };
      return [service, report];
    }),
  ) as Record<Service, ServiceReport>;
  return { ok: services.redis.available, programs, services, engineUser, instancesDir, notes };
}

/** The report for people. */
export function renderDoctor(r: DoctorReport): string {
  const lines = ['hangar doctor: what this machine can host with the local runtime', '', 'Programs'];
  const width = Math.max(...r.programs.map((p) => (p.found ? p.name : p.program).length)) + 2;
  for (const p of r.programs) {
    lines.push(
      p.found
        ? `  ${p.name.padEnd(width)}${p.version.padEnd(10)}${p.path}`
        : `  ${p.program.padEnd(width)}${'missing'.padEnd(10)}${p.purpose}`,
    );
  }
  lines.push('', 'Services (engines in the order a create without --engine takes them)');
  const nameWidth = Math.max(...SERVICES.flatMap((s) => r.services[s].engines.map((e) => `${s}/${e.engine}`.length))) + 2;
  for (const service of SERVICES) {
    for (const e of r.services[service].engines) {
      const name = `${service}/${e.engine}`.padEnd(nameWidth);
      lines.push(
        e.available
          ? `  ${name}available     versions ${e.versions.join(', ')} (${e.programs.map((p) => `${p.name} ${p.version}`).join(', ')})`
          : `  ${name}unavailable   ${e.reason}`,
      );
    }
  }
  for (const service of SERVICES) {
    for (const e of r.services[service].engines) {
      const unavailable = e.unavailable_versions ?? [];
      if (unavailable.length === 0 && !e.notes) continue;
      lines.push('', `${service}/${e.engine}:`);
      for (const v of unavailable) lines.push(`  ${v.version.padEnd(10)}${v.reason}`);
      for (const n of e.notes ?? []) lines.push(`  note: ${n}`);
    }
  }
  if (r.engineCache) {
    const c = r.engineCache;
    lines.push('', `Engine cache ${c.dir} (hangar engines ls)`);
    if (c.installed.length === 0) lines.push('  nothing installed');
    for (const i of c.installed) lines.push(`  ${i.product.padEnd(20)}${i.version.padEnd(10)}${i.program}`);
    for (const b of c.broken) lines.push(`  left out: ${b.dir}: ${b.reason}`);
    if (c.installable.length > 0) lines.push(`  to install more: hangar engines install ${c.installable.join(' | ')}`);
  }
  lines.push('', 'Engines run as', `  ${r.engineUser.detail}`);
  if (r.engineUser.problem) lines.push(`  PROBLEM: ${r.engineUser.problem}`);
  lines.push(
    '',
    "Instances' directories",
    `  ${r.instancesDir.path}${r.instancesDir.outside ? `, outside the data dir: ${r.instancesDir.reason}` : ''}`,
  );
  if (r.instancesDir.problem) lines.push(`  PROBLEM: ${r.instancesDir.problem}`);
  for (const service of SERVICES) {
    for (const e of r.services[service].engines) {
      if (!e.install) continue;
      lines.push('', `To host ${service} with ${e.engine}:`, ...e.install.map((l) => `  ${l}`));
    }
  }
  if (r.notes.length > 0) lines.push('', 'Notes', ...r.notes.map((n) => `  ${n}`));
  if (r.zones && r.zones.length > 0) {
    lines.push('', 'Zones');
    for (const z of r.zones) {
      lines.push(`  ${z.zone} (${z.runtime})`);
      for (const c of z.checks) lines.push(`    ${c.ok ? 'ok  ' : 'FAIL'}  ${c.check.padEnd(10)}${c.detail}`);
    }
  }
  return lines.join('\n');
}

/** `X.Y.Z` of the openssl program, which the edge needs for its TLS listeners; undefined when missing. */
async function opensslVersion(searchPath: string): Promise<{ path: string; version: string } | undefined> {
  const path = findExecutable('openssl', searchPath);
  if (!path) return undefined;
  const out = await new Promise<string>((resolve) => execFile(path, ['version'], { timeout: 10_000 }, (_e, stdout) => resolve(stdout)));
  const version = /OpenSSL (\d+\.\d+\.\d+)/.exec(out)?.[1];
  return version ? { path, version } : undefined;
}

/** The user hangar runs as (a uid without a name is shown as its number). */
function ownUser(): { uid: number; gid: number; name: string } {
  const uid = process.getuid?.() ?? -1;
  const gid = process.getgid?.() ?? -1;
  try {
    return { uid, gid, name: userInfo().username };
  } catch {
    return { uid, gid, name: String(uid) };
  }
}

/**
 * `hangar doctor [--json]`: which services this machine can host with the local runtime, the
 * version of each engine found, what to install for the others, the user engines run as and where
 * their directories are. Exits 1 when redis (the default service) cannot run, or when engines
 * could not run as their user (it cannot be made, or cannot reach their directories).
 */
export async function doctor(config: Config, opts: Readonly<Record<string, string | boolean | undefined>>, io: Io): Promise<void> {
  // PATH is not a hangar setting: it locates the engine binaries like a shell would (as the runtime does).
  const searchPath = process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin';
  const binaries = await detectPrograms(localPrograms(), config, searchPath);
  const engines = localEngines(config, binaries);
  const offerings = engines.offerings();
  await engines.close();

  const notes: string[] = [];
  if (config.runtime !== 'local')
    notes.push(`the configured runtime is ${config.runtime}: this report is what the local runtime (the default) would host`);
  const openssl = await opensslVersion(searchPath);
  notes.push(
    openssl
      ? `openssl ${openssl.version} (${openssl.path}) makes the certificates of TLS listeners (mongodb_sharded ssl, elasticsearch https)`
      : 'openssl is missing: TLS listeners (mongodb_sharded ssl, elasticsearch https) cannot start; install the Debian/Ubuntu package openssl',
  );
  const zones = config.zonesFile ? loadZonesFile(config.zonesFile) : [];
  const zoneReports = await Promise.all(
    zones.map(async (z) => ({
      zone: z.name,
      runtime: z.runtime,
      checks: z.kubernetes ? await (await import('../../runtimes/kubernetes/kube-doctor.js')).checkKubernetesZone(z.kubernetes) : [],
    })),
  );
  const own = ownUser();
  const engineUser = await engineUserReport(config, searchPath, own);
  // as root: decided by the engine user's reach (root's when HANGAR_ENGINE_USER=root; one not made yet owns nothing)
  const ids = own.uid === 0 ? { uid: engineUser.uid ?? -1, gid: engineUser.gid ?? -1 } : undefined;
  const instancesDir = engineDirReport(config.dataDir, ids);
  const scan = scanEngineCache(config.engineCache);
  const engineCache: EngineCacheReport = {
    dir: config.engineCache,
    installed: scan.engines.map((e) => ({ product: e.product, version: e.version, program: e.program })),
    broken: scan.broken.map((b) => ({ dir: b.dir, reason: b.reason })),
    installable: INSTALL_RECIPES.flatMap((r) =>
      r.versions.filter((v) => !scan.engines.some((e) => e.product === r.product && e.version === v)).map((v) => `${r.product}@${v}`),
    ),
  };
  const report: DoctorReport = {
    ...doctorReport(binaries, offerings, engineUser, instancesDir, notes),
    engineCache,
    ...(zones.length > 0 ? { zones: zoneReports } : {}),
  };
  io.out(opts.json === true ? json(report) : renderDoctor(report));
  const failed = zoneReports.flatMap((z) => z.checks.filter((c) => !c.ok).map((c) => `zone ${z.zone}: ${c.check}: ${c.detail}`));
  if (failed.length > 0) throw new Error(failed.join('; '));
  // Without local zones, what this machine can host locally does not decide the outcome.
  const local = zones.length === 0 || zones.some((z) => z.runtime === 'local');
  if (local && !report.ok) throw new Error(`redis, the default service, cannot run on this machine: ${report.services.redis.reason}`);
  if (local && engineUser.problem) throw new Error(`engines cannot run as ${engineUser.name}: ${engineUser.problem}`);
  if (local && instancesDir.problem) throw new Error(`engines cannot run in ${instancesDir.path}: ${instancesDir.problem}`);
}
