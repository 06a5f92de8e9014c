import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { compareVersions } from './versions.js';
import { ELASTICSEARCH_PROGRAM } from '../engines/elasticsearch/elasticsearch-product.js';
import { MONGOD_PROGRAM, MONGOS_PROGRAM } from '../engines/mongodb/mongodb-product.js';
import { REDIS_SERVER_PROGRAM } from '../engines/redis/redis-product.js';
import { OPENSEARCH_PROGRAM } from '../engines/opensearch/opensearch-product.js';
import { VALKEY_SERVER_PROGRAM } from '../engines/valkey/valkey-product.js';
import { HAPROXY_PROGRAM, lookupProgram, parseVersion, type ProgramSpec } from './binaries.js';

const SPECS: Readonly<Record<string, ProgramSpec>> = {
  redisServer: REDIS_SERVER_PROGRAM,
  valkeyServer: VALKEY_SERVER_PROGRAM,
  haproxy: HAPROXY_PROGRAM,
  mongod: MONGOD_PROGRAM,
  mongos: MONGOS_PROGRAM,
  elasticsearch: ELASTICSEARCH_PROGRAM,
  opensearch: OPENSEARCH_PROGRAM,
};
const lookupBinary = (key: string, configured: string | undefined, searchPath: string) =>
  lookupProgram(SPECS[key]!, configured, searchPath);

const dir = mkdtempSync(join(tmpdir(), 'hangar-binaries-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A stand-in program that prints `output` (these engines cannot be installed on this machine). */
function fakeProgram(name: string, output: string): string {
  const path = join(dir, name);
  // shell builtins only: the version is read with PATH set to the search path alone
  writeFileSync(path, `#!/bin/sh\nprintf '%s\\n' '${output}'\n`);
  chmodSync(path, 0o755);
  return path;
}

describe('parseVersion', () => {
  it('reads the version line of each engine', () => {
    expect(
      parseVersion(SPECS.redisServer!, 'Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=ae4d7c971a948f0'),
    ).toBe('7.0.15');
    expect(parseVersion(SPECS.haproxy!, 'HAProxy version 2.6.12-1+deb12u4 2026/10/17 - https://haproxy.org/')).toBe('2.6.12');
    expect(parseVersion(SPECS.mongod!, 'db version v6.0.5\nBuild Info: {\n    "version": "6.0.5"')).toBe('6.0.5');
    expect(parseVersion(SPECS.mongos!, 'mongos version v6.0.5\nBuild Info: {')).toBe('6.0.5');
    expect(
      parseVersion(
        SPECS.elasticsearch!,
        'Version: 8.11.1, Build: default/deb/6f9ff581fbcde658e6f69d6ce03050f060d1fd0c/2023-11-11T10:05:59.421038163Z, JVM: 21.0.1',
      ),
    ).toBe('8.11.1');
    expect(
      parseVersion(
        SPECS.elasticsearch!,
        'Version: 2.11.0, Build: tar/4dcad6dd1fd45b6bd91f041a041829c8687278fa/2023-10-13T02:55:55.511945994Z, JVM: 17.0.8',
      ),
    ).toBe('2.11.0');
    expect(
      parseVersion(SPECS.valkeyServer!, 'Valkey server v=8.0.1 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=fd1c9b4d7e2ac4b2'),
    ).toBe('8.0.1');
    expect(parseVersion(SPECS.mongod!, 'command not found')).toBeUndefined();
  });
});

describe('compareVersions', () => {
  it('orders versions by number, not by text', () => {
    expect(compareVersions('7.0.15', '7.0.0')).toBeGreaterThan(0);
    expect(compareVersions('6.2.14', '7.0.0')).toBeLessThan(0);
    expect(compareVersions('2.10.0', '2.9.9')).toBeGreaterThan(0);
    expect(compareVersions('2.6.12', '2.6.12')).toBe(0);
  });
});

describe('lookupBinary', () => {
  it('finds a binary on the search path and reads its version', async () => {
    fakeProgram('mongod', 'db version v7.0.2');
    expect(await lookupBinary('mongod', undefined, dir)).toEqual({
      found: { name: 'mongod', path: join(dir, 'mongod'), version: '7.0.2' },
    });
  });

  it('finds opensearch as its own program (the engine opensearch), not as elasticsearch', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'hangar-os-'));
    try {
      writeFileSync(
        join(empty, 'opensearch'),
        "#!/bin/sh\nprintf '%s\\n' 'Version: 2.11.0, Build: tar/4dcad6dd/2023-10-13, JVM: 17.0.8'\n",
      );
      chmodSync(join(empty, 'opensearch'), 0o755);
      expect(await lookupBinary('opensearch', undefined, empty)).toMatchObject({ found: { name: 'opensearch', version: '2.11.0' } });
      expect(await lookupBinary('elasticsearch', undefined, empty)).toEqual({
        problem: expect.stringMatching(/`elasticsearch` was not found.*HANGAR_ELASTICSEARCH_BIN/),
      });
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('names the missing binary and the variable that points to it', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'hangar-empty-'));
    try {
      const missing = await lookupBinary('mongos', undefined, empty);
      expect(missing).toEqual({ problem: expect.stringMatching(/`mongos`.*HANGAR_MONGOS_BIN/) });
      const configured = await lookupBinary('mongod', '/nonexistent/mongod', empty);
      expect(configured).toEqual({ problem: expect.stringMatching(/\/nonexistent\/mongod.*HANGAR_MONGOD_BIN/) });
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('refuses a redis-server older than 7.0, saying why', async () => {
    const path = fakeProgram(
      'old-redis-server',
      'Redis server v=6.0.16 sha=00000000:0 malloc=jemalloc-5.2.1 bits=64 build=a3fdef44459b3ad6',
    );
    expect(await lookupBinary('redisServer', path, dir)).toEqual({
      problem: expect.stringMatching(/6\.0\.16.*7\.0\.0.*HANGAR_REDIS_SERVER_BIN/),
    });
  });

  it('reports a binary that prints no version', async () => {
    const path = fakeProgram('broken-redis', 'segmentation fault');
    expect(await lookupBinary('redisServer', path, dir)).toEqual({ problem: expect.stringContaining('HANGAR_REDIS_SERVER_BIN') });
  });
});
