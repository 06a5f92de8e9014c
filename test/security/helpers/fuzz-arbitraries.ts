import fc from 'fast-check';

/** A JSON value as text is written: objects keep their entries in order, duplicates included. */
export type Json =
  | { readonly t: 'lit'; readonly text: string }
  | { readonly t: 'str'; readonly v: string }
  | { readonly t: 'arr'; readonly items: readonly Json[] }
  | { readonly t: 'obj'; readonly entries: readonly (readonly [string, Json])[] };

/** JSON text of a value; strings are escaped as JSON.stringify does (lone surrogates as \\uXXXX). */
export function render(j: Json): string {
  switch (j.t) {
    case 'lit':
      return j.text;
    case 'str':
      return JSON.stringify(j.v);
    case 'arr':
      return `[${j.items.map(render).join(',')}]`;
    case 'obj':
      return `{${j.entries.map(([k, v]) => `${JSON.stringify(k)}:${render(v)}`).join(',')}}`;
  }
}

/** A plain value as a Json (for the valid bodies that mutations start from). */
export function fromValue(v: unknown): Json {
  if (typeof v === 'string') return { t: 'str', v };
  if (Array.isArray(v)) return { t: 'arr', items: v.map(fromValue) };
  if (v !== null && typeof v === 'object') return { t: 'obj', entries: Object.entries(v).map(([k, x]) => [k, fromValue(x)] as const) };
  return { t: 'lit', text: JSON.stringify(v) };
}

/** Every field name of every request body, and names that have hurt JavaScript servers. */
export const FIELD_NAMES = [
  'name',
  'plan',
  'service',
  'type',
  'version',
  'zone',
  'encryption',
  'storage_engine',
  'acls',
  'cidr_mask',
  'description',
  'transport',
  'kibana',
  'new_plan',
  'username',
  'password',
  'roles',
  'role',
  'db',
  'token',
  'login',
  'id',
  '_id',
  '$oid',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'valueOf',
  'hasOwnProperty',
  '__defineGetter__',
  '',
  ' ',
  '$where',
  '$ne',
] as const;

const SPECIAL_NUMBERS = [
  '0',
  '-0',
  '1',
  '-1',
  '500',
  '500.0',
  '5e2',
  '5E+2',
  '1000',
  '100000',
  '0.5',
  '1e-400',
  '1e400',
  '-1e400',
  '1.7976931348623157e309',
  '9007199254740993',
  '-9007199254740993',
  '18446744073709551616',
  '123456789012345678901234567890123456789',
  '1e21',
  '0.1e1',
] as const;

const SPECIAL_STRINGS = [
  '',
  ' ',
  '.',
  '..',
  '../..',
  '../../etc/passwd',
  '%00',
  '\u0000',
  '\u0000x',
  'a\u0000b',
  '\u001b[31m',
  '\r\nX-Injected: 1',
  '\u2028',
  '\ufeff',
  '\ud800',
  '\udfff',
  '😀',
  'ñ',
  'İ',
  'ﬀ',
  '\u202e',
  '__proto__',
  'constructor',
  'prototype',
  '<script>alert(1)</script>',
  "'; DROP TABLE instances; --",
  '" OR 1=1 --',
  '${jndi:ldap://127.0.0.1/x}',
  '{{7*7}}',
  '%s%s%s%n',
  'redis',
  'mongodb',
  'elasticsearch',
  'redis_ha_instance',
  '7.0.15',
  'US-Dallas',
  'fz-redis',
  'fz-mongo',
  'fz-es',
  '192.0.2.10',
  '0.0.0.0/0',
  '::/0',
  '10.0.0.0/33',
  '256.1.1.1',
  '1.2.3.4/',
  '1.2.3.4/-1',
  '01.02.03.04',
  '::ffff:1.2.3.4',
  'fe80::1%eth0',
  'read',
  'readWrite',
  'root',
  'admin',
  '__system',
  'app',
  'local',
  'config',
  'null',
  'true',
  '1e400',
  'NaN',
  'Infinity',
] as const;

