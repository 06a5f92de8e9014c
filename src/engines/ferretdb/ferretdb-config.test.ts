import { describe, expect, it } from 'vitest';
import { ferretdbProduct } from './ferretdb-product.js';
import { DATA_DIR, ferretdbArgs, ferretdbEnv, ferretdbMemoryMb } from './ferretdb-config.js';
import { FerretdbUsers } from './ferretdb-users.js';
import type { MongoUserAdmin } from '../engine.js';

describe('the ferretdb command line', () => {
  const args = ferretdbArgs({ port: 20001, dir: '/data/instances/x/ferretdb' });

  it('runs FerretDB over SQLite in the unit directory, on loopback, with authentication and without telemetry', () => {
    expect(args).toEqual(
      expect.arrayContaining([
        '--handler=sqlite',
        `--sqlite-url=file:/data/instances/x/ferretdb/${DATA_DIR}/`,
        '--state-dir=/data/instances/x/ferretdb',
        '--listen-addr=127.0.0.1:20001',
        '--debug-addr=-',
        '--test-enable-new-auth',
        '--setup-database=admin',
        '--setup-username=hangar',
        '--telemetry=disable',
      ]),
    );
  });

  it("never carries the password of hangar's user: it goes in the environment, with GOMEMLIMIT at the promise", () => {
    expect(args.join(' ')).not.toMatch(/password/);
    expect(ferretdbEnv('s3cret', 5)).toEqual({ FERRETDB_SETUP_PASSWORD: 's3cret', GOMEMLIMIT: `${ferretdbMemoryMb(5)}MiB` });
  });

  it('promises 256 MB and 5 % of the plan', () => {
    expect(ferretdbMemoryMb(1)).toBe(256 + 51);
    expect(ferretdbMemoryMb(100)).toBe(256 + 5120);
    expect(ferretdbProduct.promisedMemoryMb('mongodb_singledb', 20)).toBe(256 + 1024);
  });

  it('runs mongodb_singledb only, behind one public listener', () => {
    expect(ferretdbProduct.types).toEqual(['mongodb_singledb']);
    const ports = { public: 30001, 'engine.0': 20001 };
    expect(ferretdbProduct.edgeRoutes('mongodb_singledb', ports)).toEqual([
      { role: 'public', port: 30001, target: 'engine.0', targetPort: 20001, tls: false, group: 'main' },
    ]);
  });
});

describe('FerretDB users', () => {
  /** What the server is sent. */
  const sent: unknown[][] = [];
  const server: MongoUserAdmin = {
    listUsers: async () => [],
    createUser: async (...a) => void sent.push(['create', ...a]),
    updateUser: async (...a) => void sent.push(['update', ...a]),
    dropUser: async (...a) => void sent.push(['drop', ...a]),
  };
  const users = new FerretdbUsers(server);

  it('are given to the server with no roles (FerretDB 1.x takes none); a change of roles alone sends roles []', async () => {
    await users.createUser('app', 'u', 'pw-1', [{ role: 'readWrite', db: 'app' }]);
    await users.updateUser('app', 'u', { password: 'pw-2', roles: [{ role: 'read', db: 'app' }] });
    await users.updateUser('app', 'u', { roles: [{ role: 'read', db: 'x' }] });
    await users.updateUser('app', 'u', { password: 'pw-3' });
    await users.dropUser('app', 'u');
    expect(sent).toEqual([
      ['create', 'app', 'u', 'pw-1', []],
      ['update', 'app', 'u', { password: 'pw-2', roles: [] }],
      ['update', 'app', 'u', { roles: [] }],
      ['update', 'app', 'u', { password: 'pw-3' }],
      ['drop', 'app', 'u'],
    ]);
  });
});
