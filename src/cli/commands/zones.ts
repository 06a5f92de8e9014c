import { REMOTE_OPTIONS, type ClientCommand } from '../client-command.js';
import { json } from '../io.js';
import { table } from '../table.js';

const mb = (n: number | null): string => (n === null ? 'unlimited' : `${n} MB`);

export const zoneCommands: readonly ClientCommand[] = [
  {
    kind: 'client',
    name: 'zones ls',
    summary: 'The zones of this hangar: runtime, services and versions offered, capacity and free memory',
    args: [],
    remote: true,
    options: REMOTE_OPTIONS,
    examples: ['hangar zones ls', 'hangar zones ls --json'],
    details:
      'Capacity is the memory the instances of a zone may promise (redis: twice the plan, for primary and replica); free is what a create or resize may still promise there.',
    async run(ctx) {
      const zones = await ctx.connection().client.listZones();
      if (ctx.opts.json === true) {
        ctx.io.out(json(zones));
        return;
      }
      ctx.io.out(
        table(
          ['ZONE', 'RUNTIME', 'SERVICES', 'CAPACITY', 'ALLOCATED', 'FREE'],
          zones.map((z) => [
            z.name,
            z.runtime,
            z.services.map((s) => (s.available ? `${s.service} ${s.versions.join('/')}` : `${s.service} (unavailable)`)).join(', '),
            mb(z.capacity_mb),
            `${z.allocated_mb} MB`,
            mb(z.free_mb),
          ]),
        ),
      );
    },
  },
];
