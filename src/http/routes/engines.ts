import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Static } from 'typebox';
import { Type } from 'typebox';
import { PLANS } from '../../domain/catalog.js';
import type { Product, ShellTarget } from '../../engines/product.js';
import { PRODUCTS, productNamed } from '../../engines/products.js';
import { shellLine } from '../../lib/shell-line.js';
import { type AppDeps, callerOf } from '../context.js';
import { Data, NameParams } from '../schemas/common.js';
import { REDIS_ENGINE, EngineRecord, ShellQuery, ShellRecord } from '../schemas/engines.js';
import { WITH_PATH, errorResponses } from '../schemas/error-responses.js';
import { instanceRecord } from '../serializers.js';

/** A product as `GET /v2/engines/` lists it. */
export function engineRecord(p: Product): Static<typeof EngineRecord> {
  return {
    engine: p.name,
    service: p.service,
    label: p.label,
    plan_unit: p.planUnit,
    done_state: p.doneState,
    types: [...p.types],
    features: {
      password: p.features.password,
      redis_api: p.features.redisApi,
      database_users: p.features.databaseUsers,
      encryption: p.features.encryption,
      storage_engines: p.features.storageEngines ? [...p.features.storageEngines] : null,
      acl_groups: [...p.features.aclGroups],
    },
    shell: p.shell ? { program: p.shell.program, install: p.shell.install } : null,
    plans: p.types.flatMap((type) =>
      PLANS[p.service].map((plan) => ({
        type,
        plan,
        promised_mb: p.promisedMemoryMb(type, plan),
        memory_rule: p.memoryRule(type, plan),
      })),
    ),
  };
}

/**
 * `GET /v2/engines/`: the engine products hangar runs and what the API offers on each (an
 * addition to the spec), so that clients (the console) decide by features instead of by product
 * names; and `GET /v2/instances/{name}/shell`: the command that opens an instance's shell.
 */
export function engineRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const host = deps.config.advertiseHost;
  const records = PRODUCTS.map(engineRecord);

  app.get(
    '/engines/',
    {
      schema: {
        summary: 'The engine products, with their plan unit, done state, features and the memory each plan promises',
        description:
          'The same for every account; which zones can run each one now, and with which versions, is `GET /v2/zones/`. An addition to the ObjectRocket API.',
        tags: ['zones'],
        response: { 200: Data(Type.Array(EngineRecord), [REDIS_ENGINE]), ...errorResponses([]) },
      },
    },
    async (req) => {
      callerOf(req);
      return { data: records };
    },
  );

  app.get(
    '/instances/:instance_name/shell',
    {
      schema: {
        summary: 'The command that opens a shell on an instance (redis-cli, mongosh), as hangar connect runs it',
        description:
          'The password of an engine that has one travels in a variable of `env`, not in the arguments. Null for an engine without a shell. An addition to the ObjectRocket API.',
        tags: ['instances'],
        params: NameParams,
        querystring: ShellQuery,
        response: {
          200: Data(ShellRecord, {
            program: 'redis-cli',
            install: 'Debian/Ubuntu: apt install redis-tools; macOS: brew install redis',
            command: 'redis-cli',
            args: ['-h', '203.0.113.10', '-p', '10001'],
            env: { REDISCLI_AUTH: '4c2a9d0e5b1f47e3a8c6d2b0f9e1a7c3' },
            line: 'REDISCLI_AUTH=4c2a9d0e5b1f47e3a8c6d2b0f9e1a7c3 redis-cli -h 203.0.113.10 -p 10001',
          }),
          ...errorResponses([...WITH_PATH, 'INVALID_VALUE', 'INVALID_BODY', 'INSTANCE_NOT_FOUND']),
        },
      },
    },
    async (req) => {
      const inst = await deps.services.instances.get(callerOf(req), req.params.instance_name);
      const shell = productNamed(inst.engine).shell;
      if (!shell) return { data: null };
      const q = req.query;
      const cmd = shell.command(
        instanceRecord(inst, host) as ShellTarget,
        {
          ...(q.user ? { user: q.user } : {}),
          ...(q.database ? { db: q.database } : {}),
          ...(q.servicenet === 'true' ? { servicenet: true } : {}),
        },
        [],
      );
      return {
        data: {
          program: shell.program,
          install: shell.install,
          command: cmd.command,
          args: [...cmd.args],
          env: { ...cmd.env },
          line: shellLine(cmd),
        },
      };
    },
  );
}
