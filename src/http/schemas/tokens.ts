import { Type } from 'typebox';
import { TOKEN } from './examples.js';

export const TokenData = Type.Object({ token: Type.String({ description: 'Send it in X-Auth-Token' }) });
export const VerifyBody = Type.Object(
  { token: Type.String({ description: 'The token to check' }) },
  { additionalProperties: false, examples: [{ token: TOKEN }] },
);
export const AccountInfo = Type.Object({
  login: Type.String({ description: 'Login of the account the token belongs to' }),
  account_id: Type.String({ description: 'Account identifier' }),
  created: Type.String({ description: 'When the account was created, YYYY-MM-DD HH:MM:SS, UTC' }),
  token_expires: Type.String({ description: 'When the token expires, YYYY-MM-DD HH:MM:SS, UTC' }),
});
