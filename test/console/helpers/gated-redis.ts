import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The real redis-server behind a gate: a script (`bin`, given to hangar as
 * HANGAR_REDIS_SERVER_BIN) that runs redis-server once the gate is open. With the gate closed, an
 * engine hangar starts stays unstarted, so the operation that starts it (a build, a restore's
 * restart) is held in its running state for as long as a test needs to look at it, whatever the
 * speed of the machine. The gate starts open.
 */
export interface GatedRedisServer {
  readonly bin: string;
  open(): void;
  close(): void;
  /** Opens the gate (no engine left waiting) and removes the script. */
  remove(): void;
}

export function gatedRedisServer(prefix: string): GatedRedisServer {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  // hangar running as root starts its engines as the engine user, who must reach the script and the gate
  chmodSync(dir, 0o755);
  const gate = join(dir, 'open');
  const redisServer = spawnSync('sh', ['-c', 'PATH="$PATH:/usr/sbin:/sbin" command -v redis-server'], { encoding: 'utf8' }).stdout.trim();
  const bin = join(dir, 'gated-redis-server');
  writeFileSync(
    bin,
    [
      '#!/bin/sh',
      '# the real redis-server, started once the gate file exists (its version at once)',
      `case "$1" in --version|-v) exec ${redisServer} "$@";; esac`,
      `while [ ! -e '${gate}' ]; do sleep 0.05; done`,
      `exec ${redisServer} "$@"`,
      '',
    ].join('\n'),
  );
  chmodSync(bin, 0o755);
  const open = () => writeFileSync(gate, '');
  open();
  return {
    bin,
    open,
    close: () => rmSync(gate, { force: true }),
    remove: () => {
      open();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
