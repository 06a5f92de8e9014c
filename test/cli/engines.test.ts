import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MavenServer, sha1Of, startMavenServer } from '../helpers/maven-server.js';
import { fakeElasticsearchZip } from '../helpers/zip.js';
import { assertBuilt, removeTempDirs, runCli, startCli, tempDir } from './run-cli.js';

// `hangar engines install` and `hangar engines ls`, run as the built binary, on distributions of
// the test's own: a local zip beside its .sha1, a Maven repository on loopback, a stand-in JDK
// and a stand-in ferretdb. Real downloads are for `hangar engines install` by hand (and CI).

let home: string;
let jdk: string;
let server: MavenServer;

const ZIP = fakeElasticsearchZip('6.8.23', { jvmOptions: '-Xms1g\n9-:-Xlog:gc*:file=logs/gc.log\n' });
const IT_PATH = 'org/elasticsearch/distribution/integ-test-zip/elasticsearch/7.10.2/elasticsearch-7.10.2.zip';

beforeAll(async () => {
  assertBuilt();
  home = tempDir('hangar-engines-home-');
  jdk = join(tempDir('hangar-engines-jdk-'), 'java-17');
  mkdirSync(join(jdk, 'bin'), { recursive: true });
  writeFileSync(join(jdk, 'release'), 'JAVA_VERSION="17.0.99"\n');
  writeFileSync(join(jdk, 'bin', 'java'), '#!/bin/sh\nexit 0\n');
  chmodSync(join(jdk, 'bin', 'java'), 0o755);
  server = await startMavenServer();
});
afterAll(async () => {
  await server.close();
  removeTempDirs();
});

const hangar = (args: string[], env: Record<string, string> = {}) => runCli(args, { home, env: { JAVA_HOME: jdk, ...env } });

/** A local copy of the zip with its .sha1 beside it, as one fetched by hand would be. */
function localZip(): string {
  const file = join(tempDir('hangar-engines-zip-'), 'elasticsearch-6.8.23.zip');
  writeFileSync(file, ZIP);
  writeFileSync(`${file}.sha1`, sha1Of(ZIP));
  return file;
}

