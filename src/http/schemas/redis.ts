import { Type } from 'typebox';
import { PLANS } from '../../domain/catalog.js';
import { REDIS_SETTINGS } from '../../service/redis.js';

export const ResizeBody = Type.Object(
  { new_plan: Type.Integer({ description: `The new plan in MB, larger than the current one: ${PLANS.redis.join(', ')}` }) },
  { additionalProperties: false, examples: [{ new_plan: 1000 }] },
);

/** The body of an elasticsearch resize (an addition to the spec, whose resize is Redis's only). */
export const ElasticsearchResizeBody = Type.Object(
  {
    new_plan: Type.Integer({
      description: `The new plan in GB, larger than the current one: ${PLANS.elasticsearch.join(', ')}; the node's heap is an eighth of it`,
    }),
  },
  { additionalProperties: false, examples: [{ new_plan: 8 }] },
);

export const SpaceUsage = Type.Object(
  {
    freeSpacePercentage: Type.Number({ description: 'Share of maxmemory still free, in percent' }),
    usedMemoryHuman: Type.String({ description: 'used_memory_human of INFO memory, e.g. 1.02M' }),
  },
  { description: 'Memory use (spec 2.5)' },
);

export const RedisConfigRecord = Type.Record(Type.String(), Type.String(), {
  description: 'Settings of the allow-list by their redis.conf names, values as Redis gives them',
  examples: [{ 'maxmemory-policy': 'allkeys-lru', timeout: '0', maxclients: '10000', 'notify-keyspace-events': '' }],
});

export const RedisConfigPatchBody = Type.Record(Type.String(), Type.Union([Type.String(), Type.Integer()]), {
  minProperties: 1,
  maxProperties: 32,
  description: `Settings to change, by their redis.conf names: ${Object.entries(REDIS_SETTINGS)
    .map(
      ([name, rule]) =>
        `${name} (${rule.kind === 'enum' ? rule.values.join(' | ') : rule.kind === 'int' ? `${rule.min} to ${rule.max}` : `characters of ${rule.chars}`})`,
    )
    .join('; ')}`,
  examples: [{ 'maxmemory-policy': 'allkeys-lru', timeout: 300 }],
});

export const SlowlogEntryRecord = Type.Object(
  {
    id: Type.Integer({ description: 'Entry number, increasing' }),
    time: Type.String({ description: 'When the command ran (RFC 3339)' }),
    duration_us: Type.Integer({ description: 'How long it took, in microseconds' }),
    command: Type.Array(Type.String(), { description: 'The command and its arguments (Redis cuts long ones)' }),
    client: Type.String({ description: 'The client address' }),
    client_name: Type.String({ description: 'The client name (CLIENT SETNAME), or empty' }),
  },
  { description: 'A slow log entry' },
);

export const SlowlogQuery = Type.Object(
  { limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,4}$', description: 'How many entries, 1-1000, default 20', examples: ['10'] })) },
  { additionalProperties: false },
);

const n = (description: string) => Type.Number({ description });

export const RedisStatsRecord = Type.Object(
  {
    ops_per_sec: n('Commands per second (instantaneous_ops_per_sec)'),
    total_commands: n('Commands processed since start'),
    keyspace_hits: n('Reads that found their key'),
    keyspace_misses: n('Reads that did not'),
    hit_ratio: Type.Union([Type.Number(), Type.Null()], { description: 'Hits over hits and misses (0-1); null before any read' }),
    evicted_keys: n('Keys evicted by maxmemory-policy'),
    expired_keys: n('Keys removed by their TTL'),
    keys: n('Keys in every database'),
    connected_clients: n('Connections (clients, the replica, hangar)'),
    maxclients: n('Connections allowed at once'),
    blocked_clients: n('Clients waiting in a blocking command'),
    used_memory: n('Bytes used'),
    maxmemory: n('Bytes allowed (the plan)'),
    fragmentation_ratio: n('mem_fragmentation_ratio: resident memory over used memory'),
    role: Type.String({ description: 'master' }),
    replication_offset: n("The primary's replication offset (bytes)"),
    replicas: Type.Array(
      Type.Object({
        state: Type.String({ description: 'online, wait_bgsave, send_bulk...' }),
        offset: n('Offset the replica acknowledged'),
        lag_bytes: n('Bytes it has not acknowledged yet'),
        lag_seconds: n('Seconds since its last acknowledgement'),
      }),
    ),
    uptime_seconds: n('Seconds since the primary started'),
    version: Type.String({ description: "The engine's version: redis_version of INFO server (valkey_version on Valkey)" }),
  },
  { description: 'Statistics of the primary, read live (an addition to the ObjectRocket API)' },
);
