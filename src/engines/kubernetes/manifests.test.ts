import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { Role } from 'kubernetes-models/rbac.authorization.k8s.io/v1/Role';
import { RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { parseZones } from '../../zones/zones-file.js';
import { INSTANCE_TYPES, PLANS } from '../../domain/catalog.js';
import type { ClusterPlace, KubeObject } from '../../domain/cluster.js';
import { PRODUCTS, findProduct, firstProductOf } from '../products.js';
import type { EdgeTls, InstanceSpec } from '../../domain/units.js';
import type { KubernetesTarget } from '../../domain/zones.js';
import { RBAC_NEEDS } from '../../runtimes/kubernetes/kube-doctor.js';
import { EDGE_TLS_FILES, edgeObjects, frontendOf, portName, renderEdgeConfig } from '../../runtimes/kubernetes/kube-edge.js';
import { imageOf } from '../../runtimes/kubernetes/kubernetes-runtime.js';
import { servedRoutes } from '../elasticsearch/elasticsearch-edge.js';
import { VALKEY_FLAVOUR } from '../redis/redis-flavour.js';
import { ElasticsearchClusterDriver, elasticsearchNodes } from '../elasticsearch/elasticsearch-kubernetes.js';
import { MongodbClusterDriver } from '../mongodb/mongodb-kubernetes.js';
import { RedisAdmin } from '../redis/redis-admin.js';
import { RedisClusterDriver, redisMemberMemoryMb } from '../redis/redis-kubernetes.js';

// Every object hangar generates for a Kubernetes zone (each engine, type and plan, and the edge),
// validated offline against the Kubernetes API schemas (kubernetes-models).

const MODELS: Record<string, new (o: any) => { validate(): void }> = {
  'v1/Service': Service,
  'v1/Secret': Secret,
  'apps/v1/StatefulSet': StatefulSet,
  'apps/v1/Deployment': Deployment,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'rbac.authorization.k8s.io/v1/Role': Role,
  'rbac.authorization.k8s.io/v1/RoleBinding': RoleBinding,
  'v1/ConfigMap': ConfigMap,
  'v1/Namespace': Namespace,
  'v1/ServiceAccount': ServiceAccount,
};

function validate(o: KubeObject): void {
  const Model = MODELS[`${o.apiVersion}/${o.kind}`];
  if (!Model) throw new Error(`no schema for ${o.apiVersion} ${o.kind}`);
  new Model(o).validate();
}

const place: ClusterPlace = {
  namespace: 'hangar',
  labels: { 'app.kubernetes.io/managed-by': 'hangar', 'hangar.io/instance': '65a1b2c3d4e5f60718293a4b' },
  nodeSelector: { pool: 'datastores' },
  topologyZone: 'eu-west-2a',
  storageClass: 'fast',
  nodeLostAfterSeconds: 45,
  image: (product, version) => `registry.example/${product}:${version}`,
  apply: async () => {},
  serviceAddress: async () => '198.19.0.10',
  pods: async () => [],
  rollout: async () => undefined,
};

const spec = (service: InstanceSpec['service'], type: InstanceSpec['type'], plan: number): InstanceSpec => {
  let port = 31500;
  const product = firstProductOf(service);
  const ports = Object.fromEntries(product.portRoles(type).map((r) => [r, port++]));
  return {
    id: '65a1b2c3d4e5f60718293a4b',
    service,
    engine: product.name,
    routes: product.edgeRoutes(type, ports),
    type,
    version: '7.0.15',
    plan,
    encrypted: false,
    storageEngine: null,
    password: service === 'redis' ? 'client-password-0123' : null,
    adminSecret: 'admin-secret-0123',
    ports,
  };
};

/** A certificate as the edge is handed it (the objects carry it as it is). */
const TLS: EdgeTls = {
  serial: 'AB',
  pem: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\nMIGH\n-----END PRIVATE KEY-----\n',
};

const addresses = {
  'h-65a1b2c3d4e5f60718293a4b-redis-0': '198.19.0.10',
  'h-65a1b2c3d4e5f60718293a4b-redis-1': '198.19.0.11',
  'h-65a1b2c3d4e5f60718293a4b-sentinel': '198.19.0.12',
};

describe('generated Kubernetes objects', () => {
  it.each(PLANS.redis)(
    'redis_ha_instance on plan %i: valid; memory and volume from the plan; no password in clear outside the Secret',
    (plan) => {
      const objects = new RedisClusterDriver(new RedisAdmin(), 'noeviction').objects(
        spec('redis', 'redis_ha_instance', plan),
        place,
        addresses,
      );
      objects.forEach(validate);
      expect(objects.map((o) => o.kind).sort()).toEqual([
        'PodDisruptionBudget',
        'PodDisruptionBudget',
        'Secret',
        'Service',
        'Service',
        'Service',
        'Service',
        'StatefulSet',
        'StatefulSet',
      ]);
      const redis = objects.find((o) => o.kind === 'StatefulSet' && o.metadata.name.endsWith('-redis')) as any;
      expect(redis.spec.replicas).toBe(2);
      expect(redis.spec.template.spec.containers[0].resources.limits.memory).toBe(`${redisMemberMemoryMb(plan)}Mi`);
      expect(redis.spec.volumeClaimTemplates[0].spec).toMatchObject({
        storageClassName: 'fast',
        resources: { requests: { storage: `${Math.max(1024, plan * 3)}Mi` } },
      });
      expect(redis.spec.template.spec.nodeSelector).toEqual({ pool: 'datastores', 'topology.kubernetes.io/zone': 'eu-west-2a' });
      const sentinel = objects.find((o) => o.kind === 'StatefulSet' && o.metadata.name.endsWith('-sentinel')) as any;
      expect(sentinel.spec.replicas).toBe(3);
      // the engines' CPU is not limited; a sentinel's is (it can spin: redis/redis#9956)
      expect(redis.spec.template.spec.containers[0].resources.limits.cpu).toBeUndefined();
      expect(sentinel.spec.template.spec.containers[0].resources).toEqual({
        requests: { memory: '64Mi', cpu: '50m' },
        limits: { memory: '64Mi', cpu: '100m' },
      });
      // an engine's readiness is a PING (a loading engine is not ready); a sentinel's a TCP check,
      // which costs the node no process (an exec probe starts one in the container each time)
      expect(redis.spec.template.spec.containers[0].readinessProbe.exec.command.join(' ')).toMatch(
        /redis-cli -p 6379 .*ping \| grep -q PONG/,
      );
      expect(sentinel.spec.template.spec.containers[0].readinessProbe).toEqual({ tcpSocket: { port: 26379 }, periodSeconds: 2 });
      // engines and sentinels each preferably on a node of their own, and off a node that stops
      // answering after the zone's node_lost_after (45 s here) rather than Kubernetes' 300 s
      for (const [set, component] of [
        [redis, 'redis'],
        [sentinel, 'sentinel'],
      ] as const) {
        const pod = set.spec.template.spec;
        expect(pod.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm).toEqual({
          topologyKey: 'kubernetes.io/hostname',
          labelSelector: { matchLabels: { ...place.labels, 'app.kubernetes.io/component': component } },
        });
        expect(pod.tolerations).toEqual([
          { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 45 },
          { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 45 },
        ]);
      }
      const secret = objects.find((o) => o.kind === 'Secret') as any;
      expect(secret.stringData['redis-1.conf']).toContain('replicaof 198.19.0.10 6379');
      expect(secret.stringData['redis-1.conf']).toContain(`maxmemory ${plan}mb`);
      expect(secret.stringData['sentinel.conf']).toContain('sentinel monitor hangar 198.19.0.10 6379 2');
      for (const o of objects.filter((x) => x.kind !== 'Secret')) {
        expect(JSON.stringify(o)).not.toContain('client-password-0123');
        expect(JSON.stringify(o)).not.toContain('admin-secret-0123');
      }
    },
  );

  it.each(INSTANCE_TYPES.mongodb.flatMap((t) => PLANS.mongodb.map((p) => [t, p] as const)))('%s on plan %i: valid', (type, plan) => {
    const driver = new MongodbClusterDriver();
    const objects = driver.allObjects(spec('mongodb', type, plan), place, ['198.19.0.20', '198.19.0.21', '198.19.0.22']);
    objects.forEach(validate);
    const sets = objects.filter((o) => o.kind === 'StatefulSet') as any[];
    if (type === 'mongodb_sharded') {
      expect(sets.map((s) => [s.metadata.name.split('-').pop(), s.spec.replicas])).toEqual([
        ['cfg', 3],
        ['shard', 3],
      ]);
      expect(objects.some((o) => o.kind === 'Deployment' && o.metadata.name.endsWith('-mongos'))).toBe(true);
    } else {
      expect(sets).toHaveLength(1);
      expect(sets[0].spec.replicas).toBe(type === 'mongodb_singledb' ? 1 : 3);
    }
    expect(
      sets.every(
        (s) =>
          s.spec.template.spec.containers[0].resources.limits.memory === `${driver.memberMemoryMb(spec('mongodb', type, plan))}Mi` ||
          s.metadata.name.endsWith('-cfg'),
      ),
    ).toBe(true);
  });

  it.each(PLANS.elasticsearch)('elasticsearch on plan %i: valid, nodes and heap from the plan', (plan) => {
    const objects = new ElasticsearchClusterDriver().objects(spec('elasticsearch', 'elasticsearch', plan), place);
    objects.forEach(validate);
    const set = objects.find((o) => o.kind === 'StatefulSet') as any;
    expect(set.spec.replicas).toBe(elasticsearchNodes(plan).nodes);
    expect(set.spec.template.spec.containers[0].env).toContainEqual({
      name: 'ES_JAVA_OPTS',
      value: `-Xms${elasticsearchNodes(plan).heapMb}m -Xmx${elasticsearchNodes(plan).heapMb}m`,
    });
  });

  const target = (over: Partial<KubernetesTarget> = {}): KubernetesTarget => ({
    inCluster: true,
    namespace: 'hangar',
    nodeSelector: {},
    serviceType: 'NodePort',
    sourceAddress: 'local',
    images: {},
    volumeRetention: 'delete',
    nodePortRange: { first: 30000, last: 32767 },
    ...over,
  });

  it.each(['ClusterIP', 'NodePort', 'LoadBalancer'] as const)(
    'the edge with a %s Service: valid; ACL sources in the NetworkPolicy and, for a load balancer, its source ranges',
    (serviceType) => {
      const s = spec('redis', 'redis_ha_instance', 500);
      const routes = s.routes;
      const backends = routes.map((r) => ({
        role: r.role,
        servers: [{ name: 'redis-0', address: '198.19.0.10', port: 6379 }],
        check: [{ send: 'PING' }, { expect: '+PONG' }],
      }));
      const objects = edgeObjects({
        id: s.id,
        labels: place.labels,
        target: target({ serviceType }),
        image: 'haproxy:2.6',
        routes,
        backends,
        access: new Map([['main', ['203.0.113.7', '10.0.0.0/8']]]),
        hangarSources: ['198.18.0.1'],
        tls: TLS,
      });
      objects.forEach(validate);
      const svc = objects.find((o) => o.kind === 'Service') as any;
      expect(svc.spec.type).toBe(serviceType);
      if (serviceType !== 'ClusterIP') expect(svc.spec.externalTrafficPolicy).toBe('Local');
      if (serviceType === 'NodePort')
        expect(svc.spec.ports.map((p: any) => p.nodePort)).toEqual([
          s.ports.public,
          s.ports.servicenet,
          s.ports['public.tls'],
          s.ports['servicenet.tls'],
        ]);
      if (serviceType === 'LoadBalancer') expect(svc.spec.loadBalancerSourceRanges).toEqual(['10.0.0.0/8', '203.0.113.7/32']);
      const edgePolicy = objects.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name.endsWith('-edge')) as any;
      expect(edgePolicy.spec.ingress[1].from).toEqual([{ ipBlock: { cidr: '10.0.0.0/8' } }, { ipBlock: { cidr: '203.0.113.7/32' } }]);
      const config = (objects.find((o) => o.kind === 'Secret' && o.metadata.name.endsWith('-edge')) as any).stringData['haproxy.cfg'];
      expect(config).toContain(`bind :${s.ports.public}\n`);
      expect(config).toContain('server redis-0 198.19.0.10:6379 check');
      // off a lost node after the zone's node_lost_after, 60 s when it says nothing
      const edge = objects.find((o) => o.kind === 'Deployment') as any;
      expect(edge.spec.template.spec.tolerations.map((t: any) => [t.key, t.tolerationSeconds])).toEqual([
        ['node.kubernetes.io/not-ready', 60],
        ['node.kubernetes.io/unreachable', 60],
      ]);
    },
  );

  it("a zone that names no images runs each product's official image (the driver asks for its own product's)", () => {
    const bare: ClusterPlace = {
      ...place,
      image: (product, version) =>
        imageOf({ images: {} } as unknown as KubernetesTarget, product, version, (v) => findProduct(product)?.cluster.officialImage(v)),
    };
    const images = (objects: KubeObject[]) =>
      [
        ...new Set(
          objects
            .filter((o) => o.kind === 'StatefulSet' || o.kind === 'Deployment')
            .flatMap((o: any) => o.spec.template.spec.containers.map((c: any) => c.image as string)),
        ),
      ].sort();
    const mongo = { ...spec('mongodb', 'mongodb_sharded', 1), version: '4.4.29' };
    expect(images(new MongodbClusterDriver().allObjects(mongo, bare, ['198.19.0.20']))).toEqual(['mongo:4.4.29']);
    const es = { ...spec('elasticsearch', 'elasticsearch', 4), version: '7.17.25' };
    expect(images(new ElasticsearchClusterDriver().objects(es, bare))).toEqual([
      findProduct('elasticsearch')!.cluster.officialImage('7.17.25')!,
    ]);
    const redis = new RedisClusterDriver(new RedisAdmin(), 'noeviction');
    expect(images(redis.objects(spec('redis', 'redis_ha_instance', 500), bare))).toEqual(['redis:7.0.15']);
    const valkey = new RedisClusterDriver(new RedisAdmin(), 'noeviction', VALKEY_FLAVOUR);
    expect(images(valkey.objects({ ...spec('redis', 'redis_ha_instance', 500), engine: 'valkey', version: '8.0.1' }, bare))).toEqual([
      'valkey/valkey:8.0.1',
    ]);
  });

  it('an edge with no ACL has no client rule in its NetworkPolicy (a rule without sources would admit everyone)', () => {
    const s = spec('redis', 'redis_ha_instance', 500);
    const objects = edgeObjects({
      id: s.id,
      labels: place.labels,
      target: target(),
      image: 'haproxy:2.6',
      routes: s.routes,
      backends: [],
      access: new Map([['main', []]]),
      hangarSources: ['198.18.0.1'],
      tls: TLS,
    });
    const edgePolicy = objects.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name.endsWith('-edge')) as any;
    expect(edgePolicy.spec.ingress).toHaveLength(1);
  });

  describe('TLS at the edge', () => {
    const s = spec('redis', 'redis_ha_instance', 500);
    const backends = (routes: readonly { role: string }[]) =>
      routes.map((r) => ({ role: r.role, servers: [{ name: 'redis-0', address: '198.19.0.10', port: 6379 }] }));
    const objectsFor = (mode: 'off' | 'preferred' | 'required', tls?: EdgeTls) => {
      const routes = firstProductOf('redis').edgeRoutes('redis_ha_instance', s.ports, mode);
      return edgeObjects({
        id: s.id,
        labels: place.labels,
        target: target(),
        image: 'haproxy:2.6',
        routes,
        backends: backends(routes),
        access: new Map([['main', ['203.0.113.7']]]),
        hangarSources: ['198.18.0.1'],
        ...(tls ? { tls } : {}),
      });
    };
    const configOf = (objects: KubeObject[]) =>
      (objects.find((o) => o.kind === 'Secret' && o.metadata.name === `h-${s.id}-edge`) as any).stringData['haproxy.cfg'] as string;
    const frontend = (config: string, role: string) => {
      const lines = config.split('\n');
      const at = lines.indexOf(`frontend f_${role.replace(/[^a-z0-9-]/g, '-')}`);
      const out: string[] = [];
      for (const l of lines.slice(at + 1)) {
        if (!l.startsWith('  ')) break;
        out.push(l.trim());
      }
      return out;
    };

    it("terminates TLS on every TLS route with the instance's certificate, from a TLS Secret of its own that does not roll the pods", () => {
      const objects = objectsFor('preferred', TLS);
      objects.forEach(validate);
      const config = configOf(objects);
      expect(frontend(config, 'public.tls')).toContain(`bind :${s.ports['public.tls']} ssl crt ${EDGE_TLS_FILES.cert}`);
      expect(frontend(config, 'servicenet.tls')).toContain(`bind :${s.ports['servicenet.tls']} ssl crt ${EDGE_TLS_FILES.cert}`);
      expect(frontend(config, 'public')).toContain(`bind :${s.ports.public}`);
      expect(frontend(config, 'public.tls')).toContain('tcp-request content reject unless { src -f /etc/hangar-edge/acl/main.lst }');
      const secret = objects.find((o) => o.metadata.name === `h-${s.id}-edge-tls`) as any;
      expect(secret).toMatchObject({ kind: 'Secret', stringData: { 'server.pem': TLS.pem } });
      expect(config).not.toContain(TLS.pem);
      const deployment = objects.find((o) => o.kind === 'Deployment') as any;
      expect(deployment.spec.template.spec.volumes).toContainEqual({
        name: 'tls',
        secret: { secretName: `h-${s.id}-edge-tls`, defaultMode: 0o400 },
      });
      expect(deployment.spec.template.spec.containers[0].volumeMounts).toContainEqual({
        name: 'tls',
        mountPath: '/etc/hangar-edge/tls',
        readOnly: true,
      });
      // a new certificate leaves the configuration, hence the pods, as they are (the runtime API gives it to each pod)
      const renewed = objectsFor('preferred', { ...TLS, serial: 'CD', pem: 'OTHER CERTIFICATE AND KEY' });
      const hash = (o: KubeObject[]) => (o.find((x) => x.kind === 'Deployment') as any).spec.template.metadata.annotations;
      expect(hash(renewed)).toEqual(hash(objects));
      // the Secret is applied before the pods that mount it
      expect(objects.findIndex((o) => o.metadata.name === `h-${s.id}-edge-tls`)).toBeLessThan(
        objects.findIndex((o) => o.kind === 'Deployment'),
      );
    });

    it('refuses to render TLS listeners without a certificate; with TLS off there are none, and no TLS Secret', () => {
      expect(() => objectsFor('preferred')).toThrow(/no certificate/);
      const off = objectsFor('off');
      expect(configOf(off)).not.toContain('ssl crt');
      expect(off.some((o) => o.metadata.name.endsWith('-edge-tls'))).toBe(false);
    });

    it('with TLS required, the plain listeners admit hangar only (in the configuration and the NetworkPolicy)', () => {
      const objects = objectsFor('required', TLS);
      const config = configOf(objects);
      expect(frontend(config, 'public')).toContain('tcp-request connection reject unless { src -f /etc/hangar-edge/hangar.lst }');
      expect(frontend(config, 'public').join('\n')).not.toContain('main.lst');
      const policy = objects.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name.endsWith('-edge')) as any;
      const ports = policy.spec.ingress.flatMap((r: any) => (r.ports ?? []).map((p: any) => p.port));
      expect(ports.sort()).toEqual([s.ports['public.tls'], s.ports['servicenet.tls']].sort());
    });

    it("with mutual TLS, asks for a client certificate of the CA with the instance's OU, the CA and the CRL in the TLS Secret", () => {
      const mutual = { ...TLS, clientAuth: { caPem: 'CA PEM', crlPem: 'CRL PEM', organizationalUnit: s.id } };
      const objects = objectsFor('preferred', mutual);
      objects.forEach(validate);
      const fe = frontend(configOf(objects), 'public.tls');
      expect(fe).toContain(
        `bind :${s.ports['public.tls']} ssl crt ${EDGE_TLS_FILES.cert} verify required ca-file ${EDGE_TLS_FILES.ca} crl-file ${EDGE_TLS_FILES.crl}`,
      );
      expect(fe).toContain(`tcp-request session reject unless { ssl_c_s_dn(OU) -m str ${s.id} }`);
      expect((objects.find((o) => o.metadata.name === `h-${s.id}-edge-tls`) as any).stringData).toEqual({
        'server.pem': TLS.pem,
        'ca.pem': 'CA PEM',
        'crl.pem': 'CRL PEM',
      });
      expect(renderEdgeConfig(s.id, s.routes, backends(s.routes), false)).not.toContain('verify required');
    });

    it('forwards every listener of a Redis instance, plain and TLS, to the primary', () => {
      const driver = new RedisClusterDriver(new RedisAdmin(), 'noeviction');
      const roles = (driver as unknown as { backends(s: InstanceSpec, a: Record<string, string>): { role: string }[] })
        .backends(s, addresses)
        .map((b) => b.role);
      expect(roles).toEqual(['public', 'servicenet', 'public.tls', 'servicenet.tls']);
    });
  });

  it("names every listener of every product's instances apart: Service ports are IANA service names, unique per Service", () => {
    for (const product of PRODUCTS) {
      for (const type of product.types) {
        const ports = Object.fromEntries(product.portRoles(type).map((r, i) => [r, 31500 + i]));
        const names = product.edgeRoutes(type, ports).map((r) => portName(r.role));
        expect(new Set(names).size, `${product.name} ${type}: ${names.join(' ')}`).toBe(names.length);
        // at most 15 characters of a-z, 0-9 and "-", a letter among them, no "--", no "-" at either end
        for (const n of names) expect(n).toMatch(/^(?=.*[a-z])(?!.*--)[a-z0-9](?:[a-z0-9-]{0,13}[a-z0-9])?$/);
      }
    }
    expect(portName('public.tls')).toBe('public-tls');
    expect(portName('servicenet.http')).toBe('servicenet-http');
    expect(portName('servicenet.https')).toMatch(/^servicenet-[0-9a-f]{4}$/);
  });

  it("an elasticsearch instance: its https listeners have the http ones' nodes behind them (the edge terminates TLS)", async () => {
    const s = spec('elasticsearch', 'elasticsearch', 4);
    const { nodes } = elasticsearchNodes(4);
    const running: ClusterPlace = {
      ...place,
      pods: async () => Array.from({ length: nodes }, (_, i) => ({ name: `es-${i}`, ready: true, phase: 'Running', restarts: 0 })),
    };
    const { backends } = await new ElasticsearchClusterDriver().ensure(s, running, { step: () => {} });
    const of = (role: string) => backends.find((b) => b.role === role)?.servers;
    expect(of('public.https')).toEqual(of('public.http'));
    expect(of('servicenet.https')).toEqual(of('servicenet.http'));
    expect(of('public.https')).toEqual([{ name: 'es-0', address: '198.19.0.10', port: 9200 }]);
  });

  it('an elasticsearch edge reads HTTP where the engine needs the edge to refuse requests, and answers Kibana itself, on its TLS listeners too (it terminates TLS)', () => {
    const s = spec('elasticsearch', 'elasticsearch', 4);
    const routes = servedRoutes(s.routes, { security: false, noKibana: { why: 'none is installed', install: 'Kibana' } });
    const server = [{ name: 'es-0', address: '198.19.0.10', port: 9200 }];
    const config = (
      edgeObjects({
        id: s.id,
        labels: place.labels,
        target: target(),
        image: 'haproxy:2.6',
        routes,
        backends: [
          { role: 'public.http', servers: server },
          { role: 'public.https', servers: server },
          { role: 'public.transport', servers: [{ ...server[0]!, port: 9300 }] },
        ],
        access: new Map([['main', []]]),
        hangarSources: ['198.18.0.1'],
        tls: TLS,
      }).find((o) => o.kind === 'Secret' && o.metadata.name.endsWith('-edge')) as any
    ).stringData['haproxy.cfg'] as string;
    const section = (role: string) => {
      const at = config.indexOf(`frontend ${frontendOf(role)}\n`);
      expect(at, role).toBeGreaterThanOrEqual(0);
      return config.slice(at).split(/\n(?=frontend )/)[0]!;
    };
    expect(section('public.http')).toContain('  mode http\n');
    expect(section('public.http')).toMatch(/acl refused_\d+ path,url_dec -m reg '\^\/\+_\(\?:snapshot\|slm\)/);
    expect(section('public.transport')).not.toContain('mode http');
    expect(section('public.kibana_http')).toMatch(/http-request return status 503 content-type "application\/json"/);
    // TLS is decrypted at the edge: the https listener reads HTTP and refuses the same requests
    expect(section('public.https')).toContain(`ssl crt ${EDGE_TLS_FILES.cert}`);
    expect(section('public.https')).toContain('  mode http\n');
    expect(section('public.https')).toMatch(/acl refused_\d+ path,url_dec -m reg '\^\/\+_\(\?:snapshot\|slm\)/);
    expect(section('public.kibana_https')).toContain(`ssl crt ${EDGE_TLS_FILES.cert}`);
    expect(section('public.kibana_https')).toMatch(/http-request return status 503 content-type "application\/json"/);
    // a listener with nothing behind it and no answer of its own is not rendered
    expect(config).not.toContain(`frontend ${frontendOf('servicenet.https')}\n`);
  });

  it('the schemas do refuse a wrong object (replicas as a string, a port out of range)', () => {
    expect(() =>
      validate({
        apiVersion: 'apps/v1',
        kind: 'StatefulSet',
        metadata: { name: 'x' },
        spec: { replicas: 'two', serviceName: 'x', selector: {}, template: {} },
      }),
    ).toThrow();
    expect(() => validate({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'x' }, spec: { ports: [{ port: 'http' }] } })).toThrow();
  });

  it.each(['namespace.yaml', 'serviceaccount.yaml', 'rolebinding.yaml', 'zones.yaml', 'hangar.yaml', 'pdb.yaml', 'secret.example.yaml'])(
    'deploy/%s holds valid objects',
    (file) => {
      const docs = parseAllDocuments(readFileSync(`deploy/${file}`, 'utf8')).map((d) => d.toJSON());
      expect(docs.length).toBeGreaterThan(0);
      docs.forEach(validate);
    },
  );

  it('the zones file of deploy/zones.yaml is one hangar reads', () => {
    const cm = parse(readFileSync('deploy/zones.yaml', 'utf8'));
    expect(parseZones(parse(cm.data['zones.yaml']), '/etc/hangar/zones.yaml')).toMatchObject([
      { name: 'US-Dallas', runtime: 'kubernetes', kubernetes: { inCluster: true, namespace: 'hangar' } },
    ]);
  });

  it('deploy/role.yaml is a valid Role granting exactly what the runtime needs (what hangar doctor checks)', () => {
    const role = parse(readFileSync('deploy/role.yaml', 'utf8'));
    validate(role);
    expect(role.rules.map((r: any) => ({ group: r.apiGroups[0], resources: r.resources, verbs: r.verbs }))).toEqual(RBAC_NEEDS);
  });
});
