import type { ClusterDriver, ClusterPlace, ClusterResult, EdgeBackend, KubeObject } from '../../domain/cluster.js';
import { TerminalError } from '../../domain/errors.js';
import type { Health, InstanceSpec, ProbeTarget, StepContext } from '../../domain/units.js';
import { assertNoPodStuck, componentLabels as component, scheduling, waitUntil } from '../kubernetes/workload.js';
import type { RedisAdmin, RedisEndpoint } from './redis-admin.js';
import { REDIS_ADMIN_USER, renderRedisConfig, renderSentinelConfig } from './redis-config.js';
import { applyAccessAndSettings } from './redis-live.js';
import { probeRedis } from './redis-probe.js';
import { REDIS_FLAVOUR, type RedisFlavour } from './redis-flavour.js';

/** The port of every engine in its pod, and of every sentinel. */
export const REDIS_PORT = 6379;
export const SENTINEL_PORT = 26379;
/** The name Sentinel knows each instance's primary by. */
export const SENTINEL_MASTER = 'hangar';
const SENTINELS = 3;
const QUORUM = 2;
/** Sentinel's view of its primary: down after a second without an answer, a failover given 10 s. */
const DOWN_AFTER_MS = 1000;
const FAILOVER_TIMEOUT_MS = 10_000;

/** What a Sentinel's configuration sets for the primary it monitors, as `SENTINEL SET` takes it. */
function sentinelSettings(spec: InstanceSpec): string[] {
  return [
    'auth-user',
    REDIS_ADMIN_USER,
    'auth-pass',
    spec.adminSecret,
    'down-after-milliseconds',
    String(DOWN_AFTER_MS),
    'failover-timeout',
    String(FAILOVER_TIMEOUT_MS),
    'parallel-syncs',
    '1',
  ];
}
const MEMBERS = [0, 1] as const;
/** How long a pass waits for the members to answer and sync. */
const READY_TIMEOUT_MS = 120_000;
/** How long a Sentinel told to forget (SENTINEL RESET) may take to learn its replica (every 10 s) and peers (every 2 s) again. */
const SENTINEL_RELEARN_MS = 30_000;

/**
 * Memory of one engine's container, in MB: `maxmemory` (the plan) plus a quarter for what Redis
 * holds beyond its data (fragmentation, client and replication buffers, the copy-on-write of an
 * AOF rewrite), plus 64 MB for the process itself. Requested and limited alike.
 */
export function redisMemberMemoryMb(plan: number): number {
  return Math.ceil(plan * 1.25) + 64;
}
/** Memory of a sentinel's container, in MB. */
export const SENTINEL_MEMORY_MB = 64;
/**
 * CPU limit of a sentinel's container. A sentinel needs almost none (a ping a second to each
 * engine and peer), but Redis Sentinel can spin at a full core when an engine it watches goes
 * away behind a ClusterIP (a pod made again with a new IP): the kernel leaves an error on the old
 * connection that its reads never clear (redis/redis#9956, not fixed in any release). The limit
 * bounds that to a tenth of a core; failovers still complete within seconds under it.
 */
export const SENTINEL_CPU_LIMIT = '100m';
/** Size of an engine's data volume: three times the plan (the AOF, and its rewrite beside it), 1 GiB at least. */
export function redisVolumeMb(plan: number): number {
  return Math.max(1024, plan * 3);
}

