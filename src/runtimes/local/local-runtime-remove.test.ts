import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config.js';
import type { EngineBinaries } from '../../lib/binaries.js';
import { LocalRuntime } from './local-runtime.js';

// How the runtime removes what runs under an interpreter (no engine is started: its programs
// stand in for Elasticsearch's java and Kibana's node, which cannot be installed on this machine).

const found = (name: string, version: string) => ({ found: { name, path: `/nonexistent/bin/${name}`, version } });
const problem = (text: string) => ({ problem: text });
const base: EngineBinaries = {
  redisServer: found('redis-server', '7.0.15'),
  haproxy: found('haproxy', '2.6.12'),
  mongod: problem('not here'),
  mongos: problem('not here'),
  elasticsearch: found('elasticsearch', '8.11.1'),
  kibana: problem('not here'),
};
const instanceId = '65a1b2c3d4e5f60718293a4b';

describe('LocalRuntime.removeInstance', () => {
  it("stops a unit by its pid file even when its program is an interpreter (Elasticsearch's java, Kibana's node)", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'hangar-remove-'));
    try {
      const r = new LocalRuntime({
        config: loadConfig({}, { HANGAR_DATA_DIR: dataDir }),
        log: pino({ level: 'silent' }),
        binaries: base,
        searchPath: '/usr/bin:/bin',
        instancesDir: join(dataDir, 'instances'),
      });
      const unitDir = join(dataDir, 'instances', instanceId, 'node');
      mkdirSync(unitDir, { recursive: true });
      // a node process standing for a JVM: its command line names the unit directory, its program is no engine binary
      const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', `${unitDir}/`], { detached: true, stdio: 'ignore' });
      await new Promise((resolve) => child.once('spawn', resolve));
      writeFileSync(join(unitDir, 'process.pid'), `${child.pid}\n`);
      const exited = new Promise((resolve) => child.once('exit', resolve));
      try {
        await r.removeInstance(instanceId, { step: () => {} });
        // removeInstance resolves once its processes are gone; the exit event may come a moment later
        await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 2000))]);
        expect(child.exitCode !== null || child.signalCode !== null).toBe(true);
      } finally {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
      expect(existsSync(join(dataDir, 'instances', instanceId))).toBe(false);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
