import { SPEC_VERSIONS, STORAGE_ENGINES } from '../../domain/catalog.js';
import { type EdgeRoute, edgeRoute, peerRoute } from '../../domain/endpoints.js';
import type { Instance } from '../../domain/model.js';
import type { ProgramSpec } from '../../lib/binaries.js';
import { ClusterOnlyEngine } from '../kubernetes/cluster-only-engine.js';
import type { Product } from '../product.js';
import { mongoLayout, wiredTigerCacheGb } from './mongodb-config.js';
import { MongodbEngine } from './mongodb-engine.js';
import { MongodbClusterDriver } from './mongodb-kubernetes.js';

/** Memory of a mongod or mongos beyond its WiredTiger cache (connections, indexes in build, the process itself). */
const MONGO_PROCESS_MB = 256;

export const MONGOD_PROGRAM: ProgramSpec = {
  key: 'mongod',
  names: ['mongod'],
  variable: 'HANGAR_MONGOD_BIN',
  setting: 'mongodBin',
  versionArgs: ['--version'],
  versionPattern: /db version v(\d+\.\d+\.\d+)/,
  about: {
    purpose: 'mongodb instances (MongoDB 4.2 or newer)',
    install: "package mongodb-org-server from MongoDB's APT repository (repo.mongodb.org; Debian's archive has no MongoDB)",
    page: 'https://www.mongodb.com/docs/manual/administration/install-on-linux/',
  },
};

export const MONGOS_PROGRAM: ProgramSpec = {
  key: 'mongos',
  names: ['mongos'],
  variable: 'HANGAR_MONGOS_BIN',
  setting: 'mongosBin',
  versionArgs: ['--version'],
  versionPattern: /version v(\d+\.\d+\.\d+)/,
  about: {
    purpose: 'mongodb instances (the router of mongodb_sharded)',
    install: "package mongodb-org-mongos from MongoDB's APT repository (repo.mongodb.org)",
    page: 'https://www.mongodb.com/docs/manual/administration/install-on-linux/',
  },
};

/** The connect string of the spec: the one address, or the three members' (a replica set). */
function mongoConnectString(inst: Instance, host: string): string {
  if (inst.type === 'mongodb_singledb' || inst.type === 'mongodb_sharded') return `${host}:${inst.ports.public}`;
  return [0, 1, 2].map((i) => `${host}:${inst.ports[`public.${i}`]}`).join(',');
}

/**
 * MongoDB's own server: every type of the spec (a single mongod, replica sets of three, a sharded
 * cluster with its config server and mongos), database users and roles enforced by the server.
 */
export const mongodProduct: Product = {
  name: 'mongod',
  label: 'MongoDB',
  service: 'mongodb',
  types: ['mongodb_sharded', 'mongodb_replica_set', 'mongodb_singledb', 'mongodb_jumbo_replica_set'],
  planUnit: 'GB',
  doneState: 'ACTIVE',
  features: { password: false, redisApi: false, databaseUsers: true, encryption: true, storageEngines: STORAGE_ENGINES, aclGroups: [] },
  portRoles(type) {
    switch (type) {
      case 'mongodb_singledb':
        return ['public', 'engine.0'];
      case 'mongodb_sharded':
        return ['public', 'ssl', 'engine.config', 'engine.shard', 'engine.mongos'];
      default:
        return ['public.0', 'public.1', 'public.2', 'engine.0', 'engine.1', 'engine.2'];
    }
  },
  edgeRoutes(type, ports): EdgeRoute[] {
    if (type === 'mongodb_singledb') return [edgeRoute(ports, 'public', 'engine.0')];
    if (type === 'mongodb_sharded') return [edgeRoute(ports, 'public', 'engine.mongos'), edgeRoute(ports, 'ssl', 'engine.mongos', true)];
    // the members announce these listeners and reach each other through them (memberHosts)
    return [0, 1, 2].map((i) => peerRoute(edgeRoute(ports, `public.${i}`, `engine.${i}`)));
  },
  promisedMemoryMb: (type, plan) =>
    mongoLayout('x', type).reduce(
      (sum, u) => sum + MONGO_PROCESS_MB + (u.process === 'mongod' ? Math.round(wiredTigerCacheGb(plan, u.clusterRole) * 1024) : 0),
      0,
    ),
  memoryRule: (type) => `the WiredTiger cache and 256 MB for each of the ${mongoLayout('x', type).length} processes of a ${type}`,
  recordFields: (inst, host) => ({
    connect_string: mongoConnectString(inst, host),
    ...(inst.type === 'mongodb_sharded' ? { ssl_connect_string: `${host}:${inst.ports.ssl}` } : {}),
  }),
  emulatedVersions: SPEC_VERSIONS.mongodb,
  local: {
    programs: [MONGOD_PROGRAM, MONGOS_PROGRAM],
    install: 'install MongoDB Community Server (mongod and mongos), or set HANGAR_MONGOD_BIN and HANGAR_MONGOS_BIN',
    engine: (found, { searchPath }) =>
      new MongodbEngine({ mongod: found.mongod!, mongos: found.mongos!, ...(searchPath ? { searchPath } : {}) }),
  },
  cluster: {
    officialImage: (v) => `mongo:${v}`,
    defaultVersions: SPEC_VERSIONS.mongodb,
    engine: () => new ClusterOnlyEngine('mongodb', new MongodbClusterDriver()),
  },
  shell: {
    program: 'mongosh',
    install: 'https://www.mongodb.com/try/download/shell',
    command(inst, opts, extra) {
      if (!inst.connect_string) throw new Error(`instance "${inst.name}" has no address yet`);
      const db = opts.db ?? 'admin';
      const args = [`mongodb://${inst.connect_string}/${encodeURIComponent(db)}`];
      // mongosh asks for the password itself.
      if (opts.user) args.push('--username', opts.user, '--authenticationDatabase', db);
      return { command: 'mongosh', args: [...args, ...extra], env: {} };
    },
  },
};