/**
 * How an engine's container starts: with the configuration of its ordinal, copied once (after that
 * Sentinel and hangar change it with CONFIG REWRITE), and as a replica of the engine that is
 * primary now. An engine must never serve writes as a second primary: the writes it acknowledged
 * would be lost when Sentinel turns it into a replica. So, when Sentinel still names this engine
 * primary (a pod made again before Sentinel saw its engine die, or a restart after one):
 * - the other engine serving as primary is followed (Sentinel promoted it meanwhile);
 * - while the other engine is still linked to this engine's former process (a deleted pod whose
 *   container has not stopped yet), the script waits for that process to end;
 * - when the other engine is a replica that was in sync less than a minute ago, this engine waits
 *   for Sentinel to promote it, which Sentinel does by itself once it sees this engine gone, and
 *   follows it: the replica holds every write acknowledged before the primary went (a stopping
 *   Redis waits for its replica), this engine's files may not. Only when Sentinel has not done so
 *   after FORCE_AFTER seconds of a broken link (it holds back a second failover of one primary for
 *   twice its failover-timeout) is it asked to (SENTINEL FAILOVER): asked earlier, its own failover
 *   could follow the asked one, and each failover cuts the clients of the new primary;
 * - otherwise (no other engine answers, or a replica never in sync, as at first start) this engine
 *   starts as primary, and after ATTEMPTS seconds of waiting in any case.
 * `paths` are the pod's; tests run the script elsewhere.
 */
export function startEngineScript(
  paths: { data: string; conf: string } = { data: '/data', conf: '/etc/hangar' },
  flavour: RedisFlavour = REDIS_FLAVOUR,
): string {
  const { data, conf } = paths;
  const { cli, server } = flavour;
  const ATTEMPTS = 30;
  const FORCE_AFTER = 10;
  return [
    `[ -f ${data}/redis.conf ] || cp "${conf}/redis-\${HOSTNAME##*-}.conf" ${data}/redis.conf`,
    // CONFIG REWRITE quotes the address: compare it bare
    'address() { awk \'/^replica-announce-ip/{gsub(/"/, "", $2); print $2}\' "$1"; }',
    `sentinel() { timeout 3 ${cli} -h "$(cat ${conf}/sentinel-address)" -p ${SENTINEL_PORT} --pass "$HANGAR_ADMIN_SECRET" --no-auth-warning sentinel "$@" 2>/dev/null; }`,
    `replication() { timeout 3 ${cli} -h "$1" -p ${REDIS_PORT} --user ${REDIS_ADMIN_USER} --pass "$HANGAR_ADMIN_SECRET" --no-auth-warning info replication 2>/dev/null | tr -d '\\r'; }`,
    `self=$(address ${data}/redis.conf)`,
    'peer=',
    `for f in ${conf}/redis-*.conf; do a=$(address "$f"); [ -n "$a" ] && [ "$a" != "$self" ] && peer=$a; done`,
    'primary=',
    'said=',
    `ask=${FORCE_AFTER}`,
    `for attempt in $(seq 1 ${ATTEMPTS}); do`,
    `  primary=$(sentinel get-master-addr-by-name ${SENTINEL_MASTER} | head -n 1)`,
    '  if [ -z "$peer" ] || { [ -n "$primary" ] && [ "$primary" != "$self" ]; }; then break; fi',
    '  info=$(replication "$peer")',
    '  case "$info" in',
    '    *role:master*) primary=$peer; break ;;',
    '    *master_link_status:up*)',
    '      [ "$said" = linked ] || echo "hangar: $peer still replicates from the former process of this engine: waiting for it to end"',
    '      said=linked ;;',
    '    *role:slave*)',
    `      down=$(echo "$info" | awk -F: '/^master_link_down_since_seconds:/{print $2}')`,
    '      [ -n "$down" ] && [ "$down" -ge 0 ] && [ "$down" -le 60 ] || break',
    '      [ "$said" = waiting ] || echo "hangar: $peer was in sync $down s ago: waiting for Sentinel to promote it; this engine will follow it"',
    '      said=waiting',
    '      if [ "$down" -ge "$ask" ]; then',
    `        echo "hangar: Sentinel has not promoted $peer after $down s: asking it to (SENTINEL FAILOVER)"`,
    `        sentinel failover ${SENTINEL_MASTER}`,
    '        ask=$((down + 5))',
    '      fi ;;',
    '    *) break ;;',
    '  esac',
    '  primary=$self # after the last attempt, this engine serves',
    '  sleep 1',
    'done',
    `case "$primary" in "") exec ${server} ${data}/redis.conf ;; "$self") exec ${server} ${data}/redis.conf --replicaof no one ;; *) exec ${server} ${data}/redis.conf --replicaof "$primary" ${REDIS_PORT} ;; esac`,
  ].join('\n');
}

