import { Type } from 'typebox';
import { MONGODB_ROLES } from '../../domain/catalog.js';
import { MONGODB_INSTANCE, MONGODB_USER } from './examples.js';

export const Role = Type.Object(
  {
    role: Type.String({ description: `A MongoDB built-in role: ${MONGODB_ROLES.join(', ')}` }),
    db: Type.String({ description: 'The database the role applies to' }),
  },
  { additionalProperties: false },
);

export const UserCreateBody = Type.Object(
  {
    username: Type.String({ description: 'User name' }),
    password: Type.String({ description: 'User password; stored encrypted, never shown again' }),
    roles: Type.Array(Role, { maxItems: 100, description: 'Roles granted' }),
  },
  {
    additionalProperties: false,
    examples: [{ username: 'app', password: 'a-long-secret-password', roles: [{ role: 'readWrite', db: 'orders' }] }],
  },
);

export const UserPatchBody = Type.Object(
  {
    password: Type.Optional(Type.String({ description: 'New password; left out, it stays' })),
    roles: Type.Optional(Type.Array(Role, { maxItems: 100, description: 'New roles; replaces the whole list; left out, they stay' })),
  },
  { additionalProperties: false, examples: [{ roles: [{ role: 'read', db: 'orders' }] }, { password: 'another-long-password' }] },
);

export const UserRecord = Type.Object(
  { name: Type.String({ description: 'User name' }), roles: Type.Array(Role, { description: 'Roles granted' }) },
  { $id: 'MongodbUser', description: 'A MongoDB database user (spec 2.6); the password is never shown', examples: [MONGODB_USER] },
);

const instanceId = Type.String({ description: 'The instance id (a name is accepted too)', examples: [MONGODB_INSTANCE.id] });
const databaseName = Type.String({ description: 'The database name', examples: ['orders'] });

export const DatabaseParams = Type.Object({ instance_id: instanceId, database_name: databaseName });
export const UserParams = Type.Object({
  instance_id: instanceId,
  database_name: databaseName,
  username: Type.String({ description: 'The user name', examples: ['app'] }),
});
