import { runCeiling } from '../lib/ceiling.js';
import type { Figure } from '../lib/context.js';
import { createActive, deleteAll, portOf } from '../lib/instances.js';
import { probe } from '../lib/probe.js';
import { row } from '../lib/result.js';
import { median } from '../lib/stats.js';
import { now, until } from '../lib/time.js';

interface HaproxyCeiling {
  readonly addMs: number[];
  readonly delMs: number[];
}

export const aclFigure: Figure = {
  name: 'acl',
  title: "ACL add / delete until enforced at the edge: from the API's 200 to a connection from that source admitted / refused",
  ceiling: "the edge's own reaction time: `add acl` / `del acl` on a bare HAProxy's runtime API",
  target: '<= 5 ms median',
  async run(ctx) {
    const { api } = await ctx.opsDeployment();
    const n = ctx.opts.quick ? 5 : 10;
    const [rec] = await createActive(api, ['acl-target']);
    const port = portOf(rec!.connect_string);
    const h = { add: [] as number[], del: [] as number[], addApi: [] as number[], delApi: [] as number[] };
    const c = { add: [] as number[], del: [] as number[] };
    for (let round = 1; round <= ctx.opts.rounds; round++) {
      const dir = ctx.procs.tempDir('haproxy');
      const ceiling = await runCeiling<HaproxyCeiling>(ctx.procs, 'bare-haproxy', [dir, String(n)]);
      await ctx.procs.removeDir(dir);
      c.add.push(median(ceiling.addMs));
      c.del.push(median(ceiling.delMs));

      const add: number[] = [];
      const del: number[] = [];
      const addApi: number[] = [];
      const delApi: number[] = [];
      for (let i = 0; i < n; i++) {
        const source = `127.88.${round}.${i + 1}`;
        if ((await probe(port, rec!.password, source)) !== 'refused') throw new Error(`${source} admitted before its ACL`);
        let t0 = now();
        const created = await api.ok<{ data: string }>('POST', `/v2/instances/${rec!.name}/acls/`, {
          cidr_mask: source,
          description: 'bench',
        });
        let t200 = now();
        addApi.push(t200 - t0);
        await until(
          `${source} admitted`,
          async () => ((await probe(port, rec!.password, source)) === 'admitted' ? true : undefined),
          10_000,
          0,
        );
        add.push(now() - t200);
        t0 = now();
        await api.ok('DELETE', `/v2/instances/${rec!.name}/acls/${created.body.data}/`);
        t200 = now();
        delApi.push(t200 - t0);
        await until(
          `${source} refused`,
          async () => ((await probe(port, rec!.password, source)) === 'refused' ? true : undefined),
          10_000,
          0,
        );
        del.push(now() - t200);
      }
      h.add.push(median(add));
      h.del.push(median(del));
      h.addApi.push(median(addApi));
      h.delApi.push(median(delApi));
      ctx.log(
        `acl round ${round}: add ${median(add).toFixed(2)} ms after 200 (API ${median(addApi).toFixed(0)} ms), delete ${median(del).toFixed(2)} ms (API ${median(delApi).toFixed(0)} ms); edge alone ${median(ceiling.addMs).toFixed(2)} / ${median(ceiling.delMs).toFixed(2)} ms`,
      );
    }
    await deleteAll(api, [rec!.name]);
    const what = 'add acl / del acl on a bare HAProxy runtime API, until a client from the source is admitted / refused';
    return [
      row({
        figure: 'acl',
        metric: 'add: 200 -> admitted',
        unit: 'ms',
        hangar: h.add,
        ceiling: { what, values: c.add },
        target: { kind: 'at-most', value: 5 },
      }),
      row({
        figure: 'acl',
        metric: 'delete: 200 -> refused',
        unit: 'ms',
        hangar: h.del,
        ceiling: { what, values: c.del },
        target: { kind: 'at-most', value: 5 },
      }),
      row({
        figure: 'acl',
        metric: 'add: API answer',
        unit: 'ms',
        hangar: h.addApi,
        ceiling: { what, values: c.add },
        note: 'the API answers once the edge enforces the change (or after 2 s), so "200 -> enforced" is one client connection; the API answer is the whole wait',
      }),
      row({ figure: 'acl', metric: 'delete: API answer', unit: 'ms', hangar: h.delApi, ceiling: { what, values: c.del } }),
    ];
  },
};
