/**
 * The Redis settings a tenant may change (`CONFIG SET` stays hangar's own), with the values each
 * accepts. Everything else of redis.conf is hangar's: ports, persistence, replication, memory
 * (the plan), users and passwords.
 */

export const MAXMEMORY_POLICIES = [
  'noeviction',
  'allkeys-lru',
  'allkeys-lfu',
  'allkeys-random',
  'volatile-lru',
  'volatile-lfu',
  'volatile-random',
  'volatile-ttl',
] as const;

/** Classes of keyspace notifications (redis.conf's `notify-keyspace-events`); `A` is `g$lshzxetd`. */
const KEYSPACE_EVENT_FLAGS = 'KEg$lshzxetmdnA';
const ALL_EVENTS = 'g$lshzxetd';

export type SettingRule =
  | { readonly kind: 'enum'; readonly values: readonly string[]; readonly description: string }
  | { readonly kind: 'int'; readonly min: number; readonly max: number; readonly description: string }
  | { readonly kind: 'flags'; readonly chars: string; readonly description: string };

const yesNo = (description: string): SettingRule => ({ kind: 'enum', values: ['yes', 'no'], description });
const int = (min: number, max: number, description: string): SettingRule => ({ kind: 'int', min, max, description });

/** The allow-list, by the setting's redis.conf name. */
export const REDIS_SETTINGS: Readonly<Record<string, SettingRule>> = {
  'maxmemory-policy': { kind: 'enum', values: MAXMEMORY_POLICIES, description: "what Redis evicts when the plan's memory is full" },
  'maxmemory-samples': int(1, 64, 'keys sampled per eviction (LRU/LFU precision)'),
  timeout: int(0, 31_536_000, 'seconds after which an idle client is closed (0: never)'),
  'tcp-keepalive': int(0, 7200, 'seconds between TCP keepalives to clients (0: none)'),
  'notify-keyspace-events': {
    kind: 'flags',
    chars: KEYSPACE_EVENT_FLAGS,
    description: `keyspace notifications: any of ${KEYSPACE_EVENT_FLAGS} ("" for none)`,
  },
  'slowlog-log-slower-than': int(-1, 60_000_000, 'microseconds a command must take to enter the slow log (-1: none, 0: all)'),
  'slowlog-max-len': int(0, 10_000, 'entries the slow log keeps'),
  maxclients: int(1, 10_000, 'clients connected at once'),
  hz: int(1, 500, 'background task frequency'),
  'lazyfree-lazy-eviction': yesNo('free evicted keys in the background'),
  'lazyfree-lazy-expire': yesNo('free expired keys in the background'),
  'lazyfree-lazy-server-del': yesNo('free keys deleted by the server (RENAME, SET over a key...) in the background'),
  'lazyfree-lazy-user-del': yesNo('DEL behaves as UNLINK'),
  'lazyfree-lazy-user-flush': yesNo('FLUSHDB and FLUSHALL are ASYNC by default'),
};

export const REDIS_SETTING_NAMES: readonly string[] = Object.keys(REDIS_SETTINGS);

/** The values a rule accepts, for a 400's `allowed` (ranges as their two ends). */
export function allowedValues(rule: SettingRule): (string | number)[] {
  switch (rule.kind) {
    case 'enum':
      return [...rule.values];
    case 'int':
      return [rule.min, rule.max];
    case 'flags':
      return [...rule.chars];
  }
}

/** Why `raw` is not a value of setting `name`, or its value as redis.conf writes it. */
export function checkRedisSetting(
  name: string,
  raw: string | number,
): { value: string } | { problem: string; allowed: (string | number)[] } {
  // own names only: `constructor` or `__proto__` is no setting
  const rule = Object.hasOwn(REDIS_SETTINGS, name) ? REDIS_SETTINGS[name] : undefined;
  if (!rule) return { problem: `"${name}" is not a setting hangar lets tenants change`, allowed: [...REDIS_SETTING_NAMES] };
  const text = typeof raw === 'number' ? String(raw) : raw.trim();
  switch (rule.kind) {
    case 'enum':
      return rule.values.includes(text)
        ? { value: text }
        : { problem: `"${name}" ${JSON.stringify(raw)} is not allowed`, allowed: allowedValues(rule) };
    case 'int': {
      const n = Number(text);
      if (!/^-?\d+$/.test(text) || !Number.isSafeInteger(n) || n < rule.min || n > rule.max) {
        return {
          problem: `"${name}" must be an integer from ${rule.min} to ${rule.max}, got ${JSON.stringify(raw)}`,
          allowed: allowedValues(rule),
        };
      }
      return { value: String(n) };
    }
    case 'flags': {
      if (typeof raw !== 'string' || [...text].some((c) => !rule.chars.includes(c))) {
        return {
          problem: `"${name}" must be made of the characters ${rule.chars} (or be ""), got ${JSON.stringify(raw)}`,
          allowed: allowedValues(rule),
        };
      }
      return { value: [...new Set(text)].join('') };
    }
  }
}

/** Whether the engine's answer to CONFIG GET `name` means `wanted` (Redis rewrites some values). */
export function sameSetting(name: string, live: string, wanted: string): boolean {
  if (name !== 'notify-keyspace-events') return live === wanted;
  const expand = (s: string) => new Set([...s.replace('A', ALL_EVENTS)]);
  const a = expand(live);
  const b = expand(wanted);
  return a.size === b.size && [...a].every((c) => b.has(c));
}
