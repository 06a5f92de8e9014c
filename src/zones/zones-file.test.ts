import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadZonesFile, parseZones } from './zones-file.js';

const dir = mkdtempSync(join(tmpdir(), 'hangar-zones-file-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

describe('the zones file', () => {
  it('reads YAML and JSON alike, every field of each target', () => {
    const yaml = file(
      'zones.yaml',
      [
        'US-Dallas:',
        '  runtime: local',
        '  capacity_mb: 16000',
        'EU-London:',
        '  runtime: kubernetes',
        '  kubeconfig: ./london.kubeconfig',
        '  context: prod',
        '  namespace: datastores',
        '  node_selector: { pool: datastores }',
        '  topology_zone: eu-west-2a',
        '  storage_class: fast',
        '  service_type: LoadBalancer',
        '  source_address: proxy-protocol',
        '  images: { "redis:7.0.15": "registry.example/redis:7.0.15", haproxy: "registry.example/haproxy:2.6" }',
        '  volume_retention: retain',
        '  node_lost_after: 30',
        '  capacity_mb: 64000',
        'Sandbox: { runtime: emulated, services: [redis] }',
      ].join('\n'),
    );
    const zones = loadZonesFile(yaml);
    expect(zones).toEqual([
      { name: 'US-Dallas', runtime: 'local', capacityMb: 16000 },
      {
        name: 'EU-London',
        runtime: 'kubernetes',
        capacityMb: 64000,
        kubernetes: {
          kubeconfig: join(dir, 'london.kubeconfig'),
          inCluster: false,
          context: 'prod',
          namespace: 'datastores',
          nodeSelector: { pool: 'datastores' },
          topologyZone: 'eu-west-2a',
          storageClass: 'fast',
          serviceType: 'LoadBalancer',
          sourceAddress: 'proxy-protocol',
          images: { 'redis:7.0.15': 'registry.example/redis:7.0.15', haproxy: 'registry.example/haproxy:2.6' },
          volumeRetention: 'retain',
          nodePortRange: { first: 30000, last: 32767 },
          nodeLostAfterSeconds: 30,
        },
      },
      { name: 'Sandbox', runtime: 'emulated', services: ['redis'] },
    ]);
    const json = file('zones.json', JSON.stringify({ zones: { 'US-Dallas': { runtime: 'local', capacity_mb: 16000 } } }));
    expect(loadZonesFile(json)).toEqual([{ name: 'US-Dallas', runtime: 'local', capacityMb: 16000 }]);
  });

  it('gives a kubernetes zone its defaults: namespace hangar, NodePort, source kept by the node, volumes deleted', () => {
    expect(parseZones({ K: { runtime: 'kubernetes', in_cluster: true } }, '/etc/hangar/zones.yaml')[0]!.kubernetes).toEqual({
      inCluster: true,
      namespace: 'hangar',
      nodeSelector: {},
      serviceType: 'NodePort',
      sourceAddress: 'local',
      images: {},
      volumeRetention: 'delete',
      nodePortRange: { first: 30000, last: 32767 },
    });
  });

  it.each([
    [{}, /a map of zone names/],
    [{ 'US Dallas': { runtime: 'local' } }, /zone name "US Dallas" must be/],
    [{ A: 'local' }, /zone "A" must be a map/],
    [{ A: { runtime: 'docker' } }, /zone "A": "runtime" must be one of local, emulated, kubernetes/],
    [{ A: { runtime: 'local', capacity_mb: -1 } }, /"capacity_mb" must be a positive integer/],
    [{ A: { runtime: 'local', services: ['cassandra'] } }, /"services" must be a non-empty list of elasticsearch, mongodb, redis/],
    [{ A: { runtime: 'local', namespace: 'x' } }, /zone "A": "namespace" applies to kubernetes zones only/],
    [{ A: { runtime: 'local', colour: 'blue' } }, /zone "A": unknown field "colour"/],
    [{ A: { runtime: 'kubernetes' } }, /needs "kubeconfig" \(a path\) or "in_cluster": true/],
    [
      { A: { runtime: 'kubernetes', in_cluster: true, service_type: 'Ingress' } },
      /"service_type" must be one of ClusterIP, NodePort, LoadBalancer/,
    ],
    [{ A: { runtime: 'kubernetes', in_cluster: true, namespace: 'Big_Name' } }, /"namespace" must be a Kubernetes name/],
    [
      { A: { runtime: 'kubernetes', in_cluster: true, node_lost_after: '60s' } },
      /"node_lost_after" must be a number of seconds from 0 to 86400/,
    ],
    [{ A: { runtime: 'kubernetes', in_cluster: true, node_lost_after: -1 } }, /"node_lost_after" must be a number of seconds/],
  ])('refuses %j naming the zone and the field', (doc, message) => {
    expect(() => parseZones(doc, '/etc/hangar/zones.yaml')).toThrow(message);
    expect(() => parseZones(doc, '/etc/hangar/zones.yaml')).toThrow(/^HANGAR_ZONES: \/etc\/hangar\/zones\.yaml: /);
  });

  it('says which file it cannot read or parse', () => {
    expect(() => loadZonesFile(join(dir, 'missing.yaml'))).toThrow(/HANGAR_ZONES: cannot read .*missing\.yaml \(ENOENT\)/);
    expect(() => loadZonesFile(file('broken.yaml', 'A: [unclosed'))).toThrow(/HANGAR_ZONES: .*broken\.yaml is neither JSON nor YAML/);
  });
});
