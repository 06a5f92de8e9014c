import { execFile } from 'node:child_process';
import { userInfo } from 'node:os';
import type { Config } from '../../config.js';
import { dashboardsUse } from '../../engines/elasticsearch/elasticsearch-versions.js';
import { detectBinaries, findExecutable, type BinaryKey, type EngineBinaries } from '../../lib/binaries.js';
import { localEngines } from '../../engines/index.js';
import type { Offerings } from '../../domain/units.js';
import type { Service } from '../../domain/catalog.js';
import type { ZoneCheck } from '../../runtimes/kubernetes/kube-doctor.js';
import { engineUserReport, type EngineUserReport } from '../../runtimes/local/engine-user.js';
import { loadZonesFile } from '../../zones/zones-file.js';
import { json, type Io } from '../io.js';

/** What each program is for, where it comes from, and the variable that points to it. */
const PROGRAMS: Readonly<Record<BinaryKey, { program: string; purpose: string; install: string; page: string; variable: string }>> = {
  redisServer: {
    program: 'redis-server',
    purpose: 'redis instances',
    install: 'Debian/Ubuntu package redis-server (apt-get install redis-server)',
    page: 'https://redis.io/docs/latest/operate/oss_and_stack/install/',
    variable: 'HANGAR_REDIS_SERVER_BIN',
  },
  haproxy: {
    program: 'haproxy',
    purpose: 'the edge of every instance (ACLs, TLS)',
    install: 'Debian/Ubuntu package haproxy (apt-get install haproxy)',
    page: 'https://www.haproxy.org/',
    variable: 'HANGAR_HAPROXY_BIN',
  },
  mongod: {
    program: 'mongod',
    purpose: 'mongodb instances (MongoDB 4.2 or newer)',
    install: "package mongodb-org-server from MongoDB's APT repository (repo.mongodb.org; Debian's archive has no MongoDB)",
    page: 'https://www.mongodb.com/docs/manual/administration/install-on-linux/',
    variable: 'HANGAR_MONGOD_BIN',
  },
  mongos: {
    program: 'mongos',
    purpose: 'mongodb instances (the router of mongodb_sharded)',
    install: "package mongodb-org-mongos from MongoDB's APT repository (repo.mongodb.org)",
    page: 'https://www.mongodb.com/docs/manual/administration/install-on-linux/',
    variable: 'HANGAR_MONGOS_BIN',
  },
  elasticsearch: {
    program: 'elasticsearch or opensearch',
    purpose: 'elasticsearch instances (Elasticsearch 7.1 or newer, or OpenSearch)',
    install: "package elasticsearch from Elastic's APT repository (artifacts.elastic.co), or opensearch from artifacts.opensearch.org",
    page: 'https://www.elastic.co/downloads/elasticsearch or https://opensearch.org/downloads.html',
    variable: 'HANGAR_ELASTICSEARCH_BIN',
  },
  kibana: {
    program: 'kibana or opensearch-dashboards',
    purpose: 'optional: Kibana listeners of elasticsearch instances',
    install:
      "package kibana from Elastic's APT repository, or opensearch-dashboards from artifacts.opensearch.org (same release as the node)",
    page: 'https://www.elastic.co/downloads/kibana or https://opensearch.org/downloads.html',
    variable: 'HANGAR_KIBANA_BIN',
  },
};

/** The programs each service needs (the local runtime's requirements), in the order they are shown. */
const NEEDS: Readonly<Record<Service, readonly BinaryKey[]>> = {
  redis: ['redisServer', 'haproxy'],
  mongodb: ['mongod', 'mongos', 'haproxy'],
  elasticsearch: ['elasticsearch', 'haproxy'],
};

const ORDER: readonly BinaryKey[] = ['redisServer', 'haproxy', 'mongod', 'mongos', 'elasticsearch', 'kibana'];
/** Services in the order they are shown: redis, the default, first. */
const SHOWN: readonly Service[] = ['redis', 'mongodb', 'elasticsearch'];

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

export interface ServiceReport {
  readonly available: boolean;
  readonly versions: readonly string[];
  readonly engines: readonly { readonly name: string; readonly version: string; readonly path: string }[];
  readonly reason?: string;
  /** What to install (or set) to host it: one line per missing program. */
  readonly install?: readonly string[];
}

export interface DoctorReport {
  /** Whether redis, the default service, can run: the exit status. */
  readonly ok: boolean;
  readonly programs: readonly ProgramReport[];
  readonly services: Readonly<Record<Service, ServiceReport>>;
  /** The user the local runtime's engines run as (HANGAR_ENGINE_USER when hangar runs as root). */
  readonly engineUser: EngineUserReport;
  /** Things worth knowing that make no service unavailable (Kibana, TLS listeners, the runtime configured). */
  readonly notes: readonly string[];
  /** The zones of the zones file, each checked as hangar will use it (Kubernetes: kubeconfig, API, namespace, RBAC). */
  readonly zones?: readonly { readonly zone: string; readonly runtime: string; readonly checks: readonly ZoneCheck[] }[];
}