const controlChars = fc.string({ unit: fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c)), minLength: 1, maxLength: 8 });
const longString = fc
  .tuple(fc.constantFrom(64, 65, 255, 256, 257, 1024, 1025, 4096, 20_000), fc.constantFrom('a', 'é', '😀', '\u0000', '-'))
  .map(([n, c]) => c.repeat(n));

export const anyString: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...SPECIAL_STRINGS) },
  { weight: 3, arbitrary: fc.string({ maxLength: 24 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 24 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }) },
  { weight: 1, arbitrary: controlChars },
  { weight: 1, arbitrary: longString },
);

const numberText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...SPECIAL_NUMBERS),
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
  fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }).map(String),
);

const scalar: fc.Arbitrary<Json> = fc.oneof(
  { weight: 1, arbitrary: fc.constantFrom<Json>({ t: 'lit', text: 'null' }, { t: 'lit', text: 'true' }, { t: 'lit', text: 'false' }) },
  { weight: 2, arbitrary: numberText.map((text): Json => ({ t: 'lit', text })) },
  { weight: 3, arbitrary: anyString.map((v): Json => ({ t: 'str', v })) },
);

export const anyKey: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...FIELD_NAMES) },
  { weight: 1, arbitrary: anyString },
);

/** Any JSON value, of any type and depth, keys duplicated at times. */
export const anyJson: fc.Arbitrary<Json> = fc.letrec<{ json: Json }>((tie) => ({
  json: fc.oneof(
    { maxDepth: 4, depthSize: 'small', withCrossShrink: true },
    { weight: 3, arbitrary: scalar },
    { weight: 1, arbitrary: fc.array(tie('json'), { maxLength: 5 }).map((items): Json => ({ t: 'arr', items })) },
    { weight: 2, arbitrary: fc.array(fc.tuple(anyKey, tie('json')), { maxLength: 6 }).map((entries): Json => ({ t: 'obj', entries })) },
  ),
})).json;

type Mutation =
  | { readonly kind: 'replace'; readonly at: number; readonly value: Json }
  | { readonly kind: 'drop'; readonly at: number }
  | { readonly kind: 'add'; readonly key: string; readonly value: Json; readonly first: boolean }
  | { readonly kind: 'duplicate'; readonly at: number; readonly value: Json; readonly first: boolean }
  | { readonly kind: 'deep'; readonly at: number; readonly value: Json }
  /** A value of the same JSON type: passes the schema, tests the rules behind it. */
  | {
      readonly kind: 'similar';
      readonly at: number;
      readonly str: string;
      readonly num: string;
      readonly bool: boolean;
      readonly depth: number;
    };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), value: anyJson }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('drop' as const), at: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('add' as const), key: anyKey, value: anyJson, first: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('duplicate' as const), at: fc.nat(), value: anyJson, first: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('deep' as const), at: fc.nat(), value: anyJson }) },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('similar' as const),
      at: fc.nat(),
      str: anyString,
      num: numberText,
      bool: fc.boolean(),
      depth: fc.nat({ max: 2 }),
    }),
  },
);

/** `j` with its value (or, `depth` levels down, one of its values) replaced by one of the same type. */
function similar(j: Json, m: Extract<Mutation, { kind: 'similar' }>, depth: number): Json {
  switch (j.t) {
    case 'str':
      return { t: 'str', v: m.str };
    case 'lit':
      return j.text === 'true' || j.text === 'false'
        ? { t: 'lit', text: String(m.bool) }
        : j.text === 'null'
          ? j
          : { t: 'lit', text: m.num };
    case 'arr': {
      if (j.items.length === 0) return j;
      const i = m.at % j.items.length;
      return { t: 'arr', items: j.items.map((x, k) => (k === i ? similar(x, m, depth) : x)) };
    }
    case 'obj': {
      if (j.entries.length === 0 || depth <= 0) return j;
      const i = m.at % j.entries.length;
      return { t: 'obj', entries: j.entries.map(([k, x], n) => [k, n === i ? similar(x, m, depth - 1) : x] as const) };
    }
  }
}

