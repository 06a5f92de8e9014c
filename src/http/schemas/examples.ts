/**
 * Example values of the OpenAPI document, shaped exactly as hangar answers (a test validates
 * each against its schema). Addresses are from the documentation range 203.0.113.0/24.
 */

const CREATED = '2026-11-21 09:00:00';
const CREATED_MS = 1795251600000;
const HOST = '203.0.113.10';

export const REDIS_INSTANCE = {
  id: '6560a1f2c3d4e5f607182930',
  name: 'cache',
  service: 'redis',
  type: 'redis_ha_instance',
  plan: 500,
  version: '7.0.15',
  engine: 'redis',
  zone: 'US-Dallas',
  created: CREATED,
  api_key: 'b3c9f0a1d2e34f5a6b7c8d9e0f1a2b3c',
  caster: null,
  state: 'ACTIVE',
  connect_string: `redis://${HOST}:20417`,
  clb_id: null,
  password: '5e1f0c9a8b7d6e5f4a3b2c1d0e9f8a7b',
  public_connect_string: `redis://${HOST}:20417`,
  servicenet_connect_string: `redis://${HOST}:20418`,
  tls: 'preferred',
  tls_client_auth: false,
  tls_connect_string: `rediss://${HOST}:20421`,
  public_tls_connect_string: `rediss://${HOST}:20421`,
  servicenet_tls_connect_string: `rediss://${HOST}:20422`,
};

export const MONGODB_INSTANCE = {
  id: '6560a1f2c3d4e5f607182931',
  name: 'orders',
  service: 'mongodb',
  type: 'mongodb_replica_set',
  plan: 5,
  version: '3.4.2',
  engine: 'mongod',
  zone: 'US-West',
  created: CREATED,
  api_key: '0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a',
  caster: null,
  state: 'ACTIVE',
  connect_string: `${HOST}:21001,${HOST}:21002,${HOST}:21003`,
};

export const ELASTICSEARCH_INSTANCE = {
  id: '6560a1f2c3d4e5f607182932',
  name: 'search',
  service: 'elasticsearch',
  type: 'elasticsearch',
  plan: 8,
  version: '6.4.1',
  engine: 'elasticsearch',
  zone: 'US-Dallas',
  created: CREATED,
  api_key: '9f8e7d6c5b4a39281706f5e4d3c2b1a0',
  caster: null,
  state: 'COMPLETED',
  encrypted: false,
  settings: {},
  connection_strings: {
    public: {
      http: `http://${HOST}:22001`,
      https: `https://${HOST}:22002`,
      kibana_http: `http://${HOST}:22004`,
      kibana_https: `https://${HOST}:22005`,
      transport: `${HOST}:22003`,
    },
    servicenet: { http: `http://${HOST}:22006`, https: `https://${HOST}:22007`, transport: `${HOST}:22008` },
  },
};

export const CREATED_REDIS_INSTANCE = {
  _id: { $oid: REDIS_INSTANCE.id },
  ansible_group: null,
  build_id: '3f6c2a1e-8b4d-4c2f-9e1a-7d5b3c2a1f0e',
  dtcreated: { $date: CREATED_MS },
  redis_version: '7.0.15',
  instance_name_prior: null,
  instance_service: 'redis',
  instance_type: 'redis_ha_instance',
  login: 'ops@example.com',
  login_prior: null,
  ...REDIS_INSTANCE,
  state: 'REQUESTED',
};

export const CREATE_REDIS_BODY = {
  name: 'cache',
  plan: 500,
  service: 'redis',
  type: 'redis_ha_instance',
  version: '7.0.15',
  zone: 'US-Dallas',
};
export const CREATE_MONGODB_BODY = {
  name: 'orders',
  plan: 5,
  service: 'mongodb',
  type: 'mongodb_replica_set',
  version: '3.4.2',
  engine: 'mongod',
  zone: 'US-West',
  encryption: true,
  storage_engine: 'wiredtiger',
  acls: [{ cidr_mask: '203.0.113.0/24', description: 'office' }],
};

export const ACL = {
  _cls: 'Acl',
  _id: { $oid: '6560a1f2c3d4e5f60718293a' },
  cidr_mask: '203.0.113.7',
  date_created: { $date: CREATED_MS },
  description: 'laptop',
  instance: 'cache',
  login: 'ops@example.com',
  metadata: {},
  port: 20417,
};

export const ACL_EXTENDED = { ...ACL, instance_id: { $oid: REDIS_INSTANCE.id }, instance_type: 'redis_ha_instance', service_type: 'redis' };

export const MONGODB_USER = {
  name: 'app',
  roles: [
    { role: 'readWrite', db: 'orders' },
    { role: 'read', db: 'reports' },
  ],
};

export const AUDIT_EVENT = {
  id: 42,
  action: 'instance.create',
  target: 'instance:cache',
  source_ip: '203.0.113.7',
  outcome: 'success',
  status: 200,
  request_id: '7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f',
  created: CREATED,
  date_created: { $date: CREATED_MS },
};

export const TOKEN = 'q3Zt0m9P1xV4cK7bW2yH8nJ5rL6sD0fG3aE1uI9oQ2w';

export const ACL_CHECK = {
  ip: '198.51.100.23',
  admitted: true,
  acl: {
    _cls: 'Acl',
    _id: { $oid: '6560a1f2c3d4e5f60718293b' },
    cidr_mask: '198.51.100.0/24',
    date_created: { $date: CREATED_MS },
    description: 'office',
    instance: 'cache',
    login: 'me@example.com',
    metadata: {},
    port: 20417,
  },
};

export const EFFECTIVE_ACCESS = {
  in_sync: false,
  desired: { main: ['198.51.100.0/24', '203.0.113.7'] },
  enforcers: [
    {
      name: 'haproxy',
      sources: { main: ['198.51.100.0/24', '203.0.113.7', '203.0.113.99'] },
      in_sync: false,
      missing: {},
      extra: { main: ['203.0.113.99'] },
    },
  ],
  checked_at: '2026-11-21T09:00:00.000Z',
};

export const DENIED_CONNECTION = { source: '192.0.2.1', time: '2026-11-21T09:00:12.345Z', listener: 'public' };

export const REDIS_USER = {
  name: 'app',
  keys: ['app:*'],
  channels: ['app.events'],
  commands: ['+@read', '+@write', '-@dangerous'],
  date_created: { $date: CREATED_MS },
};
