import { Type } from 'typebox';
import { SERVICES } from '../../domain/catalog.js';

export const REDIS_ENGINE = {
  engine: 'redis',
  service: 'redis',
  label: 'Redis',
  plan_unit: 'MB',
  done_state: 'ACTIVE',
  types: ['redis_ha_instance'],
  features: {
    password: true,
    redis_api: true,
    database_users: false,
    encryption: false,
    storage_engines: null,
    acl_groups: [],
  },
  shell: { program: 'redis-cli', install: 'Debian/Ubuntu: apt install redis-tools; macOS: brew install redis' },
  plans: [
    { type: 'redis_ha_instance', plan: 500, promised_mb: 1000, memory_rule: '2 x 500 MB: maxmemory of the primary and of the replica' },
  ],
};

const nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T, description: string) =>
  Type.Union([t, Type.Null()], { description });

export const EngineRecord = Type.Object(
  {
    engine: Type.String({ description: 'Its name in the API: `engine` of create bodies and records' }),
    service: Type.String({ description: `The service it serves: ${SERVICES.join(', ')}` }),
    label: Type.String({ description: 'Its name for people' }),
    plan_unit: Type.Union([Type.Literal('MB'), Type.Literal('GB')], { description: 'What a plan number counts' }),
    done_state: Type.Union([Type.Literal('ACTIVE'), Type.Literal('COMPLETED')], { description: 'The state of an instance that serves' }),
    types: Type.Array(Type.String(), { description: 'The instance types it runs' }),
    features: Type.Object(
      {
        password: Type.Boolean({ description: 'Clients authenticate with the instance password of its record' }),
        redis_api: Type.Boolean({
          description: 'The Redis routes apply (/v2/redis/{name}/...: inspection, settings, resize, users)',
        }),
        database_users: Type.Boolean({ description: 'The MongoDB user routes apply (/v2/mongodb/{id}/databases/...)' }),
        encryption: Type.Boolean({ description: 'A create body may give `encryption`' }),
        storage_engines: nullable(
          Type.Array(Type.String()),
          'The `storage_engine` values a create body may give; null: the field does not apply',
        ),
        acl_groups: Type.Array(Type.String(), {
          description: 'ACL flags that open listeners beyond the main ones (`transport`, `kibana`)',
        }),
      },
      { description: 'What the API offers on its instances beyond instances and ACLs' },
    ),
    shell: nullable(
      Type.Object({
        program: Type.String({ description: 'The shell people connect with' }),
        install: Type.String({ description: 'Where to get it' }),
      }),
      'How people connect from a terminal (GET /v2/instances/{name}/shell gives the command); null: none, it speaks HTTP',
    ),
    plans: Type.Array(
      Type.Object({
        type: Type.String(),
        plan: Type.Integer(),
        promised_mb: Type.Integer({ description: 'The memory an instance of this type and plan promises, in MB' }),
        memory_rule: Type.String({ description: 'How that memory is counted, in words' }),
      }),
      {
        description:
          "Each type and plan of its service with the memory an instance promises: a create (or a resize, by the difference) fits a zone when that is at most the zone's free_mb",
      },
    ),
  },
  { $id: 'Engine', description: 'An engine product hangar runs, and what the API offers on it', examples: [REDIS_ENGINE] },
);

export const ShellRecord = Type.Union(
  [
    Type.Object({
      program: Type.String({ description: 'The shell' }),
      install: Type.String({ description: 'Where to get it' }),
      command: Type.String(),
      args: Type.Array(Type.String()),
      env: Type.Record(Type.String(), Type.String(), {
        description: 'Variables to set: secrets travel here (REDISCLI_AUTH), not in the arguments',
      }),
      line: Type.String({ description: 'The whole command as one line to paste into a POSIX shell' }),
    }),
    Type.Null(),
  ],
  { description: 'The command that opens a shell on the instance; null: its engine has none (it speaks HTTP)' },
);

export const ShellQuery = Type.Object({
  user: Type.Optional(
    Type.String({ minLength: 1, maxLength: 256, description: 'A database user to log in as (mongosh asks for the password)' }),
  ),
  database: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'The database to open and authenticate against' })),
  servicenet: Type.Optional(
    Type.Union([Type.Literal('true'), Type.Literal('false')], {
      description: 'true: the private network address instead of the public one',
    }),
  ),
});
