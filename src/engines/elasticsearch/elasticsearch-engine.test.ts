import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PortTakenError, type InstanceSpec, type StepContext, type UnitDefinition, type UnitHost } from '../../domain/units.js';
import { TerminalError } from '../../domain/errors.js';
import { ElasticsearchEngine } from './elasticsearch-engine.js';
import { freePort } from '../../../test/helpers/ports.js';

// No Elasticsearch can be installed on this machine. The engine runs here against a stand-in
// `elasticsearch` program (a shell script starting a small Node HTTP server) that does what the
// engine relies on from the real one: it reads its configuration directory from ES_PATH_CONF
// (which the engine passes through /usr/bin/env), creates path.data given with -E, refuses to
// start without jvm.options and log4j2.properties, serves /_cluster/health on http.port, and
// checks Basic credentials against the file realm's {PBKDF2} hashes as Elasticsearch does.

const dir = mkdtempSync(join(tmpdir(), 'hangar-es-engine-'));
const standIn = join(dir, 'bin', 'elasticsearch');
mkdirSync(join(dir, 'bin'));
writeFileSync(
  join(dir, 'bin', 'stand-in-node.mjs'),
  `
import { createServer } from 'node:http';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { pbkdf2Sync } from 'node:crypto';
const conf = process.env.ES_PATH_CONF;
for (const f of ['elasticsearch.yml', 'jvm.options', 'log4j2.properties', 'users', 'users_roles', 'roles.yml']) {
  if (!existsSync(conf + '/' + f)) { console.error('ERROR: missing ' + f + ' in ' + conf); process.exit(1); }
}
const port = Number(/^http\\.port: (\\d+)$/m.exec(readFileSync(conf + '/elasticsearch.yml', 'utf8'))[1]);
const data = process.argv.find((a) => a.startsWith('-Epath.data='));
if (!data) { console.error('ERROR: no path.data'); process.exit(1); }
mkdirSync(data.slice('-Epath.data='.length), { recursive: true });
const users = new Map(readFileSync(conf + '/users', 'utf8').trim().split('\\n').map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1)]));
function verify(user, password) {
  const m = /^\\{PBKDF2\\}(\\d+)\\$([^$]+)\\$([^$]+)$/.exec(users.get(user) ?? '');
  if (!m) return false;
  const bits = Math.floor((m[3].length * 3) / 64) * 128;
  return pbkdf2Sync(password, Buffer.from(m[2], 'base64'), Number(m[1]), bits / 8, 'sha512').toString('base64') === m[3];
}
createServer((req, res) => {
  const [user, password] = Buffer.from((req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64').toString().split(':');
  if (!verify(user, password ?? '')) return res.writeHead(401).end('{"error":{"type":"security_exception"}}');
  res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"yellow","number_of_nodes":1}');
}).listen(port, '127.0.0.1', () => console.log('started on ' + port));
`,
);
writeFileSync(standIn, `#!/bin/sh\nexec node "${join(dir, 'bin', 'stand-in-node.mjs')}" "$@"\n`);
chmodSync(standIn, 0o755);
/** A stand-in node whose transport port another process holds: it exits as Elasticsearch does then. */
const portTaken = join(dir, 'bin', 'elasticsearch-port-taken');
writeFileSync(
  portTaken,
  [
    '#!/bin/sh',
    'port=$(sed -n "s/^transport.port: //p" "$ES_PATH_CONF/elasticsearch.yml")',
    'echo "[ERROR][o.e.b.Elasticsearch] fatal exception while booting Elasticsearch: BindTransportException[Failed to bind to 127.0.0.1:$port]; nested: BindException[Address already in use];"',
    'exit 1',
    '',
  ].join('\n'),
);
chmodSync(portTaken, 0o755);

