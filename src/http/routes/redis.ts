import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { type AppDeps, answerStarted, callerOf, originOf } from '../context.js';
import { OPERATION_HEADERS } from '../schemas/operations.js';
import { Data, NameParams } from '../schemas/common.js';
import { IDEMPOTENT, WITH_BODY, WITH_PATH, errorResponses } from '../schemas/error-responses.js';
import { IdempotencyHeaders } from '../plugins/idempotency.js';
import {
  EngineSwitchBody,
  RedisConfigPatchBody,
  RedisConfigRecord,
  RedisStatsRecord,
  ResizeBody,
  SlowlogEntryRecord,
  SlowlogQuery,
  SpaceUsage,
} from '../schemas/redis.js';
import { slowlogRecord, statsRecord } from '../serializers.js';

export function redisRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { redis } = deps.services;
  const tags = ['redis'];
  const read = { params: NameParams, tags };
  // Read live from the engine: it must be serving, and answer in time.
  const errs = errorResponses([...WITH_PATH, 'INSTANCE_NOT_FOUND', 'INSTANCE_NOT_READY', 'ENGINE_UNREACHABLE']);

  app.get(
    '/redis/:instance_name/connectedSlaves/',
    {
      config: { instanceService: 'redis' },
      schema: {
        ...read,
        summary: 'connected_slaves of INFO replication, read live',
        response: { 200: Data(Type.Integer({ description: 'Replicas connected to the primary' }), 1), ...errs },
      },
    },
    async (req) => ({ data: await redis.connectedSlaves(callerOf(req), req.params.instance_name) }),
  );
  app.get(
    '/redis/:instance_name/connectedClients/',
    {
      config: { instanceService: 'redis' },
      schema: {
        ...read,
        summary: 'connected_clients of INFO clients, read live (an addition to the ObjectRocket API)',
        description: "Every connection the primary has: clients, the replica's link and hangar's own probes.",
        response: { 200: Data(Type.Integer({ description: 'Connections the primary has' }), 3), ...errs },
      },
    },
    async (req) => ({ data: await redis.connectedClients(callerOf(req), req.params.instance_name) }),
  );
  app.get(
    '/redis/:instance_name/spaceUsage/',
    {
      config: { instanceService: 'redis' },
      schema: {
        ...read,
        summary: 'Memory used, from INFO memory',
        response: { 200: Data(SpaceUsage, { freeSpacePercentage: 99.83, usedMemoryHuman: '866.06K' }), ...errs },
      },
    },
    async (req) => ({ data: await redis.spaceUsage(callerOf(req), req.params.instance_name) }),
  );
  app.get(
    '/redis/:instance_name/maxMemoryPolicy/',
    {
      config: { instanceService: 'redis' },
      schema: {
        ...read,
        summary: 'CONFIG GET maxmemory-policy',
        response: { 200: Data(Type.String({ description: 'The eviction policy' }), 'noeviction'), ...errs },
      },
    },
    async (req) => ({ data: await redis.maxMemoryPolicy(callerOf(req), req.params.instance_name) }),
  );
  app.get(
    '/redis/:instance_name/maxClients/',
    {
      config: { instanceService: 'redis' },
      schema: {
        ...read,
        summary: 'CONFIG GET maxclients',
        response: { 200: Data(Type.String({ description: 'A number, as a string' }), '10000'), ...errs },
      },
    },
    async (req) => ({ data: await redis.maxClients(callerOf(req), req.params.instance_name) }),
  );
  app.get(
    '/redis/:instance_name/config/',
    {
      schema: {
        ...read,
        summary: 'The settings a tenant may change, as the primary runs them now (an addition to the ObjectRocket API)',
        response: { 200: Data(RedisConfigRecord, { 'maxmemory-policy': 'allkeys-lru', timeout: '0', maxclients: '10000' }), ...errs },
      },
    },
    async (req) => ({ data: await redis.config(callerOf(req), req.params.instance_name) }),
  );
  app.patch(
    '/redis/:instance_name/config/',
    {
      config: { audit: 'redis.config' },
      schema: {
        ...read,
        summary: 'Change settings of the allow-list, live on the primary and the replica (an addition to the ObjectRocket API)',
        description:
          'Each value is checked (a 400 names the setting and its allowed values), recorded, applied with CONFIG SET on the primary and the replica and written into their configuration files (so a restart keeps it). Answers once applied (or after 5 s; durable either way), with every setting hangar holds for the instance; GET reads them live.',
        headers: IdempotencyHeaders,
        body: RedisConfigPatchBody,
        response: {
          200: { ...Data(RedisConfigRecord, { 'maxmemory-policy': 'allkeys-lru', timeout: '300' }), headers: OPERATION_HEADERS },
          ...errorResponses([...WITH_PATH, ...WITH_BODY, ...IDEMPOTENT, 'INVALID_VALUE', 'INSTANCE_NOT_FOUND', 'INSTANCE_DELETING']),
        },
      },
    },
    async (req, reply) => ({
      data: answerStarted(reply, await redis.setConfig(callerOf(req), req.params.instance_name, req.body, originOf(req))),
    }),
  );
  app.get(
    '/redis/:instance_name/slowlog/',
    {
      schema: {
        ...read,
        summary: "The primary's slow log, newest first, read live (an addition to the ObjectRocket API)",
        description: 'What enters it: slowlog-log-slower-than and slowlog-max-len, both settings of PATCH .../config/.',
        querystring: SlowlogQuery,
        response: {
          200: Data(Type.Array(SlowlogEntryRecord), [
            {
              id: 12,
              time: '2026-11-21T09:00:00.000Z',
              duration_us: 15210,
              command: ['KEYS', '*'],
              client: '127.0.0.1:52114',
              client_name: '',
            },
          ]),
          ...errorResponses([
            ...WITH_PATH,
            'INVALID_VALUE',
            'INVALID_BODY',
            'INSTANCE_NOT_FOUND',
            'INSTANCE_NOT_READY',
            'ENGINE_UNREACHABLE',
          ]),
        },
      },
    },
    async (req) => {
      const limit = Math.min(1000, Math.max(1, Number(req.query.limit ?? 20)));
      return { data: (await redis.slowlog(callerOf(req), req.params.instance_name, limit)).map(slowlogRecord) };
    },
  );
  app.get(
    '/redis/:instance_name/stats/',
    {
      schema: {
        ...read,
        summary: 'Throughput, hit ratio, evictions, clients, memory and replication, read live (an addition to the ObjectRocket API)',
        response: {
          200: Data(RedisStatsRecord, {
            ops_per_sec: 1520,
            total_commands: 8812345,
            keyspace_hits: 90210,
            keyspace_misses: 1022,
            hit_ratio: 0.9888,
            evicted_keys: 0,
            expired_keys: 312,
            keys: 4021,
            connected_clients: 14,
            maxclients: 10000,
            blocked_clients: 0,
            used_memory: 3145728,
            maxmemory: 524288000,
            fragmentation_ratio: 1.21,
            role: 'master',
            replication_offset: 1048576,
            replicas: [{ state: 'online', offset: 1048576, lag_bytes: 0, lag_seconds: 0 }],
            uptime_seconds: 86400,
            version: '7.0.15',
          }),
          ...errs,
        },
      },
    },
    async (req) => ({ data: statsRecord(await redis.stats(callerOf(req), req.params.instance_name)) }),
  );
  app.post(
    '/redis/:instance_name/engine/',
    {
      config: { audit: 'redis.engine', instanceService: 'redis' },
      schema: {
        ...read,
        summary: 'Switch the engine in place, Redis to Valkey, keeping everything (an addition to the ObjectRocket API)',
        description:
          "Keeps the instance's name, connect strings, password, ACLs, Redis users, settings and data. The replica restarts on the new engine and resyncs; then the roles switch as in a failover (the primary holds writes while the replica takes the last of them and takes over the primary's port), and the old primary restarts on the new engine as the replica: clients see one short interruption and reconnect through the same connect string. The instance stays ACTIVE; the `engine.switch` operation (X-Operation-Id) follows the work, and the record shows the new `engine` and `version` once the engines run them. Valkey to Redis is refused (Valkey's data files are not promised to load in Redis), and so is a Redis whose data files no Valkey loads (7.4 and later: RDB version 12).",
        headers: IdempotencyHeaders,
        body: EngineSwitchBody,
        response: {
          200: {
            ...Data(
              Type.String({ description: 'Confirmation naming the instance, the engine and version it leaves and those it moves to' }),
              'Switching instance "cache" from Redis 7.0.15 to Valkey 8.0.1 has started',
            ),
            headers: OPERATION_HEADERS,
          },
          ...errorResponses([
            ...WITH_PATH,
            ...WITH_BODY,
            ...IDEMPOTENT,
            'INVALID_VALUE',
            'INSTANCE_NOT_FOUND',
            'OPERATION_IN_PROGRESS',
            'INSTANCE_DELETING',
            'BACKUP_IN_PROGRESS',
            'CAPACITY_EXCEEDED',
            'SERVICE_UNAVAILABLE_HERE',
          ]),
        },
      },
    },
    async (req, reply) => ({
      data: answerStarted(reply, await redis.switchEngine(callerOf(req), req.params.instance_name, req.body, originOf(req))),
    }),
  );
  app.post(
    '/redis/:instance_name/resize/',
    {
      config: { audit: 'redis.resize', instanceService: 'redis' },
      schema: {
        ...read,
        summary: 'Grow to a larger plan, live, without a restart',
        description: 'The instance turns RESIZING at once and ACTIVE again with the new plan once the engines run with it.',
        headers: IdempotencyHeaders,
        body: ResizeBody,
        response: {
          200: {
            ...Data(
              Type.String({ description: 'Confirmation naming the instance, the old and the new plan' }),
              'Resizing of instance "cache" from 500 MB to 1000 MB has started',
            ),
            headers: OPERATION_HEADERS,
          },
          ...errorResponses([
            ...WITH_PATH,
            ...WITH_BODY,
            ...IDEMPOTENT,
            'INVALID_VALUE',
            'INSTANCE_NOT_FOUND',
            'OPERATION_IN_PROGRESS',
            'INSTANCE_DELETING',
            'CAPACITY_EXCEEDED',
          ]),
        },
      },
    },
    async (req, reply) => ({
      data: answerStarted(reply, await redis.resize(callerOf(req), req.params.instance_name, req.body.new_plan, originOf(req))),
    }),
  );
}
