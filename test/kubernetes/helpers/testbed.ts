import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createClient } from 'redis';

/**
 * The single-node Kubernetes of scripts/k8s-testbed, as the tests use it: its env file, kubectl
 * as the admin (the tests' own set-up) or as hangar's user, a namespace of the test's own with
 * hangar's Role bound, static volumes (the testbed has no provisioner), and a client host in a
 * network namespace, whose address the edge sees as it is.
 */

export const ENV_FILE = process.env.HANGAR_K8S_ENV ?? '/var/lib/hangar-k8s-testbed/run/testbed.env';

export type TestbedEnv = Record<string, string>;

export function readTestbedEnv(): TestbedEnv | undefined {
  if (!existsSync(ENV_FILE)) return undefined;
  const env: TestbedEnv = {};
  for (const line of readFileSync(ENV_FILE, 'utf8').split('\n')) {
    const m = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (m) env[m[1]!] = m[2]!;
  }
  return env;
}

/**
 * Whether the Kubernetes tests can run: the testbed is up (`scripts/k8s-testbed up`; CI starts
 * it). In CI a testbed that is not up fails the run; elsewhere the tests are left out with a message.
 */
export function testbedAvailable(): boolean {
  const env = readTestbedEnv();
  if (
    env &&
    spawnSync(env.HANGAR_K8S_KUBECTL!, ['--kubeconfig', env.HANGAR_K8S_ADMIN_KUBECONFIG!, 'get', '--raw', '/readyz'], { encoding: 'utf8' })
      .stdout === 'ok'
  )
    return true;
  const message =
    'the Kubernetes tests need the testbed: scripts/k8s-testbed up (root; builds Kubernetes from Debian sources once, ~10 min)';
  if (process.env.CI === 'true') throw new Error(message);
  console.warn(`${message}; leaving them out`);
  return false;
}

/**
 * Whether the testbed has `min` nodes or more (`scripts/k8s-testbed up --nodes 3`). CI runs the
 * single-node testbed: these tests are left out there, with a message, as everywhere else.
 */
export function nodesAvailable(min: number): boolean {
  const nodes = Number(readTestbedEnv()?.HANGAR_K8S_NODES ?? 0);
  if (nodes >= min && testbedAvailable()) return true;
  console.warn(`these tests need a testbed of ${min} nodes or more (scripts/k8s-testbed up --nodes ${min}); leaving them out`);
  return false;
}

/**
 * Whether the testbed has an image of the engine (Valkey's is built only where Valkey is
 * installed). In CI a missing one fails the run; elsewhere its tests are left out with a message.
 */
export function imageAvailable(engine: string): boolean {
  const env = readTestbedEnv();
  if (!env || env[`HANGAR_K8S_${engine.toUpperCase()}_IMAGE`]) return true;
  const message = `the testbed has no ${engine} image: install ${engine}-server (Debian 12: from bookworm-backports), then scripts/k8s-testbed down and up`;
  if (process.env.CI === 'true') throw new Error(message);
  console.warn(`${message}; leaving its tests out`);
  return false;
}

export class Testbed {
  constructor(readonly env: TestbedEnv) {}

  /** kubectl as the admin (the test's own set-up and checks) or as hangar's user. */
  kubectl(
    args: readonly string[],
    opts: { as?: 'admin' | 'hangar'; input?: string } = {},
  ): { status: number; stdout: string; stderr: string } {
    const kubeconfig = opts.as === 'hangar' ? this.env.HANGAR_K8S_HANGAR_KUBECONFIG! : this.env.HANGAR_K8S_ADMIN_KUBECONFIG!;
    const r = spawnSync(this.env.HANGAR_K8S_KUBECTL!, ['--kubeconfig', kubeconfig, ...args], {
      encoding: 'utf8',
      input: opts.input,
      timeout: 120_000,
    });
    return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
  }

