import { Type, type Static } from 'typebox';
import { DateRef, ObjectIdRef } from './common.js';
import { INSTANCE_TYPES, PLANS, SERVICES, STORAGE_ENGINES, ZONES } from '../../domain/catalog.js';
import { AclCreateBody } from './acls.js';
import { ENGINE_NAMES, productsOf } from '../../engines/products.js';
import {
  CREATED_REDIS_INSTANCE,
  CREATE_MONGODB_BODY,
  CREATE_REDIS_BODY,
  ELASTICSEARCH_INSTANCE,
  MONGODB_INSTANCE,
  REDIS_INSTANCE,
} from './examples.js';

const ENGINES_BY_SERVICE = Object.fromEntries(SERVICES.map((s) => [s, productsOf(s).map((p) => p.name)]));

/** `redis: a, b; mongodb: c, d` from a catalogue table. */
const perService = (table: Readonly<Record<string, readonly (string | number)[]>>) =>
  SERVICES.map((s) => `${s}: ${table[s]!.join(', ')}`).join('; ');

export const CreateInstanceBody = Type.Object(
  {
    name: Type.String({ description: 'Unique in the account; 1-64 ASCII letters (A-Z, a-z), digits, "-" and "_"' }),
    plan: Type.Integer({ description: `Plan size (redis: memory in MB). ${perService(PLANS)}` }),
    service: Type.String({ description: SERVICES.join(', ') }),
    type: Type.String({ description: `Instance type. ${perService(INSTANCE_TYPES)}` }),
    version: Type.String({
      description: "Datastore version, one of the chosen engine's; a wrong one is answered with the versions this hangar offers",
    }),
    zone: Type.String({ description: `Datacenter. ${perService(ZONES)}` }),
    engine: Type.Optional(
      Type.String({
        description: `The product that runs it (an addition to the ObjectRocket API): ${perService(ENGINES_BY_SERVICE)}. Default: the first of its service that the zone can run (GET /v2/zones/ says which)`,
      }),
    ),
    encryption: Type.Optional(Type.Boolean({ description: 'Encryption at rest; elasticsearch and mongodb only' })),
    storage_engine: Type.Optional(Type.String({ description: `mongodb only: ${STORAGE_ENGINES.join(' or ')}` })),
    acls: Type.Optional(Type.Array(AclCreateBody, { maxItems: 1000, description: 'ACLs to create with the instance' })),
    restore_from: Type.Optional(
      Type.String({
        description:
          'A completed backup of the account, of the same service: the instance is built, then restored from it (RESTORING, then ACTIVE). The plan must hold what the backed-up instance used.',
      }),
    ),
  },
  { additionalProperties: false, examples: [CREATE_REDIS_BODY, CREATE_MONGODB_BODY] },
);
export type CreateInstanceBody = Static<typeof CreateInstanceBody>;

export const RenameBody = Type.Object(
  { name: Type.String({ description: 'The new name' }) },
  { additionalProperties: false, examples: [{ name: 'sessions' }] },
);

const Addresses = (what: string) => Type.String({ description: `${what}, comma-separated when several` });

const ConnectionStrings = Type.Object(
  {
    public: Type.Object({
      http: Addresses('http://host:port URLs'),
      https: Addresses('https://host:port URLs'),
      kibana_http: Type.String({ description: 'Kibana http://host:port URL' }),
      kibana_https: Type.String({ description: 'Kibana https://host:port URL' }),
      transport: Addresses('host:port of the transport protocol'),
    }),
    servicenet: Type.Object({
      http: Addresses('http://host:port URLs'),
      https: Addresses('https://host:port URLs'),
      transport: Addresses('host:port of the transport protocol'),
    }),
  },
  { description: 'elasticsearch: public and private-network addresses (spec 2.2)' },
);

const detailFields = {
  id: Type.String({ description: 'Instance identifier (24 hex digits)' }),
  name: Type.String({ description: 'Instance name, unique in the account' }),
  service: Type.String({ description: 'elasticsearch, mongodb or redis' }),
  type: Type.String({ description: 'Instance type, e.g. redis_ha_instance or mongodb_replica_set' }),
  plan: Type.Integer({ description: 'Plan size; for redis, memory in MB' }),
  version: Type.String({ description: 'Datastore version' }),
  engine: Type.String({ description: `The product that runs it (an addition to the ObjectRocket API): ${ENGINE_NAMES.join(', ')}` }),
  zone: Type.String({ description: 'Datacenter' }),
  created: Type.String({ description: 'Creation time, YYYY-MM-DD HH:MM:SS, UTC' }),
  api_key: Type.String({ description: 'Key attached to the instance' }),
  caster: Type.Null({ description: 'Always null' }),
  state: Type.String({ description: 'REQUESTED, BUILDING, ACTIVE, COMPLETED, RESIZING, RESTORING, DEGRADED, DELETING or FAILED' }),
  state_reason: Type.Optional(
    Type.String({ description: 'Why the instance is DEGRADED or FAILED, or what a build or resize is waiting for' }),
  ),
  connect_string: Type.Optional(Type.String({ description: 'mongodb: host:port entries, comma-separated; redis: redis://host:port' })),
  ssl_connect_string: Type.Optional(Type.String({ description: 'mongodb_sharded: host:port of the TLS listener' })),
  clb_id: Type.Optional(Type.Null({ description: 'redis: load balancer identifier, always null' })),
  password: Type.Optional(Type.String({ description: 'redis: the password clients AUTH with' })),
  public_connect_string: Type.Optional(Type.String({ description: 'redis: public address, redis://host:port' })),
  servicenet_connect_string: Type.Optional(Type.String({ description: 'redis: private-network address, redis://host:port' })),
  encrypted: Type.Optional(Type.Boolean({ description: 'elasticsearch: encryption at rest' })),
  settings: Type.Optional(Type.Object({}, { description: 'elasticsearch: instance settings (empty)' })),
  connection_strings: Type.Optional(ConnectionStrings),
};

export const InstanceRecord = Type.Object(detailFields, {
  $id: 'Instance',
  description: 'An instance (spec 2.1); fields depend on service and type',
  examples: [REDIS_INSTANCE, MONGODB_INSTANCE, ELASTICSEARCH_INSTANCE],
});

export const CreationRecord = Type.Object(
  {
    _id: ObjectIdRef,
    ansible_group: Type.Null({ description: 'Always null' }),
    build_id: Type.String({ description: 'Identifier of this build of the instance' }),
    dtcreated: DateRef,
    redis_version: Type.Optional(Type.String({ description: 'redis: the version' })),
    mongodb_version: Type.Optional(Type.String({ description: 'mongodb: the version' })),
    elasticsearch_version: Type.Optional(Type.String({ description: 'elasticsearch: the version' })),
    instance_name_prior: Type.Union([Type.String(), Type.Null()], { description: 'The name before the last rename' }),
    instance_service: Type.String({ description: 'Same as service' }),
    instance_type: Type.String({ description: 'Same as type' }),
    login: Type.String({ description: 'Login of the owning account' }),
    login_prior: Type.Null({ description: 'Always null' }),
    ...detailFields,
  },
  {
    $id: 'CreatedInstance',
    description: 'The creation record (spec 2.3) with the fields of the instance record',
    examples: [CREATED_REDIS_INSTANCE],
  },
);
