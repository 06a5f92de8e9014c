import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { InstalledEngine } from '../install/engine-manifest.js';
import {
  dashboardsUse,
  nodeFamily,
  nodeFor,
  nodesOf,
  productOf,
  rootRefusal,
  servedVersions,
  unavailableVersions,
  type NodeInstall,
} from './elasticsearch-versions.js';

const dir = mkdtempSync(join(tmpdir(), 'hangar-es-versions-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A distribution laid out as in the engine cache: its start script, and what tells its security. */
function install(product: string, version: string, opts: { xpack?: boolean; flavor?: string } = {}): InstalledEngine {
  const home = join(dir, product, version);
  mkdirSync(join(home, 'bin'), { recursive: true });
  const program = join(home, 'bin', product.startsWith('opensearch') ? 'opensearch' : 'elasticsearch');
  writeFileSync(program, '#!/bin/sh\n');
  chmodSync(program, 0o755);
  if (opts.xpack) mkdirSync(join(home, 'modules', 'x-pack-security'), { recursive: true });
  if (opts.flavor) writeFileSync(join(home, 'bin', 'elasticsearch-env'), `ES_DISTRIBUTION_FLAVOR=${opts.flavor}\n`);
  return {
    product,
    version,
    dir: home,
    program,
    source: { kind: 'program', file: program, sha256: '0'.repeat(64) },
    java: { home: '/usr/lib/jvm/java-17-openjdk-amd64', version: '17.0.15' },
    env: { JAVA_HOME: '/usr/lib/jvm/java-17-openjdk-amd64' },
    patches: [],
    installedAt: '2026-12-07T21:21:33.598Z',
  };
}

const CACHE = [
  install('elasticsearch', '2.4.6'),
  install('elasticsearch', '5.6.9'),
  install('elasticsearch', '6.1.2'),
  install('elasticsearch', '6.8.23', { xpack: true, flavor: 'default' }),
  install('elasticsearch-oss', '6.8.23', { flavor: 'oss' }),
  install('elasticsearch-oss', '6.7.2', { flavor: 'oss' }),
  // the integration-test zip: X-Pack's security module, flavoured oss, stays off
  install('elasticsearch', '7.17.25', { xpack: true, flavor: 'oss' }),
  install('opensearch', '2.19.1'),
];

describe('nodeFamily', () => {
  it('tells how each release line is driven, and which hangar cannot drive', () => {
    expect(['2.4.6', '5.4.3', '5.6.9', '6.1.2', '6.8.23', '7.17.25', '8.11.1'].map((v) => nodeFamily('elasticsearch', v))).toEqual([
      'es2',
      'es5',
      'es5',
      'es6',
      'es6',
      'es7',
      'es7',
    ]);
    expect(nodeFamily('opensearch', '2.19.1')).toBe('opensearch');
    // no single-node discovery before 5.4; 1.x is not driven
    expect(nodeFamily('elasticsearch', '5.2.2')).toBeUndefined();
    expect(nodeFamily('elasticsearch', '1.7.6')).toBeUndefined();
  });
});

describe('nodesOf', () => {
  const es = nodesOf('elasticsearch', CACHE, ['elasticsearch', 'elasticsearch-oss'], undefined);

  it("finds every version the cache holds of the product's distributions, one node per version, the default distribution first", () => {
    expect(es.nodes.map((n) => `${n.version} ${n.origin}`)).toEqual([
      '2.4.6 hangar engines install elasticsearch@2.4.6',
      '5.6.9 hangar engines install elasticsearch@5.6.9',
      '6.1.2 hangar engines install elasticsearch@6.1.2',
      '6.7.2 hangar engines install elasticsearch-oss@6.7.2',
      '6.8.23 hangar engines install elasticsearch@6.8.23',
      '7.17.25 hangar engines install elasticsearch@7.17.25',
    ]);
    expect(es.nodes.every((n) => n.env.JAVA_HOME === '/usr/lib/jvm/java-17-openjdk-amd64')).toBe(true);
  });

  it('turns security on only in a default distribution whose free licence has it (6.8, 7.1 on)', () => {
    expect(Object.fromEntries(es.nodes.map((n) => [n.version, n.security]))).toEqual({
      '2.4.6': false,
      '5.6.9': false,
      '6.1.2': false,
      '6.7.2': false,
      '6.8.23': true,
      '7.17.25': false,
    });
  });

  it('adds a binary found on PATH for a version the cache does not hold, and says why one cannot be driven', () => {
    const path = install('path', '8.11.1', { xpack: true }).program;
    const withPath = nodesOf('elasticsearch', CACHE, ['elasticsearch'], { name: 'elasticsearch', path, version: '8.11.1' });
    expect(withPath.nodes.at(-1)).toMatchObject({ version: '8.11.1', origin: path, env: {}, security: true, family: 'es7' });
    // the cache's wins for a version both have
    const same = nodesOf('elasticsearch', CACHE, ['elasticsearch'], { name: 'elasticsearch', path, version: '2.4.6' });
    expect(same.nodes.find((n) => n.version === '2.4.6')?.origin).toBe('hangar engines install elasticsearch@2.4.6');
    const old = nodesOf('elasticsearch', [], ['elasticsearch'], { name: 'elasticsearch', path, version: '1.7.6' });
    expect(old).toEqual({ nodes: [], problems: [expect.stringMatching(/elasticsearch 1\.7\.6, which hangar does not drive/)] });
  });

  it('keeps OpenSearch apart', () => {
    const os = nodesOf('opensearch', CACHE, ['opensearch'], undefined).nodes;
    expect(os.map((n) => [n.version, n.family, n.security])).toEqual([['2.19.1', 'opensearch', false]]);
  });
});

describe('the versions served', () => {
  const nodes = nodesOf('elasticsearch', CACHE, ['elasticsearch', 'elasticsearch-oss'], undefined).nodes;

  it('offers X.Y.Z and X.Y of each node', () => {
    expect(servedVersions(nodes)).toEqual([
      '2.4.6',
      '2.4',
      '5.6.9',
      '5.6',
      '6.1.2',
      '6.1',
      '6.7.2',
      '6.7',
      '6.8.23',
      '6.8',
      '7.17.25',
      '7.17',
    ]);
  });

  it('serves a version by its own node, X.Y by the newest of its line, and nothing else', () => {
    expect(nodeFor(nodes, '6.8.23')?.origin).toBe('hangar engines install elasticsearch@6.8.23');
    expect(nodeFor(nodes, '6.8')?.version).toBe('6.8.23');
    expect(nodeFor(nodes, '6.4.1')).toBeUndefined();
    expect(nodeFor(nodes, '6')).toBeUndefined();
  });

  it('lists what it knows and does not serve, with why', () => {
    expect(
      unavailableVersions(
        ['2.4.6', '5.2.2', '5.5.1', '6.4.1', '9.9.9'],
        servedVersions(nodes),
        { '5.2.2': 'fails at bootstrap', '6.4.1': 'is not published' },
        { '5.5.1': 'elasticsearch' },
      ),
    ).toEqual([
      { version: '5.2.2', reason: 'hangar cannot run it: it fails at bootstrap' },
      { version: '5.5.1', reason: 'not installed here: run `hangar engines install elasticsearch@5.5.1`' },
      { version: '6.4.1', reason: 'hangar cannot run it: it is not published' },
      { version: '9.9.9', reason: 'hangar does not install it (not verified to run here)' },
    ]);
  });
});

describe('productOf and rootRefusal', () => {
  it('tells OpenSearch from Elasticsearch by the binary', () => {
    expect(productOf({ name: 'elasticsearch', path: '/usr/share/elasticsearch/bin/elasticsearch', version: '8.11.1' })).toBe(
      'elasticsearch',
    );
    expect(productOf({ name: 'node', path: '/opt/opensearch', version: '2.11.0' })).toBe('opensearch');
  });

  it('refuses either product where engines run as root (HANGAR_ENGINE_USER=root), which both refuse', () => {
    expect(rootRefusal('elasticsearch', false)).toBeUndefined();
    expect(rootRefusal('elasticsearch', true)).toMatch(
      /elasticsearch refuses to run as root, and engines run as root here \(HANGAR_ENGINE_USER=root\)/,
    );
    expect(rootRefusal('opensearch', true)).toMatch(/opensearch refuses to run as root/);
  });
});

describe('dashboardsUse', () => {
  const bin = (name: string, version: string) => ({ name, path: `/usr/share/${name}/bin/${name}`, version });
  const node = (over: Partial<NodeInstall>): NodeInstall => ({
    product: 'elasticsearch',
    version: '8.11.1',
    family: 'es7',
    program: '/x/bin/elasticsearch',
    home: '/x',
    env: {},
    origin: '/x/bin/elasticsearch',
    security: true,
    securityPlugin: false,
    ...over,
  });
  const es = node({});
  const os = node({ product: 'opensearch', version: '2.11.0', family: 'opensearch', security: false });

  it('runs Kibana of the same release series next to Elasticsearch with security, OpenSearch Dashboards next to OpenSearch', () => {
    expect(dashboardsUse(es, bin('kibana', '8.11.3'))).toMatchObject({ use: true, binary: { name: 'kibana' } });
    expect(dashboardsUse(os, bin('opensearch-dashboards', '2.11.1'))).toMatchObject({ use: true });
  });

  it('says why it does not, naming what to install', () => {
    expect(dashboardsUse(es, undefined)).toEqual({
      use: false,
      reason: expect.stringMatching(/no kibana 8\.11 was found \(HANGAR_KIBANA_BIN\); hangar cannot install it/),
    });
    expect(dashboardsUse(os, undefined)).toEqual({ use: false, reason: expect.stringMatching(/no opensearch-dashboards 2\.11 was found/) });
    expect(dashboardsUse(es, bin('kibana', '8.10.4'))).toEqual({
      use: false,
      reason: expect.stringMatching(/kibana 8\.10\.4 .* does not work with elasticsearch 8\.11\.1: install kibana 8\.11/),
    });
    expect(dashboardsUse(es, bin('opensearch-dashboards', '8.11.1'))).toEqual({
      use: false,
      reason: expect.stringMatching(/install kibana 8\.11/),
    });
    expect(dashboardsUse(os, bin('kibana', '2.11.0'))).toEqual({
      use: false,
      reason: expect.stringMatching(/install opensearch-dashboards 2\.11/),
    });
    for (const n of [node({ version: '7.9.3' }), node({ version: '6.1.2', family: 'es6', security: false })]) {
      expect(dashboardsUse(n, bin('kibana', n.version))).toEqual({
        use: false,
        reason: expect.stringMatching(/hangar runs Kibana only beside Elasticsearch 7\.10\.0 or later with security/),
      });
    }
  });
});
