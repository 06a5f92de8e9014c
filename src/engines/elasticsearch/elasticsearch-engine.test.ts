import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { edgeRoute } from '../../domain/endpoints.js';
import { TerminalError } from '../../domain/errors.js';
import { PortTakenError, type InstanceSpec, type StepContext, type UnitDefinition, type UnitHost } from '../../domain/units.js';
import { freePort } from '../../../test/helpers/ports.js';
import { CLIENT_POLICY } from './elasticsearch-edge.js';
import { ElasticsearchEngine } from './elasticsearch-engine.js';
import { nodesOf, type NodeInstall } from './elasticsearch-versions.js';

// The engine against stand-in nodes (a shell script starting a small Node HTTP server), each in a
// home laid out as a distribution is (bin/, config/jvm.options, modules/): fast, and able to fail
// on purpose. Real nodes of every version run in test/e2e/elasticsearch-versions.test.ts. A
// stand-in does what the engine relies on from the real one: it reads its configuration
// directory from ES_PATH_CONF (or -Epath.conf / -Des.path.conf), creates path.data given on the
// command line, refuses to start without its files, serves /_cluster/health on http.port, checks
// Basic credentials against the file realm's {PBKDF2} hashes where security is on, and reports
// its heap (from jvm.options or ES_HEAP_SIZE) and pid.

const dir = mkdtempSync(join(tmpdir(), 'hangar-es-engine-'));
const NODE_SCRIPT = join(dir, 'stand-in-node.mjs');
writeFileSync(
  NODE_SCRIPT,
  `
import { createServer } from 'node:http';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { pbkdf2Sync } from 'node:crypto';
const arg = (prefix) => process.argv.find((a) => a.startsWith(prefix))?.slice(prefix.length);
const conf = process.env.ES_PATH_CONF ?? process.env.OPENSEARCH_PATH_CONF ?? arg('-Epath.conf=') ?? arg('-Des.path.conf=');
const yml = ['elasticsearch.yml', 'opensearch.yml'].map((f) => conf + '/' + f).find(existsSync);
if (!yml) { console.error('ERROR: no configuration in ' + conf); process.exit(1); }
const config = readFileSync(yml, 'utf8');
const security = /^xpack\\.security\\.enabled: true$/m.test(config);
const needed = [process.env.ES_HEAP_SIZE ? 'logging.yml' : 'log4j2.properties', ...(process.env.ES_HEAP_SIZE ? [] : ['jvm.options']), ...(security ? ['users', 'users_roles', 'roles.yml'] : [])];
for (const f of needed) {
  if (!existsSync(conf + '/' + f)) { console.error('[2026-12-07T22:51:51,877][ERROR][o.e.b.Bootstrap] missing ' + f + ' in ' + conf); process.exit(1); }
}
const heap = process.env.ES_HEAP_SIZE ?? /^-Xmx(\\S+)$/m.exec(readFileSync(conf + '/jvm.options', 'utf8'))?.[1];
const port = Number(/^http\\.port: (\\d+)$/m.exec(config)[1]);
const data = arg('-Epath.data=') ?? arg('-Des.path.data=');
if (!data) { console.error('ERROR: no path.data'); process.exit(1); }
mkdirSync(data, { recursive: true });
const users = security ? new Map(readFileSync(conf + '/users', 'utf8').trim().split('\\n').map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1)])) : new Map();
function verify(user, password) {
  const m = /^\\{PBKDF2\\}(\\d+)\\$([^$]+)\\$([^$]+)$/.exec(users.get(user) ?? '');
  if (!m) return false;
  const bits = Math.floor((m[3].length * 3) / 64) * 128;
  return pbkdf2Sync(password, Buffer.from(m[2], 'base64'), Number(m[1]), bits / 8, 'sha512').toString('base64') === m[3];
}
createServer((req, res) => {
  const [user, password] = Buffer.from((req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64').toString().split(':');
  if (security && !verify(user, password ?? '')) return res.writeHead(401).end('{"error":{"type":"security_exception"}}');
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'yellow', heap, pid: process.pid }));
}).listen(port, '127.0.0.1', () => console.log('started on ' + port));
`,
);