/** Names of an instance's objects: one prefix, derived from the instance id. */
export function redisNames(id: string) {
  const base = `h-${id}`;
  return {
    secret: `${base}-redis`,
    headless: `${base}-redis`,
    member: (i: number) => `${base}-redis-${i}`,
    redis: `${base}-redis`,
    sentinel: `${base}-sentinel`,
  };
}

/** A container's resources: `mb` of memory requested and limited alike, and a CPU limit when given. */
const resources = (mb: number, cpuLimit?: string) => ({
  requests: { memory: `${mb}Mi`, cpu: '50m' },
  limits: { memory: `${mb}Mi`, ...(cpuLimit ? { cpu: cpuLimit } : {}) },
});

/**
 * A redis_ha_instance on Kubernetes: a StatefulSet of two engines (primary and replica, AOF on a
 * volume of each), three Redis Sentinels (quorum 2) that fail over between them, a Service per
 * engine whose ClusterIP is its stable address (configuration names addresses, not DNS names:
 * not every cluster resolves them), and the instance's passwords and configuration in a Secret.
 * hangar administers the engines as its own user; clients come through the edge, which sends
 * them to the engine that says `role:master`.
 */
export class RedisClusterDriver implements ClusterDriver {
  constructor(
    private readonly admin: RedisAdmin,
    private readonly maxmemoryPolicy: string,
    private readonly flavour: RedisFlavour = REDIS_FLAVOUR,
  ) {}

  memberMemoryMb(spec: InstanceSpec): number {
    return redisMemberMemoryMb(spec.plan);
  }

  private password(spec: InstanceSpec): string {
    if (!spec.password) throw new TerminalError(`redis instance ${spec.id} has no password`);
    return spec.password;
  }