/** Just enough of a runtime to run units: spawn, follow, stop, files with mode 0600. */
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

  logTail(unit: UnitDefinition) {
    try {
      return readFileSync(join(unit.dir, 'process.log'), 'utf8').trim().split('\n').slice(-3).join(' | ');
    } catch {
      return '';
    }
  }

  writeFile(unit: UnitDefinition, name: string, content: string) {
    mkdirSync(unit.dir, { recursive: true, mode: 0o700 });
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

function recorder(): StepContext & { steps: string[] } {
  const steps: string[] = [];
  return { steps, step: (name) => void steps.push(name) };
}

async function specWithPorts(id: string): Promise<InstanceSpec> {
  return {
    id,
    service: 'elasticsearch',
    engine: 'elasticsearch',
    routes: [],
    type: 'elasticsearch',
    version: '8.11',
    plan: 8,
    encrypted: false,
    storageEngine: null,
    password: null,
    adminSecret: 'admin-secret-0123456789',
    ports: { 'engine.http': await freePort(), 'engine.transport': await freePort(), 'engine.kibana': await freePort() },
  };
}

const elasticsearch = { name: 'elasticsearch', path: standIn, version: '8.11.1' };

describe('ElasticsearchEngine', () => {
  it('runs the node through env with its configuration directory, path.data naming the unit directory', () => {
    const engine = new ElasticsearchEngine({ node: elasticsearch, enginesRunAsRoot: false });
    const [node, ...rest] = engine.units({ id: 'i1' } as InstanceSpec, '/data/instances/i1');
    expect(rest).toEqual([]);
    expect(node).toEqual({
      instanceId: 'i1',
      role: 'node',
      dir: '/data/instances/i1/node',
      bin: '/usr/bin/env',
      args: [
        'ES_PATH_CONF=/data/instances/i1/node',
        standIn,
        '-Epath.data=/data/instances/i1/node/data',
        '-Epath.repo=/data/instances/i1/node/snapshots',
      ],
    });
    const os = new ElasticsearchEngine({
      node: { name: 'opensearch', path: '/usr/share/opensearch/bin/opensearch', version: '2.11.0' },
      enginesRunAsRoot: false,
    });
    expect(os.units({ id: 'i1' } as InstanceSpec, '/d')[0]?.args[0]).toBe('OPENSEARCH_PATH_CONF=/d/node');
  });

  it('runs Kibana of the same release next to the node, with its configuration file', () => {
    const engine = new ElasticsearchEngine({
      node: elasticsearch,
      dashboards: { name: 'kibana', path: '/usr/share/kibana/bin/kibana', version: '8.11.1' },
      enginesRunAsRoot: false,
    });
    const units = engine.units({ id: 'i1' } as InstanceSpec, '/d');
    expect(units.map((u) => u.role)).toEqual(['node', 'kibana']);
    expect(units[1]).toMatchObject({ bin: '/usr/share/kibana/bin/kibana', args: ['--config', '/d/kibana/kibana.yml'] });
    expect(engine.dashboardsUse()).toMatchObject({ use: true });
  });

  it('starts the node, which answers with hangar credentials from its file realm; a second pass changes nothing', async () => {
    const engine = new ElasticsearchEngine({ node: elasticsearch, enginesRunAsRoot: false });
    const host = new SpawningUnitHost();
    hosts.push(host);
    const spec = await specWithPorts('65a1b2c3d4e5f60718293a4b');
    const instanceDir = join(dir, 'instances', spec.id);
    const ctx = recorder();
    expect(await engine.ensureUnits(spec, { dir: instanceDir, host }, ctx)).toEqual({ fresh: true });
    expect(ctx.steps).toEqual(['create:node-started']);
    const nodeDir = join(instanceDir, 'node');
    expect(statSync(join(nodeDir, 'users')).mode & 0o777).toBe(0o600);
    expect(existsSync(join(nodeDir, 'data'))).toBe(true);

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

  it('fails a node that exits at start with its log', async () => {
    const engine = new ElasticsearchEngine({ node: elasticsearch, enginesRunAsRoot: false });
    const host = new SpawningUnitHost();
    hosts.push(host);
    const spec = await specWithPorts('65a1b2c3d4e5f60718293a4c');
    const instanceDir = join(dir, 'instances', spec.id);
    // what a node does with a configuration directory it cannot use
    const original = host.writeFile.bind(host);
    host.writeFile = (unit, name, content) => (name === 'jvm.options' ? false : original(unit, name, content));
    await expect(engine.ensureUnits(spec, { dir: instanceDir, host }, recorder())).rejects.toThrow(
      /elasticsearch exited: .*missing jvm\.options/,
    );
  });

  it('reports a port held by another process, naming its role, so that the engine is moved', async () => {
    const engine = new ElasticsearchEngine({ node: { ...elasticsearch, path: portTaken }, enginesRunAsRoot: false });
    const host = new SpawningUnitHost();
    hosts.push(host);
    const spec = await specWithPorts('65a1b2c3d4e5f60718293a4e');
    const failure = await engine.ensureUnits(spec, { dir: join(dir, 'instances', spec.id), host }, recorder()).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(PortTakenError);
    expect(failure).toMatchObject({ role: 'engine.transport', port: spec.ports['engine.transport'] });
  });

  it('stops waiting when the pass is cancelled', async () => {
    const engine = new ElasticsearchEngine({ node: elasticsearch, enginesRunAsRoot: false });
    const host = new SpawningUnitHost();
    // a node that runs but never answers: nothing is spawned, and nothing listens on its port
    host.ensureUnit = async () => ({ pid: process.pid, started: true });
    host.isRunning = () => true;
    const aborted = new AbortController();
    const spec = await specWithPorts('65a1b2c3d4e5f60718293a4f');
    const pass = engine.ensureUnits(spec, { dir: join(dir, 'instances', spec.id), host }, { step: () => {}, signal: aborted.signal });
    setTimeout(() => aborted.abort(), 300);
    await expect(pass).rejects.toThrow(/cancelled while waiting for elasticsearch/);
  });

  it('refuses to run as root (where engines run as root), before starting anything', async () => {
    const engine = new ElasticsearchEngine({ node: elasticsearch, enginesRunAsRoot: true });
    expect(engine.support().unavailableReason).toMatch(/refuses to run as root/);
    const host = new SpawningUnitHost();
    const failure = engine.ensureUnits(await specWithPorts('65a1b2c3d4e5f60718293a4d'), { dir: join(dir, 'root'), host }, recorder());
    await expect(failure).rejects.toBeInstanceOf(TerminalError);
    expect(host.children.size).toBe(0);
  });
});
