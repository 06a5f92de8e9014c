import { parseCidr, prefixProblem, rangeNotes } from '../lib/cidr.js';
import { INSTANCE_NAME_PATTERN, type Service } from '../domain/catalog.js';
import { HangarError, allProblems, errors, problemsOf } from '../domain/errors.js';
import { PRODUCTS } from '../engines/products.js';

/** Rules a JSON schema cannot say, each throwing a 400 that names the field. */

/**
 * The problems of a request found by checks independent of each other: each check runs, and
 * the 400s they throw are kept, so that the answer names them all at once.
 */
export class Problems {
  private readonly found: HangarError[] = [];

  /** Runs one check; a 400 it throws is kept (and undefined returned), any other error goes on up. */
  check<T>(fn: () => T): T | undefined {
    try {
      return fn();
    } catch (err) {
      if (!(err instanceof HangarError) || err.status !== 400) throw err;
      this.found.push(...problemsOf(err));
      return undefined;
    }
  }

  add(...problems: readonly HangarError[]): void {
    for (const p of problems) this.found.push(...problemsOf(p));
  }

  get list(): readonly HangarError[] {
    return this.found;
  }

  /** Throws every problem found as one error (the first, listing them all), if there is any. */
  throwIfAny(): void {
    if (this.found.length > 0) throw allProblems(this.found);
  }
}

export function assertInstanceName(name: string, field = 'name'): void {
  if (!INSTANCE_NAME_PATTERN.test(name)) {
    const length = [...name].length;
    const bad = [...name].find((c) => !/^[A-Za-z0-9_-]$/.test(c));
    const why =
      length === 0 || length > 64
        ? `got ${length} characters`
        : /\p{L}/u.test(bad ?? '')
          ? `${JSON.stringify(bad)} is a letter, but not an ASCII one`
          : `${JSON.stringify(bad)} is not one`;
    throw errors.invalidValue(field, `"${field}" must be 1 to 64 characters, each an ASCII letter (A-Z, a-z), a digit, "-" or "_"; ${why}`);
  }
}

export function assertOneOf<T extends string | number>(field: string, value: T, allowed: readonly T[], what = `"${field}"`): void {
  if (!allowed.includes(value)) throw errors.invalidValue(field, `${what} ${JSON.stringify(value)} is not allowed`, allowed);
}

export interface AclInput {
  readonly cidr_mask: string;
  readonly description: string;
  readonly transport?: boolean;
  readonly kibana?: boolean;
  /** RFC 3339 date-time with a time zone (`2026-12-01T18:00:00Z`): when the ACL stops admitting. */
  readonly expires_at?: string;
}

export interface ValidAcl {
  readonly cidrMask: string;
  readonly description: string;
  readonly transport: boolean;
  readonly kibana: boolean;
  /** Epoch milliseconds; null: never. */
  readonly expiresAt: number | null;
  /** What the caller is told of the range as stored (a Warning): its host bits cleared, the whole internet admitted. */
  readonly warnings: readonly string[];
}

/** RFC 3339: a date, `T`, a time, and `Z` or an offset. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i;

/** An RFC 3339 date-time in the future, as epoch milliseconds. */
export function assertFutureTime(field: string, text: string, now: number): number {
  const at = RFC3339.test(text) ? Date.parse(text) : NaN;
  if (!Number.isFinite(at))
    throw errors.invalidValue(
      field,
      `"${field}" must be an RFC 3339 date-time with a time zone, e.g. 2026-12-01T18:00:00Z; got ${JSON.stringify(text)}`,
    );
  if (at <= now) throw errors.invalidValue(field, `"${field}" ${text} is not in the future`);
  return at;
}

/**
 * Every problem of an ACL body (spec 4.3 and section 7, conditions 4 and 5), the range, the
 * description, the flags and the expiry each judged on its own (a field left out is not judged);
 * `on` unknown: the flags are not judged against it. Without problems, and with every
 * field given, the ACL with its range normalised: host bits cleared (`10.1.2.3/8` is
 * `10.0.0.0/8`), IPv6 compressed. A single address keeps the form it was sent in: `a.b.c.d` or
 * `a.b.c.d/32` (`/128` for IPv6), both of which the spec allows.
 */
