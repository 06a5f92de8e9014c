import { describe, expect, it } from 'vitest';
import type { InstanceSpec } from '../domain/units.js';
import { ConvergedSpecs } from './converged.js';

const spec: InstanceSpec = {
  id: 'i1',
  service: 'redis',
  engine: 'redis',
  routes: [],
  type: 'redis_ha_instance',
  version: '7.0',
  plan: 500,
  encrypted: false,
  storageEngine: null,
  password: 'pw',
  adminSecret: 'admin',
  ports: { 'engine.primary': 40000 } as never,
};

describe('ConvergedSpecs', () => {
  it('matches the spec it was told of, at the version it was carried out as', () => {
    const c = new ConvergedSpecs();
    expect(c.matches(spec, 3)).toBe(false);
    c.remember(spec, 3);
    expect(c.matches({ ...spec }, 3)).toBe(true);
  });

  it('does not match once another version was carried out (by another replica), or with any field changed', () => {
    const c = new ConvergedSpecs();
    c.remember(spec, 3);
    expect(c.matches(spec, 4)).toBe(false);
    expect(c.matches({ ...spec, plan: 1000 }, 3)).toBe(false);
    expect(c.matches({ ...spec, password: 'new' }, 3)).toBe(false);
    expect(c.matches({ ...spec, priorPasswords: ['pw'] }, 3)).toBe(false);
    expect(c.matches({ ...spec, settings: { timeout: '300' } }, 3)).toBe(false);
    expect(c.matches({ ...spec, users: [{ name: 'app', passwords: ['x'], keys: ['*'], channels: [], commands: ['+@read'] }] }, 3)).toBe(
      false,
    );
  });

  it('forgets an instance, and everything', () => {
    const c = new ConvergedSpecs();
    c.remember(spec, 3);
    c.remember({ ...spec, id: 'i2' }, 1);
    c.forget('i1');
    expect(c.matches(spec, 3)).toBe(false);
    expect(c.matches({ ...spec, id: 'i2' }, 1)).toBe(true);
    c.clear();
    expect(c.size).toBe(0);
  });

  it('knows which instances this process tried to bring up: kept when what ran changed, gone with the instance or the runtime', () => {
    const c = new ConvergedSpecs();
    expect(c.wasTried('i1')).toBe(false);
    c.markTried('i1');
    c.markTried('i2');
    // a unit died, a pass failed: what ran is no longer known, but the instance was brought up before
    c.forget('i1');
    expect(c.wasTried('i1')).toBe(true);
    c.drop('i1');
    expect(c.wasTried('i1')).toBe(false);
    c.clear();
    expect(c.wasTried('i2')).toBe(false);
  });
});
