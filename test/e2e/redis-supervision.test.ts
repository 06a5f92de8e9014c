import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES, HangarProcess, enginesAvailable, portOf, serverProgram, type RedisRecord } from './helpers/hangar-process.js';
import { isAlive, pidFiles, processesUnder, type Proc } from './helpers/processes.js';
import { connectRedis, enginePid, eventually, pingOutcome, tcpAccepts } from './helpers/redis.js';
import { freePort } from '../helpers/ports.js';

/** The processes of the runtime under the data dir, by role: engines per unit directory, the edge's master and workers. */
function census(dataDir: string): { engines: Map<string, Proc[]>; edgeMasters: Proc[] } {
  const procs = processesUnder(dataDir);
  const engines = new Map<string, Proc[]>();
  for (const p of procs.filter((x) => /redis|valkey/.test(x.program))) {
    const unit = /\/instances\/([^/]+\/[^/]+)\/redis\.conf/.exec(p.cmdline)?.[1] ?? '?';
    engines.set(unit, [...(engines.get(unit) ?? []), p]);
  }
  const haproxy = procs.filter((x) => x.program.includes('haproxy'));
  const pids = new Set(haproxy.map((p) => p.pid));
  return { engines, edgeMasters: haproxy.filter((p) => !pids.has(p.ppid)) };
}

// Engines and the edge are supervised by hangar, and outlive it: on each engine of the redis service.
for (const engine of ENGINES)
  describe.runIf(enginesAvailable(engine))(`supervision on the local runtime, engine ${engine}`, () => {
    let hangar: HangarProcess;
    let inst: RedisRecord;
    const port = () => portOf(inst.public_connect_string);

    beforeAll(async () => {
      hangar = await HangarProcess.start();
      inst = await hangar.createRedis('supervised', { engine, acls: [{ cidr_mask: '127.0.0.1', description: 'this machine' }] });
    }, 60_000);

    afterAll(async () => {
      await hangar?.destroy();
    });

    it('restarts a killed primary within 5 s, with its data', async () => {
      const client = await connectRedis(port(), inst.password);
      await client.set('survives', 'a kill -9');
      client.destroy();
      const before = enginePid(hangar.dataDir, inst.id, 'primary');
      process.kill(before, 'SIGKILL');
      await eventually(
        'a new primary',
        () => {
          const now = enginePid(hangar.dataDir, inst.id, 'primary');
          return now !== before && isAlive(now);
        },
        5000,
      );
      await eventually('the instance answers again', async () => (await pingOutcome(port(), inst.password)) === 'PONG', 5000);
      const again = await connectRedis(port(), inst.password);
      try {
        expect(await again.get('survives')).toBe('a kill -9');
      } finally {
        again.destroy();
      }
    });

    it('restarts a killed edge within 5 s', async () => {
      const edge = pidFiles(hangar.dataDir).find((f) => f.file.endsWith('/edge/process.pid'))!;
      const oldGroup = census(hangar.dataDir).edgeMasters.map((p) => p.pid);
      process.kill(edge.pid, 'SIGKILL');
      // the killed master's worker can still answer for a moment: the answer must come from the new edge
      await eventually(
        'the edge serves again',
        async () => {
          const now = pidFiles(hangar.dataDir).find((f) => f.file.endsWith('/edge/process.pid'))?.pid;
          return now !== undefined && now !== edge.pid && isAlive(now) && (await pingOutcome(port(), inst.password)) === 'PONG';
        },
        5000,
      );
      expect(oldGroup).toEqual([edge.pid]);
    });

    it('keeps serving while hangar is dead, and adopts what runs when it is back: no duplicates', async () => {
      // a settled system: the instance ACTIVE, the edge restarted by the case before with its listener, hangar ready
      await hangar.waitFor(inst.name, (r) => r?.state === 'ACTIVE', 20_000);
      await eventually('hangar is ready', async () => (await hangar.readyz()).status === 200, 10_000);
      await eventually('one edge master, no worker of the killed one left', () => census(hangar.dataDir).edgeMasters.length === 1, 10_000);
      expect(await pingOutcome(port(), inst.password)).toBe('PONG');
      const before = census(hangar.dataDir);
      await hangar.kill();
      expect(await pingOutcome(port(), inst.password)).toBe('PONG');
      await hangar.serve();
      await hangar.waitSupervising();
      expect((await hangar.waitFor(inst.name, (r) => r?.state === 'ACTIVE')).state).toBe('ACTIVE');
      const after = census(hangar.dataDir);
      // one process per engine, the same ones as before, and one edge master
      for (const [unit, procs] of after.engines)
        expect(
          procs.map((p) => p.pid),
          unit,
        ).toEqual(before.engines.get(unit)!.map((p) => p.pid));
      expect([...after.engines.keys()].sort()).toEqual([`${inst.id}/primary`, `${inst.id}/replica`]);
      expect(after.edgeMasters.map((p) => p.pid)).toEqual(before.edgeMasters.map((p) => p.pid));
      expect(after.edgeMasters).toHaveLength(1);
      // every pid file names a live process of its unit
      for (const { file, pid } of pidFiles(hangar.dataDir)) expect(isAlive(pid), file).toBe(true);
      expect(await pingOutcome(port(), inst.password)).toBe('PONG');
    });

    it('removes an engine that belongs to no instance when it starts', async () => {
      await hangar.kill();
      // an engine left behind by an instance the store does not know, laid out as hangar lays
      // its engines out (its process title names its config file, as hangar's engines do)
      const orphan = '0123456789abcdef01234567';
      const orphanPort = await freePort();
      const dir = join(hangar.dataDir, 'instances', orphan, 'primary');
      mkdirSync(dir, { recursive: true });
      const config = [
        'bind 127.0.0.1',
        `port ${orphanPort}`,
        `dir "${dir}"`,
        'save ""',
        'proc-title-template "{title} {listen-addr} {server-mode} {config-file}"',
      ];
      writeFileSync(join(dir, 'redis.conf'), `${config.join('\n')}\n`);
      const child = spawn(serverProgram(engine), [join(dir, 'redis.conf')], { detached: true, stdio: 'ignore' });
      child.unref();
      writeFileSync(join(dir, 'process.pid'), `${child.pid}\n`);
      await eventually('the orphan runs', async () => processesUnder(dir).length === 1 && (await tcpAccepts(orphanPort)));
      await hangar.serve();
      await hangar.waitSupervising();
      await eventually(
        'the orphan is stopped and its data removed',
        () => !isAlive(child.pid!) && !existsSync(join(hangar.dataDir, 'instances', orphan)),
        10_000,
      );
      expect(await tcpAccepts(orphanPort)).toBe(false);
      expect(await pingOutcome(port(), inst.password)).toBe('PONG');
    });
  });
