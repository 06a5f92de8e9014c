import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { runCeiling } from '../lib/ceiling.js';
import type { Figure } from '../lib/context.js';
import { deleteAll, waitOne } from '../lib/instances.js';
import { row, unavailable } from '../lib/result.js';
import { median } from '../lib/stats.js';
import { now } from '../lib/time.js';

/** The version measured: the one a newcomer installs first (the README's walkthrough of engines). */
const VERSION = '5.6.9';
/** The smallest plan, and its heap (an eighth of the plan's GB, at least 512 MB), as hangar gives it. */
const PLAN = 4;
const HEAP_MB = 512;
const ENGINE_USER = 'hangar-engine';

/** What the elasticsearch-node ceiling prints. */
interface NodeCeiling {
  readonly startedMs: number;
  readonly healthyMs: number;
}

/** The engine cache the bench's hangar reads (it runs with no HANGAR_* setting): the default of `hangar engines install`. */
function engineCache(): string {
  if (process.getuid?.() === 0) return '/var/cache/hangar/engines';
  return join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'hangar', 'engines');
}

/** uid and gid of the engine user (made by the bench's hangar at its start when it runs as root), or -1 when not root. */
function engineUser(): [number, number] {
  if (process.getuid?.() !== 0) return [-1, -1];
  const id = (flag: string) => Number(execFileSync('id', [flag, ENGINE_USER], { encoding: 'utf8' }).trim());
  return [id('-u'), id('-g')];
}

const CEILING = `Elasticsearch ${VERSION} from the engine cache started by hand (same Java, heap, settings) until /_cluster/health is green`;

export const elasticsearchFigure: Figure = {
  name: 'elasticsearch',
  title: `create an elasticsearch instance (Elasticsearch ${VERSION}, plan ${PLAN}) until COMPLETED, beside the node's own start by hand`,
  ceiling: `the same node started by hand until its cluster health is green`,
  target: '<= 1.25x the ceiling',
  async run(ctx) {
    const f = 'elasticsearch';
    const install = join(engineCache(), 'elasticsearch', VERSION);
    if (!existsSync(join(install, 'hangar-engine.json'))) {
      return [
        unavailable(
          f,
          'create -> COMPLETED',
          `Elasticsearch ${VERSION} is not in the engine cache ${engineCache()}: hangar engines install elasticsearch@${VERSION}`,
        ),
      ];
    }
    const manifest = readFileSync(join(install, 'hangar-engine.json'), 'utf8');
    // the bench's hangar makes the engine user at its start, which the ceiling's node runs as
    const { api } = await ctx.opsDeployment();
    const [uid, gid] = engineUser();
    const hangarMs: number[] = [];
    const healthyMs: number[] = [];
    const startedMs: number[] = [];
    for (let round = 1; round <= ctx.opts.rounds; round++) {
      const dir = ctx.procs.tempDir('es-node');
      if (uid >= 0) chownSync(dir, uid, gid);
      const c = await runCeiling<NodeCeiling>(ctx.procs, 'elasticsearch-node', [
        dir,
        install,
        manifest,
        String(uid),
        String(gid),
        String(HEAP_MB),
      ]);
      await ctx.procs.removeDir(dir);
      healthyMs.push(c.healthyMs);
      startedMs.push(c.startedMs);

      const name = `es-${round}`;
      const t0 = now();
      await api.ok('POST', '/v2/instances/', {
        name,
        plan: PLAN,
        service: 'elasticsearch',
        type: 'elasticsearch',
        version: VERSION,
        zone: 'US-Dallas',
      });
      hangarMs.push((await waitOne(api, name, 'COMPLETED', 300_000, 20)) - t0);
      ctx.log(
        `elasticsearch round ${round}: COMPLETED after ${hangarMs.at(-1)!.toFixed(0)} ms; by hand, "started" after ${c.startedMs.toFixed(0)} ms, green after ${c.healthyMs.toFixed(0)} ms`,
      );
      await deleteAll(api, [name], 120_000);
    }
    return [
      row({
        figure: f,
        metric: `${VERSION}: create -> COMPLETED`,
        unit: 'ms',
        hangar: hangarMs,
        ceiling: { what: CEILING, values: healthyMs },
        target: { kind: 'ratio-at-most', value: 1.25 },
        note: `the node by hand logged "started" after ${median(startedMs).toFixed(0)} ms (median), and answered green after ${median(healthyMs).toFixed(0)} ms; hangar's create writes the node's files, starts it as the engine user, waits for its health through loopback, configures the edge and probes through it`,
      }),
    ];
  },
};
