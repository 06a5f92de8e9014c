import { parseCidr } from '../lib/cidr.js';
import { INSTANCE_NAME_PATTERN, type Service } from '../domain/catalog.js';
import { errors } from '../domain/errors.js';
import { TLS_MODES, type TlsMode } from '../domain/tls.js';
import { PRODUCTS } from '../engines/products.js';

/** Rules a JSON schema cannot say, each throwing a 400 that names the field. */

export function assertInstanceName(name: string, field = 'name'): void {
  if (!INSTANCE_NAME_PATTERN.test(name)) {
    throw errors.invalidValue(field, `"${field}" must be 1 to 64 characters, each a letter, a digit, "-" or "_"`);
  }
}

export function assertOneOf<T extends string | number>(field: string, value: T, allowed: readonly T[], what = `"${field}"`): void {
  if (!allowed.includes(value)) throw errors.invalidValue(field, `${what} ${JSON.stringify(value)} is not allowed`, allowed);
}

/**
 * How clients of a new (or changed) instance of `product` reach it over TLS: the mode asked for
 * (default `fallback`) and mutual TLS. Products without a choice of mode refuse both fields.
 */
export function assertTlsChoice(
  product: { readonly label: string; readonly features: { readonly tlsModes?: boolean } },
  given: { readonly tls?: string | undefined; readonly clientAuth?: boolean | undefined },
  fallback: TlsMode,
  field = 'tls',
): { mode: TlsMode; clientAuth: boolean } {
  const offered = product.features.tlsModes === true;
  const services = () => [...new Set(PRODUCTS.filter((p) => p.features.tlsModes).map((p) => p.service))].join(' and ');
  if (!offered && given.tls !== undefined) {
    throw errors.invalidValue(field, `"${field}" applies to ${services()} instances only (${product.label} has its TLS listeners by type)`);
  }
  if (!offered && given.clientAuth === true) {
    throw errors.invalidValue('tls_client_auth', `"tls_client_auth" applies to ${services()} instances only`);
  }
  if (!offered) return { mode: 'preferred', clientAuth: false };
  if (given.tls !== undefined) assertOneOf(field, given.tls, TLS_MODES as readonly string[]);
  const mode = (given.tls ?? fallback) as TlsMode;
  const clientAuth = given.clientAuth === true;
  if (clientAuth && mode === 'off') {
    throw errors.invalidValue(
      'tls_client_auth',
      `"tls_client_auth" needs TLS listeners: "${field}" must be preferred or required, not off`,
    );
  }
  return { mode, clientAuth };
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
 * Checks an ACL body (spec 4.3 and section 7, conditions 4 and 5) and normalises its range: host
 * bits cleared (`10.1.2.3/8` is `10.0.0.0/8`), IPv6 compressed. A single address keeps the form it
 * was sent in: `a.b.c.d` or `a.b.c.d/32` (`/128` for IPv6), both of which the spec allows.
 */
export function assertAcl(input: AclInput, service: Service, groups: readonly string[], now: number, field = ''): ValidAcl {
  const cidr = parseCidr(input.cidr_mask);
  if (!cidr) {
    throw errors.invalidValue(
      `${field}cidr_mask`,
      `"${field}cidr_mask" must be an IP address (a.b.c.d) or a CIDR range (a.b.c.d/x), IPv4 or IPv6; got ${JSON.stringify(input.cidr_mask)}`,
    );
  }
  if (input.description.length > 256)
    throw errors.invalidValue(`${field}description`, `"${field}description" must be at most 256 characters`);
  const transport = input.transport ?? false;
  const kibana = input.kibana ?? false;
  // `false` asks for nothing, so only a true flag counts as "used" on an instance without those listeners.
  const unused = transport && !groups.includes('transport') ? 'transport' : kibana && !groups.includes('kibana') ? 'kibana' : undefined;
  if (unused) {
    const services = [...new Set(PRODUCTS.filter((p) => p.features.aclGroups.includes(unused)).map((p) => p.service))];
    throw errors.invalidValue(
      `${field}${unused}`,
      `"${field}${unused}" applies to ${services.join(' and ')} instances only, not ${service}`,
    );
  }
  if (transport && kibana) {
    throw errors.invalidValue(`${field}transport`, `"${field}transport" and "${field}kibana" cannot be combined: create one ACL for each`);
  }
  const expiresAt = input.expires_at === undefined ? null : assertFutureTime(`${field}expires_at`, input.expires_at, now);
  const fullLength = cidr.prefix === (cidr.family === 4 ? 32 : 128);
  const cidrMask = fullLength && input.cidr_mask.includes('/') ? `${cidr.text}/${cidr.prefix}` : cidr.text;
  return { cidrMask, description: input.description, transport, kibana, expiresAt };
}
