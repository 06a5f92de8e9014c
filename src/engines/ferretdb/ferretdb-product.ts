import type { ClusterDriver } from '../../domain/cluster.js';
import { edgeRoute, type EdgeRoute } from '../../domain/endpoints.js';
import { TerminalError } from '../../domain/errors.js';
import { findExecutable, type ProgramSpec } from '../../lib/binaries.js';
import { ClusterOnlyEngine } from '../kubernetes/cluster-only-engine.js';
import type { Product } from '../product.js';
import { mongodProduct } from '../mongodb/mongodb-product.js';
import { ferretdbMemoryMb } from './ferretdb-config.js';
import { FerretdbEngine } from './ferretdb-engine.js';

/** FerretDB has no cluster form yet: its offering on Kubernetes zones is unavailable, so nothing calls this. */
const NO_CLUSTER_FORM: ClusterDriver = new Proxy({} as ClusterDriver, {
  get: () => () => {
    throw new TerminalError('FerretDB does not run on Kubernetes zones yet');
  },
});

export const FERRETDB_PROGRAM: ProgramSpec = {
  key: 'ferretdb',
  names: ['ferretdb'],
  variable: 'HANGAR_FERRETDB_BIN',
  setting: 'ferretdbBin',
  versionArgs: ['--version'],
  versionPattern: /^version:\s*v?(\d+\.\d+\.\d+)/m,
  minimum: { version: '1.24.0', because: 'hangar relies on its SCRAM users in the backend (--test-enable-new-auth) and --setup-*' },
  cached: 'ferretdb',
  about: {
    purpose: 'mongodb instances (mongodb_singledb) on FerretDB 1.x over SQLite',
    install: 'hangar engines install ferretdb@1.24.2 (built from its Go module; needs Go 1.24 or later)',
    page: 'https://github.com/FerretDB/FerretDB/releases/tag/v1.24.2',
  },
};

/**
 * FerretDB 1.x (Apache-2.0): a server of MongoDB's wire protocol over SQLite, as an engine of the
 * `mongodb` service beside mongod. It runs `mongodb_singledb` only (it has no replica sets or
 * sharding), with SCRAM users; it takes no roles and enforces none. Versions are FerretDB's own
 * (`1.24.2`, `1.24`); `buildInfo` says 7.0.42, the MongoDB it answers as.
 */
export const ferretdbProduct: Product = {
  name: 'ferretdb',
  label: 'FerretDB',
  service: 'mongodb',
  types: ['mongodb_singledb'],
  planUnit: 'GB',
  doneState: 'ACTIVE',
  features: { password: false, redisApi: false, databaseUsers: true, encryption: false, aclGroups: [] },
  portRoles: () => ['public', 'engine.0'],
  edgeRoutes: (_type, ports): EdgeRoute[] => [edgeRoute(ports, 'public', 'engine.0')],
  promisedMemoryMb: (_type, plan) => ferretdbMemoryMb(plan),
  memoryRule: (_type, plan) =>
    `256 MB for the FerretDB process and 5 % of the plan for what its queries hold (${ferretdbMemoryMb(plan)} MB)`,
  recordFields: (inst, host) => ({ connect_string: `${host}:${inst.ports.public}` }),
  emulatedVersions: ['1.24.2', '1.24'],
  local: {
    programs: [FERRETDB_PROGRAM],
    install: 'hangar engines install ferretdb@1.24.2, or set HANGAR_FERRETDB_BIN to a ferretdb 1.x',
    engine: (found, { installed, searchPath }) => {
      const path = searchPath ?? process.env.PATH ?? '/usr/bin:/bin';
      const sqlite3 = findExecutable('sqlite3', path);
      const tar = findExecutable('tar', path);
      return new FerretdbEngine({
        programs: installed?.ferretdb ?? [found.ferretdb!],
        ...(sqlite3 ? { sqlite3 } : {}),
        ...(tar ? { tar } : {}),
      });
    },
  },
  cluster: {
    officialImage: (v) => `ghcr.io/ferretdb/ferretdb:${v}`,
    defaultVersions: [],
    unavailableReason: 'FerretDB does not run on Kubernetes zones yet (local zones only)',
    engine: () => new ClusterOnlyEngine('mongodb', NO_CLUSTER_FORM),
  },
  shell: mongodProduct.shell!,
};