/** A distribution's home with a start script: the stand-in, or `script` (a node that fails its own way). */
function home(name: string, opts: { xpack?: boolean; script?: string } = {}): string {
  const h = join(dir, 'homes', name);
  mkdirSync(join(h, 'bin'), { recursive: true });
  mkdirSync(join(h, 'config'), { recursive: true });
  writeFileSync(join(h, 'config', 'jvm.options'), '-Xms1g\n-Xmx1g\n14-:-XX:+UseG1GC\n-XX:HeapDumpPath=data\n-Dfile.encoding=UTF-8\n');
  if (opts.xpack) mkdirSync(join(h, 'modules', 'x-pack-security'), { recursive: true });
  const program = join(h, 'bin', name.startsWith('opensearch') ? 'opensearch' : 'elasticsearch');
  writeFileSync(program, opts.script ?? `#!/bin/sh\nexec node "${NODE_SCRIPT}" "$@"\n`);
  chmodSync(program, 0o755);
  return program;
}

/** The node nodesOf makes of a program found at `path` claiming `version`. */
function node(path: string, version: string, product: 'elasticsearch' | 'opensearch' = 'elasticsearch'): NodeInstall {
  const { nodes, problems } = nodesOf(product, [], [product], { name: product, path, version });
  expect(problems).toEqual([]);
  return nodes[0]!;
}

const ES8 = node(home('es-8.11.1', { xpack: true }), '8.11.1');
const ES7_OSS = node(home('es-7.17.25'), '7.17.25');
const ES5 = node(home('es-5.6.9'), '5.6.9');
const ES2 = node(home('es-2.4.6'), '2.4.6');
const OS = node(home('opensearch-2.19.1'), '2.19.1', 'opensearch');

/** Just enough of a runtime to run units: spawn, follow, stop, files with mode 0600, the log. */
class SpawningUnitHost implements UnitHost {
  readonly children = new Map<string, ChildProcess>();

  async ensureUnit(unit: UnitDefinition) {
    const known = this.children.get(unit.role);
    if (known && this.isRunning(unit)) return { pid: known.pid!, started: false };
    mkdirSync(unit.dir, { recursive: true, mode: 0o700 });
    const log = openSync(join(unit.dir, 'process.log'), 'a');
    const child = spawn(unit.bin, [...unit.args], {
      cwd: unit.dir,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      stdio: ['ignore', log, log],
    });
    closeSync(log);
    await new Promise((resolve, reject) => child.once('spawn', resolve).once('error', reject));
    this.children.set(unit.role, child);
    return { pid: child.pid!, started: true };
  }

  async stopUnit(unit: UnitDefinition) {
    const child = this.children.get(unit.role);
    if (!child || !this.isRunning(unit)) return;
    await new Promise((resolve) => {
      child.once('exit', resolve);
      child.kill('SIGTERM');
    });
  }

  isRunning(unit: UnitDefinition) {
    const child = this.children.get(unit.role);
    return child !== undefined && child.exitCode === null && child.signalCode === null;
  }

  private log(unit: UnitDefinition): string {
    try {
      return readFileSync(join(unit.dir, 'process.log'), 'utf8');
    } catch {
      return '';
    }
  }

  logTail(unit: UnitDefinition) {
    return this.log(unit).trim().split('\n').slice(-3).join(' | ');
  }

  logEnd(unit: UnitDefinition) {
    return Buffer.byteLength(this.log(unit));
  }

  logFrom(unit: UnitDefinition, offset: number) {
    return Buffer.from(this.log(unit)).subarray(offset).toString();
  }

  writeFile(unit: UnitDefinition, name: string, content: string) {
    mkdirSync(join(unit.dir, name, '..'), { recursive: true, mode: 0o700 });
    if (this.readFile(unit, name) === content) return false;
    writeFileSync(join(unit.dir, name), content, { mode: 0o600 });
    return true;
  }

