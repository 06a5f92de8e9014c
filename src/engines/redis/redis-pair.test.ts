import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { UnitDefinition, UnitHost } from '../../domain/units.js';
import { CONFIG_FILE, configuredPort, pairFromFiles, pairWith, unitOfConfigFile } from './redis-pair.js';

describe('which unit plays the primary', () => {
  let dir: string;
  let units: [UnitDefinition, UnitDefinition];
  // files only: what the pair reads of the host
  const host = {
    readFile: (u: UnitDefinition, name: string) => {
      try {
        return readFileSync(join(u.dir, name), 'utf8');
      } catch {
        return undefined;
      }
    },
  } as UnitHost;
  const conf = (u: UnitDefinition, text: string) => {
    mkdirSync(u.dir, { recursive: true });
    writeFileSync(join(u.dir, CONFIG_FILE), text);
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'hangar-pair-'));
    const unit = (role: string): UnitDefinition => ({
      instanceId: 'i',
      role,
      dir: join(dir, role),
      bin: 'valkey-server',
      args: [join(dir, role, CONFIG_FILE)],
    });
    units = [unit('primary'), unit('replica')];
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reads the port of a redis.conf', () => {
    expect(configuredPort('bind 127.0.0.1\nport 20002\nprotected-mode yes\n')).toBe(20002);
    expect(configuredPort('bind 127.0.0.1\n')).toBeUndefined();
    expect(configuredPort(undefined)).toBeUndefined();
  });

  it('by the directories while no file says otherwise (an instance not built yet, or never switched)', () => {
    expect(pairFromFiles(units, host, 20002)).toEqual({ primary: units[0], replica: units[1] });
    conf(units[0], 'port 20002\n');
    conf(units[1], 'port 20003\nreplicaof 127.0.0.1 20002\n');
    expect(pairFromFiles(units, host, 20002)).toEqual({ primary: units[0], replica: units[1] });
  });

  it("the unit whose file has the primary's port, once a switch of engines switched the roles", () => {
    conf(units[0], 'port 20003\nreplicaof 127.0.0.1 20002\n');
    conf(units[1], 'port 20002\n');
    expect(pairFromFiles(units, host, 20002)).toEqual({ primary: units[1], replica: units[0] });
    // both saying the primary's port (an edited file): the directories decide
    conf(units[0], 'port 20002\n');
    expect(pairFromFiles(units, host, 20002)).toEqual({ primary: units[0], replica: units[1] });
  });

  it('the unit an engine was started as, by the file INFO server names', () => {
    expect(unitOfConfigFile(units, join(dir, 'replica', CONFIG_FILE))).toBe(units[1]);
    expect(unitOfConfigFile(units, join(dir, 'primary', CONFIG_FILE))).toBe(units[0]);
    expect(unitOfConfigFile(units, '/etc/redis/redis.conf')).toBeUndefined();
    expect(unitOfConfigFile(units, '')).toBeUndefined();
    expect(pairWith(units, units[1])).toEqual({ primary: units[1], replica: units[0] });
  });
});