describe('hangar engines install and ls', () => {
  it('installs from a local zip checked against its .sha1; again is a no-op that says so; --force redoes it; ls lists it', async () => {
    const cache = tempDir('hangar-engines-cache-');
    const zip = localZip();
    const program = join(cache, 'elasticsearch', '6.8.23', 'bin', 'elasticsearch');
    const first = await hangar(['engines', 'install', 'elasticsearch@6.8.23', '--from', zip, '--engine-cache', cache]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toBe(`elasticsearch 6.8.23 installed: ${program}, on Java 17.0.99 (${jdk})\n`);
    expect(first.stderr).toContain(`Java 17.0.99 at ${jdk} (found by JAVA_HOME)`);
    expect(first.stderr).toMatch(/\] checking .*elasticsearch-6\.8\.23\.zip\n/);
    expect(first.stderr).toMatch(/\] unpacking\n/);
    expect(first.stderr).toMatch(/\] installed\n/);

    const again = await hangar(['engines', 'install', 'elasticsearch@6.8.23', '--from', zip], { HANGAR_ENGINE_CACHE: cache });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe(
      `elasticsearch 6.8.23 is installed already: ${program}, on Java 17.0.99 (${jdk}); nothing done (--force installs it again)\n`,
    );
    expect(again.stderr).toBe('');

    const forced = await hangar([
      'engines',
      'install',
      'elasticsearch@6.8.23',
      '--from',
      zip,
      '--force',
      '--json',
      '--engine-cache',
      cache,
    ]);
    expect(forced.code, forced.stderr).toBe(0);
    expect(JSON.parse(forced.stdout)).toEqual({
      product: 'elasticsearch',
      version: '6.8.23',
      program,
      dir: join(cache, 'elasticsearch', '6.8.23'),
      java_home: jdk,
      java_version: '17.0.99',
      env: { JAVA_HOME: jdk },
      patches: ['config/jvm.options: the GC log to logs/gc.log (under the read-only home) commented out'],
      source: { kind: 'file', file: zip, sha1: sha1Of(ZIP), sha1_from: `${zip}.sha1`, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) },
      installed_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      already_installed: false,
    });

    const ls = await hangar(['engines', 'ls', '--json'], { HANGAR_ENGINE_CACHE: cache });
    expect(ls.code, ls.stderr).toBe(0);
    const listed = JSON.parse(ls.stdout);
    expect(listed).toEqual([
      expect.objectContaining({ product: 'elasticsearch', version: '6.8.23', program, java_home: jdk, java_present: true }),
    ]);
    expect(listed[0].size_bytes).toBeGreaterThan(3 << 20);
    const table = await hangar(['engines', 'ls', '--engine-cache', cache]);
    const [header, row, ...rest] = table.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^PRODUCT +VERSION +PROGRAM +SIZE +INSTALLED +JAVA$/);
    expect(row).toMatch(
      new RegExp(`^elasticsearch +6\\.8\\.23 +${program} +3 MB +\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d +17\\.0\\.99 ${jdk}$`),
    );
    expect(rest).toEqual([]);
  });

  it('refuses a zip whose SHA-1 is not the one expected, naming both, and installs nothing (exit 1)', async () => {
    const cache = tempDir('hangar-engines-cache-');
    const wrong = '0123456789abcdef0123456789abcdef01234567';
    const res = await hangar([
      'engines',
      'install',
      'elasticsearch@6.8.23',
      '--from',
      localZip(),
      '--sha1',
      wrong,
      '--engine-cache',
      cache,
    ]);
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr).toContain(`its SHA-1 is ${sha1Of(ZIP)}, but --sha1 says ${wrong}; nothing was installed`);
    expect(readdirSync(cache)).toEqual(['elasticsearch']);
    expect(readdirSync(join(cache, 'elasticsearch'))).toEqual([]);
    const ls = await hangar(['engines', 'ls', '--json', '--engine-cache', cache]);
    expect(JSON.parse(ls.stdout)).toEqual([]);
  });

  it('wrong usage exits 2 and says what hangar installs', async () => {
    const cache = tempDir('hangar-engines-cache-');
    const cases: [string[], string][] = [
      [['engines', 'install'], 'missing PRODUCT@VERSION'],
      [['engines', 'install', 'elasticsearch@5.2.2'], 'elasticsearch 5.2.2 fails at bootstrap on Java 11 and 17'],
      [['engines', 'install', 'elasticsearch@6.4.1'], 'elasticsearch 6.4.1 is not published on Maven Central'],
      [['engines', 'install', 'mongodb@7.0.2'], 'products: elasticsearch, elasticsearch-oss, opensearch, ferretdb'],
      [['engines', 'install', 'elasticsearch@7.10.2', 'extra'], 'unexpected argument "extra"'],
      [['engines', 'install', 'elasticsearch@7.10.2', '--sha1', 'abc'], '--sha1 must be 40 hex digits'],
      [['engines', 'ls', 'extra'], 'unexpected argument "extra"'],
    ];
    for (const [args, message] of cases) {
      const res = await hangar([...args, '--engine-cache', cache]);
      expect(res.code, args.join(' ')).toBe(2);
      expect(res.stderr, args.join(' ')).toContain(message);
    }
    expect(readdirSync(cache)).toEqual([]);
  });

  it('an install killed halfway through its download leaves nothing ls shows; the next install of that version cleans up after it', async () => {
    const cache = tempDir('hangar-engines-cache-');
    const zip = fakeElasticsearchZip('7.10.2');
    server.put(IT_PATH, zip, { serving: 'stall' });
    const run = startCli(['engines', 'install', 'elasticsearch@7.10.2', '--from', server.base, '--engine-cache', cache], {
      home,
      env: { JAVA_HOME: jdk },
    });
    const deadline = Date.now() + 20_000;
    while (!/\d+\.\d MB \/ \d+\.\d MB/.test(run.stderr()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(run.stderr()).toContain(`downloading ${server.base}/${IT_PATH}`);
    run.kill('SIGKILL');
    await run.done;
    const ls = await hangar(['engines', 'ls', '--json', '--engine-cache', cache]);
    expect(ls.code).toBe(0);
    expect(JSON.parse(ls.stdout)).toEqual([]);
    expect(ls.stderr).toMatch(
      /an unfinished install at .*\/elasticsearch\/\.7\.10\.2\.partial-\d+-[0-9a-f]+ \(interrupted, or running now\)/,
    );

    server.put(IT_PATH, zip);
    const again = await hangar(['engines', 'install', 'elasticsearch@7.10.2', '--from', server.base, '--engine-cache', cache]);
    expect(again.code, again.stderr).toBe(0);
    expect(readdirSync(join(cache, 'elasticsearch'))).toEqual(['7.10.2']);
    const after = await hangar(['engines', 'ls', '--engine-cache', cache]);
    expect(after.stdout).toContain('elasticsearch  7.10.2');
    expect(after.stderr).toBe('');
  });

  it('ferretdb --from a program of the version asked; ls shows it without a Java', async () => {
    const cache = tempDir('hangar-engines-cache-');
    const program = join(tempDir('hangar-engines-ferretdb-'), 'ferretdb');
    writeFileSync(program, "#!/bin/sh\nprintf 'version: v1.24.2\\n'\n");
    chmodSync(program, 0o755);
    const res = await hangar(['engines', 'install', 'ferretdb@1.24.2', '--from', program, '--engine-cache', cache]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toBe(`ferretdb 1.24.2 installed: ${join(cache, 'ferretdb', '1.24.2', 'bin', 'ferretdb')}\n`);
    const ls = JSON.parse((await hangar(['engines', 'ls', '--json', '--engine-cache', cache])).stdout);
    expect(ls).toEqual([
      expect.objectContaining({
        product: 'ferretdb',
        version: '1.24.2',
        java_home: null,
        source: expect.objectContaining({ kind: 'program', file: program }),
      }),
    ]);
    expect(ls[0]).not.toHaveProperty('java_present');
  });

  it('shell completion offers the products and versions hangar installs', async () => {
    const script = join(tempDir('hangar-engines-completion-'), 'hangar.bash');
    writeFileSync(script, (await hangar(['completion', 'bash'])).stdout);
    const complete = (words: string[]) =>
      execFileSync(
        'bash',
        [
          '-c',
          `source "$1"; COMP_WORDS=(${words.join(' ')}); COMP_CWORD=${words.length - 1}; _hangar; printf '%s\\n' "\${COMPREPLY[@]}"`,
          'bash',
          script,
        ],
        { encoding: 'utf8' },
      )
        .split('\n')
        .filter(Boolean);
    expect(complete(['hangar', 'engines', ''])).toEqual(['install', 'ls']);
    expect(complete(['hangar', 'engines', 'install', 'elasticsearch@7'])).toEqual(['elasticsearch@7.10.2', 'elasticsearch@7.17.25']);
    expect(complete(['hangar', 'engines', 'install', 'x', '--fo'])).toEqual(['--force']);
  });

  it('--help of the group and of each command', async () => {
    const group = await hangar(['engines', '--help']);
    expect(group.code).toBe(0);
    expect(group.stdout).toContain('  engines install ');
    expect(group.stdout).toContain('  engines ls ');
    const install = await hangar(['engines', 'install', '--help']);
    expect(install.code).toBe(0);
    expect(install.stdout).toContain('Usage: hangar engines install PRODUCT@VERSION [--from URL|FILE] [--sha1 HEX] [--force] [--json]');
    expect(install.stdout).toContain('elasticsearch@7.17.25');
  });
});
