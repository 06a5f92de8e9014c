import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ConfigError } from '../config.js';
import { SERVICES, type Service } from '../domain/catalog.js';
import { SERVICE_TYPES, type KubernetesTarget, type ServiceType, type Zone } from '../domain/zones.js';

const ZONE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const RUNTIMES = ['local', 'emulated', 'kubernetes'] as const;
const KUBE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

const ZONE_KEYS = new Set(['runtime', 'services', 'capacity_mb']);
const KUBE_KEYS = new Set([
  'kubeconfig',
  'in_cluster',
  'context',
  'namespace',
  'node_selector',
  'topology_zone',
  'storage_class',
  'service_type',
  'source_address',
  'images',
  'volume_retention',
  'node_port_range',
  'node_lost_after',
]);

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Reads the zones file (`--zones` / HANGAR_ZONES): JSON or YAML mapping each zone name to its
 * placement target. Fails with a ConfigError naming the file, the zone and the field at fault.
 */
export function loadZonesFile(path: string): Zone[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`HANGAR_ZONES: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  let doc: unknown;
  try {
    doc = parseYaml(text); // YAML is a superset of JSON: one parser reads both
  } catch (err) {
    throw new ConfigError(`HANGAR_ZONES: ${path} is neither JSON nor YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  return parseZones(doc, path);
}

/** The zones of a parsed zones document; relative kubeconfig paths are taken from `file`'s directory. */
export function parseZones(doc: unknown, file: string): Zone[] {
  const fail = (message: string): never => {
    throw new ConfigError(`HANGAR_ZONES: ${file}: ${message}`);
  };
  const root = isObject(doc) && isObject(doc.zones) ? doc.zones : doc;
  if (!isObject(root) || Object.keys(root).length === 0)
    fail('expected a map of zone names to their targets, e.g. {"US-Dallas": {"runtime": "local"}}');
  const zones: Zone[] = [];
  for (const [name, raw] of Object.entries(root as Json)) {
    const at = (field: string) => `zone "${name}": "${field}"`;
    if (!ZONE_NAME.test(name)) fail(`zone name "${name}" must be 1-64 letters, digits, "_", "." or "-"`);
    if (!isObject(raw)) fail(`zone "${name}" must be a map with at least "runtime"`);
    const z = raw as Json;
    for (const key of Object.keys(z)) {
      if (!ZONE_KEYS.has(key) && !KUBE_KEYS.has(key)) fail(`zone "${name}": unknown field "${key}"`);
    }
    const runtime = z.runtime;
    if (typeof runtime !== 'string' || !(RUNTIMES as readonly string[]).includes(runtime))
      fail(`${at('runtime')} must be one of ${RUNTIMES.join(', ')}`);
    let services: Service[] | undefined;
    if (z.services !== undefined) {
      if (!Array.isArray(z.services) || z.services.length === 0 || z.services.some((s) => !(SERVICES as readonly unknown[]).includes(s))) {
        fail(`${at('services')} must be a non-empty list of ${SERVICES.join(', ')}`);
      }
      services = z.services as Service[];
    }
    let capacityMb: number | undefined;
    if (z.capacity_mb !== undefined) {
      if (typeof z.capacity_mb !== 'number' || !Number.isSafeInteger(z.capacity_mb) || z.capacity_mb < 1)
        fail(`${at('capacity_mb')} must be a positive integer (MB)`);
      capacityMb = z.capacity_mb as number;
    }
    const kubeFields = Object.keys(z).filter((k) => KUBE_KEYS.has(k));
    if (runtime !== 'kubernetes' && kubeFields.length > 0) fail(`zone "${name}": "${kubeFields[0]}" applies to kubernetes zones only`);
    zones.push({
      name,
      runtime: runtime as Zone['runtime'],
      ...(services ? { services } : {}),
      ...(capacityMb !== undefined ? { capacityMb } : {}),
      ...(runtime === 'kubernetes' ? { kubernetes: kubernetesTarget(z, file, at, fail) } : {}),
    });
  }
  return zones;
}

function kubernetesTarget(z: Json, file: string, at: (field: string) => string, fail: (message: string) => never): KubernetesTarget {
  const str = (key: string): string | undefined => {
    const v = z[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || v === '') fail(`${at(key)} must be a non-empty string`);
    return v as string;
  };
  const map = (key: string): Record<string, string> => {
    const v = z[key];
    if (v === undefined) return {};
    if (!isObject(v) || Object.values(v).some((x) => typeof x !== 'string')) fail(`${at(key)} must be a map of strings`);
    return v as Record<string, string>;
  };
  const inCluster = z.in_cluster === undefined ? false : z.in_cluster;
  if (typeof inCluster !== 'boolean') fail(`${at('in_cluster')} must be true or false`);
  const kubeconfig = str('kubeconfig');
  if (!inCluster && kubeconfig === undefined) fail(`zone needs "kubeconfig" (a path) or "in_cluster": true`);
  if (inCluster && kubeconfig !== undefined) fail(`${at('kubeconfig')} and "in_cluster" exclude each other`);
  const namespace = str('namespace') ?? 'hangar';
  if (!KUBE_NAME.test(namespace) || namespace.length > 63)
    fail(`${at('namespace')} must be a Kubernetes name (lower case letters, digits and "-")`);
  const serviceType = str('service_type') ?? 'NodePort';
  if (!(SERVICE_TYPES as readonly string[]).includes(serviceType)) fail(`${at('service_type')} must be one of ${SERVICE_TYPES.join(', ')}`);
  const sourceAddress = str('source_address') ?? 'local';
  if (sourceAddress !== 'local' && sourceAddress !== 'proxy-protocol') fail(`${at('source_address')} must be "local" or "proxy-protocol"`);
  const retention = str('volume_retention') ?? 'delete';
  if (retention !== 'delete' && retention !== 'retain') fail(`${at('volume_retention')} must be "delete" or "retain"`);
  const range = str('node_port_range') ?? '30000-32767';
  const m = /^(\d+)-(\d+)$/.exec(range);
  const first = Number(m?.[1]);
  const last = Number(m?.[2]);
  if (!m || first < 1 || last > 65535 || last - first < 16)
    fail(`${at('node_port_range')} must be FIRST-LAST with at least 16 ports (the cluster's --service-node-port-range)`);
  const lostAfter = z.node_lost_after;
  if (lostAfter !== undefined && (typeof lostAfter !== 'number' || !Number.isSafeInteger(lostAfter) || lostAfter < 0 || lostAfter > 86_400))
    fail(`${at('node_lost_after')} must be a number of seconds from 0 to 86400`);
  const context = str('context');
  const topologyZone = str('topology_zone');
  const storageClass = str('storage_class');
  return {
    ...(kubeconfig !== undefined ? { kubeconfig: resolve(dirname(file), kubeconfig) } : {}),
    inCluster: inCluster as boolean,
    ...(context !== undefined ? { context } : {}),
    namespace,
    nodeSelector: map('node_selector'),
    ...(topologyZone !== undefined ? { topologyZone } : {}),
    ...(storageClass !== undefined ? { storageClass } : {}),
    serviceType: serviceType as ServiceType,
    sourceAddress: sourceAddress as KubernetesTarget['sourceAddress'],
    images: map('images'),
    volumeRetention: retention as KubernetesTarget['volumeRetention'],
    nodePortRange: { first, last },
    ...(lostAfter !== undefined ? { nodeLostAfterSeconds: lostAfter as number } : {}),
  };
}
