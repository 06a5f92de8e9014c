import type { ClusterDriver, ClusterPlace, ClusterResult, EdgeBackend, KubeObject } from '../../domain/cluster.js';
import type { Health, InstanceSpec, ProbeTarget, StepContext } from '../../domain/units.js';
import {
  addressesOf,
  componentLabels,
  disruptionBudget,
  memberServices,
  podsProblem,
  scheduling,
  statefulSet,
  waitUntil,
} from '../kubernetes/workload.js';
import { MONGODB_ADMIN_USER, keyFileContent, wiredTigerCacheGb } from './mongodb-config.js';
import { probeMongo } from './mongodb-probe.js';

/** The product's name (mongodb-product.ts): the key of its images in a zone (`images["mongod:4.4.29"]`) and of its official one. */
const PRODUCT = 'mongod';
const MONGOD_PORT = 27017;
const MONGOS_PORT = 27017;
const READY_TIMEOUT_MS = 120_000;

/** Memory of one mongod's container, in MB: its WiredTiger cache plus 256 MB (as capacity counts it). */
export function mongodMemoryMb(plan: number, configsvr = false): number {
  return Math.round(wiredTigerCacheGb(plan, configsvr ? 'configsvr' : undefined) * 1024) + 256;
}

const names = (id: string) => ({
  secret: `h-${id}-mongodb`,
  mongod: `h-${id}-mongod`,
  config: `h-${id}-cfg`,
  shard: `h-${id}-shard`,
  mongos: `h-${id}-mongos`,
});

/**
 * MongoDB on Kubernetes, as objects: `mongodb_singledb` one mongod, replica sets three members
 * sharing a keyfile Secret, `mongodb_sharded` a config server replica set, a shard replica set and
 * a mongos Deployment. Authentication on, hangar's root user created by the image from the Secret
 * (MONGO_INITDB_ROOT_*), data on a volume per member (the plan in GB). Verified against a real API
 * server (objects accepted, pods created); the mongo image cannot run where hangar is tested, so
 * replica set initiation and users on Kubernetes are not driven by hangar yet (the members are
 * started with their --replSet and wait to be initiated).
 */
export class MongodbClusterDriver implements ClusterDriver {
  memberMemoryMb(spec: InstanceSpec): number {
    return mongodMemoryMb(spec.plan);
  }

