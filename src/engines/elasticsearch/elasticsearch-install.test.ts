import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type MavenServer, sha1Of, startMavenServer } from '../../../test/helpers/maven-server.js';
import { fakeElasticsearchZip } from '../../../test/helpers/zip.js';
import { installEngine } from '../install/engine-cache.js';
import { type InstallRecipe, SILENT } from '../install/install-recipe.js';
import { resolveEngineRef } from '../installs.js';
import { ELASTICSEARCH_INSTALL, OPENSEARCH_INSTALL, patchJvmOptions } from './elasticsearch-install.js';

// The Elasticsearch and OpenSearch recipes against a Maven repository of the test's own, with
// stand-in JDKs (a `release` file and a bin/java), so that what the machine has does not matter.

let server: MavenServer;
let tmp: string;
let cache: string;

beforeAll(async () => {
  server = await startMavenServer();
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => {
  tmp = mkdtempSync(join(tmpdir(), 'hangar-es-install-'));
  cache = join(tmp, 'cache');
});
afterEach(() => {
  rmSync(tmp, { recursive: true, force: true });
});

/** A JDK stand-in: what hangar reads of one (its release file, an executable bin/java). */
function jdk(name: string, version: string): string {
  const home = join(tmp, 'jvm', name);
  mkdirSync(join(home, 'bin'), { recursive: true });
  writeFileSync(join(home, 'release'), `JAVA_VERSION="${version}"\n`);
  writeFileSync(join(home, 'bin', 'java'), '#!/bin/sh\nexit 0\n');
  chmodSync(join(home, 'bin', 'java'), 0o755);
  return home;
}

const ES = 'org/elasticsearch/distribution/zip/elasticsearch';

async function install(recipe: InstallRecipe, version: string, env: NodeJS.ProcessEnv, jvmDir = join(tmp, 'jvm')) {
  const ctx = { version, from: server.base, sha1: undefined, env, jvmDir, progress: SILENT };
  await recipe.preflight(ctx);
  return installEngine(cache, recipe.product, version, {}, (dir) => recipe.install({ ...ctx, dir }));
}

const CMS_OPTIONS = `-Xms2g
-Xmx2g

## GC configuration
-XX:+UseConcMarkSweepGC
-XX:CMSInitiatingOccupancyFraction=75
-XX:+UseCMSInitiatingOccupancyOnly

-XX:+AlwaysPreTouch
`;

const GC_LOG_OPTIONS = `## GC configuration
8-13:-XX:+UseConcMarkSweepGC
8-13:-XX:CMSInitiatingOccupancyFraction=75
14-:-XX:+UseG1GC
-XX:HeapDumpPath=data
8:-Xloggc:logs/gc.log
9-:-Xlog:gc*,gc+age=trace,safepoint:file=logs/gc.log:utctime,pid,tags:filecount=32,filesize=64m
`;

describe('patchJvmOptions', () => {
  it('comments out the CMS lines the JVM refuses from Java 14 on and names G1 instead', () => {
    const out = patchJvmOptions(CMS_OPTIONS, { cms: true, gcLog: true });
    expect(out?.text.split('\n').filter((l) => l.startsWith('-XX'))).toEqual(['-XX:+UseG1GC', '-XX:+AlwaysPreTouch']);
    expect(out?.text).toContain('# -XX:+UseConcMarkSweepGC   (hangar: the CMS collector is gone from Java 14 on)');
    expect(out?.patches).toEqual(['config/jvm.options: the CMS collector lines commented out, -XX:+UseG1GC added']);
  });

  it('leaves the CMS lines bound to Java 8-13 alone, and comments out the GC log under the home', () => {
    const out = patchJvmOptions(GC_LOG_OPTIONS, { cms: true, gcLog: true });
    const active = out?.text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
    expect(active).toEqual([
      '8-13:-XX:+UseConcMarkSweepGC',
      '8-13:-XX:CMSInitiatingOccupancyFraction=75',
      '14-:-XX:+UseG1GC',
      '-XX:HeapDumpPath=data',
    ]);
    expect(out?.patches).toEqual(['config/jvm.options: the GC log to logs/gc.log (under the read-only home) commented out']);
    expect(patchJvmOptions('-Xms1g\n', { cms: true, gcLog: true })).toBeUndefined();
  });
});

describe('the Elasticsearch recipes', () => {
  it('6.8.23: unpacked, its GC log lines commented out, JAVA_HOME of the Java chosen recorded', async () => {
    const zip = fakeElasticsearchZip('6.8.23', { jvmOptions: GC_LOG_OPTIONS });
    server.put(`${ES}/6.8.23/elasticsearch-6.8.23.zip`, zip);
    const home = jdk('java-17', '17.0.99');
    const { engine } = await install(ELASTICSEARCH_INSTALL, '6.8.23', { JAVA_HOME: home });
    expect(engine).toMatchObject({
      product: 'elasticsearch',
      version: '6.8.23',
      program: join(cache, 'elasticsearch', '6.8.23', 'bin', 'elasticsearch'),
      java: { home, version: '17.0.99' },
      env: { JAVA_HOME: home },
      patches: ['config/jvm.options: the GC log to logs/gc.log (under the read-only home) commented out'],
      source: { kind: 'download', url: `${server.base}/${ES}/6.8.23/elasticsearch-6.8.23.zip`, sha1: sha1Of(zip) },
    });
    expect(readFileSync(join(engine.dir, 'config', 'jvm.options'), 'utf8')).toContain('# 9-:-Xlog:gc*');
  });

  it('5.6.9: the CMS lines of config/jvm.options commented out, G1 named', async () => {
    server.put(`${ES}/5.6.9/elasticsearch-5.6.9.zip`, fakeElasticsearchZip('5.6.9', { jvmOptions: CMS_OPTIONS }));
    const { engine } = await install(ELASTICSEARCH_INSTALL, '5.6.9', { JAVA_HOME: jdk('java-17', '17.0.99') });
    expect(engine.patches).toEqual(['config/jvm.options: the CMS collector lines commented out, -XX:+UseG1GC added']);
    expect(readFileSync(join(engine.dir, 'config', 'jvm.options'), 'utf8')).toMatch(/^-XX:\+UseG1GC$/m);
  });

  it('2.4.6: ES_GC_OPTS=-XX:+UseG1GC to start with, and the plugins directory it would make in its home', async () => {
    server.put(`${ES}/2.4.6/elasticsearch-2.4.6.zip`, fakeElasticsearchZip('2.4.6', { plugins: false }));
    const home = jdk('java-17', '17.0.99');
    const { engine } = await install(ELASTICSEARCH_INSTALL, '2.4.6', { JAVA_HOME: home });
    expect(engine.env).toEqual({ JAVA_HOME: home, ES_GC_OPTS: '-XX:+UseG1GC' });
    expect(engine.patches).toEqual(['plugins/ created, empty (the node makes it at start otherwise)']);
    expect(existsSync(join(engine.dir, 'plugins'))).toBe(true);
  });

  it('6.1.2, published without a .sha1: checked against the SHA-1 hangar pins', async () => {
    // a stand-in is not the real file: refused, the pinned sum named
    server.put(`${ES}/6.1.2/elasticsearch-6.1.2.zip`, fakeElasticsearchZip('6.1.2'), { sha1: null });
    await expect(install(ELASTICSEARCH_INSTALL, '6.1.2', { JAVA_HOME: jdk('java-17', '17.0.99') })).rejects.toThrow(
      /SHA-1 is [0-9a-f]{40}, but pinned by hangar .* says 8e01a72d763d3ffd1cf489d5d16a32e3abd4853a/,
    );
  });

  it('OpenSearch and 7.17: the Java home in their own variable', async () => {
    server.put(
      'org/opensearch/distribution/integ-test-zip/opensearch/2.19.1/opensearch-2.19.1.zip',
      fakeElasticsearchZip('2.19.1', { program: 'opensearch' }),
    );
    const home = jdk('java-17', '17.0.99');
    const { engine } = await install(OPENSEARCH_INSTALL, '2.19.1', { JAVA_HOME: home });
    expect(engine.env).toEqual({ OPENSEARCH_JAVA_HOME: home });
    expect(engine.program).toBe(join(cache, 'opensearch', '2.19.1', 'bin', 'opensearch'));
    server.put(
      'org/elasticsearch/distribution/integ-test-zip/elasticsearch/7.17.25/elasticsearch-7.17.25.zip',
      fakeElasticsearchZip('7.17.25'),
    );
    expect((await install(ELASTICSEARCH_INSTALL, '7.17.25', { JAVA_HOME: home })).engine.env).toEqual({ ES_JAVA_HOME: home });
  });

  it('picks a Java it runs on: JAVA_HOME when it fits, else the newest that fits; none fitting is refused before any download', async () => {
    server.put(`${ES}/6.8.23/elasticsearch-6.8.23.zip`, fakeElasticsearchZip('6.8.23'));
    const j11 = jdk('java-11', '11.0.20');
    const j17 = jdk('java-17', '17.0.99');
    const j25 = jdk('java-25', '25.0.1');
    expect((await install(ELASTICSEARCH_INSTALL, '6.8.23', { JAVA_HOME: j11 })).engine.java?.home).toBe(j11);
    rmSync(cache, { recursive: true });
    expect((await install(ELASTICSEARCH_INSTALL, '6.8.23', { JAVA_HOME: j25 })).engine.java?.home).toBe(j17);
    rmSync(join(tmp, 'jvm', 'java-11'), { recursive: true });
    rmSync(join(tmp, 'jvm', 'java-17'), { recursive: true });
    rmSync(cache, { recursive: true });
    server.requests.length = 0;
    const err = await install(ELASTICSEARCH_INSTALL, '6.8.23', { JAVA_HOME: j25, PATH: '' }).catch((e) => e);
    expect(err.message).toBe(
      `elasticsearch 6.8.23 needs Java 8 to 17: found only Java 25.0.1 at ${j25}; install one (apt-get install openjdk-17-jre-headless) or set JAVA_HOME to one`,
    );
    expect(server.requests).toEqual([]);
    const none = await install(ELASTICSEARCH_INSTALL, '6.8.23', { PATH: '' }, join(tmp, 'no-jvm')).catch((e) => e);
    expect(none.message).toContain(
      'no Java runtime was found (JAVA_HOME, /usr/lib/jvm/*, java on PATH); install one (apt-get install openjdk-17-jre-headless)',
    );
  });
});

describe('resolveEngineRef', () => {
  it('refuses the versions that cannot run, naming why and those that can', () => {
    expect(() => resolveEngineRef('elasticsearch@5.2.2')).toThrow(
      'elasticsearch 5.2.2 fails at bootstrap on Java 11 and 17 ("IllegalStateException: No match found"); hangar installs elasticsearch@2.4.6, elasticsearch@5.4.3',
    );
    expect(() => resolveEngineRef('elasticsearch@6.3.2')).toThrow('elasticsearch 6.3.2 is not published on Maven Central');
    expect(() => resolveEngineRef('elasticsearch-oss@6.4.1')).toThrow('is not published on Maven Central');
    expect(() => resolveEngineRef('elasticsearch@8.0.0')).toThrow('is not one hangar installs');
    expect(() => resolveEngineRef('elasticsearch')).toThrow('name a version as elasticsearch@X.Y.Z');
    expect(() => resolveEngineRef('kibana@7.10.2')).toThrow(
      '"kibana@7.10.2" is no engine hangar installs; products: elasticsearch, elasticsearch-oss, opensearch, ferretdb',
    );
    expect(resolveEngineRef('opensearch@2.19.1').recipe).toBe(OPENSEARCH_INSTALL);
  });
});