const installLine = (key: BinaryKey): string => {
  const p = PROGRAMS[key];
  return `${p.program}: install ${p.install}, see ${p.page}; or set ${p.variable} to its path`;
};

/** The report, from the binaries found and what the local runtime offers with them. */
export function doctorReport(
  binaries: EngineBinaries,
  offerings: Offerings,
  engineUser: EngineUserReport,
  notes: readonly string[],
): DoctorReport {
  const programs = ORDER.map((key): ProgramReport => {
    const b = binaries[key];
    const p = PROGRAMS[key];
    if ('found' in b)
      return { program: p.program, found: true, name: b.found.name, path: b.found.path, version: b.found.version, purpose: p.purpose };
    return {
      program: p.program,
      found: false,
      problem: b.problem,
      purpose: p.purpose,
      install: p.install,
      page: p.page,
      variable: p.variable,
    };
  });
  const services = Object.fromEntries(
    SHOWN.map((service) => {
      const o = offerings[service];
      const missing = NEEDS[service].filter((k) => 'problem' in binaries[k]);
      const report: ServiceReport = {
        available: o.available,
        versions: o.versions,
        engines: (o.engines ?? []).map((e) => ({ name: e.name, version: e.version, path: e.path })),
        ...(o.available ? {} : { reason: o.unavailableReason ?? `${service} cannot run here` }),
        ...(!o.available && missing.length > 0 ? { install: missing.map(installLine) } : {}),
      };
      return [service, report];
    }),
  ) as Record<Service, ServiceReport>;
  return { ok: services.redis.available, programs, services, engineUser, notes };
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
  lines.push('', 'Services');
  for (const service of SHOWN) {
    const s = r.services[service];
    lines.push(
      s.available
        ? `  ${service.padEnd(15)}available     versions ${s.versions.join(', ')} (${s.engines.map((e) => `${e.name} ${e.version}`).join(', ')})`
        : `  ${service.padEnd(15)}unavailable   ${s.reason}`,
    );
  }
  lines.push('', 'Engines run as', `  ${r.engineUser.detail}`);
  if (r.engineUser.problem) lines.push(`  PROBLEM: ${r.engineUser.problem}`);
  for (const service of SHOWN) {
    const install = r.services[service].install;
    if (!install) continue;
    lines.push('', `To host ${service}:`, ...install.map((l) => `  ${l}`));
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
 * version of each engine found, what to install for the others, and the user engines run as.
 * Exits 1 when redis (the default service) cannot run, or when engines could not run as their
 * user (it cannot be made, or cannot reach the data dir).
 */
export async function doctor(config: Config, opts: Readonly<Record<string, string | boolean | undefined>>, io: Io): Promise<void> {
  // PATH is not a hangar setting: it locates the engine binaries like a shell would (as the runtime does).
  const searchPath = process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin';
  const binaries = await detectBinaries(config, searchPath);
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
  const node = binaries.elasticsearch;
  if ('found' in node) {
    const kibana = binaries.kibana;
    const use = dashboardsUse(node.found, 'found' in kibana ? kibana.found : undefined);
    notes.push(
      use.use
        ? `${use.binary.name} ${use.binary.version} serves the Kibana listeners of elasticsearch instances`
        : `no Kibana for elasticsearch instances: ${use.reason}`,
    );
  }

  const zones = config.zonesFile ? loadZonesFile(config.zonesFile) : [];
  const zoneReports = await Promise.all(
    zones.map(async (z) => ({
      zone: z.name,
      runtime: z.runtime,
      checks: z.kubernetes ? await (await import('../../runtimes/kubernetes/kube-doctor.js')).checkKubernetesZone(z.kubernetes) : [],
    })),
  );
  const engineUser = await engineUserReport(config, searchPath, ownUser());
  const report: DoctorReport = {
    ...doctorReport(binaries, offerings, engineUser, notes),
    ...(zones.length > 0 ? { zones: zoneReports } : {}),
  };
  io.out(opts.json === true ? json(report) : renderDoctor(report));
  const failed = zoneReports.flatMap((z) => z.checks.filter((c) => !c.ok).map((c) => `zone ${z.zone}: ${c.check}: ${c.detail}`));
  if (failed.length > 0) throw new Error(failed.join('; '));
  // Without local zones, what this machine can host locally does not decide the outcome.
  const local = zones.length === 0 || zones.some((z) => z.runtime === 'local');
  if (local && !report.ok) throw new Error(`redis, the default service, cannot run on this machine: ${report.services.redis.reason}`);
  if (local && engineUser.problem) throw new Error(`engines cannot run as ${engineUser.name}: ${engineUser.problem}`);
}