  /** kubectl that must succeed. */
  k(args: readonly string[], input?: string): string {
    const r = this.kubectl(args, input === undefined ? {} : { input });
    if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  }

  json(args: readonly string[]): any {
    return JSON.parse(this.k([...args, '-o', 'json']));
  }

  /** The admin secret of a Redis instance (its Secret), which its engines and Sentinels accept. */
  redisAdminSecret(namespace: string, instanceId: string): string {
    return Buffer.from(this.json(['-n', namespace, 'get', 'secret', `h-${instanceId}-redis`]).data['admin-secret'], 'base64').toString(
      'utf8',
    );
  }

  /**
   * Waits until the instance's Sentinels list its replica as serving (`SENTINEL REPLICAS` flags
   * `slave`), asked at the Sentinel Service's address; returns the flags last seen. Sentinel
   * promotes only a replica it has found (in the primary's INFO, every 10 s), which on a busy
   * node can come after the instance is ACTIVE: a test of a failover waits for it first.
   */
  async sentinelReplicaFlags(namespace: string, instanceId: string, ms = 60_000): Promise<string> {
    const host = this.json(['-n', namespace, 'get', 'service', `h-${instanceId}-sentinel`]).spec.clusterIP as string;
    const password = this.redisAdminSecret(namespace, instanceId);
    const ask = async (): Promise<string> => {
      const c = createClient({ socket: { host, port: 26379, connectTimeout: 1000, reconnectStrategy: false }, password });
      c.on('error', () => {});
      try {
        await c.connect();
        const replicas = (await c.sendCommand(['SENTINEL', 'REPLICAS', 'hangar'])) as string[][];
        return replicas.map((r) => r[r.indexOf('flags') + 1]).join(',');
      } catch (err) {
        return `(${(err as Error).message})`;
      } finally {
        if (c.isOpen) c.destroy();
      }
    };
    const end = Date.now() + ms;
    let flags = await ask();
    while (flags !== 'slave' && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 500));
      flags = await ask();
    }
    return flags;
  }

  /** A namespace of the test's own, with the Role of deploy/role.yaml bound to hangar's user. */
  namespace(name: string): void {
    this.k(['create', 'namespace', name]);
    this.k(['-n', name, 'apply', '-f', 'deploy/role.yaml']);
    this.k(['-n', name, 'create', 'rolebinding', 'hangar', '--role=hangar', `--user=${this.env.HANGAR_K8S_HANGAR_USER}`]);
  }

  /**
   * A zones file with one Kubernetes zone `Kube` on this testbed: hangar's user, `namespace` and
   * `storageClass`, the testbed's NodePort range and images (Redis's, and Valkey's where the
   * testbed has it); `extra` is appended as a line.
   */
  zonesFile(namespace: string, storageClass: string, extra = ''): string {
    const [portFirst, portLast] = (this.env.HANGAR_K8S_NODEPORT_RANGE ?? '0-0').split('-').map(Number) as [number, number];
    return [
      'Kube:',
      '  runtime: kubernetes',
      `  kubeconfig: ${this.env.HANGAR_K8S_HANGAR_KUBECONFIG}`,
      `  namespace: ${namespace}`,
      `  storage_class: ${storageClass}`,
      `  node_port_range: ${portFirst}-${portLast}`,
      `  images: { ${this.images()} }`,
      '  capacity_mb: 12000',
      extra,
    ].join('\n');
  }

  /** The zone's `images`: each engine image the testbed has, by its version (the image's tag), and the edge's. */
  images(): string {
    const images = [this.env.HANGAR_K8S_REDIS_IMAGE, this.env.HANGAR_K8S_VALKEY_IMAGE]
      .filter((i): i is string => !!i)
      .map((i) => `"${i.replace(/^hangar-test\//, '')}": "${i}"`);
    return [...images, `haproxy: "${this.env.HANGAR_K8S_HAPROXY_IMAGE}"`].join(', ');
  }

  /** `count` hostPath volumes of `storageClass` under `dir`: what a provisioner would make. */
  volumes(prefix: string, storageClass: string, dir: string, count: number, size = '4Gi'): void {
    for (let i = 0; i < count; i++) {
      const path = join(dir, `${prefix}-${i}`);
      mkdirSync(path, { recursive: true });
      this.k(
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'PersistentVolume',
          metadata: { name: `${prefix}-${i}`, labels: { 'hangar-test': prefix } },
          spec: {
            capacity: { storage: size },
            accessModes: ['ReadWriteOnce'],
            storageClassName: storageClass,
            persistentVolumeReclaimPolicy: 'Retain',
            hostPath: { path, type: 'DirectoryOrCreate' },
          },
        }),
      );
    }
  }

  /** The objects of kinds hangar makes that carry an instance's label. */
  objectsOf(namespace: string, id: string): string[] {
    const out = this.k([
      '-n',
      namespace,
      'get',
      'statefulsets,deployments,services,secrets,poddisruptionbudgets,networkpolicies,pods',
      '-l',
      `hangar.io/instance=${id}`,
      '-o',
      'name',
    ]);
    return out.split('\n').filter(Boolean);
  }

  /** The testbed's nodes, node 1 (this machine's own) first: name and address. */
  nodes(): { name: string; ip: string }[] {
    const names = (this.env.HANGAR_K8S_NODE_NAMES ?? this.env.HANGAR_K8S_NODE_NAME ?? '').split(',');
    const ips = (this.env.HANGAR_K8S_NODE_IPS ?? this.env.HANGAR_K8S_NODE_IP ?? '').split(',');
    return names.map((name, i) => ({ name, ip: ips[i]! }));
  }

  /**
   * Node `name` lost (`scripts/k8s-testbed node stop`: its network cut, its kubelet, kube-proxy,
   * container runtime and containers killed) or back (`node start`: it registers again and is Ready).
   */
  node(action: 'stop' | 'start', name: string): void {
    const k = this.nodes().findIndex((n) => n.name === name) + 1;
    if (k < 2) throw new Error(`node ${name} cannot be stopped: node 1 is this machine's own`);
    const r = spawnSync(join(import.meta.dirname, '..', '..', '..', 'scripts', 'k8s-testbed'), ['node', action, String(k)], {
      encoding: 'utf8',
      timeout: 180_000,
    });
    if (r.status !== 0) throw new Error(`k8s-testbed node ${action} ${k}: ${r.stderr}`);
  }

  /**
   * Stops (SIGSTOP) the API server until the returned function is called (SIGCONT): the test's own
   * testbed, stopped by the pid it recorded.
   */
  stopApiServer(): () => void {
    const pid = Number(readFileSync(join(this.env.HANGAR_K8S_RUN!, 'pids', 'kube-apiserver.pid'), 'utf8').trim());
    process.kill(pid, 'SIGSTOP');
    return () => process.kill(pid, 'SIGCONT');
  }
}

