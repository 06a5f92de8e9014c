import type { Figure } from '../lib/context.js';
import { compareHttp } from '../lib/http-compare.js';

export const getFigure: Figure = {
  name: 'get',
  title: 'GET /v2/instances/<name>/ (autocannon, 10 and 100 connections)',
  ceiling: 'the same bare Fastify server answering one record',
  target: 'throughput ratio >= 0.7',
  async run(ctx) {
    const { api, records } = await ctx.listDeployment();
    const name = records[0]!.name;
    const one = (await api.ok<{ data: unknown }>('GET', `/v2/instances/${name}/`)).body.data;
    return compareHttp(ctx, {
      figure: 'get',
      hangarUrl: `${api.url}/v2/instances/${name}/`,
      headers: api.headers,
      barePath: '/one',
      records: { list: [one], one },
      connections: [10, 100],
      reqPerSecTarget: { kind: 'ratio-at-least', value: 0.7 },
    });
  },
};
