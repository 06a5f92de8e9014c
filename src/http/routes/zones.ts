import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { type AppDeps, callerOf } from '../context.js';
import { Data } from '../schemas/common.js';
import { errorResponses } from '../schemas/error-responses.js';
import { ZONE, ZoneRecord } from '../schemas/zones.js';

/** `GET /v2/zones/`: where instances can be placed, what each zone offers, and how full it is (an addition to the spec). */
export function zoneRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    '/zones/',
    {
      schema: {
        summary: 'Zones with their runtime, services, versions and capacity (an addition to the ObjectRocket API)',
        tags: ['zones'],
        response: { 200: Data(Type.Array(ZoneRecord), [ZONE]), ...errorResponses([]) },
      },
    },
    async (req) => {
      callerOf(req);
      const zones = await deps.services.zones.list();
      return {
        data: zones.map((z) => ({
          name: z.name,
          runtime: z.runtime,
          services: z.services.map((s) => ({
            service: s.service,
            available: s.available,
            types: [...s.types],
            plans: [...s.plans],
            plan_unit: s.planUnit,
            versions: [...s.versions],
            reason: s.reason,
            default_engine: s.defaultEngine,
            engines: s.engines.map((e) => ({
              engine: e.engine,
              available: e.available,
              types: [...e.types],
              versions: [...e.versions],
              reason: e.reason,
              unavailable_versions: e.unavailableVersions.map((v) => ({ version: v.version, reason: v.reason })),
              notes: [...e.notes],
            })),
          })),
          capacity_mb: z.capacityMb,
          allocated_mb: z.allocatedMb,
          free_mb: z.freeMb,
        })),
      };
    },
  );
}