/**
 * A host of its own: a network namespace with one address, routed to the node's. Made with
 * `unshare` and entered with `nsenter`, never `ip netns`: that bind-mounts /run/netns over the
 * directory where containerd keeps the pods' namespaces, and the kubelet can then no longer remove them.
 */
export class ClientHost {
  private constructor(
    private readonly holder: ChildProcess,
    private readonly link: string,
    readonly address: string,
  ) {}

  static async create(name: string, address: string, nodeIp: string): Promise<ClientHost> {
    const sh = (cmd: string) => {
      const r = spawnSync('sh', ['-ec', cmd], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`${cmd}: ${r.stderr}`);
    };
    // the namespace lives as long as this process
    const holder = spawn('unshare', ['--net', 'sleep', 'infinity'], { stdio: 'ignore' });
    await new Promise((r) => setTimeout(r, 200));
    const pid = holder.pid!;
    const host = `${name.slice(0, 10)}0`;
    const peer = `${name.slice(0, 10)}1`;
    sh(
      `ip link add ${host} type veth peer name ${peer}; ip link set ${peer} netns ${pid}; ip link set ${host} up; ip route add ${address}/32 dev ${host}`,
    );
    sh(
      `nsenter -t ${pid} -n sh -ec 'ip addr add ${address}/32 dev ${peer}; ip link set ${peer} up; ip link set lo up; ip route add ${nodeIp}/32 dev ${peer}'`,
    );
    return new ClientHost(holder, host, address);
  }