  readFile(unit: UnitDefinition, name: string) {
    try {
      return readFileSync(join(unit.dir, name), 'utf8');
    } catch {
      return undefined;
    }
  }

  exists(unit: UnitDefinition, name: string) {
    return existsSync(join(unit.dir, name));
  }
  // Data files (backups) are not part of these tests.
  readStream(): never {
    throw new Error('not used by these tests');
  }
  async writeStream(): Promise<number> {
    throw new Error('not used by these tests');
  }
  rename(): void {
    throw new Error('not used by these tests');
  }
  async runTool(): Promise<string> {
    throw new Error('not used by these tests');
  }
  toolOutput(): never {
    throw new Error('not used by these tests');
  }
  handOver(): void {}
  remove(): void {}
  size(): undefined {
    return undefined;
  }
}

const hosts: SpawningUnitHost[] = [];
afterAll(async () => {
  for (const h of hosts) for (const role of h.children.keys()) await h.stopUnit({ role } as UnitDefinition);
  rmSync(dir, { recursive: true, force: true });
});

function newHost(): SpawningUnitHost {
  const h = new SpawningUnitHost();
  hosts.push(h);
  return h;
}

function recorder(): StepContext & { steps: string[] } {
  const steps: string[] = [];
  return { steps, step: (name) => void steps.push(name) };
}

async function specWithPorts(id: string, version: string, plan = 8): Promise<InstanceSpec> {
  const ports = {
    'engine.http': await freePort(),
    'engine.transport': await freePort(),
    'engine.kibana': await freePort(),
    'public.http': 1,
    'public.https': 2,
    'public.kibana_http': 3,
  };
  return {
    id,
    service: 'elasticsearch',
    engine: 'elasticsearch',
    routes: [
      edgeRoute(ports, 'public.http', 'engine.http'),
      edgeRoute(ports, 'public.https', 'engine.http', true),
      edgeRoute(ports, 'public.kibana_http', 'engine.kibana', false, 'kibana'),
    ],
    type: 'elasticsearch',
    version,
    plan,
    encrypted: false,
    storageEngine: null,
    password: null,
    adminSecret: 'admin-secret-0123456789',
    ports,
  };
}

/** What the stand-in answers on its port: its heap and pid. */
async function nodeAnswer(spec: InstanceSpec): Promise<{ heap: string; pid: number }> {
  const res = await fetch(`http://127.0.0.1:${spec.ports['engine.http']}/`, {
    headers: { authorization: `Basic ${Buffer.from(`hangar:${spec.adminSecret}`).toString('base64')}` },
  });
  return (await res.json()) as { heap: string; pid: number };
}

const engineOf = (nodes: NodeInstall[], extra: Partial<ConstructorParameters<typeof ElasticsearchEngine>[0]> = {}) =>
  new ElasticsearchEngine({ product: nodes[0]?.product ?? 'elasticsearch', nodes, enginesRunAsRoot: false, ...extra });

