import type { Figure } from '../lib/context.js';
import { LIST_SIZE } from '../lib/context.js';
import { compareHttp } from '../lib/http-compare.js';

export const listFigure: Figure = {
  name: 'list',
  title: `GET /v2/instances/ of an account with ${LIST_SIZE} instances (autocannon, 10 and 100 connections)`,
  ceiling: `a bare Fastify server answering the same ${LIST_SIZE} records with JSON.stringify`,
  target: 'throughput ratio >= 1.0',
  async run(ctx) {
    const { api } = await ctx.listDeployment();
    const list = (await api.ok<{ data: unknown[] }>('GET', '/v2/instances/')).body.data;
    if (list.length !== LIST_SIZE) throw new Error(`the list account has ${list.length} instances, not ${LIST_SIZE}`);
    return compareHttp(ctx, {
      figure: 'list',
      hangarUrl: `${api.url}/v2/instances/`,
      headers: api.headers,
      barePath: '/list',
      records: { list, one: list[0] },
      connections: [10, 100],
      reqPerSecTarget: { kind: 'ratio-at-least', value: 1.0 },
    });
  },
};
