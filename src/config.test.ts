import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, SETTINGS, defaultEngineCache, loadConfig } from './config.js';

describe('loadConfig', () => {
  it('defaults: port 8080 on 127.0.0.1, data dir ./.hangar, SQLite, 24 h tokens', () => {
    const c = loadConfig({}, {});
    expect(c).toMatchObject({
      port: 8080,
      host: '127.0.0.1',
      dataDir: resolve('./.hangar'),
      databaseUrl: undefined,
      tokenTtlSeconds: 86_400,
      advertiseHost: '127.0.0.1',
      edgeBind: '127.0.0.1',
      portRange: { first: 20000, last: 29999 },
    });
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('the environment overrides the default, a flag overrides the environment', () => {
    expect(loadConfig({}, { HANGAR_PORT: '9000' }).port).toBe(9000);
    expect(loadConfig({ port: '9100' }, { HANGAR_PORT: '9000' }).port).toBe(9100);
    expect(loadConfig({ 'data-dir': '/tmp/flag' }, { HANGAR_DATA_DIR: '/tmp/env' }).dataDir).toBe('/tmp/flag');
    expect(loadConfig({}, { HANGAR_DATA_DIR: '/tmp/env' }).dataDir).toBe('/tmp/env');
    expect(loadConfig({ 'database-url': 'postgres://flag/db' }, { HANGAR_DATABASE_URL: 'postgres://env/db' }).databaseUrl).toBe(
      'postgres://flag/db',
    );
    expect(loadConfig({ runtime: 'local' }, { HANGAR_RUNTIME: 'emulated' }).runtime).toBe('local');
    expect(loadConfig({}, { HANGAR_RUNTIME: 'local' }).runtime).toBe('local');
  });

  it('the engine cache: the system cache for root, else the user cache (XDG_CACHE_HOME when absolute, else ~/.cache); the setting wins', () => {
    expect(defaultEngineCache({ XDG_CACHE_HOME: '/x', HOME: '/home/u' }, 0)).toBe('/var/cache/hangar/engines');
    expect(defaultEngineCache({ XDG_CACHE_HOME: '/x', HOME: '/home/u' }, 1000)).toBe('/x/hangar/engines');
    expect(defaultEngineCache({ XDG_CACHE_HOME: 'relative', HOME: '/home/u' }, 1000)).toBe('/home/u/.cache/hangar/engines');
    expect(defaultEngineCache({ HOME: '/home/u' }, 1000)).toBe('/home/u/.cache/hangar/engines');
    expect(loadConfig({}, { HANGAR_ENGINE_CACHE: '/srv/engines' }).engineCache).toBe('/srv/engines');
    expect(loadConfig({ 'engine-cache': 'rel' }, { HANGAR_ENGINE_CACHE: '/srv/engines' }).engineCache).toBe(resolve('rel'));
    expect(loadConfig({}, { XDG_CACHE_HOME: '/x' }).engineCache).toBe(defaultEngineCache({ XDG_CACHE_HOME: '/x' }, process.getuid!()));
  });

  it('an empty variable counts as unset', () => {
    expect(loadConfig({}, { HANGAR_PORT: '', HANGAR_DATABASE_URL: '' })).toMatchObject({ port: 8080, databaseUrl: undefined });
  });

  it('a flag given without a value (boolean from the parser) does not hide the environment', () => {
    expect(loadConfig({ port: true }, { HANGAR_PORT: '9000' }).port).toBe(9000);
  });

  it('port 0 asks for a free port', () => {
    expect(loadConfig({}, { HANGAR_PORT: '0' }).port).toBe(0);
  });

  it('the edge binds to the advertised host unless told otherwise', () => {
    expect(loadConfig({}, { HANGAR_ADVERTISE_HOST: '10.1.2.3' }).edgeBind).toBe('10.1.2.3');
    expect(loadConfig({}, { HANGAR_ADVERTISE_HOST: '10.1.2.3', HANGAR_EDGE_BIND: '0.0.0.0' }).edgeBind).toBe('0.0.0.0');
  });

  describe('errors name the variable or flag at fault', () => {
    it.each<[Record<string, string>, Record<string, string>, RegExp]>([
      [{}, { HANGAR_PORT: 'abc' }, /^HANGAR_PORT must be a TCP port .*"abc"/],
      [{}, { HANGAR_PORT: '70000' }, /^HANGAR_PORT /],
      [{ port: 'x' }, { HANGAR_PORT: '9000' }, /^--port must be a TCP port/],
      [{}, { HANGAR_RUNTIME: 'docker' }, /^HANGAR_RUNTIME must be "local" or "emulated", got "docker"/],
      [{}, { HANGAR_TOKEN_TTL: '0' }, /^HANGAR_TOKEN_TTL must be a positive integer/],
      [{}, { HANGAR_TOKEN_TTL: '1.5' }, /^HANGAR_TOKEN_TTL /],
      [{}, { HANGAR_ADVERTISE_HOST: 'example.com' }, /^HANGAR_ADVERTISE_HOST must be an IPv4 address/],
      [{}, { HANGAR_PORT_RANGE: '20000-20005' }, /^HANGAR_PORT_RANGE must be FIRST-LAST/],
      [{}, { HANGAR_REDIS_MAXMEMORY_POLICY: 'lru' }, /^HANGAR_REDIS_MAXMEMORY_POLICY must be one of noeviction/],
      [{}, { HANGAR_DATABASE_URL: 'mysql://x/y' }, /HANGAR_DATABASE_URL must start with postgres:\/\//],
      [{}, { HANGAR_BOOTSTRAP_LOGIN: 'ops@example.com' }, /HANGAR_BOOTSTRAP_LOGIN and HANGAR_BOOTSTRAP_PASSWORD go together/],
      [{}, { HANGAR_TLS_CERT: '/x.pem' }, /HANGAR_TLS_CERT and HANGAR_TLS_KEY go together/],
      [{}, { HANGAR_LEASE_TTL: '1' }, /HANGAR_LEASE_TTL must be at least 2 seconds/],
      [{}, { HANGAR_OPERATION_DEADLINES: 'create:60' }, /^HANGAR_OPERATION_DEADLINES must be KIND=SECONDS pairs/],
      [{}, { HANGAR_OPERATION_DEADLINES: 'build=60' }, /^HANGAR_OPERATION_DEADLINES must be KIND=SECONDS pairs .*kinds: create, resize/],
      [{}, { HANGAR_OPERATION_DEADLINES: 'create=0' }, /^HANGAR_OPERATION_DEADLINES /],
      [{}, { HANGAR_WEBHOOK_ALLOW_PRIVATE: 'sure' }, /^HANGAR_WEBHOOK_ALLOW_PRIVATE must be true or false, got "sure"/],
    ])('flags %j, env %j', (flags, env, message) => {
      expect(() => loadConfig(flags, env)).toThrow(ConfigError);
      expect(() => loadConfig(flags, env)).toThrow(message);
    });
  });

  it('operation deadlines: every kind family has one; a value changes only the kinds it names', () => {
    const d = loadConfig({}, {}).operationDeadlines;
    expect(d).toEqual({
      create: 300,
      resize: 600,
      engine: 1800,
      rename: 120,
      delete: 600,
      acl: 120,
      user: 120,
      password: 120,
      config: 120,
      backup: 3600,
      restore: 3600,
      default: 3600,
    });
    const changed = loadConfig(
      { 'operation-deadlines': 'create=600, acl.add=5' },
      { HANGAR_OPERATION_DEADLINES: 'create=1' },
    ).operationDeadlines;
    expect(changed).toMatchObject({ create: 600, 'acl.add': 5, acl: 120, resize: 600 });
  });

  it('webhook settings: https only and public targets only by default', () => {
    expect(loadConfig({}, {})).toMatchObject({
      webhookAllowHttp: false,
      webhookAllowPrivate: false,
      webhookRetryWindowSeconds: 86_400,
      eventRetentionSeconds: 86_400,
      operationRetentionSeconds: 2_592_000,
    });
    expect(loadConfig({}, { HANGAR_WEBHOOK_ALLOW_HTTP: 'true', HANGAR_WEBHOOK_ALLOW_PRIVATE: 'YES' })).toMatchObject({
      webhookAllowHttp: true,
      webhookAllowPrivate: true,
    });
    expect(loadConfig({ 'webhook-allow-private': 'false' }, { HANGAR_WEBHOOK_ALLOW_PRIVATE: 'true' }).webhookAllowPrivate).toBe(false);
  });

  it('every setting has a flag and a HANGAR_ variable, each used once', () => {
    const envs = SETTINGS.map((s) => s.env);
    const flags = SETTINGS.map((s) => s.flag);
    for (const e of envs) expect(e).toMatch(/^HANGAR_[A-Z][A-Z0-9_]*$/);
    expect(new Set(envs).size).toBe(envs.length);
    expect(new Set(flags).size).toBe(flags.length);
  });
});

describe('backup settings', () => {
  it('reads the default backup policy, and refuses one that is not', () => {
    expect(loadConfig({}, { HANGAR_BACKUP_POLICY: 'daily=03:00,keep=7' }).backupPolicy).toEqual({
      schedule: { kind: 'daily', minuteOfDay: 180 },
      retention: { keepLast: 7, keepDays: null },
    });
    expect(loadConfig({}, {}).backupPolicy).toEqual({ schedule: { kind: 'off' }, retention: { keepLast: null, keepDays: null } });
    expect(() => loadConfig({}, { HANGAR_BACKUP_POLICY: 'weekly' })).toThrow(
      /HANGAR_BACKUP_POLICY: "weekly" is not part of a backup policy/,
    );
    expect(() => loadConfig({}, { HANGAR_BACKUP_POLICY: 'daily=25:00' })).toThrow(/daily= takes a time HH:MM/);
  });

  it('wants the S3 access key and its secret together, and an endpoint that is a URL', () => {
    expect(() => loadConfig({}, { HANGAR_BACKUP_S3_ACCESS_KEY_ID: 'k' })).toThrow(/go together/);
    expect(() => loadConfig({}, { HANGAR_BACKUP_S3_ENDPOINT: 'minio:9000' })).toThrow(/HANGAR_BACKUP_S3_ENDPOINT must be an http/);
  });
});

describe('the engine user', () => {
  it('is hangar-engine unless set (flag over environment), and must be a user name', () => {
    expect(loadConfig({}, {}).engineUser).toBe('hangar-engine');
    expect(loadConfig({}, { HANGAR_ENGINE_USER: 'redis' }).engineUser).toBe('redis');
    expect(loadConfig({ 'engine-user': 'root' }, { HANGAR_ENGINE_USER: 'redis' }).engineUser).toBe('root');
    for (const bad of ['--system', 'a b', '../etc', 'x'.repeat(33), '1abc']) {
      expect(() => loadConfig({}, { HANGAR_ENGINE_USER: bad }), bad).toThrow(/HANGAR_ENGINE_USER must be a user name/);
    }
  });
});