describe('ElasticsearchEngine: each version driven as its release line needs', () => {
  const spec = (version: string) => ({ id: 'i1', version, plan: 8 }) as InstanceSpec;

  it('7.x and later: ES_PATH_CONF and a temporary directory of the unit, -E flags naming the unit directory', () => {
    const [unit, ...rest] = engineOf([ES8]).units(spec('8.11.1'), '/data/instances/i1');
    expect(rest).toEqual([]);
    expect(unit).toEqual({
      instanceId: 'i1',
      role: 'node',
      dir: '/data/instances/i1/node',
      bin: '/usr/bin/env',
      args: [
        'ES_PATH_CONF=/data/instances/i1/node',
        'ES_TMPDIR=/data/instances/i1/node/tmp',
        ES8.program,
        '-Epath.data=/data/instances/i1/node/data',
        '-Epath.repo=/data/instances/i1/node/snapshots',
      ],
    });
    expect(engineOf([OS]).units(spec('2.19.1'), '/d')[0]?.args.slice(0, 2)).toEqual([
      'OPENSEARCH_PATH_CONF=/d/node',
      'OPENSEARCH_TMPDIR=/d/node/tmp',
    ]);
  });

  it("5.x: its jvm.options from ES_JVM_OPTIONS, path.conf as a flag; 2.x: its heap and JVM options in the environment, -Des flags; the manifest's environment first", () => {
    const withJava = { ...ES5, env: { JAVA_HOME: '/usr/lib/jvm/java-17-openjdk-amd64' } };
    expect(engineOf([withJava]).units(spec('5.6.9'), '/d')[0]?.args).toEqual([
      'JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64',
      'ES_JVM_OPTIONS=/d/node/jvm.options',
      ES5.program,
      '-Epath.conf=/d/node',
      '-Epath.data=/d/node/data',
      '-Epath.repo=/d/node/snapshots',
    ]);
    expect(engineOf([{ ...ES2, env: { ES_GC_OPTS: '-XX:+UseG1GC' } }]).units(spec('2.4.6'), '/d')[0]?.args).toEqual([
      'ES_GC_OPTS=-XX:+UseG1GC',
      'ES_HEAP_SIZE=1024m',
      'ES_JAVA_OPTS=-Djava.io.tmpdir=/d/node/tmp -XX:HeapDumpPath=/d/node -XX:ErrorFile=/d/node/hs_err_pid%p.log',
      ES2.program,
      '-Des.path.conf=/d/node',
      '-Des.path.data=/d/node/data',
      '-Des.path.repo=/d/node/snapshots',
    ]);
  });

  it("runs the node of the instance's version, X.Y the newest of its line, and never another version", () => {
    const engine = engineOf([ES5, ES7_OSS, ES8]);
    expect(engine.units(spec('5.6.9'), '/d')[0]?.args).toContain(ES5.program);
    expect(engine.units(spec('7.17'), '/d')[0]?.args).toContain(ES7_OSS.program);
    expect(() => engine.units(spec('6.8.23'), '/d')).toThrow(TerminalError);
    expect(() => engine.units(spec('6.8.23'), '/d')).toThrow(
      /elasticsearch 6\.8\.23 is not installed here \(installed: 5\.6\.9, 7\.17\.25, 8\.11\.1\)/,
    );
    expect(engine.support()).toMatchObject({ versions: ['5.6.9', '5.6', '7.17.25', '7.17', '8.11.1', '8.11'] });
  });

  it('runs Kibana of the same release beside a node with security, and only there', () => {
    const kibana = { name: 'kibana', path: '/usr/share/kibana/bin/kibana', version: '8.11.1' };
    const engine = engineOf([ES7_OSS, ES8], { dashboards: kibana });
    const units = engine.units(spec('8.11.1'), '/d');
    expect(units.map((u) => u.role)).toEqual(['node', 'kibana']);
    expect(units[1]).toMatchObject({ bin: kibana.path, args: ['--config', '/d/kibana/kibana.yml'] });
    expect(engine.units(spec('7.17.25'), '/d').map((u) => u.role)).toEqual(['node']);
    expect(engine.dashboardsUse(spec('7.17.25'))).toEqual({
      use: false,
      reason: expect.stringMatching(/only beside Elasticsearch 7\.10\.0 or later with security/),
    });
  });
});

