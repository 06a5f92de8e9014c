import { Type } from 'typebox';
import { GRANTABLE_CATEGORIES } from '../../service/redis-users.js';
import { InstanceNameParam } from './common.js';
import { REDIS_USER } from './examples.js';

const keys = Type.Array(Type.String(), { maxItems: 100, description: 'Key patterns the user may use (Redis glob: `app:*`); none: no key' });
const channels = Type.Array(Type.String(), { maxItems: 100, description: 'Pub/Sub channel patterns the user may use; none: no channel' });
const commands = Type.Array(Type.String(), {
  maxItems: 100,
  description: `Command rules in order: +@category / -@category (grantable: ${GRANTABLE_CATEGORIES.map((c) => `@${c}`).join(', ')}; any may be removed), +command, -command, +command|subcommand. Administrative commands hangar keeps for itself (CONFIG, ACL, REPLICAOF, SHUTDOWN, DEBUG, MODULE, MONITOR, SAVE, ...) cannot be granted; none: no command`,
});

export const RedisUserCreateBody = Type.Object(
  {
    username: Type.String({ description: 'User name: 1 to 64 ASCII letters, digits, `_`, `.` or `-`; not `default` or `hangar`' }),
    password: Type.Optional(
      Type.String({
        description: 'Its password (8 to 256 characters); left out, hangar makes one. Stored encrypted; shown in this answer only',
      }),
    ),
    keys: Type.Optional(keys),
    channels: Type.Optional(channels),
    commands: Type.Optional(commands),
  },
  {
    additionalProperties: false,
    examples: [{ username: 'app', keys: ['app:*'], channels: ['app.events'], commands: ['+@read', '+@write', '-@dangerous'] }],
  },
);

export const RedisUserPatchBody = Type.Object(
  {
    password: Type.Optional(
      Type.String({
        description: 'A new password, at once (the old one stops working); for a change without downtime use rotate-password',
      }),
    ),
    keys: Type.Optional(keys),
    channels: Type.Optional(channels),
    commands: Type.Optional(commands),
  },
  { additionalProperties: false, examples: [{ keys: ['app:*', 'jobs:*'] }, { commands: ['+@read'] }] },
);

export const RedisUserRecord = Type.Object(
  {
    name: Type.String({ description: 'User name (clients AUTH as it)' }),
    keys: Type.Array(Type.String(), { description: 'Key patterns' }),
    channels: Type.Array(Type.String(), { description: 'Channel patterns' }),
    commands: Type.Array(Type.String(), { description: 'Command rules (hangar adds -@admin after them)' }),
    date_created: Type.Object({ $date: Type.Integer({ description: 'epoch milliseconds' }) }),
    previous_password_valid_until: Type.Optional(
      Type.String({ description: 'During a password rotation: until when the old password works too (RFC 3339)' }),
    ),
  },
  {
    $id: 'RedisUser',
    description: 'An application user of a Redis instance (a Redis ACL user); the password is never shown',
    examples: [REDIS_USER],
  },
);

export const RedisUserCreated = Type.Object(
  {
    user: RedisUserRecord,
    password: Type.String({ description: 'Its password: shown in this answer only' }),
  },
  { description: 'The new user and its password' },
);

export const RotationRecord = Type.Object(
  {
    password: Type.String({ description: 'The new password, to give to clients; the old one keeps working until previous_valid_until' }),
    previous_valid_until: Type.String({
      description: 'When the old password stops working (RFC 3339), unless rotate-password/finish ends it earlier',
    }),
  },
  { description: 'A password rotation started' },
);

export const FinishRecord = Type.Object(
  { retired: Type.Boolean({ description: 'Whether an old password was retired (false: no rotation was in progress)' }) },
  { description: 'The end of a password rotation' },
);

export const RedisUserParams = Type.Object({
  instance_name: InstanceNameParam,
  username: Type.String({ description: 'The user name', examples: ['app'] }),
});