  /** A Redis connection from the namespace, driven command by command (AUTH first). */
  redis(host: string, port: number): NetnsRedis {
    return new NetnsRedis(
      spawn(
        'nsenter',
        ['-t', String(this.holder.pid), '-n', process.execPath, join(import.meta.dirname, 'netns-redis.mjs'), host, String(port)],
        { stdio: ['pipe', 'pipe', 'inherit'] },
      ),
    );
  }

  /** AUTH then PING on a new connection: `PONG`, or how it failed (`closed` when the edge refused it). */
  async ping(host: string, port: number, password: string): Promise<string> {
    const c = this.redis(host, port);
    try {
      const auth = await c.send('AUTH', password);
      if (auth.closed) return 'closed';
      if (auth.error) return auth.error;
      const r = await c.send('PING');
      return r.closed ? 'closed' : (r.error ?? String(r.reply));
    } finally {
      c.end();
    }
  }

  /**
   * Starts waiting, from the namespace, for the edge to admit a client (`admitted`: AUTH and PING
   * answer PONG) or refuse it (`refused`): a new connection every 20 ms. Resolves after its first
   * try; `at` then resolves with the time (ms since the epoch) it first happened, or null after `limitMs`.
   */
  async waitUntil(
    host: string,
    port: number,
    password: string,
    want: 'admitted' | 'refused',
    limitMs = 10_000,
  ): Promise<{ at: Promise<number | null> }> {
    const child = spawn(
      'nsenter',
      [
        '-t',
        String(this.holder.pid),
        '-n',
        process.execPath,
        join(import.meta.dirname, 'netns-probe.mjs'),
        host,
        String(port),
        password,
        want,
        String(limitMs),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const lines = createInterface({ input: child.stdout! });
    let ready!: () => void;
    const started = new Promise<void>((r) => (ready = r));
    const at = new Promise<number | null>((resolve) => {
      lines.on('line', (line) => {
        const said = JSON.parse(line) as { ready?: boolean; at?: number | null };
        if (said.ready) return ready();
        resolve(said.at ?? null);
        ready();
      });
      child.on('exit', () => {
        resolve(null);
        ready();
      });
    });
    await started;
    return { at };
  }

  remove(): void {
    this.holder.kill();
    spawnSync('ip', ['link', 'del', this.link]);
  }
}

/** One connection from the client host; each command answers a reply, an error, or that the connection is closed. */
export class NetnsRedis {
  private readonly replies: ((r: { reply?: unknown; error?: string; closed?: boolean }) => void)[] = [];
  private closedFlag = false;

  constructor(private readonly child: ChildProcess) {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const r = JSON.parse(line) as { reply?: unknown; error?: string; closed?: boolean };
      if (r.closed) this.closedFlag = true;
      this.replies.shift()?.(r);
    });
    child.on('exit', () => {
      this.closedFlag = true;
      for (const w of this.replies.splice(0)) w({ closed: true });
    });
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  /** Sends a command; resolves with what came back. */
  send(...args: string[]): Promise<{ reply?: unknown; error?: string; closed?: boolean }> {
    return new Promise((resolve) => {
      if (this.closedFlag) return resolve({ closed: true });
      this.replies.push(resolve);
      this.child.stdin!.write(`${JSON.stringify(args)}\n`);
    });
  }

  end(): void {
    this.child.kill();
  }
}