describe('ElasticsearchEngine: the edge in its place where the node has no security, and for Kibana', () => {
  it('puts the client policy on the listeners of a node without security, and answers the Kibana listeners with 503 where none runs', async () => {
    const bare = await specWithPorts('i2', '7.17.25');
    const routes = engineOf([ES7_OSS, ES8]).edgeRoutes(bare);
    expect(routes.filter((r) => r.target === 'engine.http').map((r) => r.http)).toEqual([CLIENT_POLICY, CLIENT_POLICY]);
    const kibana = routes.find((r) => r.target === 'engine.kibana')!;
    expect(kibana.http?.answer).toMatchObject({ status: 503, json: expect.stringContaining('"type":"kibana_unavailable"') });
    expect(kibana.http?.answer?.html).toMatch(/<h1>503: Kibana is not available here<\/h1>/);
    // the node refuses them itself: its listeners forward bytes
    const secured = engineOf([ES7_OSS, ES8]).edgeRoutes({ ...bare, version: '8.11.1' });
    expect(secured.filter((r) => r.target === 'engine.http').map((r) => r.http)).toEqual([undefined, undefined]);
    expect(secured.find((r) => r.target === 'engine.kibana')?.http?.answer?.json).toMatch(/no kibana 8\.11 was found/);
  });

  it('says so in its notes', () => {
    const notes = engineOf([ES2, ES8]).support().notes ?? [];
    expect(notes[0]).toMatch(/^elasticsearch 2\.4\.6: the node has no security of its own; its http and https listeners refuse/);
    expect(notes.join('\n')).toMatch(/no Kibana runs beside the node .*kibana_http and kibana_https answer 503/);
  });
});

