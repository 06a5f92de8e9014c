import { execFile, execFileSync, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { accessSync, chmodSync, constants, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { delimiter, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_COMMANDS, OPERATOR_COMMANDS } from '../../src/cli/main.js';
import { TerminalError } from '../../src/domain/errors.js';
import { esBody, mongoBody, redisBody } from '../helpers/bodies.js';
import { type Account, PASSWORD, type TestHangar, startTestHangar } from '../helpers/hangar.js';
import { BIN, assertBuilt, removeTempDirs, runCli, runCliInProcess, startCli, tempDir } from './run-cli.js';

const REDIS = ['--service', 'redis', '--version', '7.0.15', '--zone', 'US-Dallas'];

/** Where a command is on PATH, as a shell finds it. */
function onPath(command: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    try {
      accessSync(join(dir, command), constants.X_OK);
      return join(dir, command);
    } catch {
      /* next */
    }
  }
  return null;
}

/**
 * Runs the binary in a pseudo-terminal (util-linux `script`), answering what it asks:
 * `answer(output)` returns the text to type next, or undefined.
 */
function inTerminal(args: string[], env: Record<string, string>, answer: (output: string) => string | undefined = () => undefined) {
  const line = [process.execPath, BIN, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const child = spawn('script', ['-qfec', line, '/dev/null'], {
    env: { PATH: process.env.PATH ?? '', TERM: 'xterm', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c: Buffer) => {
    output += c.toString();
    const typed = answer(output);
    if (typed !== undefined) child.stdin.write(typed);
  });
  const done = new Promise<{ code: number; output: string }>((resolve) =>
    child.once('close', (code) => resolve({ code: code ?? -1, output })),
  );
  return { output: () => output, done };
}

/** Whether something accepts connections on 127.0.0.1:port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

// A test here runs the CLI (a Node process each time) up to some forty times: on a busy 2-core
// machine a run can take several seconds, which the 30 s default does not allow for.
describe('the hangar CLI, run as a user runs it, against a real hangar', { timeout: 180_000 }, () => {
  let th: TestHangar;
  let alice: Account;
  let home: string;
  const cli = (args: string[], opts: { env?: Record<string, string>; input?: string } = {}) => runCli(args, { home, ...opts });

  beforeAll(async () => {
    assertBuilt();
    th = await startTestHangar({ listen: true });
    alice = await th.signup();
    home = tempDir('hangar-cli-home-');
  });
  afterAll(async () => {
    await th?.close();
    removeTempDirs();
  });

  it('from zero to a running redis instance: login, create (with progress), ACL, show, stats, connect, resize, rm', async () => {
    const before = await cli(['instances', 'ls']);
    expect(before.code).toBe(4);
    expect(before.stderr).toContain('run hangar login');

    const login = await cli(['login', '--url', th.url, '--login', alice.login, '--password-stdin'], { input: `${PASSWORD}\n` });
    expect(login.code, login.stderr).toBe(0);
    expect(login.stdout).toContain(`Logged in to ${th.url} as ${alice.login}`);
    const file = join(home, '.config', 'hangar', 'config.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(home, '.config', 'hangar')).mode & 0o777).toBe(0o700);
    const saved = JSON.parse(readFileSync(file, 'utf8'));
    expect(saved).toMatchObject({ url: th.url, login: alice.login, token: expect.any(String) });
    expect(readFileSync(file, 'utf8')).not.toContain(PASSWORD);

    expect((await cli(['instances', 'ls'])).stdout).toContain('No instances');

    // The build is held so that the live line shows it BUILDING before it turns ACTIVE.
    const release = th.hold();
    const create = startCli(['instances', 'create', 'cache', ...REDIS], { home });
    try {
      await until('the CLI to show BUILDING', () => create.stderr().includes('cache: BUILDING ('));
    } finally {
      release();
    }
    const created = await create.done;
    expect(created.code, created.stderr).toBe(0);
    expect(created.stderr).toMatch(/cache: BUILDING \(\d+\.\ds\)\n/);
    expect(created.stderr).toMatch(/cache: ACTIVE after \d+\.\ds\n/);
    const record = (await alice.get('/v2/instances/cache/')).body.data;
    expect(created.stdout).toContain('state:');
    expect(created.stdout).toContain(record.connect_string);

    const acl = await cli(['acls', 'add', 'cache', '--my-ip']);
    expect(acl.code, acl.stderr).toBe(0);
    expect(acl.stdout).toContain('admits 127.0.0.1 to cache');
    expect((await alice.get('/v2/instances/cache/acls/')).body.data.map((a: { cidr_mask: string }) => a.cidr_mask)).toEqual(['127.0.0.1']);

    const show = await cli(['instances', 'show', 'cache']);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/state:\s+ACTIVE/);
    expect(show.stdout).toContain(record.password);
    expect(JSON.parse((await cli(['instances', 'show', 'cache', '--json'])).stdout)).toEqual(record);

    const stats = await cli(['redis', 'stats', 'cache']);
    expect(stats.code).toBe(0);
    expect(stats.stdout).toMatch(/maxmemory-policy:\s+noeviction/);
    expect(stats.stdout).toMatch(/connected replicas:\s+1/);
    expect(JSON.parse((await cli(['redis', 'stats', 'cache', '--json'])).stdout)).toMatchObject({
      plan: 500,
      connectedSlaves: 1,
      maxClients: '10000',
    });

    const port = new URL(record.connect_string).port;
    const print = await cli(['connect', 'cache', '--print']);
    expect(print.stdout.trim()).toBe(`REDISCLI_AUTH=${record.password} redis-cli -h 127.0.0.1 -p ${port}`);
    expect((await cli(['connect', 'cache', '--print', '--', 'INFO', 'memory'])).stdout.trim()).toBe(
      `REDISCLI_AUTH=${record.password} redis-cli -h 127.0.0.1 -p ${port} INFO memory`,
    );
    const printed = JSON.parse((await cli(['connect', 'cache', '--print', '--json'])).stdout);
    expect(printed).toEqual({
      command: 'redis-cli',
      args: ['-h', '127.0.0.1', '-p', port],
      env: { REDISCLI_AUTH: record.password },
      path: onPath('redis-cli'),
    });

    // The emulated runtime runs no engine: a real redis-server, on the instance's address and with
    // its password, shows that what connect runs reaches it and authenticates.
    const redis = spawn(
      'redis-server',
      ['--port', port, '--bind', '127.0.0.1', '--requirepass', record.password, '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    try {
      await until('redis-server to listen', () => listening(Number(port)));
      const ping = await cli(['connect', 'cache', '--', 'PING']);
      expect(ping.code, ping.stderr).toBe(0);
      expect(ping.stdout.trim()).toBe('PONG');
    } finally {
      redis.kill();
      await new Promise((r) => (redis.exitCode !== null ? r(null) : redis.once('exit', r)));
    }

    const resize = await cli(['redis', 'resize', 'cache', '--plan', '1000']);
    expect(resize.code, resize.stderr).toBe(0);
    expect(resize.stdout).toContain('runs on 1000 MB');
    expect(resize.stderr).toMatch(/cache: ACTIVE after/);

    const rm = await cli(['instances', 'rm', 'cache', '--yes']);
    expect(rm.code, rm.stderr).toBe(0);
    expect(rm.stderr).toMatch(/cache: deleted after/);
    expect((await alice.get('/v2/instances/cache/')).status).toBe(404);
    const gone = await cli(['instances', 'show', 'cache']);
    expect(gone.code).toBe(3);
    expect(gone.stderr).toContain('instance "cache" not found');
  });

  describe('in a terminal', () => {
    it('asks for the login and the password, without echoing the password', async () => {
      const h = tempDir('hangar-cli-tty-');
      const asked = new Set<string>();
      const once = (out: string, prompt: string, text: string) => {
        if (!out.includes(prompt) || asked.has(prompt)) return undefined;
        asked.add(prompt);
        return text;
      };
      const res = await inTerminal(
        ['login', '--url', th.url],
        { HOME: h },
        (out) => once(out, 'Login: ', `${alice.login}\r`) ?? once(out, 'Password: ', `${PASSWORD}\r`),
      ).done;
      expect(res.code, res.output).toBe(0);
      expect(res.output).toContain(`Login: ${alice.login}`);
      expect(res.output).toContain('Logged in to');
      expect(res.output).not.toContain(PASSWORD);
    });

    it('rewrites the progress line in place', async () => {
      const release = th.hold();
      const run = inTerminal(['instances', 'create', 'tty', ...REDIS], {
        HOME: home,
        XDG_CONFIG_HOME: join(home, '.config'),
        HANGAR_URL: th.url,
        HANGAR_LOGIN: alice.login,
        HANGAR_PASSWORD: PASSWORD,
      });
      try {
        await until('the live line', () => /\r\x1b\[2K\S tty: BUILDING \(\d+\.\ds\)/.test(run.output()));
      } finally {
        release();
      }
      const res = await run.done;
      expect(res.code, res.output).toBe(0);
      expect(res.output).toMatch(/\r\x1b\[2Ktty: ACTIVE after \d+\.\ds\r?\n/);
      // The state line never got a line of its own.
      expect(res.output).not.toMatch(/BUILDING \(\d+\.\ds\)\r?\n/);
    });
  });

  describe('long work', () => {
    it('--no-wait answers at once with the record, REQUESTED', async () => {
      const release = th.hold();
      try {
        const res = await cli(['instances', 'create', 'later', ...REDIS, '--no-wait', '--json'], {
          env: { HANGAR_URL: th.url, HANGAR_LOGIN: alice.login, HANGAR_PASSWORD: PASSWORD },
        });
        expect(res.code, res.stderr).toBe(0);
        expect(JSON.parse(res.stdout)).toMatchObject({ name: 'later', state: 'REQUESTED' });
        // no progress line: only the word that no address is admitted yet
        expect(res.stderr.trim().split('\n')).toEqual([expect.stringContaining('no address can connect to "later" yet')]);
      } finally {
        release();
      }
    });

    it('--timeout gives up with exit code 5, and says hangar keeps working', async () => {
      const release = th.hold();
      try {
        const res = await cli(['instances', 'create', 'slow', ...REDIS, '--timeout', '0.5', '--url', th.url], {
          env: { HANGAR_LOGIN: alice.login, HANGAR_PASSWORD: PASSWORD },
        });
        expect(res.code).toBe(5);
        expect(res.stderr).toMatch(/instance "slow" is still (REQUESTED|BUILDING) after/);
        expect(res.stderr).toContain('keeps working');
      } finally {
        release();
      }
    });

    it('an instance that turns FAILED: exit code 1 with the reason', async () => {
      const restore = th.runtime.failWith(new TerminalError('the engine cannot start: disk full'));
      try {
        const res = await cli(['instances', 'create', 'doomed', ...REDIS, '--url', th.url], {
          env: { HANGAR_LOGIN: alice.login, HANGAR_PASSWORD: PASSWORD },
        });
        expect(res.code).toBe(1);
        expect(res.stderr).toContain('instance "doomed" FAILED: the engine cannot start: disk full');
      } finally {
        restore();
      }
    });
  });

  describe('every command', () => {
    const env = () => ({ HANGAR_URL: th.url, HANGAR_LOGIN: alice.login, HANGAR_PASSWORD: PASSWORD });
    const run = (args: string[], input?: string) =>
      runCli(args, { home: tempDir('hangar-cli-env-'), env: env(), ...(input !== undefined ? { input } : {}) });

    beforeAll(async () => {
      await alice.ready(redisBody('r1'));
      await alice.ready(mongoBody('m1'));
      await alice.ready(esBody('e1'));
    });

    it('instances ls as a table, as JSON and as names', async () => {
      const table = await run(['instances', 'ls']);
      expect(table.stdout.split('\n')[0]).toMatch(/^NAME\s+SERVICE\s+TYPE\s+PLAN\s+VERSION\s+ZONE\s+STATE\s+CREATED$/);
      expect(table.stdout).toMatch(/\nr1\s+redis\s+redis_ha_instance\s+500\s+7\.0\.15\s+US-Dallas\s+ACTIVE/);
      expect((JSON.parse((await run(['instances', 'ls', '--json'])).stdout) as { name: string }[]).map((i) => i.name)).toEqual(
        expect.arrayContaining(['r1', 'm1', 'e1']),
      );
      expect((await run(['instances', 'ls', '-q'])).stdout.split('\n')).toEqual(expect.arrayContaining(['r1', 'm1', 'e1']));
    });

    it('instances create of mongodb and elasticsearch, with ACLs from the start', async () => {
      const m = await run([
        'instances',
        'create',
        'm2',
        '--service',
        'mongodb',
        '--type',
        'mongodb_singledb',
        '--version',
        '3.4.2',
        '--zone',
        'US-West',
        '--acl',
        '198.51.100.0/24',
        '--json',
      ]);
      expect(m.code, m.stderr).toBe(0);
      expect(JSON.parse(m.stdout)).toMatchObject({ name: 'm2', state: 'ACTIVE', type: 'mongodb_singledb' });
      expect((await alice.get('/v2/instances/m2/acls/')).body.data[0].cidr_mask).toBe('198.51.100.0/24');
      const e = await run([
        'instances',
        'create',
        'e2',
        '--service',
        'elasticsearch',
        '--version',
        '6.4.1',
        '--zone',
        'US-Dallas',
        '--my-ip',
      ]);
      expect(e.code, e.stderr).toBe(0);
      expect((await alice.get('/v2/instances/e2/acls/')).body.data[0].cidr_mask).toBe('127.0.0.1');
      expect(e.stderr).toContain('e2: COMPLETED after');
      expect(e.stdout).toMatch(/https:\s+https:\/\//);
    });

    it('instances rename, and rm --no-wait', async () => {
      await alice.ready(redisBody('old'));
      const rename = await run(['instances', 'rename', 'old', 'new']);
      expect(rename.code).toBe(0);
      expect(rename.stdout).toContain('renamed to "new"');
      const rm = await run(['instances', 'rm', 'new', '--yes', '--no-wait', '--json']);
      expect(rm.code).toBe(0);
      expect(JSON.parse(rm.stdout)).toMatchObject({ name: 'new', deleted: false });
      await alice.waitGone('new');
    });

    /** GET requests answered on a route template so far, from /metrics. */
    const served = async (route: string) => {
      const text = await (await fetch(`${th.url}/metrics`)).text();
      const lines = text.split('\n').filter((l) => l.startsWith(`hangar_http_requests_total{method="GET",route="${route}"`));
      return lines.reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
    };
    const openStreams = async () => Number(/^hangar_event_streams (\d+)/m.exec(await (await fetch(`${th.url}/metrics`)).text())?.[1] ?? 0);

    it('instances create follows its operation on the event stream instead of polling the instance', async () => {
      const before = await served('/v2/instances/:instance_name/');
      const release = th.hold();
      const create = startCli(['instances', 'create', 'streamed', ...REDIS], { home: tempDir('hangar-cli-env-'), env: env() });
      try {
        await until(
          'the CLI to follow the stream while the build is held',
          async () => create.stderr().includes('streamed: BUILDING (') && (await openStreams()) >= 1,
        );
      } finally {
        release();
      }
      const done = await create.done;
      expect(done.code, done.stderr).toBe(0);
      expect(done.stderr).toMatch(/streamed: ACTIVE after \d+\.\ds\n/);
      // the record once when it starts, once at the end: no polling in between
      expect((await served('/v2/instances/:instance_name/')) - before).toBeLessThanOrEqual(2);
      // redis resize and instances rm follow theirs too
      const resize = await run(['redis', 'resize', 'streamed', '--plan', '1000']);
      expect(resize.code, resize.stderr).toBe(0);
      expect(resize.stdout).toContain('runs on 1000 MB');
      const rm = await run(['instances', 'rm', 'streamed', '--yes']);
      expect(rm.code, rm.stderr).toBe(0);
      expect(rm.stderr).toMatch(/streamed: deleted after/);
    });

    it('operations ls, show, wait, cancel', async () => {
      const ls = await run(['operations', 'ls', '--instance', 'r1']);
      expect(ls.code, ls.stderr).toBe(0);
      expect(ls.stdout.split('\n')[0]).toMatch(/^ID\s+KIND\s+INSTANCE\s+STATE\s+CREATED\s+LAST STEP$/);
      expect(ls.stdout).toMatch(/create\s+r1\s+SUCCEEDED/);
      const listed = JSON.parse((await run(['operations', 'ls', '--instance', 'r1', '--kind', 'create', '--json'])).stdout);
      expect(listed.operations).toHaveLength(1);
      const op = listed.operations[0];
      const show = await run(['operations', 'show', op.id]);
      expect(show.stdout).toMatch(/state:\s+SUCCEEDED/);
      expect(show.stdout).toMatch(/steps:\n\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+recorded/);
      const wait = await run(['operations', 'wait', op.id, '--json']);
      expect(wait.code, wait.stderr).toBe(0);
      expect(JSON.parse(wait.stdout)).toMatchObject({ id: op.id, state: 'SUCCEEDED' });
      const refused = await run(['operations', 'cancel', op.id]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('SUCCEEDED already');
      expect((await run(['operations', 'show', '0123456789abcdef01234567'])).code).toBe(3);
      expect((await run(['operations', 'ls', '--limit', '0'])).code).toBe(2);
      const account = (await alice.get('/v2/whoami/')).body.data.account_id;
      const backup = await th.hangar.operations.start({ kind: 'backup', instance: null, account });
      const cancel = await run(['operations', 'cancel', backup.id]);
      expect(cancel.code, cancel.stderr).toBe(0);
      expect(cancel.stdout).toContain('is CANCELLED');
      const waitCancelled = await run(['operations', 'wait', backup.id]);
      expect(waitCancelled.code).toBe(1);
      expect(waitCancelled.stderr).toContain(`operation ${backup.id} CANCELLED`);
    });

    it('events lists the audit log; --follow prints the events as they happen, and resumes with --since', async () => {
      const log = await run(['events', '--limit', '5']);
      expect(log.code, log.stderr).toBe(0);
      expect(log.stdout.split('\n')[0]).toMatch(/^ID\s+WHEN\s+ACTION\s+TARGET\s+OUTCOME\s+FROM$/);
      expect((await run(['events', '--instance', 'r1'])).code).toBe(2);
      // the create's operation.created and its next event (operation.succeeded, or a progress first when its pass is long)
      const follow = startCli(['events', '--follow', '--json', '--kind', 'operation', '--count', '2'], {
        home: tempDir('hangar-cli-env-'),
        env: env(),
      });
      await until('the follower to connect', () => follow.stderr().includes('following the events of this account'));
      await alice.post('/v2/instances/', redisBody('followed'));
      const res = await follow.done;
      expect(res.code, res.stderr).toBe(0);
      const events = res.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(events).toHaveLength(2);
      expect(events[0]).toMatchObject({ kind: 'operation.created', instance_name: 'followed', data: { kind: 'create', state: 'PENDING' } });
      expect(events.every((e: { kind: string }) => e.kind.startsWith('operation.'))).toBe(true);
      const text = await run(['events', '-f', '--since', String(events[0].id - 1), '--kind', 'operation', '--count', '1']);
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toMatch(
        new RegExp(
          `^\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d\\s+${events[0].id}\\s+operation\\.created\\s+followed\\s+create [0-9a-f]{24} PENDING recorded`,
        ),
      );
      await alice.waitFor('followed', (r) => r?.state === 'ACTIVE');
    });

    it('webhooks add, ls, deliveries, rotate, rm', async () => {
      const add = await run(['webhooks', 'add', 'https://93.184.215.14/hook', '--kind', 'operation.failed', '--description', 'ci']);
      expect(add.code, add.stderr).toBe(0);
      expect(add.stderr).toContain('shown this once');
      const id = /^id:\s+([0-9a-f]{24})$/m.exec(add.stdout)![1]!;
      expect(add.stdout).toMatch(/^secret:\s+whsec_\S+$/m);
      const ls = await run(['webhooks', 'ls']);
      expect(ls.stdout).toMatch(new RegExp(`${id}\\s+https://93\\.184\\.215\\.14/hook\\s+operation\\.failed`));
      expect(ls.stdout).not.toContain('whsec_');
      const deliveries = await run(['webhooks', 'deliveries', id]);
      expect(deliveries.code, deliveries.stderr).toBe(0);
      const rotated = await run(['webhooks', 'rotate', id, '--json']);
      expect(JSON.parse(rotated.stdout).secret).toMatch(/^whsec_/);
      expect((await run(['webhooks', 'rm', id])).code).toBe(0);
      expect((await run(['webhooks', 'rm', id])).code).toBe(3);
      const refused = await run(['webhooks', 'add', 'https://10.0.0.7/hook']);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('private address');
    });

    it('acls ls, add, rm', async () => {
      const add = await run(['acls', 'add', 'r1', '203.0.113.0/24', '--description', 'office', '--json']);
      expect(add.code, add.stderr).toBe(0);
      const { id } = JSON.parse(add.stdout);
      const ls = await run(['acls', 'ls', 'r1']);
      expect(ls.stdout).toMatch(new RegExp(`${id}\\s+203\\.0\\.113\\.0/24\\s+\\d+\\s+office`));
      expect((await run(['acls', 'add', 'e1', '203.0.113.9', '--transport'])).code).toBe(0);
      expect((await run(['acls', 'ls', 'e1'])).stdout).toMatch(/ALSO\n.*203\.0\.113\.9.*transport/);
      const rm = await run(['acls', 'rm', 'r1', id]);
      expect(rm.code).toBe(0);
      expect((await run(['acls', 'ls', 'r1'])).stdout).toContain('No ACLs');
      expect((await run(['acls', 'rm', 'r1', id])).code).toBe(3);
      expect((await run(['acls', 'add', 'r1'])).code).toBe(2);
    });

    it('acls add prints the range as stored, and what hangar says of it on stderr', async () => {
      const add = await run(['acls', 'add', 'r1', '10.1.2.3/8', '--description', 'office']);
      expect(add.code, add.stderr).toBe(0);
      expect(add.stdout).toMatch(/^ACL [0-9a-f]{24} admits 10\.0\.0\.0\/8 to r1\.$/m);
      expect(add.stderr.trim()).toBe('hangar: warning: 10.1.2.3/8 was stored as 10.0.0.0/8');
      const json = await run(['acls', 'add', 'r1', '0.0.0.0/0', '--description', 'all', '--json']);
      expect(JSON.parse(json.stdout)).toMatchObject({ cidr_mask: '0.0.0.0/0', instance: 'r1' });
      expect(json.stderr).toContain('hangar: warning: 0.0.0.0/0 admits every IPv4 address');
      const quiet = await run(['acls', 'add', 'r1', '203.0.113.77']);
      expect(quiet.stderr).toBe('');
      // the next tests want r1 as it was
      for (const out of [add.stdout, JSON.stringify(JSON.parse(json.stdout).id), quiet.stdout]) {
        const id = /[0-9a-f]{24}/.exec(out)![0];
        expect((await alice.delete(`/v2/instances/r1/acls/${id}/`)).status).toBe(200);
      }
    });

    it('acls add --expires, check (exit 0 admitted, 1 not), effective, denied', async () => {
      const add = await run(['acls', 'add', 'r1', '198.51.100.0/24', '--description', 'office', '--expires', '8h', '--json']);
      expect(add.code, add.stderr).toBe(0);
      const listed = (await alice.get('/v2/instances/r1/acls/')).body.data.find((a: any) => a.cidr_mask === '198.51.100.0/24');
      expect(Date.parse(listed.expires_at) - Date.now()).toBeGreaterThan(7.9 * 3_600_000);
      expect((await run(['acls', 'add', 'r1', '198.51.100.1', '--expires', 'soonish'])).code).toBe(2);
      const yes = await run(['acls', 'check', 'r1', '198.51.100.23']);
      expect(yes.code).toBe(0);
      expect(yes.stdout).toContain('198.51.100.23 is admitted to r1 by ACL');
      const no = await run(['acls', 'check', 'r1', '192.0.2.1']);
      expect(no.code).toBe(1);
      expect(no.stdout).toContain('not admitted');
      expect((await run(['acls', 'check', 'r1', '192.0.2.0/24'])).code).toBe(1);
      const eff = await run(['acls', 'effective', 'r1']);
      expect(eff.code, eff.stderr).toBe(0);
      expect(eff.stdout).toMatch(/exactly the ACLs[\s\S]*emulated\s+yes/);
      const inst = (await alice.get('/v2/instances/r1/')).body.data;
      th.runtime.connect(inst.id, '192.0.2.200');
      const denied = await run(['acls', 'denied', 'r1']);
      expect(denied.stdout).toMatch(/TIME\s+SOURCE\s+LISTENER\n\S+\s+192\.0\.2\.200\s+public/);
    });

    it('redis users add, ls, set, rotate-password, rm; redis config; redis slowlog; instances rotate-password', async () => {
      const add = await run(['redis', 'users', 'add', 'r1', 'app', '--key', 'app:*', '--command', '+@read', '--command=-@dangerous']);
      expect(add.code, add.stderr).toBe(0);
      expect(add.stdout.trim()).toMatch(/^[0-9a-f]{32}$/);
      expect((await run(['redis', 'users', 'add', 'r1', 'given', '--password-stdin'], 'given-password-1\n')).code).toBe(0);
      const ls = await run(['redis', 'users', 'ls', 'r1']);
      expect(ls.stdout).toMatch(/app\s+~app:\* \+@read -@dangerous/);
      expect((await run(['redis', 'users', 'set', 'r1', 'app', '--key', 'app:*', '--key', 'jobs:*'])).stdout).toContain('~app:* ~jobs:*');
      expect((await run(['redis', 'users', 'set', 'r1', 'app'])).code).toBe(2);
      const refused = await run(['redis', 'users', 'add', 'r1', 'ops', '--command', '+config']);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('CONFIG');
      const rot = await run(['redis', 'users', 'rotate-password', 'r1', 'app', '--json']);
      expect(JSON.parse(rot.stdout)).toMatchObject({ password: expect.any(String), previous_valid_until: expect.any(String) });
      expect((await run(['redis', 'users', 'rotate-password', 'r1', 'app', '--finish'])).stdout).toContain('no longer works');
      expect((await run(['redis', 'users', 'rm', 'r1', 'given'])).code).toBe(0);
      expect((await run(['redis', 'users', 'rm', 'r1', 'given'])).code).toBe(3);
      const cfg = await run(['redis', 'config', 'r1', 'maxmemory-policy=allkeys-lru', 'timeout=300']);
      expect(cfg.code, cfg.stderr).toBe(0);
      expect((await run(['redis', 'config', 'r1'])).stdout).toMatch(/maxmemory-policy\s+allkeys-lru/);
      const bad = await run(['redis', 'config', 'r1', 'maxmemory-policy=sometimes']);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain('allkeys-lru');
      expect((await run(['redis', 'config', 'r1', 'nonsense'])).code).toBe(2);
      expect((await run(['redis', 'slowlog', 'r1'])).stdout).toContain('empty');
      const before = (await alice.get('/v2/instances/r1/')).body.data.password;
      const rotated = await run(['instances', 'rotate-password', 'r1']);
      expect(rotated.code, rotated.stderr).toBe(0);
      expect(rotated.stdout.trim()).toBe((await alice.get('/v2/instances/r1/')).body.data.password);
      expect(rotated.stdout.trim()).not.toBe(before);
      expect((await run(['instances', 'rotate-password', 'r1', '--finish', '--json'])).stdout).toContain('"retired": true');
      expect((await run(['redis', 'stats', 'r1'])).stdout).toMatch(/hit ratio:\s+-\n/);
    });

    it('mongo users ls, add, set, rm', async () => {
      const add = await run(
        ['mongo', 'users', 'add', 'm1', 'app', '--db', 'shop', '--role', 'readWrite', '--role', 'read@reports', '--password-stdin'],
        'password-1\n',
      );
      expect(add.code, add.stderr).toBe(0);
      const ls = await run(['mongo', 'users', 'ls', 'm1', '--db', 'shop']);
      expect(ls.stdout.trim()).toMatch(/^USER\s+ROLES\napp\s+readWrite, read@reports$/);
      const set = await run(['mongo', 'users', 'set', 'm1', 'app', '--db', 'shop', '--role', 'read']);
      expect(set.code, set.stderr).toBe(0);
      expect(JSON.parse((await run(['mongo', 'users', 'ls', 'm1', '--db', 'shop', '--json'])).stdout)).toEqual([
        { name: 'app', roles: [{ role: 'read', db: 'shop' }] },
      ]);
      expect((await run(['mongo', 'users', 'set', 'm1', 'app', '--db', 'shop'])).code).toBe(2);
      expect((await run(['mongo', 'users', 'add', 'm1', 'other', '--db', 'shop'])).code).toBe(2);
      expect((await run(['mongo', 'users', 'rm', 'm1', 'app', '--db', 'shop'])).code).toBe(0);
      expect((await run(['mongo', 'users', 'rm', 'm1', 'app', '--db', 'shop'])).code).toBe(3);
    });

    it('mongo users of a redis instance: says it is a redis instance (exit code 3)', async () => {
      const res = await run(['mongo', 'users', 'ls', 'r1', '--db', 'shop']);
      expect(res.code).toBe(3);
      expect(res.stderr.trim()).toBe('hangar: instance "r1" is a redis instance, not a mongodb instance');
      const add = await run(['mongo', 'users', 'add', 'r1', 'app', '--db', 'shop', '--password-stdin'], 'password-1\n');
      expect(add.stderr).toContain('is a redis instance, not a mongodb instance');
    });

    it('connect: mongosh for mongodb, nothing for elasticsearch', async () => {
      const m1 = (await alice.get('/v2/instances/m1/')).body.data;
      const m = await run(['connect', 'm1', '--user', 'app', '--db', 'shop', '--print']);
      expect(m.stdout.trim()).toBe(`mongosh mongodb://${m1.connect_string}/shop --username app --authenticationDatabase shop`);
      const e = await run(['connect', 'e1']);
      expect(e.code).toBe(2);
      expect(e.stderr).toContain('elasticsearch has no shell');
    });

    it('connect without --print runs the shell (when it is not installed, says how to get it)', async () => {
      // A PATH without redis-cli: the command is named with what to install.
      const res = await runCli(['connect', 'r1'], { home, env: { ...env(), PATH: join(home, 'empty') } });
      expect(res.code).toBe(1);
      expect(res.stderr).toContain('redis-cli is not on PATH');
    });

    it('whoami and logout', async () => {
      const h = tempDir('hangar-cli-who-');
      expect((await runCli(['login', '--url', th.url, '--login', alice.login], { home: h, env: { HANGAR_PASSWORD: PASSWORD } })).code).toBe(
        0,
      );
      const who = await runCli(['whoami', '--json'], { home: h });
      expect(JSON.parse(who.stdout)).toMatchObject({ url: th.url, login: alice.login });
      const token = JSON.parse(readFileSync(join(h, '.config', 'hangar', 'config.json'), 'utf8')).token as string;
      expect((await runCli(['logout'], { home: h })).stdout).toContain(`Logged out of ${th.url}`);
      expect(
        (
          await fetch(`${th.url}/v2/tokens/verify/`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ token }),
          })
        ).status,
      ).toBe(401);
      expect((await runCli(['instances', 'ls'], { home: h })).code).toBe(4);
    });

    it('a token revoked at hangar: exit code 4 and a hint to log in again', async () => {
      const h = tempDir('hangar-cli-rev-');
      await runCli(['login', '--url', th.url, '--login', alice.login], { home: h, env: { HANGAR_PASSWORD: PASSWORD } });
      const token = JSON.parse(readFileSync(join(h, '.config', 'hangar', 'config.json'), 'utf8')).token as string;
      await fetch(`${th.url}/v2/tokens/`, { method: 'DELETE', headers: { 'x-auth-token': token } });
      const res = await runCli(['instances', 'ls'], { home: h });
      expect(res.code).toBe(4);
      expect(res.stderr).toContain('hangar login');
    });

    it('wrong password: exit code 4; wrong usage: exit code 2; an API refusal: exit code 1 with the allowed values', async () => {
      const bad = await runCli(['login', '--url', th.url, '--login', alice.login, '--password-stdin'], {
        home: tempDir('hangar-cli-bad-'),
        input: 'nope\n',
      });
      expect(bad.code).toBe(4);
      // said once: no "log in again" after a login that was just refused
      expect(bad.stderr.trim()).toBe('hangar: wrong login or password');
      expect((await run(['instances', 'create', 'x', '--service', 'mysql', '--version', '1', '--zone', 'z'])).code).toBe(2);
      expect((await run(['instances', 'show'])).code).toBe(2);
      expect((await run(['instances', 'show', 'r1', 'extra'])).code).toBe(2);
      const flag = await run(['instances', 'ls', '--colour']);
      expect(flag.code).toBe(2);
      expect(flag.stderr).toContain("Unknown option '--colour'");
      const refused = await run(['instances', 'create', 'x', ...REDIS, '--plan', '750']);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('allowed values: 500, 1000');
      expect((await run(['nonsense'])).code).toBe(2);
      // a wrong --timeout is refused before the request is sent: nothing created
      const timeout = await run(['instances', 'create', 'timed', ...REDIS, '--timeout', 'abc']);
      expect(timeout.code).toBe(2);
      expect(timeout.stderr).toContain('--timeout must be a number of seconds');
      expect((await run(['instances', 'ls', '-q'])).stdout.split('\n')).not.toContain('timed');
    });
  });

  // in this process (the binary is main() and nothing else): a process per command would take
  // a minute of a loaded machine; the binary itself answers the top-level --help below
  const inProcess = (args: string[]) => runCliInProcess(args, { home });

  it('--help of every command: usage, options and examples, exit code 0', async () => {
    for (const c of [...CLIENT_COMMANDS, ...OPERATOR_COMMANDS]) {
      const res = await inProcess([...c.name.split(' '), '--help']);
      expect(res.code, c.name).toBe(0);
      expect(res.stdout, c.name).toContain(`Usage: hangar ${c.name}`);
      expect(res.stdout, c.name).toMatch(/Examples:\n {2}\S/);
      expect(res.stdout, c.name).toContain('Exit codes:');
    }
    const top = await cli(['--help']);
    expect(top.code).toBe(0);
    for (const c of [...CLIENT_COMMANDS, ...OPERATOR_COMMANDS]) expect(top.stdout).toContain(`  ${c.name} `);
  });

  it('--help of every group of commands (instances, acls, mongo, mongo users, keys...): its commands, exit code 0', async () => {
    const all = [...CLIENT_COMMANDS, ...OPERATOR_COMMANDS];
    const groups = new Set(
      all.flatMap((c) =>
        c.name
          .split(' ')
          .slice(0, -1)
          .map((_, i, words) => words.slice(0, i + 1).join(' ')),
      ),
    );
    expect([...groups]).toEqual(
      expect.arrayContaining(['instances', 'acls', 'redis', 'mongo', 'mongo users', 'keys', 'tokens', 'accounts', 'secrets']),
    );
    for (const group of groups) {
      const members = all.filter((c) => c.name.startsWith(`${group} `));
      for (const args of [
        [...group.split(' '), '--help'],
        [...group.split(' '), '-h'],
        ['help', ...group.split(' ')],
      ]) {
        const res = await inProcess(args);
        expect(res.code, `${args.join(' ')}: ${res.stderr}`).toBe(0);
        for (const c of members) expect(res.stdout, args.join(' ')).toContain(`  ${c.name} `);
        for (const c of all.filter((x) => !members.includes(x))) expect(res.stdout, args.join(' ')).not.toContain(`  ${c.name} `);
      }
      // without --help a group is no command: its commands, on stderr, and wrong usage
      const bare = await inProcess(group.split(' '));
      expect(bare.code, group).toBe(2);
      expect(bare.stderr, group).toContain(`  ${members[0]!.name} `);
    }
  });

  it('--version and -V print the version of the package, exit code 0', async () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const res = await cli([flag]);
      expect(res.code).toBe(0);
      expect(res.stdout.trim()).toBe(`hangar ${pkg.version}`);
    }
  });

  describe('shell completion', () => {
    let bin: string;
    beforeAll(async () => {
      // A `hangar` on PATH, as an installed one would be, for the instance names.
      bin = tempDir('hangar-cli-bin-');
      writeFileSync(join(bin, 'hangar'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`);
      chmodSync(join(bin, 'hangar'), 0o755);
      await alice.ready(redisBody('listed'));
    });

    /** What bash offers after the words given (the last one is being typed). Asynchronous: hangar answers from this process. */
    const complete = async (script: string, words: string[]) => {
      const { stdout } = await promisify(execFile)(
        'bash',
        [
          '-c',
          `source "$1"; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _hangar; printf '%s\\n' "\${COMPREPLY[@]}"`,
          'bash',
          script,
        ],
        {
          env: {
            PATH: `${bin}${delimiter}${process.env.PATH}`,
            HOME: home,
            XDG_CONFIG_HOME: join(home, '.config'),
            HANGAR_URL: th.url,
            HANGAR_LOGIN: alice.login,
            HANGAR_PASSWORD: PASSWORD,
          },
          encoding: 'utf8',
        },
      );
      return stdout.split('\n').filter(Boolean);
    };

    it('bash: commands, subcommands, flags, flag values and instance names', async () => {
      const res = await cli(['completion', 'bash']);
      expect(res.code).toBe(0);
      const script = join(bin, 'hangar.bash');
      writeFileSync(script, res.stdout);
      execFileSync('bash', ['-n', script]);
      expect(await complete(script, ['hangar', ''])).toEqual(
        expect.arrayContaining(['instances', 'acls', 'redis', 'mongo', 'connect', 'login', 'serve', 'accounts']),
      );
      expect(await complete(script, ['hangar', 'instances', ''])).toEqual([
        'ls',
        'create',
        'show',
        'rotate-password',
        'rename',
        'rm',
        'restore',
      ]);
      expect(await complete(script, ['hangar', 'backups', ''])).toEqual(['ls', 'create', 'rm', 'download']);
      expect(await complete(script, ['hangar', 'backups', 'ls', 'lis'])).toEqual(['listed']);
      expect(await complete(script, ['hangar', 'mongo', 'users', ''])).toEqual(['ls', 'add', 'set', 'rm']);
      expect(await complete(script, ['hangar', 'redis', 'users', ''])).toEqual(['ls', 'add', 'set', 'rm', 'rotate-password']);
      expect(await complete(script, ['hangar', 'acls', ''])).toEqual(['ls', 'add', 'rm', 'check', 'effective', 'denied']);
      expect(await complete(script, ['hangar', 'instances', 'create', 'x', '--ser'])).toEqual(['--service']);
      expect(await complete(script, ['hangar', 'instances', 'create', 'x', '--service', ''])).toEqual([
        'elasticsearch',
        'mongodb',
        'redis',
      ]);
      expect(await complete(script, ['hangar', 'instances', 'create', 'x', '--service', 'redis', '--zone', 'US-D'])).toEqual(['US-Dallas']);
      expect(await complete(script, ['hangar', 'connect', 'lis'])).toEqual(['listed']);
      expect(await complete(script, ['hangar', 'instances', 'create', 'lis'])).toEqual([]);
      expect(await complete(script, ['hangar', 'completion', ''])).toEqual(['bash', 'zsh']);
      expect(await complete(script, ['hangar', 'serve', '--runt'])).toEqual(['--runtime']);
    });

    it('zsh: a #compdef function over the same table', async () => {
      const res = await cli(['completion', 'zsh']);
      expect(res.code).toBe(0);
      expect(res.stdout.startsWith('#compdef hangar\n')).toBe(true);
      expect(res.stdout).toContain('compdef _hangar hangar');
      expect(res.stdout).toContain('"instances") cands="ls create show rotate-password rename rm restore";;');
      expect(res.stdout).toContain('"backups") cands="ls create rm download";;');
      const zsh = onPath('zsh');
      if (zsh) {
        writeFileSync(join(bin, '_hangar'), res.stdout);
        execFileSync(zsh, ['-n', join(bin, '_hangar')]);
      }
      expect((await cli(['completion', 'fish'])).code).toBe(2);
    });
  });
});