export function aclProblems(
  input: Partial<AclInput>,
  on: AclTarget | undefined,
  now: number,
  field = '',
): { acl: ValidAcl | undefined; problems: readonly HangarError[] } {
  const p = new Problems();
  const cidr = input.cidr_mask === undefined ? undefined : parseCidr(input.cidr_mask);
  if (input.cidr_mask !== undefined && !cidr) {
    const prefix = prefixProblem(input.cidr_mask);
    const got = JSON.stringify(input.cidr_mask);
    p.add(
      errors.invalidValue(
        `${field}cidr_mask`,
        prefix
          ? `"${field}cidr_mask" ${got} is not a CIDR range: ${prefix}`
          : `"${field}cidr_mask" must be an IP address (a.b.c.d) or a CIDR range (a.b.c.d/x), IPv4 or IPv6; got ${got}`,
      ),
    );
  }
  if (input.description !== undefined && input.description.length > 256) {
    p.add(errors.invalidValue(`${field}description`, `"${field}description" must be at most 256 characters`));
  }
  const transport = input.transport ?? false;
  const kibana = input.kibana ?? false;
  // `false` asks for nothing, so only a true flag counts as "used" on an instance without those listeners.
  const unused = !on
    ? undefined
    : transport && !on.groups.includes('transport')
      ? 'transport'
      : kibana && !on.groups.includes('kibana')
        ? 'kibana'
        : undefined;
  if (unused) {
    const services = [...new Set(PRODUCTS.filter((x) => x.features.aclGroups.includes(unused)).map((x) => x.service))];
    p.add(
      errors.invalidValue(
        `${field}${unused}`,
        `"${field}${unused}" applies to ${services.join(' and ')} instances only, not ${on!.service}`,
      ),
    );
  } else if (transport && kibana) {
    p.add(errors.invalidValue(`${field}transport`, `"${field}transport" and "${field}kibana" cannot be combined: create one ACL for each`));
  }
  const expiresAt = input.expires_at === undefined ? null : p.check(() => assertFutureTime(`${field}expires_at`, input.expires_at!, now));
  if (!cidr || input.cidr_mask === undefined || input.description === undefined || expiresAt === undefined || p.list.length > 0) {
    return { acl: undefined, problems: p.list };
  }
  const fullLength = cidr.prefix === (cidr.family === 4 ? 32 : 128);
  const cidrMask = fullLength && input.cidr_mask.includes('/') ? `${cidr.text}/${cidr.prefix}` : cidr.text;
  const warnings = rangeNotes(input.cidr_mask, cidr, cidrMask);
  return { acl: { cidrMask, description: input.description, transport, kibana, expiresAt, warnings }, problems: [] };
}

/** The instance an ACL is for: its service, and the ACL flags its product's listeners take (`transport`, `kibana`). */
export interface AclTarget {
  readonly service: Service;
  readonly groups: readonly string[];
}

/** An ACL body checked (see aclProblems): every problem thrown at once, or the ACL normalised. */
export function assertAcl(input: AclInput, on: AclTarget, now: number, field = ''): ValidAcl {
  const { acl, problems } = aclProblems(input, on, now, field);
  if (!acl) throw allProblems(problems);
  return acl;
}

/** The fields of a JSON value that have the types of an ACL body's: the others are the schema's to name. */
export function aclFields(v: unknown): Partial<AclInput> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return {};
  const a = v as Record<string, unknown>;
  const text = (k: string) => (typeof a[k] === 'string' ? { [k]: a[k] as string } : {});
  const flag = (k: string) => (typeof a[k] === 'boolean' ? { [k]: a[k] as boolean } : {});
  return { ...text('cidr_mask'), ...text('description'), ...text('expires_at'), ...flag('transport'), ...flag('kibana') };
}
