import { Type } from 'typebox';
import { SERVICES } from '../../domain/catalog.js';

export const ZONE = {
  name: 'US-Dallas',
  runtime: 'local',
  services: [
    {
      service: 'redis',
      available: true,
      types: ['redis_ha_instance'],
      plans: [500, 1000, 2500, 5000, 10000, 20000, 50000, 75000, 100000],
      versions: ['7.0.15', '7.0'],
      reason: null,
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
        types: Type.Array(Type.String()),
        plans: Type.Array(Type.Integer()),
        versions: Type.Array(Type.String(), { description: 'Versions a create body may name (empty when unavailable)' }),
        reason: nullable(Type.String(), 'Why the service is unavailable here, naming what is missing'),
      }),
      { description: 'The services the zone offers' },
    ),
    capacity_mb: nullable(Type.Integer(), "Memory the zone's instances may promise, in MB; null: unlimited"),
    allocated_mb: Type.Integer({ description: "Memory the zone's instances promise now (their plans), in MB" }),
    free_mb: nullable(Type.Integer(), 'Memory a new instance or a resize may still promise here, in MB; null: unlimited'),
  },
  { $id: 'Zone', description: 'A zone: a placement target with what it offers and how full it is', examples: [ZONE] },
);
