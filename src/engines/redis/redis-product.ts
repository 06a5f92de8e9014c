import { type EdgeRoute, edgeRoute } from '../../domain/endpoints.js';
import type { Instance } from '../../domain/model.js';
import type { ProgramSpec } from '../../lib/binaries.js';
import type { Product, Shell } from '../product.js';
import { REDIS_FLAVOUR, type RedisFlavour } from './redis-flavour.js';
import { RedisEngine } from './redis-engine.js';

/** What differs between the products of the Redis family (Redis, Valkey). */
export interface RedisFamilyMember {
  readonly name: string;
  readonly label: string;
  readonly flavour: RedisFlavour;
  /** The server program on this host. */
  readonly program: ProgramSpec;
  readonly install: string;
  readonly officialImage: (version: string) => string;
  readonly clusterVersions: readonly string[];
  readonly emulatedVersions: readonly string[];
  /** Products whose data files it loads, and of which versions (see Product). */
  readonly loadsDataOf?: Product['loadsDataOf'];
  /** The shell people connect with, and where to get it. */
  readonly shell: { readonly program: string; readonly install: string; readonly authVariables: readonly string[] };
}

/** `redis://host:port` (or `rediss://`) -> [host, port] */
function hostPort(url: string): [string, string] {
  const u = new URL(url);
  return [u.hostname.replace(/^\[|\]$/g, ''), u.port || '6379'];
}

/** The client addresses of an instance: a plain listener each, and a TLS one beside it (`<role>.tls`). */
const ADDRESSES = ['public', 'servicenet'] as const;
const tlsRole = (role: string) => `${role}.tls`;

/**
 * The fields of a record of the Redis family: the spec's (`connect_string`, `public_...`,
 * `servicenet_...`), then hangar's TLS ones. With TLS `required` the plain listeners refuse
 * clients, so the spec's fields name the TLS addresses (`rediss://`); in `preferred` they stay
 * the plain ones, as every client of the spec expects, and the TLS ones are beside them.
 */
function redisRecordFields(inst: Instance, host: string): Record<string, unknown> {
  const plain = (role: string) => `redis://${host}:${inst.ports[role]}`;
  const secure = (role: string) => `rediss://${host}:${inst.ports[tlsRole(role)]}`;
  // TLS listeners serve once the instance has their ports (an instance made before them gets them at its next pass)
  const served = inst.tlsMode !== 'off' && ADDRESSES.every((r) => inst.ports[tlsRole(r)] !== undefined);
  const address = served && inst.tlsMode === 'required' ? secure : plain;
  return {
    connect_string: address('public'),
    clb_id: null,
    password: inst.password,
    public_connect_string: address('public'),
    servicenet_connect_string: address('servicenet'),
    tls: inst.tlsMode,
    tls_client_auth: inst.tlsClientAuth,
    ...(served
      ? {
          tls_connect_string: secure('public'),
          public_tls_connect_string: secure('public'),
          servicenet_tls_connect_string: secure('servicenet'),
        }
      : {}),
  };
}

/**
 * A redis_ha_instance of the Redis family: a primary and a replica behind the edge's `public` and
 * `servicenet` listeners, with a password; on Kubernetes, Sentinel fails over between them.
 */
