import type { Zone } from '../../client/index.js';
import { REMOTE_OPTIONS, type ClientCommand } from '../client-command.js';
import { json } from '../io.js';
import { table } from '../table.js';

const mb = (n: number | null): string => (n === null ? 'unlimited' : `${n} MB`);

/** `redis: redis 7.0.15/7.0, valkey 8.0.1/8.0`: each engine that can run, with its versions (the default first). */
function servicesCell(s: Zone['services'][number]): string {
  const engines = (s.engines ?? []).filter((e) => e.available);
  if (engines.length === 0) return `${s.service}: unavailable`;
  return `${s.service}: ${engines.map((e) => `${e.engine} ${e.versions.join('/')}`).join(', ')}`;
}

export const zoneCommands: readonly ClientCommand[] = [
  {
    kind: 'client',
    name: 'zones ls',
    summary: 'The zones of this hangar: runtime, services with their engines and versions, capacity and free memory',
    args: [],
    remote: true,
    options: REMOTE_OPTIONS,
    examples: ['hangar zones ls', 'hangar zones ls --json'],
    details:
      "Each service lists the engines that can run there with their versions, the one a create without --engine takes first (--json says why an engine is unavailable). Capacity is the memory the instances of a zone may promise (redis: twice the plan, for primary and replica); free is what a create or resize may still promise there. The local zones of one host share the host's memory: their capacity is marked shared, and a line below the table says what all of them promise together (capacity = promised + free for the pool, not for each zone).",
    async run(ctx) {
      const zones = await ctx.connection().client.listZones();
      if (ctx.opts.json === true) {
        ctx.io.out(json(zones));
        return;
      }
      // a capacity several zones share (the local zones of one host) is shown once, as such
      const shared = (z: Zone) => (z.capacity_pool && z.capacity_pool.zones.length > 1 ? z.capacity_pool : undefined);
      const pools = new Map(zones.flatMap((z) => (shared(z) ? [[shared(z)!.name, shared(z)!] as const] : [])));
      ctx.io.out(
        table(
          ['ZONE', 'RUNTIME', 'SERVICES', 'CAPACITY', 'ALLOCATED', 'FREE'],
          zones.map((z) => [
            z.name,
            z.runtime,
            z.services.map(servicesCell).join('; '),
            shared(z) ? `${mb(z.capacity_mb)} shared*` : mb(z.capacity_mb),
            `${z.allocated_mb} MB`,
            mb(z.free_mb),
          ]),
        ),
      );
      for (const p of pools.values()) {
        ctx.io.out(
          `* shared by ${p.zones.join(', ')} (${p.name.replace(/ \(.*\)$/, '')}): ${p.capacity_mb} MB, of which ${p.allocated_mb} MB promised and ${p.free_mb} MB free`,
        );
      }
    },
  },
];
