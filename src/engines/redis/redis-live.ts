import type { InstanceSpec } from '../../domain/units.js';
import type { RedisAdmin, RedisEndpoint } from './redis-admin.js';
import { sameSetting } from './redis-settings.js';
import { RESERVED_USERS, passwordHashes, userRules } from './redis-users.js';

/** `ACL GETUSER`'s answer (RESP2: name, value, name, value...) as a record. */
function fields(reply: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (Array.isArray(reply)) for (let i = 0; i + 1 < reply.length; i += 2) out[String(reply[i])] = reply[i + 1];
  else if (reply && typeof reply === 'object') Object.assign(out, reply);
  return out;
}

const sameSet = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x) => b.includes(x));

/**
 * Brings one engine's access and settings to the spec, live (no restart, no client cut): the
 * `default` user's passwords (the instance password and, during a rotation, the one it
 * replaced) and `masterauth`; the tenant's settings (CONFIG SET where they differ); the
 * application users (ACL SETUSER, one atomic command per user; users no longer asked for are
 * deleted, which closes their connections). Says whether it changed anything.
 */
export async function applyAccessAndSettings(admin: RedisAdmin, ep: RedisEndpoint, spec: InstanceSpec, password: string): Promise<boolean> {
  let changed = false;
  const wanted = passwordHashes([password, ...(spec.priorPasswords ?? [])]);
  const live = fields(await admin.command(ep, ['ACL', 'GETUSER', 'default']));
  const hashes = Array.isArray(live.passwords) ? (live.passwords as unknown[]).map(String) : [];
  if (!sameSet(hashes, wanted)) {
    // one command: the default user is never without a password the clients hold
    await admin.command(ep, ['ACL', 'SETUSER', 'default', 'resetpass', ...wanted.map((h) => `#${h}`)]);
    changed = true;
  }
  if ((await admin.configGet(ep, 'masterauth')) !== password) {
    await admin.configSet(ep, 'masterauth', password);
    changed = true;
  }
  for (const [name, value] of Object.entries(spec.settings ?? {})) {
    if (sameSetting(name, await admin.configGet(ep, name), value)) continue;
    await admin.configSet(ep, name, value);
    changed = true;
  }
  const users = spec.users ?? [];
  const present = ((await admin.command(ep, ['ACL', 'USERS'])) as unknown[]).map(String);
  for (const name of present) {
    if (RESERVED_USERS.includes(name) || users.some((u) => u.name === name)) continue;
    await admin.command(ep, ['ACL', 'DELUSER', name]);
    changed = true;
  }
  // Redis normalises command rules, so what it holds cannot be compared with what was asked:
  // a user is set again unless this process set these very rules on this engine (and the user
  // is there). SETUSER of the same rules changes nothing for connected clients.
  for (const u of users) {
    const rules = userRules(u);
    const digest = JSON.stringify(rules);
    if (present.includes(u.name) && admin.applied(ep, `user:${u.name}`) === digest) continue;
    await admin.command(ep, ['ACL', 'SETUSER', u.name, ...rules]);
    admin.remember(ep, `user:${u.name}`, digest);
    changed = true;
  }
  return changed;
}
