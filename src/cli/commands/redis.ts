import { PLANS } from '../../domain/catalog.js';
import { productsOf } from '../../engines/products.js';
import {
  REMOTE_OPTIONS,
  WAIT_OPTIONS,
  type ClientCommand,
  type ClientContext,
  followOperation,
  need,
  waitReady,
} from '../client-command.js';
import { UsageError, json } from '../io.js';
import { fields } from '../table.js';
import { offeredVersions } from './instances.js';

/** The engines of the redis service. */
const REDIS_ENGINES = productsOf('redis').map((p) => p.name);

async function stats(ctx: ClientContext): Promise<void> {
  const name = ctx.args[0]!;
  const { client } = ctx.connection();
  const [inst, slaves, space, policy, maxClients, more] = await Promise.all([
    client.getInstance(name),
    client.connectedSlaves(name),
    client.spaceUsage(name),
    client.maxMemoryPolicy(name),
    client.maxClients(name),
    client.redisStats(name),
  ]);
  if (ctx.opts.json === true) {
    ctx.io.out(
      json({
        name,
        plan: inst.plan,
        state: inst.state,
        connectedSlaves: slaves,
        spaceUsage: space,
        maxMemoryPolicy: policy,
        maxClients,
        stats: more,
      }),
    );
    return;
  }
  const lag = more.replicas.map((r) => `${r.state}, ${r.lag_bytes} B / ${r.lag_seconds} s behind`).join('; ') || '-';
  ctx.io.out(
    fields([
      ['name', name],
      ['state', inst.state],
      ['plan', `${inst.plan} MB`],
      ['used memory', space.usedMemoryHuman],
      ['free', `${space.freeSpacePercentage}%`],
      ['maxmemory-policy', policy],
      ['maxclients', maxClients],
      ['connected replicas', slaves],
      ['clients', `${more.connected_clients} of ${more.maxclients}`],
      ['ops/s', more.ops_per_sec],
      ['hit ratio', more.hit_ratio === null ? '-' : `${Math.round(more.hit_ratio * 1000) / 10}%`],
      ['keys', more.keys],
      ['evicted / expired keys', `${more.evicted_keys} / ${more.expired_keys}`],
      ['fragmentation', more.fragmentation_ratio],
      ['replication', lag],
    ]),
  );
}

async function resize(ctx: ClientContext): Promise<void> {
  const { opts, io } = ctx;
  const name = ctx.args[0]!;
  const plan = Number(need(opts.plan, 'plan', `MB: ${PLANS.redis.join(', ')}`));
  if (!Number.isInteger(plan)) throw new UsageError(`--plan must be an integer: ${PLANS.redis.join(', ')}`);
  const { client } = ctx.connection();
  let operation: string | undefined;
  const message = await client.resizeRedis(name, plan, { onOperation: (id) => (operation = id) });
  if (opts['no-wait'] === true) {
    io.out(opts.json === true ? json({ name, plan, message, ...(operation ? { operation } : {}) }) : message);
    return;
  }
  const inst = operation ? (await followOperation(client, io, name, operation, opts, 'ready'))! : await waitReady(client, io, name, opts);
  io.out(opts.json === true ? json(inst) : `Instance "${name}" runs on ${inst.plan} MB.`);
}

async function engine(ctx: ClientContext): Promise<void> {
  const { opts, io } = ctx;
  const name = ctx.args[0]!;
  const to = need(opts.engine, 'engine', REDIS_ENGINES.join(', '));
  const { client } = ctx.connection();
  if (typeof opts.version !== 'string' || opts.version === '') {
    const [inst, zones] = await Promise.all([client.getInstance(name), client.listZones().catch(() => undefined)]);
    need(opts.version, 'version', zones ? offeredVersions(zones, 'redis', inst.zone, to) : 'hangar zones ls lists the versions offered');
  }
  const version = opts.version as string;
  let operation: string | undefined;
  const message = await client.switchRedisEngine(name, { engine: to, version }, { onOperation: (id) => (operation = id) });
  if (opts['no-wait'] === true) {
    io.out(opts.json === true ? json({ name, engine: to, version, message, ...(operation ? { operation } : {}) }) : message);
    return;
  }
  const inst = operation ? (await followOperation(client, io, name, operation, opts, 'ready'))! : await waitReady(client, io, name, opts);
  io.out(opts.json === true ? json(inst) : `Instance "${name}" runs on ${inst.engine} ${inst.version}.`);
}

export const redisCommands: readonly ClientCommand[] = [
  {
    kind: 'client',
    name: 'redis stats',
    summary: 'Memory, policy, clients, throughput, hit ratio, evictions and replication of a redis instance, read live',
    args: ['NAME'],
    remote: true,
    options: REMOTE_OPTIONS,
    examples: ['hangar redis stats cache', 'hangar redis stats cache --json'],
    run: stats,
  },
  {
    kind: 'client',
    name: 'redis resize',
    summary: 'Grow a redis instance to a larger plan, live, and wait until it runs on it',
    args: ['NAME'],
    remote: true,
    options: {
      ...REMOTE_OPTIONS,
      ...WAIT_OPTIONS,
      plan: { type: 'string', value: 'MB', description: `the new plan: ${PLANS.redis.join(', ')}`, choices: PLANS.redis.map(String) },
    },
    fields: { new_plan: '--plan' },
    examples: ['hangar redis resize cache --plan 1000', 'hangar redis resize cache --plan 2500 --no-wait'],
    run: resize,
  },
  {
    kind: 'client',
    name: 'redis engine',
    summary:
      'Switch a redis instance to another engine in place (Redis to Valkey), keeping its data, address, password, users and settings, and wait until it runs on it',
    args: ['NAME'],
    remote: true,
    options: {
      ...REMOTE_OPTIONS,
      ...WAIT_OPTIONS,
      engine: {
        type: 'string',
        value: 'ENGINE',
        description: `the engine to move to: ${REDIS_ENGINES.join(', ')}`,
        choices: REDIS_ENGINES,
      },
      version: { type: 'string', value: 'VERSION', description: "one of the versions the instance's zone offers of that engine" },
    },
    fields: { engine: '--engine', version: '--version' },
    examples: [
      'hangar redis engine cache --engine valkey --version 8.0.1',
      'hangar redis engine cache --engine valkey --version 8.0.1 --no-wait',
    ],
    run: engine,
  },
];