/** Applies one mutation to the top-level entries of an object (or inside the first nested object or array for `deep`). */
function mutate(j: Json, m: Mutation): Json {
  if (j.t !== 'obj' || j.entries.length === 0) return m.kind === 'add' ? { t: 'obj', entries: [[m.key, m.value]] } : j;
  const entries = [...j.entries];
  const i = 'at' in m ? m.at % entries.length : 0;
  switch (m.kind) {
    case 'replace':
      entries[i] = [entries[i]![0], m.value];
      break;
    case 'drop':
      entries.splice(i, 1);
      break;
    case 'add':
      if (m.first) entries.unshift([m.key, m.value]);
      else entries.push([m.key, m.value]);
      break;
    case 'duplicate':
      if (m.first) entries.unshift([entries[i]![0], m.value]);
      else entries.push([entries[i]![0], m.value]);
      break;
    case 'similar':
      entries[i] = [entries[i]![0], similar(entries[i]![1], m, m.depth)];
      break;
    case 'deep': {
      const [k, v] = entries[i]!;
      if (v.t === 'arr' && v.items.length > 0)
        entries[i] = [k, { t: 'arr', items: [mutate(v.items[0]!, { kind: 'replace', at: m.at, value: m.value }), ...v.items.slice(1)] }];
      else entries[i] = [k, mutate(v, { kind: 'replace', at: m.at, value: m.value })];
      break;
    }
  }
  return { t: 'obj', entries };
}

/** A valid body with one to three things wrong with it: the requests that reach deepest. */
export const mutated = (valid: unknown): fc.Arbitrary<Json> =>
  fc.array(mutation, { minLength: 1, maxLength: 3 }).map((ms) => ms.reduce(mutate, fromValue(valid)));

/** Text that is not JSON, or barely: truncated, trailing garbage, raw control characters, deep nesting. */
export const brokenJsonText = (valid: unknown): fc.Arbitrary<string> => {
  const text = JSON.stringify(valid);
  return fc.oneof(
    fc.nat({ max: text.length - 1 }).map((n) => text.slice(0, n)),
    fc
      .tuple(fc.constantFrom('}', ']', ',', 'x', '\u0000', '{}', ' true', '//', '/*'), fc.boolean())
      .map(([g, before]) => (before ? g + text : text + g)),
    controlChars.map((c) => text.replace(/"([^"]*)"/, `"$1${c}"`)),
    fc.constantFrom(1000, 20_000, 32_000).map((n) => '['.repeat(n) + ']'.repeat(n)),
    fc.constantFrom(1000, 10_000).map((n) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`),
    fc.constantFrom(
      "{'name': 'x'}",
      '{name: "x"}',
      'NaN',
      '-',
      '"',
      '\ufeff{}',
      '{"a":1}{"b":2}',
      '[,]',
      '{,}',
      '{"a" 1}',
      '0x10',
      '+1',
      '.5',
      '01',
    ),
    fc.string({ unit: 'binary', maxLength: 40 }),
  );
};

/** A body as sent: JSON of any shape, a valid body mutated, or broken text. */
export const bodyFor = (valid: unknown): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 3, arbitrary: anyJson.map(render) },
    { weight: 5, arbitrary: mutated(valid).map(render) },
    { weight: 2, arbitrary: brokenJsonText(valid) },
  );

/** Content-Type headers real and odd (undefined: none sent). */
export const contentType: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 6, arbitrary: fc.constant('application/json') },
  { weight: 2, arbitrary: fc.constant(undefined) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'application/json; charset=latin1',
      'APPLICATION/JSON',
      'application/vnd.api+json',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/jsonx',
      'application/json, text/plain',
      '*/*',
      '',
      'application/json; boundary="',
      'text/json',
    ),
  },
);
