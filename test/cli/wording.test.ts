import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INSTANCE_TYPES, PLANS, ZONES } from '../../src/domain/catalog.js';
import { type Account, PASSWORD, type TestHangar, startTestHangar } from '../helpers/hangar.js';
import { removeTempDirs, runCliInProcess, tempDir } from './run-cli.js';

const REDIS = ['--service', 'redis', '--version', '7.0.15', '--zone', 'US-Dallas'];

/**
 * What the command line says to people: in their words (its flags and commands, not the API's
 * fields and endpoints), with the next step named. Run in this process, as the binary runs it.
 */
describe('the CLI speaks the words of the command line', { timeout: 120_000 }, () => {
  let th: TestHangar;
  let alice: Account;
  let home: string;
  let env: Record<string, string>;
  const run = (args: string[], extra: Record<string, string> = {}) => runCliInProcess(args, { home, env: { ...env, ...extra } });

  beforeAll(async () => {
    th = await startTestHangar({ listen: true });
    alice = await th.signup();
    home = tempDir('hangar-cli-words-');
    env = { HANGAR_URL: th.url, HANGAR_LOGIN: alice.login, HANGAR_PASSWORD: PASSWORD };
  });
  afterAll(async () => {
    await th?.close();
    removeTempDirs();
  });

  it('counts in the singular for one: "1 command"', async () => {
    const one = await run(['accounts', '--help']);
    expect(one.stdout).toContain('hangar accounts: 1 command\n');
    expect((await run(['keys', '--help'])).stdout).toContain('hangar keys: 3 commands\n');
  });

  it('an unknown command or flag is answered with the nearest one (a typo or the start of it)', async () => {
    const cmd = await run(['instance', 'ls']);
    expect(cmd.code).toBe(2);
    expect(cmd.stderr).toContain('unknown command "instance ls"; did you mean "hangar instances ls"?');
    expect((await run(['instances', 'lss'])).stderr).toContain('did you mean "hangar instances ls"?');
    expect((await run(['inst'])).stderr).toContain('did you mean "hangar instances"?');
    const none = await run(['frobnicate']);
    expect(none.stderr).not.toContain('did you mean');
    expect(none.stderr).toContain('see hangar --help');

    const flag = await run(['instances', 'create', 'x', '--servce', 'redis']);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain("Unknown option '--servce' (did you mean --service?)");
    expect((await run(['instances', 'create', 'x', '--serv', 'redis'])).stderr).toContain('(did you mean --service?)');
    expect((await run(['instances', 'ls', '--colour'])).stderr).not.toContain('did you mean');
    // operator commands too, their settings included
    const op = await run(['audit', '--data-dri', '/tmp/x']);
    expect(op.code).toBe(2);
    expect(op.stderr).toContain("Unknown option '--data-dri' (did you mean --data-dir?)");
  });

  it('an API refusal of a field names the flag that filled it', async () => {
    const acl = await run(['instances', 'create', 'bad-acl', ...REDIS, '--acl', '10.0.0.0/8', '--acl', 'nowhere']);
    expect(acl.code).toBe(1);
    expect(acl.stderr).toContain('--acl must be an IP address (a.b.c.d) or a CIDR range (a.b.c.d/x), IPv4 or IPv6; got "nowhere"');
    expect(acl.stderr).not.toContain('acls[');
    const plan = await run(['instances', 'create', 'bad-plan', ...REDIS, '--plan', '750']);
    expect(plan.stderr).toContain('hangar: --plan of a redis instance 750 is not allowed');
    expect(plan.stderr).toContain('allowed values: 500, 1000');
  });

  it('a refused token: says so, and names hangar login instead of the API endpoint', async () => {
    const h = tempDir('hangar-cli-words-rev-');
    const login = await runCliInProcess(['login', '--url', th.url, '--login', alice.login], {
      home: h,
      env: { HANGAR_PASSWORD: PASSWORD },
    });
    expect(login.code, login.stderr).toBe(0);
    // the kept token, revoked at hangar
    const { token } = JSON.parse(readFileSync(join(h, '.config', 'hangar', 'config.json'), 'utf8')) as { token: string };
    await fetch(`${th.url}/v2/tokens/`, { method: 'DELETE', headers: { 'x-auth-token': token } });
    const res = await runCliInProcess(['instances', 'ls'], { home: h });
    expect(res.code).toBe(4);
    // the server says when it was revoked; the CLI names its own command, not the API endpoint
    expect(res.stderr).toMatch(
      /^hangar: the token was revoked at \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC\nhangar: log in again: hangar login\n$/,
    );
  });

  it('instances create without --version lists the versions this hangar offers of the service (in the zone given)', async () => {
    const zones = (await alice.get('/v2/zones/')).body.data as { name: string; services: { service: string; versions: string[] }[] }[];
    const dallas = zones.find((z) => z.name === 'US-Dallas')!.services.find((s) => s.service === 'redis')!.versions;
    const res = await run(['instances', 'create', 'nover', '--service', 'redis', '--zone', 'US-Dallas']);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain(`--version is required (redis in US-Dallas: ${dallas.join(', ')})`);
    expect(res.stderr).not.toContain('hangar lists the versions');
    const es = await run(['instances', 'create', 'nover', '--service', 'elasticsearch']);
    const esVersions = zones.flatMap((z) => z.services.filter((s) => s.service === 'elasticsearch').flatMap((s) => s.versions));
    expect(es.stderr).toContain('--version is required (elasticsearch');
    for (const v of esVersions) expect(es.stderr).toContain(v);
    // the zone, likewise, from those that offer the service
    const zone = await run(['instances', 'create', 'nozone', '--service', 'redis', '--version', '7.0.15']);
    expect(zone.stderr).toContain('--zone is required (redis: ');
    expect(zone.stderr).toContain('US-Dallas');
  });

  it('instances create without --acl or --my-ip warns that nobody can connect yet, with the command that admits', async () => {
    const bare = await run(['instances', 'create', 'closed', ...REDIS]);
    expect(bare.code, bare.stderr).toBe(0);
    expect(bare.stderr).toContain('no address can connect to "closed" yet');
    expect(bare.stderr).toContain('hangar acls add closed --my-ip');
    const open = await run(['instances', 'create', 'open', ...REDIS, '--acl', '127.0.0.1', '--no-wait']);
    expect(open.code, open.stderr).toBe(0);
    expect(open.stderr).not.toContain('no address can connect');
    const noWait = await run(['instances', 'create', 'closed-too', ...REDIS, '--no-wait', '--json']);
    expect(noWait.stderr).toContain('hangar acls add closed-too --my-ip');
    expect(JSON.parse(noWait.stdout)).toMatchObject({ name: 'closed-too' });
  });

  it('without HANGAR_URL, talks to 127.0.0.1 at HANGAR_PORT (as hangar serve listens)', async () => {
    const port = new URL(th.url).port;
    const res = await runCliInProcess(['whoami', '--json'], {
      home: tempDir('hangar-cli-words-port-'),
      env: { HANGAR_PORT: port, HANGAR_LOGIN: alice.login, HANGAR_PASSWORD: PASSWORD },
    });
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ url: `http://127.0.0.1:${port}`, login: alice.login });
    // HANGAR_URL wins
    const url = await runCliInProcess(['whoami', '--json'], {
      home: tempDir('hangar-cli-words-port-'),
      env: { HANGAR_URL: th.url, HANGAR_PORT: '1', HANGAR_LOGIN: alice.login, HANGAR_PASSWORD: PASSWORD },
    });
    expect(url.code, url.stderr).toBe(0);
    const bad = await runCliInProcess(['whoami'], { home: tempDir('hangar-cli-words-port-'), env: { HANGAR_PORT: 'eighty' } });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('HANGAR_PORT "eighty" is not a TCP port');
  });

  it('shell completion offers the plans, zones and types of the --service given', async () => {
    const script = join(home, 'hangar.bash');
    writeFileSync(script, (await run(['completion', 'bash'])).stdout);
    const complete = async (words: string[]) => {
      const { stdout } = await promisify(execFile)(
        'bash',
        [
          '-c',
          `source "$1"; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _hangar; printf '%s\\n' "\${COMPREPLY[@]}"`,
          'bash',
          script,
        ],
        { encoding: 'utf8' },
      );
      return stdout.split('\n').filter(Boolean);
    };
    const create = ['hangar', 'instances', 'create', 'x'];
    expect(await complete([...create, '--service', 'mongodb', '--plan', ''])).toEqual(PLANS.mongodb.map(String));
    expect(await complete([...create, '--service', 'redis', '--plan', ''])).toEqual(PLANS.redis.map(String));
    expect(await complete([...create, '--service', 'redis', '--zone', ''])).toEqual([...ZONES.redis]);
    expect(await complete([...create, '--service', 'mongodb', '--json', '--zone', ''])).toEqual([...ZONES.mongodb]);
    expect(await complete([...create, '--service', 'mongodb', '--type', ''])).toEqual([...INSTANCE_TYPES.mongodb]);
    // no --service yet: every value
    const all = await complete([...create, '--zone', '']);
    expect(all).toEqual(expect.arrayContaining([...new Set(Object.values(ZONES).flat())]));
  });
});
