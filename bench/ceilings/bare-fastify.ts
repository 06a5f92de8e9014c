/**
 * Ceiling of the list and get figures: a bare Fastify server (no auth, no store, no schema, no
 * log) answering the very records hangar answered, encoded with JSON.stringify per request.
 * Usage: node bare-fastify.js RECORDS.json  (`{"list": [...], "one": {...}}`; prints `listening <port>`,
 * serves until SIGTERM)
 */
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

const file = process.argv[2];
if (!file) throw new Error('usage: bare-fastify.js RECORDS.json');
const records = JSON.parse(readFileSync(file, 'utf8')) as { list: unknown[]; one: unknown };

const app = Fastify({ logger: false });
app.get('/list', async (_req, reply) => reply.type('application/json; charset=utf-8').send(JSON.stringify({ data: records.list })));
app.get('/one', async (_req, reply) => reply.type('application/json; charset=utf-8').send(JSON.stringify({ data: records.one })));
await app.listen({ port: 0, host: '127.0.0.1' });
const address = app.server.address();
process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : 0}\n`);
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