export function redisFamilyProduct(m: RedisFamilyMember): Product {
  const shell: Shell = {
    program: m.shell.program,
    install: m.shell.install,
    command(inst, opts, extra) {
      // over TLS when asked for and offered; else the spec's address (rediss:// when TLS is required)
      const secure = opts.tls
        ? ((opts.servicenet ? inst.servicenet_tls_connect_string : inst.public_tls_connect_string) ?? inst.tls_connect_string)
        : undefined;
      const address = secure ?? (opts.servicenet ? inst.servicenet_connect_string : inst.public_connect_string) ?? inst.connect_string;
      if (!address) throw new Error(`instance "${inst.name}" has no address yet`);
      const [host, port] = hostPort(address);
      const tls =
        address.startsWith('rediss://') && opts.tls
          ? [
              '--tls',
              '--cacert',
              opts.tls.caFile,
              ...(opts.tls.certFile ? ['--cert', opts.tls.certFile] : []),
              ...(opts.tls.keyFile ? ['--key', opts.tls.keyFile] : []),
            ]
          : address.startsWith('rediss://')
            ? ['--tls']
            : [];
      // the password travels in the environment rather than -a: it stays out of `ps` and shell history
      const env = inst.password ? Object.fromEntries(m.shell.authVariables.map((v) => [v, inst.password!])) : {};
      return { command: m.shell.program, args: ['-h', host, '-p', port, ...tls, ...extra], env };
    },
  };
  return {
    name: m.name,
    label: m.label,
    service: 'redis',
    types: ['redis_ha_instance'],
    planUnit: 'MB',
    doneState: 'ACTIVE',
    features: { password: true, redisApi: true, databaseUsers: false, encryption: false, aclGroups: [], tlsModes: true },
    portRoles: () => ['public', 'servicenet', 'engine.primary', 'engine.replica', ...ADDRESSES.map(tlsRole)],
    edgeRoutes: (_type, ports, tls = 'preferred'): EdgeRoute[] => {
      // with TLS required the plain listeners stay (their ports kept, hangar's probes admitted) but refuse clients
      const plain = ADDRESSES.map((role) => ({
        ...edgeRoute(ports, role, 'engine.primary'),
        ...(tls === 'required' ? { closed: true } : {}),
      }));
      if (tls === 'off') return plain;
      const secure = ADDRESSES.filter((role) => ports[tlsRole(role)] !== undefined).map((role) =>
        edgeRoute(ports, tlsRole(role), 'engine.primary', true),
      );
      return [...plain, ...secure];
    },
    promisedMemoryMb: (_type, plan) => 2 * plan,
    memoryRule: (_type, plan) => `2 x ${plan} MB: maxmemory of the primary and of the replica`,
    recordFields: redisRecordFields,
    emulatedVersions: m.emulatedVersions,
    ...(m.loadsDataOf ? { loadsDataOf: m.loadsDataOf } : {}),
    local: {
      programs: [m.program],
      install: m.install,
      engine: (found, { config }) =>
        new RedisEngine({ bin: found[m.program.key]!.path, maxmemoryPolicy: config.redisMaxmemoryPolicy, flavour: m.flavour }),
    },
    cluster: {
      officialImage: m.officialImage,
      defaultVersions: m.clusterVersions,
      engine: (config) => new RedisEngine({ bin: m.flavour.server, maxmemoryPolicy: config.redisMaxmemoryPolicy, flavour: m.flavour }),
    },
    shell,
  };
}

export const REDIS_SERVER_PROGRAM: ProgramSpec = {
  key: 'redisServer',
  names: ['redis-server'],
  variable: 'HANGAR_REDIS_SERVER_BIN',
  setting: 'redisServerBin',
  versionArgs: ['--version'],
  versionPattern: /\bv=(\d+\.\d+\.\d+)/,
  minimum: { version: '7.0.0', because: 'its configuration uses the AOF directory and ACL rules of Redis 7' },
  about: {
    purpose: 'redis instances',
    install: 'Debian/Ubuntu package redis-server (apt-get install redis-server)',
    page: 'https://redis.io/docs/latest/operate/oss_and_stack/install/',
  },
};

/** Redis versions the emulated engines pretend to run. */
export const EMULATED_REDIS_VERSIONS = ['7.4.2', '7.4', '7.2.4', '7.2', '7.0.15', '7.0', '6.2.14', '6.2'] as const;

/** Redis versions offered on Kubernetes with the official images, where the zone names none (hangar's configuration needs Redis 7). */
export const KUBERNETES_REDIS_VERSIONS = ['7.2.4', '7.2', '7.0.15', '7.0'] as const;

/** Redis, from Debian's `redis-server` (or any redis-server 7). */
export const redisProduct: Product = redisFamilyProduct({
  name: 'redis',
  label: 'Redis',
  flavour: REDIS_FLAVOUR,
  program: REDIS_SERVER_PROGRAM,
  install: 'apt-get install redis-server (Debian/Ubuntu), or set HANGAR_REDIS_SERVER_BIN',
  officialImage: (v) => `redis:${v}`,
  clusterVersions: KUBERNETES_REDIS_VERSIONS,
  emulatedVersions: EMULATED_REDIS_VERSIONS,
  shell: {
    program: 'redis-cli',
    install: 'Debian/Ubuntu: apt install redis-tools; macOS: brew install redis',
    authVariables: ['REDISCLI_AUTH'],
  },
});
