import { Type } from 'typebox';
import { DateRef, ObjectIdRef } from './common.js';

export const KEY_EXAMPLE = {
  _id: { $oid: '6560a1f2c3d4e5f607182940' },
  id: '6560a1f2c3d4e5f607182940',
  user_key: '3f2a9c1e5b7d4a60c8e2f1a3b5d7c9e1',
  created: '2026-11-21 09:00:00',
  date_created: { $date: 1795251600000 },
  last_used: null,
};

const keyFields = {
  _id: ObjectIdRef,
  id: Type.String({ pattern: '^[0-9a-f]{24}$', description: 'The key pair id: DELETE /v2/keys/{key_id}/ deletes it' }),
  user_key: Type.String({ description: 'The public half: the user name of HTTP Basic' }),
  created: Type.String({ description: 'YYYY-MM-DD HH:MM:SS, UTC' }),
  date_created: DateRef,
  last_used: Type.Union([Type.String(), Type.Null()], { description: 'When it last logged in (YYYY-MM-DD HH:MM:SS, UTC), or null' }),
};

export const CREATED_KEY_EXAMPLE = { ...KEY_EXAMPLE, pass_key: '9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a' };
export const WHOAMI_EXAMPLE = {
  login: 'ops@example.com',
  account_id: '6560a1f2c3d4e5f607182920',
  source_ip: '203.0.113.7',
  token_expires: '2026-11-22 09:00:00',
};

/** A key pair as listed: never its secret. */
export const ApiKeyRecord = Type.Object(keyFields, {
  $id: 'ApiKey',
  description: 'An API key pair of the account (without its secret)',
  examples: [KEY_EXAMPLE],
});

/** The answer to a create: the only time the secret is shown. */
export const CreatedApiKey = Type.Object(
  {
    ...keyFields,
    pass_key: Type.String({ description: 'The secret half, shown this once: hangar keeps only a hash of it' }),
  },
  { description: 'The new key pair; log in with HTTP Basic user_key:pass_key', examples: [CREATED_KEY_EXAMPLE] },
);

export const KeyParams = Type.Object({
  key_id: Type.String({ description: 'The key pair id (from the list)', examples: [KEY_EXAMPLE.id] }),
});

/** Who is asking, and from where, as hangar sees it. */
export const WhoamiRecord = Type.Object(
  {
    login: Type.String({ description: 'Login of the account' }),
    account_id: Type.String({ description: 'Account identifier' }),
    source_ip: Type.String({
      description: 'The address the request came from, as hangar sees it: what an ACL must admit for a client on the same machine',
    }),
    token_expires: Type.Union([Type.String(), Type.Null()], {
      description: 'When the token in use expires (YYYY-MM-DD HH:MM:SS, UTC); null with HTTP Basic',
    }),
  },
  {
    description: 'The caller',
    examples: [WHOAMI_EXAMPLE],
  },
);
