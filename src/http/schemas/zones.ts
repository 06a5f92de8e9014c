import { Type } from 'typebox';
import { SERVICES } from '../../domain/catalog.js';
import { ENGINE_NAMES } from '../../engines/products.js';

export const ZONE = {
  name: 'US-Dallas',
  runtime: 'local',
  services: [
    {
      service: 'redis',
      available: true,
      types: ['redis_ha_instance'],
      plans: [500, 1000, 2500, 5000, 10000, 20000, 50000, 75000, 100000],
      plan_unit: 'MB',
      versions: ['7.0.15', '7.0'],
      reason: null,
      default_engine: 'redis',
      engines: [
        {
          engine: 'redis',
          available: true,
          types: ['redis_ha_instance'],
          versions: ['7.0.15', '7.0'],
          reason: null,
          unavailable_versions: [],
          notes: [],
        },
        {
          engine: 'valkey',
          available: true,
          types: ['redis_ha_instance'],
          versions: ['8.0.1', '8.0'],
          reason: null,
          unavailable_versions: [],
          notes: [],
        },
      ],
    },
  ],
  capacity_mb: 22_527,
  allocated_mb: 2000,
  free_mb: 20_527,
};

const nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T, description: string) =>
  Type.Union([t, Type.Null()], { description });

export const ZoneRecord = Type.Object(
  {
    name: Type.String({ description: 'The zone, as a create body names it' }),
    runtime: Type.String({ description: 'Where its instances run: local (this host), emulated, or kubernetes' }),
    services: Type.Array(
      Type.Object({
        service: Type.String({ description: SERVICES.join(', ') }),
        available: Type.Boolean({ description: 'Whether instances of the service can be created here now' }),
        types: Type.Array(Type.String(), {
          description: "Instance types a create can get here: those its available engines run (all of the service's when none can run)",
        }),
        plans: Type.Array(Type.Integer()),
        plan_unit: Type.Union([Type.Literal('MB'), Type.Literal('GB')], { description: 'What a plan number counts' }),
        versions: Type.Array(Type.String(), {
          description: 'Versions a create body without `engine` may name: those of the default engine (empty when unavailable)',
        }),
        reason: nullable(Type.String(), 'Why the service is unavailable here, naming what is missing'),
        default_engine: nullable(Type.String(), 'The engine a create without `engine` gets: the first available here'),
        engines: Type.Array(
          Type.Object({
            engine: Type.String({ description: ENGINE_NAMES.join(', ') }),
            available: Type.Boolean(),
            types: Type.Array(Type.String(), { description: 'Instance types this engine runs' }),
            versions: Type.Array(Type.String(), { description: 'Versions a create body naming this engine may give' }),
            reason: nullable(Type.String(), 'Why the engine cannot run here, naming what is missing'),
            unavailable_versions: Type.Array(
              Type.Object({
                version: Type.String(),
                reason: Type.String({ description: 'Why it is not served here, and what would make it so where anything can' }),
              }),
              { description: 'Versions the engine knows of (the ObjectRocket API lists them) that a create is refused here (422)' },
            ),
            notes: Type.Array(Type.String(), {
              description: 'What else to know of the engine here (a listener the edge answers itself: Kibana not installed)',
            }),
          }),
          { description: "The service's engines, in the order a create without `engine` tries them" },
        ),
      }),
      { description: 'The services the zone offers' },
    ),
    capacity_mb: nullable(Type.Integer(), "Memory the zone's instances may promise, in MB; null: unlimited"),
    allocated_mb: Type.Integer({ description: "Memory the zone's instances promise now (their plans), in MB" }),
    free_mb: nullable(Type.Integer(), 'Memory a new instance or a resize may still promise here, in MB; null: unlimited'),
  },
  { $id: 'Zone', description: 'A zone: a placement target with what it offers and how full it is', examples: [ZONE] },
);