  /** The Services: one per engine (stable addresses), the headless one governing the StatefulSets, and the sentinels'. */
  private services(spec: InstanceSpec, place: ClusterPlace): KubeObject[] {
    const n = redisNames(spec.id);
    const service = (name: string, selector: Record<string, string>, port: number, extra: Record<string, unknown> = {}): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, labels: { ...place.labels } },
      spec: { selector, ports: [{ name: 'redis', port, targetPort: port, protocol: 'TCP' }], ...extra },
    });
    return [
      service(n.headless, component(place, 'redis'), REDIS_PORT, { clusterIP: 'None', publishNotReadyAddresses: true }),
      ...MEMBERS.map((i) =>
        service(n.member(i), { ...component(place, 'redis'), 'statefulset.kubernetes.io/pod-name': n.member(i) }, REDIS_PORT, {
          publishNotReadyAddresses: true,
        }),
      ),
      service(n.sentinel, component(place, 'sentinel'), SENTINEL_PORT, { publishNotReadyAddresses: true }),
    ];
  }

  objects(spec: InstanceSpec, place: ClusterPlace, addresses: Readonly<Record<string, string>> = {}): KubeObject[] {
    const n = redisNames(spec.id);
    const password = this.password(spec);
    const address = (i: number) => addresses[n.member(i)] ?? '0.0.0.0';
    const image = place.image(this.flavour.product, spec.version);
    const config = (i: number) =>
      renderRedisConfig({
        instanceId: spec.id,
        role: i === 0 ? 'primary' : 'replica',
        port: REDIS_PORT,
        dir: '/data',
        password,
        adminSecret: spec.adminSecret,
        maxmemoryMb: spec.plan,
        maxmemoryPolicy: spec.settings?.['maxmemory-policy'] ?? this.maxmemoryPolicy,
        primaryPort: REDIS_PORT,
        network: { bind: '0.0.0.0', announceIp: address(i), primaryHost: address(0) },
        ...(spec.priorPasswords ? { priorPasswords: spec.priorPasswords } : {}),
        ...(spec.users ? { users: spec.users } : {}),
        ...(spec.settings ? { settings: spec.settings } : {}),
      });
    const sentinel = renderSentinelConfig({
      instanceId: spec.id,
      masterName: SENTINEL_MASTER,
      primaryHost: address(0),
      primaryPort: REDIS_PORT,
      port: SENTINEL_PORT,
      dir: '/work',
      adminSecret: spec.adminSecret,
      quorum: QUORUM,
      downAfterMs: DOWN_AFTER_MS,
      failoverTimeoutMs: FAILOVER_TIMEOUT_MS,
    });
    const adminEnv = { name: 'HANGAR_ADMIN_SECRET', valueFrom: { secretKeyRef: { name: n.secret, key: 'admin-secret' } } };
    const volumeMb = redisVolumeMb(spec.plan);
    return [
      ...this.services(spec, place),
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: n.secret, labels: { ...place.labels } },
        type: 'Opaque',
        stringData: {
          password,
          'admin-secret': spec.adminSecret,
          'redis-0.conf': config(0),
          'redis-1.conf': config(1),
          'sentinel.conf': sentinel,
          'sentinel-address': addresses[n.sentinel] ?? '',
        },
      },
      {
        apiVersion: 'apps/v1',
        kind: 'StatefulSet',
        metadata: { name: n.redis, labels: component(place, 'redis') },
        spec: {
          serviceName: n.headless,
          replicas: MEMBERS.length,
          podManagementPolicy: 'Parallel',
          selector: { matchLabels: component(place, 'redis') },
          template: {
            metadata: { labels: component(place, 'redis') },
            spec: {
              ...scheduling(place, 'redis'),
              terminationGracePeriodSeconds: 10,
              containers: [
                {
                  name: 'redis',
                  image,
                  imagePullPolicy: 'IfNotPresent',
                  command: ['sh', '-c', startEngineScript(undefined, this.flavour)],
                  ports: [{ name: 'redis', containerPort: REDIS_PORT }],
                  env: [adminEnv],
                  readinessProbe: {
                    exec: {
                      command: [
                        'sh',
                        '-c',
                        `${this.flavour.cli} -p ${REDIS_PORT} --user ${REDIS_ADMIN_USER} --pass "$HANGAR_ADMIN_SECRET" --no-auth-warning ping | grep -q PONG`,
                      ],
                    },
                    periodSeconds: 2,
                    timeoutSeconds: 2,
                  },
                  resources: resources(redisMemberMemoryMb(spec.plan)),
                  volumeMounts: [
                    { name: 'data', mountPath: '/data' },
                    { name: 'config', mountPath: '/etc/hangar', readOnly: true },
                  ],
                },
              ],
              volumes: [{ name: 'config', secret: { secretName: n.secret, defaultMode: 0o400 } }],
            },
          },
          volumeClaimTemplates: [
            {
              metadata: { name: 'data', labels: { ...place.labels } },
              spec: {
                accessModes: ['ReadWriteOnce'],
                resources: { requests: { storage: `${volumeMb}Mi` } },
                ...(place.storageClass ? { storageClassName: place.storageClass } : {}),
              },
            },
          ],
        },
      },
      {
        apiVersion: 'apps/v1',
        kind: 'StatefulSet',
        metadata: { name: n.sentinel, labels: component(place, 'sentinel') },
        spec: {
          serviceName: n.headless,
          replicas: SENTINELS,
          podManagementPolicy: 'Parallel',
          selector: { matchLabels: component(place, 'sentinel') },
          template: {
            metadata: { labels: component(place, 'sentinel') },
            spec: {
              ...scheduling(place, 'sentinel'),
              terminationGracePeriodSeconds: 5,
              containers: [
                {
                  name: 'sentinel',
                  image,
                  imagePullPolicy: 'IfNotPresent',
                  // Sentinel rewrites its file: a writable copy, made anew by each container.
                  command: [
                    'sh',
                    '-c',
                    `cp /etc/hangar/sentinel.conf /work/sentinel.conf; exec ${this.flavour.server} /work/sentinel.conf --sentinel`,
                  ],
                  ports: [{ name: 'sentinel', containerPort: SENTINEL_PORT }],
                  env: [adminEnv],
                  // A TCP check, not an exec of redis-cli: a Sentinel has no loading state to
                  // tell apart from serving, and each exec probe costs the node a runc start
                  // (measured: an idle instance's five exec probes, every 2 s, took about a third
                  // of a core of containerd-shim on a 2-core node; the engines keep theirs, which
                  // tells a loading engine from a serving one).
                  readinessProbe: { tcpSocket: { port: SENTINEL_PORT }, periodSeconds: 2 },
                  resources: resources(SENTINEL_MEMORY_MB, SENTINEL_CPU_LIMIT),
                  volumeMounts: [
                    { name: 'work', mountPath: '/work' },
                    { name: 'config', mountPath: '/etc/hangar', readOnly: true },
                  ],
                },
              ],
              volumes: [
                { name: 'work', emptyDir: {} },
                { name: 'config', secret: { secretName: n.secret, defaultMode: 0o400 } },
              ],
            },
          },
        },
      },
      {
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: { name: n.redis, labels: { ...place.labels } },
        spec: { maxUnavailable: 1, selector: { matchLabels: component(place, 'redis') } },
      },
      {
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: { name: n.sentinel, labels: { ...place.labels } },
        spec: { minAvailable: QUORUM, selector: { matchLabels: component(place, 'sentinel') } },
      },
    ];
  }

  private endpoint(spec: InstanceSpec, host: string, role: string): RedisEndpoint {
    return { key: `${spec.id}/${role}`, host, port: REDIS_PORT, adminSecret: spec.adminSecret };
  }

  private sentinelEndpoint(spec: InstanceSpec, host: string): RedisEndpoint {
    return { key: `${spec.id}/sentinel`, host, port: SENTINEL_PORT, adminSecret: spec.adminSecret, user: 'default' };
  }

  /** The members' addresses, by Service name. */
  private async addresses(spec: InstanceSpec, place: ClusterPlace): Promise<Record<string, string>> {
    const n = redisNames(spec.id);
    const out: Record<string, string> = {};
    for (const name of [...MEMBERS.map((i) => n.member(i)), n.sentinel]) out[name] = await place.serviceAddress(name);
    return out;
  }

  /**
   * The address of the engine that is primary now: the one Sentinel names once that engine
   * confirms it (`role:master`), else whichever engine says `role:master`. Sentinel's word alone
   * is not enough: the sentinels' Service sends each question to any of the three, and right
   * after a failover one of them can still name the engine that died.
   */
  async primaryAddress(spec: InstanceSpec, place: ClusterPlace): Promise<string> {
    const a = await this.addresses(spec, place);
    const n = redisNames(spec.id);
    let named: string | undefined;
    try {
      const reply = (await this.admin.command(this.sentinelEndpoint(spec, a[n.sentinel]!), [
        'SENTINEL',
        'GET-MASTER-ADDR-BY-NAME',
        SENTINEL_MASTER,
      ])) as string[] | null;
      if (Array.isArray(reply) && typeof reply[0] === 'string') named = reply[0];
    } catch {
      /* no sentinel answers yet: ask the engines */
    }
    const saysPrimary = async (host: string, role: string) =>
      (await this.admin.info(this.endpoint(spec, host, role), 'replication').catch(() => undefined))?.role === 'master';
    if (named !== undefined && (await saysPrimary(named, 'primary'))) return named;
    for (const i of MEMBERS) {
      const host = a[n.member(i)]!;
      if (host !== named && (await saysPrimary(host, `redis-${i}`))) return host;
    }
    return named ?? a[n.member(0)]!;
  }

  async ensure(spec: InstanceSpec, place: ClusterPlace, ctx: StepContext): Promise<ClusterResult> {
    const n = redisNames(spec.id);
    // The Services first: their ClusterIPs are the addresses the configuration names.
    await place.apply(this.services(spec, place), ctx);
    const a = await this.addresses(spec, place);
    const fresh = (await place.pods(component(place, 'redis'))).length === 0;
    // The plan live first (no restart: Redis changes maxmemory as it runs); the pods then roll to
    // their new memory limit one by one, which Kubernetes cannot change in a running container.
    if (!fresh) await this.applyPlan(spec, a, ctx).catch(() => {});
    await place.apply(this.objects(spec, place, a), ctx);
    ctx.step(`${fresh ? 'create' : 'ensure'}:objects-applied`);
    await waitUntil(
      async () => {
        assertNoPodStuck(await place.pods(component(place, 'redis')));
        // Again while waiting: a Service made again answers at its new address once kube-proxy has it.
        if (!fresh) await this.followAddresses(spec, place, a, ctx);
        return (await place.rollout('StatefulSet', n.redis)) ?? (await this.membersProblem(spec, place, a));
      },
      READY_TIMEOUT_MS,
      ctx,
      'waiting for the redis pods',
    );
    await this.applyPlan(spec, a, ctx);
    await this.applyAccess(spec, a);
    if (!fresh) await this.forgetGoneSentinels(spec, place, ctx);
    return { fresh, backends: this.backends(spec, a) };
  }

  /**
   * The engines and Sentinels brought to the members' addresses as the Services have them now. A
   * member Service made again (deleted by hand) has a new ClusterIP, which the configuration
   * rendered from here on names, but what runs still names the old one: the engine's announced
   * address (what Sentinel and the replica learn it by), the replica's primary, and what each
   * Sentinel monitors. An engine that announces another address is given its own (and keeps it
   * in its file: CONFIG REWRITE); a replica of an address no member has follows the engine that is
   * primary now; a Sentinel that monitors an address no member has monitors the primary anew (with
   * the settings of its configuration), and one that lists such an address among the replicas
   * forgets what it learnt (SENTINEL RESET: it learns the replicas and its peers again within
   * seconds). Members and Sentinels that do not answer now are left to the next pass.
   */
  private async followAddresses(
    spec: InstanceSpec,
    place: ClusterPlace,
    a: Readonly<Record<string, string>>,
    ctx: StepContext,
  ): Promise<void> {
    const n = redisNames(spec.id);
    const members = MEMBERS.map((i) => ({ i, address: a[n.member(i)]!, ep: this.endpoint(spec, a[n.member(i)]!, `redis-${i}`) }));
    const known = new Set(members.map((m) => m.address));
    const answering: { address: string; ep: RedisEndpoint; i: number; info: Record<string, string> }[] = [];
    for (const m of members) {
      try {
        const info = await this.admin.info(m.ep, 'replication');
        if ((await this.admin.configGet(m.ep, 'replica-announce-ip')) !== m.address) {
          await this.admin.configSet(m.ep, 'replica-announce-ip', m.address);
          await this.admin.command(m.ep, ['CONFIG', 'REWRITE']);
          ctx.step(`ensure:redis-${m.i}-address-followed`);
        }
        answering.push({ ...m, info });
      } catch {
        /* not answering now: the next pass looks again */
      }
    }
    const primary = answering.find((m) => m.info.role === 'master');
    if (!primary) return;
    for (const m of answering) {
      const from = m.info.master_host;
      if (m.info.role !== 'slave' || from === undefined || known.has(from)) continue;
      await this.admin.replicaOf(m.ep, REDIS_PORT, primary.address);
      await this.admin.command(m.ep, ['CONFIG', 'REWRITE']);
      ctx.step(`ensure:redis-${m.i}-primary-followed`);
    }
    for (const pod of await place.pods(component(place, 'sentinel'))) {
      if (!pod.ip || !pod.ready) continue;
      const ep = { ...this.sentinelEndpoint(spec, pod.ip), key: `${spec.id}/${pod.name}` };
      try {
        const [monitored] = ((await this.admin.command(ep, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_MASTER])) ?? []) as string[];
        if (monitored === undefined || !known.has(monitored)) {
          await this.admin.command(ep, ['SENTINEL', 'REMOVE', SENTINEL_MASTER]).catch(() => {});
          await this.admin.command(ep, ['SENTINEL', 'MONITOR', SENTINEL_MASTER, primary.address, String(REDIS_PORT), String(QUORUM)]);
          await this.admin.command(ep, ['SENTINEL', 'SET', SENTINEL_MASTER, ...sentinelSettings(spec)]);
          ctx.step(`ensure:${pod.name}-primary-followed`);
          continue;
        }
        const replicas = (await this.admin.command(ep, ['SENTINEL', 'REPLICAS', SENTINEL_MASTER])) as string[][];
        const addresses = replicas.map((r) => r[r.indexOf('ip') + 1]);
        if (addresses.some((ip) => ip !== undefined && !known.has(ip))) {
          await this.admin.command(ep, ['SENTINEL', 'RESET', SENTINEL_MASTER]);
          ctx.step(`ensure:${pod.name}-replicas-forgotten`);
        }
      } catch {
        /* not answering now: the next pass looks again */
      }
    }
  }

  /**
   * Each Sentinel that knows of a peer no longer there (a sentinel pod made again, as on another
   * node after its node was lost, has a new address) forgets it. Sentinel never forgets a peer by
   * itself, and a failover needs the votes of a majority of the peers it knows: with three gone,
   * the three that run would no longer make one. One Sentinel at a time (SENTINEL RESET: it
   * learns the replica and its peers again within seconds), the next once it knows them again, so
   * that a quorum able to fail over is there throughout. Nothing is done while a sentinel pod is
   * missing (its new address is not known yet); Sentinels that do not answer are left to the next pass.
   */
  private async forgetGoneSentinels(spec: InstanceSpec, place: ClusterPlace, ctx: StepContext): Promise<void> {
    const pods = (await place.pods(component(place, 'sentinel'))).filter((p) => p.ip && p.ready);
    if (pods.length < SENTINELS) return;
    const live = new Set(pods.map((p) => p.ip));
    const field = (entry: string[], name: string) => entry[entry.indexOf(name) + 1];
    for (const pod of pods) {
      const ep = { ...this.sentinelEndpoint(spec, pod.ip!), key: `${spec.id}/${pod.name}` };
      try {
        const peers = (await this.admin.command(ep, ['SENTINEL', 'SENTINELS', SENTINEL_MASTER])) as string[][];
        if (!peers.some((p) => !live.has(field(p, 'ip')))) continue;
        await this.admin.command(ep, ['SENTINEL', 'RESET', SENTINEL_MASTER]);
        ctx.step(`ensure:${pod.name}-gone-sentinels-forgotten`);
        await waitUntil(
          async () => {
            const replicas = (await this.admin.command(ep, ['SENTINEL', 'REPLICAS', SENTINEL_MASTER])) as string[][];
            const known = (await this.admin.command(ep, ['SENTINEL', 'SENTINELS', SENTINEL_MASTER])) as string[][];
            return replicas.length >= MEMBERS.length - 1 && known.length >= SENTINELS - 1
              ? undefined
              : `${pod.name} knows ${replicas.length} replica(s) and ${known.length} peer(s) again`;
          },
          SENTINEL_RELEARN_MS,
          ctx,
          `waiting for ${pod.name} to learn its replica and peers again`,
        );
      } catch (err) {
        if (ctx.signal?.aborted) throw err;
        /* not answering now, or slow to learn again: the next pass looks again */
      }
    }
  }

  /**
   * Passwords (a rotation's old one too), users and settings on every engine, live, and into its
   * configuration file (CONFIG REWRITE: a pod copies its file from the Secret only once).
   */
  private async applyAccess(spec: InstanceSpec, a: Readonly<Record<string, string>>): Promise<void> {
    const n = redisNames(spec.id);
    const password = this.password(spec);
    for (const i of MEMBERS) {
      const ep = this.endpoint(spec, a[n.member(i)]!, `redis-${i}`);
      if (await applyAccessAndSettings(this.admin, ep, spec, password)) await this.admin.command(ep, ['CONFIG', 'REWRITE']);
    }
  }

  /** Both engines behind every client port (plain and TLS); the edge forwards to the one that is primary now. */
  private backends(spec: InstanceSpec, a: Readonly<Record<string, string>>): EdgeBackend[] {
    const n = redisNames(spec.id);
    const servers = MEMBERS.map((i) => ({ name: `redis-${i}`, address: a[n.member(i)]!, port: REDIS_PORT }));
    const check = [
      { send: `AUTH ${REDIS_ADMIN_USER} ${spec.adminSecret}` },
      { expect: '+OK' },
      { send: 'INFO replication' },
      { expect: 'role:master' },
      { send: 'QUIT' },
      { expect: '+OK' },
    ];
    // every listener of the edge (plain and TLS ones) forwards to the primary
    return spec.routes.map((r) => ({ role: r.role, servers, check }));
  }

  /** `maxmemory` = the plan on every engine, live and in its configuration file. */
  private async applyPlan(spec: InstanceSpec, a: Readonly<Record<string, string>>, ctx: StepContext): Promise<void> {
    const n = redisNames(spec.id);
    const bytes = String(spec.plan * 1024 * 1024);
    for (const i of MEMBERS) {
      const ep = this.endpoint(spec, a[n.member(i)]!, `redis-${i}`);
      if ((await this.admin.configGet(ep, 'maxmemory')) === bytes) continue;
      await this.admin.configSet(ep, 'maxmemory', bytes);
      await this.admin.command(ep, ['CONFIG', 'REWRITE']);
      ctx.step(`resize:redis-${i}-set`);
    }
  }

  private async membersProblem(spec: InstanceSpec, place: ClusterPlace, a: Readonly<Record<string, string>>): Promise<string | undefined> {
    const n = redisNames(spec.id);
    const pods = await place.pods(component(place, 'redis'));
    assertNoPodStuck(pods);
    if (pods.length < MEMBERS.length) return `${pods.length} of ${MEMBERS.length} redis pods exist`;
    let masters = 0;
    for (const i of MEMBERS) {
      try {
        const info = await this.admin.info(this.endpoint(spec, a[n.member(i)]!, `redis-${i}`), 'replication');
        if (info.role === 'master') masters++;
        else if (!MEMBERS.some((j) => a[n.member(j)] === info.master_host))
          return `redis-${i} replicates from ${info.master_host ?? 'no address'}, which no member has (a member Service made again)`;
        else if (info.master_link_status !== 'up')
          return `redis-${i} is not in sync with its primary (master_link_status:${info.master_link_status ?? 'unknown'})`;
      } catch (err) {
        return `redis-${i} does not answer at ${a[n.member(i)]}:${REDIS_PORT}: ${(err as Error).message}`;
      }
    }
    if (masters !== 1) return `${masters} engines say they are primary (Sentinel is settling)`;
    return undefined;
  }

  async readiness(spec: InstanceSpec, place: ClusterPlace, targets: readonly ProbeTarget[]): Promise<string | undefined> {
    try {
      const password = this.password(spec);
      for (const t of targets) await probeRedis(t, password);
      return await this.membersProblem(spec, place, await this.addresses(spec, place));
    } catch (err) {
      return (err as Error).message;
    }
  }

  async check(spec: InstanceSpec, place: ClusterPlace): Promise<Health> {
    try {
      const problem = await this.membersProblem(spec, place, await this.addresses(spec, place));
      return problem === undefined ? { healthy: true } : { healthy: false, reason: problem };
    } catch (err) {
      return { healthy: false, reason: (err as Error).message };
    }
  }
}