describe('ElasticsearchEngine on stand-in nodes', () => {
  it('starts the node, which answers with hangar credentials from its file realm; a second pass changes nothing', async () => {
    const engine = engineOf([ES8]);
    const host = newHost();
    const spec = await specWithPorts('65a1b2c3d4e5f60718293a4b', '8.11');
    const instanceDir = join(dir, 'instances', spec.id);
    const ctx = recorder();
    expect(await engine.ensureUnits(spec, { dir: instanceDir, host }, ctx)).toEqual({ fresh: true });
    expect(ctx.steps).toEqual(['create:node-started']);
    const nodeDir = join(instanceDir, 'node');
    expect(statSync(join(nodeDir, 'users')).mode & 0o777).toBe(0o600);
    expect(existsSync(join(nodeDir, 'data'))).toBe(true);
    expect(existsSync(join(nodeDir, 'tmp'))).toBe(true);
    // the distribution's own options kept, the heap, dumps and temporary files hangar's
    const jvm = readFileSync(join(nodeDir, 'jvm.options'), 'utf8').split('\n');
    expect(jvm).toEqual(expect.arrayContaining(['14-:-XX:+UseG1GC', '-Dfile.encoding=UTF-8', '-Xmx1024m', `-XX:HeapDumpPath=${nodeDir}`]));
    expect(jvm).not.toContain('-Xmx1g');

    const target = { host: '127.0.0.1', port: spec.ports['engine.http']!, localAddress: '127.77.0.1' };
    expect(await engine.readiness(spec, { dir: instanceDir, host }, [target])).toBeUndefined();
    expect(await engine.check(spec, { dir: instanceDir, host })).toEqual({ healthy: true });
    expect(await engine.readiness({ ...spec, adminSecret: 'another-secret' }, { dir: instanceDir, host }, [target])).toMatch(/HTTP 401/);

    const again = recorder();
    expect(await engine.ensureUnits(spec, { dir: instanceDir, host }, again)).toEqual({ fresh: false });
    expect(again.steps).toEqual([]);

    await host.stopUnit(engine.units(spec, instanceDir)[0]!);
    expect(await engine.check(spec, { dir: instanceDir, host })).toEqual({ healthy: false, reason: 'elasticsearch is not running' });
  });

  it('restarts a running node when its plan grows (a resize), which then runs with the new heap; 2.x too, from its environment', async () => {
    for (const n of [ES7_OSS, ES2]) {
      const engine = engineOf([n]);
      const host = newHost();
      const spec = await specWithPorts(`65a1b2c3d4e5f60718293a5${n === ES2 ? '1' : '0'}`, n.version, 4);
      const place = { dir: join(dir, 'instances', spec.id), host };
      await engine.ensureUnits(spec, place, recorder());
      const before = await nodeAnswer(spec);
      expect(before.heap).toBe('512m');
      const ctx = recorder();
      expect(await engine.ensureUnits({ ...spec, plan: 16 }, place, ctx)).toEqual({ fresh: false });
      expect(ctx.steps).toEqual(['ensure:node-stopped', 'ensure:node-started']);
      const after = await nodeAnswer(spec);
      expect(after).toMatchObject({ heap: '2048m', pid: expect.any(Number) });
      expect(after.pid).not.toBe(before.pid);
    }
  });

  it('fails a node that exits at start for good, at once, with the line of its output that says why', async () => {
    const failing = node(
      home('es-7.10.2-failing', {
        script: [
          '#!/bin/sh',
          'echo "warning: no-jdk distributions that do not bundle a JDK are deprecated"',
          'echo "[2026-12-07T22:51:51,877][ERROR][o.e.b.ElasticsearchUncaughtExceptionHandler] [node-0] uncaught exception in thread [main]"',
          'echo "org.elasticsearch.bootstrap.StartupException: java.lang.IllegalArgumentException: unknown setting [xpack.security.enabled] please check that any required plugins are installed"',
          'echo "	at org.elasticsearch.bootstrap.Elasticsearch.init(Elasticsearch.java:174) ~[elasticsearch-7.10.2.jar:7.10.2]"',
          'exit 1',
          '',
        ].join('\n'),
      }),
      '7.10.2',
    );
    const engine = engineOf([failing]);
    const spec = await specWithPorts('65a1b2c3d4e5f60718293a4c', '7.10.2');
    const started = Date.now();
    const failure = await engine
      .ensureUnits(spec, { dir: join(dir, 'instances', spec.id), host: newHost() }, recorder())
      .catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(TerminalError);
    expect((failure as Error).message).toBe(
      'elasticsearch 7.10.2 exited at start: unknown setting [xpack.security.enabled] please check that any required plugins are installed',
    );
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('reports a port held by another process, naming its role, so that the engine is moved', async () => {
    const taken = node(
      home('es-7.17.26-port-taken', {
        script: [
          '#!/bin/sh',
          'port=$(sed -n "s/^transport.port: //p" "$ES_PATH_CONF/elasticsearch.yml")',
          'echo "[ERROR][o.e.b.Elasticsearch] fatal exception while booting Elasticsearch: BindTransportException[Failed to bind to 127.0.0.1:$port]; nested: BindException[Address already in use];"',
          'exit 1',
          '',
        ].join('\n'),
      }),
      '7.17.26',
    );
    const spec = await specWithPorts('65a1b2c3d4e5f60718293a4e', '7.17.26');
    const failure = await engineOf([taken])
      .ensureUnits(spec, { dir: join(dir, 'instances', spec.id), host: newHost() }, recorder())
      .catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(PortTakenError);
    expect(failure).toMatchObject({ role: 'engine.transport', port: spec.ports['engine.transport'] });
  });

  it('stops waiting when the pass is cancelled', async () => {
    const host = newHost();
    // a node that runs but never answers: nothing is spawned, and nothing listens on its port
    host.ensureUnit = async () => ({ pid: process.pid, started: true });
    host.isRunning = () => true;
    const aborted = new AbortController();
    const spec = await specWithPorts('65a1b2c3d4e5f60718293a4f', '8.11.1');
    const pass = engineOf([ES8]).ensureUnits(
      spec,
      { dir: join(dir, 'instances', spec.id), host },
      { step: () => {}, signal: aborted.signal },
    );
    setTimeout(() => aborted.abort(), 300);
    await expect(pass).rejects.toThrow(/cancelled while waiting for elasticsearch/);
  });

  it('refuses to run as root (where engines run as root), before starting anything', async () => {
    const engine = engineOf([ES8], { enginesRunAsRoot: true });
    expect(engine.support().unavailableReason).toMatch(/refuses to run as root/);
    const host = newHost();
    const failure = engine.ensureUnits(
      await specWithPorts('65a1b2c3d4e5f60718293a4d', '8.11.1'),
      { dir: join(dir, 'root'), host },
      recorder(),
    );
    await expect(failure).rejects.toBeInstanceOf(TerminalError);
    expect(host.children.size).toBe(0);
  });
});