  objects(spec: InstanceSpec, place: ClusterPlace): KubeObject[] {
    const n = names(spec.id);
    const image = place.image(PRODUCT, spec.version);
    const volumeMb = spec.plan * 1024;
    const env = [
      { name: 'MONGO_INITDB_ROOT_USERNAME', value: MONGODB_ADMIN_USER },
      { name: 'MONGO_INITDB_ROOT_PASSWORD', valueFrom: { secretKeyRef: { name: n.secret, key: 'admin-secret' } } },
    ];
    const mongod = (extra: string[], configsvr = false) => [
      'mongod',
      '--bind_ip_all',
      '--port',
      String(MONGOD_PORT),
      '--dbpath',
      '/data',
      '--auth',
      '--wiredTigerCacheSizeGB',
      String(wiredTigerCacheGb(spec.plan, configsvr ? 'configsvr' : undefined)),
      ...extra,
    ];
    const keyed = ['--keyFile', '/etc/hangar/keyfile'];
    const port = [{ name: 'mongodb', port: MONGOD_PORT }];
    const objects: KubeObject[] = [
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: n.secret, labels: { ...place.labels } },
        type: 'Opaque',
        stringData: { 'admin-secret': spec.adminSecret, keyfile: keyFileContent(spec.id, spec.adminSecret) },
      },
    ];
    switch (spec.type) {
      case 'mongodb_singledb':
        objects.push(
          ...memberServices(place, n.mongod, 'mongod', 1, port),
          statefulSet(place, {
            name: n.mongod,
            component: 'mongod',
            replicas: 1,
            image,
            command: mongod([]),
            env,
            ports: port,
            memoryMb: mongodMemoryMb(spec.plan),
            volumeMb,
            secret: n.secret,
            serviceName: n.mongod,
          }),
        );
        break;
      case 'mongodb_sharded': {
        objects.push(
          ...memberServices(place, n.config, 'config', 3, port),
          statefulSet(place, {
            name: n.config,
            component: 'config',
            replicas: 3,
            image,
            command: mongod(['--configsvr', '--replSet', `cfg-${spec.id}`, ...keyed], true),
            env,
            ports: port,
            memoryMb: mongodMemoryMb(spec.plan, true),
            volumeMb: 1024,
            secret: n.secret,
            serviceName: n.config,
          }),
          disruptionBudget(place, n.config, 'config', 2),
          ...memberServices(place, n.shard, 'shard', 3, port),
          statefulSet(place, {
            name: n.shard,
            component: 'shard',
            replicas: 3,
            image,
            command: mongod(['--shardsvr', '--replSet', `shard-${spec.id}`, ...keyed]),
            env,
            ports: port,
            memoryMb: mongodMemoryMb(spec.plan),
            volumeMb,
            secret: n.secret,
            serviceName: n.shard,
          }),
          disruptionBudget(place, n.shard, 'shard', 2),
        );
        break;
      }
      default:
        objects.push(
          ...memberServices(place, n.mongod, 'mongod', 3, port),
          statefulSet(place, {
            name: n.mongod,
            component: 'mongod',
            replicas: 3,
            image,
            command: mongod(['--replSet', `rs-${spec.id}`, ...keyed]),
            env,
            ports: port,
            memoryMb: mongodMemoryMb(spec.plan),
            volumeMb,
            secret: n.secret,
            serviceName: n.mongod,
          }),
          disruptionBudget(place, n.mongod, 'mongod', 2),
        );
    }
    return objects;
  }

  /** The mongos of a sharded cluster names the config servers by address: a second step, once their Services have them. */
  private mongos(spec: InstanceSpec, place: ClusterPlace, config: readonly string[]): KubeObject[] {
    const n = names(spec.id);
    const labels = componentLabels(place, 'mongos');
    return [
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: n.mongos, labels: { ...place.labels } },
        spec: { selector: labels, ports: [{ name: 'mongodb', port: MONGOS_PORT, targetPort: MONGOS_PORT, protocol: 'TCP' }] },
      },
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: n.mongos, labels },
        spec: {
          replicas: 1,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              ...scheduling(place, 'mongos'),
              containers: [
                {
                  name: 'mongos',
                  image: place.image(PRODUCT, spec.version),
                  imagePullPolicy: 'IfNotPresent',
                  command: [
                    'mongos',
                    '--bind_ip_all',
                    '--port',
                    String(MONGOS_PORT),
                    '--keyFile',
                    '/etc/hangar/keyfile',
                    '--configdb',
                    `cfg-${spec.id}/${config.map((a) => `${a}:${MONGOD_PORT}`).join(',')}`,
                  ],
                  ports: [{ name: 'mongodb', containerPort: MONGOS_PORT }],
                  readinessProbe: { tcpSocket: { port: MONGOS_PORT }, periodSeconds: 2 },
                  resources: { requests: { memory: '256Mi', cpu: '100m' }, limits: { memory: '256Mi' } },
                  volumeMounts: [{ name: 'config', mountPath: '/etc/hangar', readOnly: true }],
                },
              ],
              volumes: [{ name: 'config', secret: { secretName: n.secret, defaultMode: 0o400 } }],
            },
          },
        },
      },
    ];
  }

  /** Every object, the mongos (which names the config servers' addresses) included when they are known. */
  allObjects(spec: InstanceSpec, place: ClusterPlace, configAddresses: readonly string[]): KubeObject[] {
    return [...this.objects(spec, place), ...(spec.type === 'mongodb_sharded' ? this.mongos(spec, place, configAddresses) : [])];
  }

  private members(spec: InstanceSpec): { component: string; count: number }[] {
    switch (spec.type) {
      case 'mongodb_singledb':
        return [{ component: 'mongod', count: 1 }];
      case 'mongodb_sharded':
        return [
          { component: 'config', count: 3 },
          { component: 'shard', count: 3 },
          { component: 'mongos', count: 1 },
        ];
      default:
        return [{ component: 'mongod', count: 3 }];
    }
  }

  private async problem(spec: InstanceSpec, place: ClusterPlace): Promise<string | undefined> {
    for (const m of this.members(spec)) {
      const p = podsProblem(await place.pods({ 'app.kubernetes.io/component': m.component }), m.count, `${m.component}`);
      if (p) return p;
    }
    return undefined;
  }

  async ensure(spec: InstanceSpec, place: ClusterPlace, ctx: StepContext): Promise<ClusterResult> {
    const n = names(spec.id);
    const fresh = (await place.pods({})).length === 0;
    await place.apply(this.objects(spec, place), ctx);
    if (spec.type === 'mongodb_sharded') {
      const cfg = await addressesOf(
        place,
        [0, 1, 2].map((i) => `${n.config}-${i}`),
      );
      await place.apply(this.mongos(spec, place, Object.values(cfg)), ctx);
    }
    ctx.step(`${fresh ? 'create' : 'ensure'}:objects-applied`);
    await waitUntil(() => this.problem(spec, place), READY_TIMEOUT_MS, ctx, 'waiting for the mongodb pods');
    return { fresh, backends: await this.backends(spec, place) };
  }

  private async backends(spec: InstanceSpec, place: ClusterPlace): Promise<EdgeBackend[]> {
    const n = names(spec.id);
    switch (spec.type) {
      case 'mongodb_singledb': {
        const a = await addressesOf(place, [`${n.mongod}-0`]);
        return [{ role: 'public', servers: [{ name: 'mongod-0', address: a[`${n.mongod}-0`]!, port: MONGOD_PORT }] }];
      }
      case 'mongodb_sharded': {
        const a = await addressesOf(place, [n.mongos]);
        const servers = [{ name: 'mongos', address: a[n.mongos]!, port: MONGOS_PORT }];
        return [
          { role: 'public', servers },
          { role: 'ssl', servers },
        ];
      }
      default: {
        const a = await addressesOf(
          place,
          [0, 1, 2].map((i) => `${n.mongod}-${i}`),
        );
        return [0, 1, 2].map((i) => ({
          role: `public.${i}`,
          servers: [{ name: `mongod-${i}`, address: a[`${n.mongod}-${i}`]!, port: MONGOD_PORT }],
        }));
      }
    }
  }

  async readiness(spec: InstanceSpec, place: ClusterPlace, targets: readonly ProbeTarget[]): Promise<string | undefined> {
    try {
      const problem = await this.problem(spec, place);
      if (problem) return problem;
      for (const t of targets) await probeMongo(t, spec.adminSecret);
      return undefined;
    } catch (err) {
      return (err as Error).message;
    }
  }

  async check(spec: InstanceSpec, place: ClusterPlace): Promise<Health> {
    const problem = await this.problem(spec, place).catch((err: unknown) => (err as Error).message);
    return problem === undefined ? { healthy: true } : { healthy: false, reason: problem };
  }
}
