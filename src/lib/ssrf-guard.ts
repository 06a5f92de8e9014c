import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { networkInterfaces } from 'node:os';

/** What kind of address an IP is, for deciding whether hangar may send a webhook there. */
export type AddressClass = 'public' | 'metadata' | 'loopback' | 'private' | 'link-local' | 'unspecified' | 'multicast' | 'reserved';

/** Cloud metadata services: never a webhook target, whatever the settings. */
const METADATA = ['169.254.169.254', '169.254.170.2', '169.254.170.23', '100.100.100.200', 'fd00:ec2::254', 'fd00:ec2::23'];

function list(entries: readonly [string, number][]): BlockList {
  const b = new BlockList();
  for (const [net, prefix] of entries) b.addSubnet(net, prefix, isIPv4(net) ? 'ipv4' : 'ipv6');
  return b;
}

const LOOPBACK = list([
  ['127.0.0.0', 8],
  ['::1', 128],
]);
const UNSPECIFIED = list([
  ['0.0.0.0', 8],
  ['::', 128],
]);
const LINK_LOCAL = list([
  ['169.254.0.0', 16],
  ['fe80::', 10],
]);
const PRIVATE = list([
  ['10.0.0.0', 8],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['100.64.0.0', 10],
  ['fc00::', 7],
]);
const MULTICAST = list([
  ['224.0.0.0', 4],
  ['ff00::', 8],
]);
const RESERVED = list([
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['240.0.0.0', 4],
  ['100::', 64],
  ['2001:db8::', 32],
  ['2001::', 32],
  ['2002::', 16],
]);

/** The IPv4 address inside an IPv4-mapped (`::ffff:a.b.c.d`) or NAT64 (`64:ff9b::a.b.c.d`) IPv6 address. */
function embeddedV4(ip: string): string | undefined {
  const m = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (m) return m[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(ip);
  if (!hex) return undefined;
  const hi = parseInt(hex[1]!, 16);
  const lo = parseInt(hex[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** The class of an IP address (IPv4 or IPv6). */
export function classifyAddress(address: string): AddressClass {
  const ip = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const v4 = isIPv6(ip) ? embeddedV4(ip) : undefined;
  if (v4) return classifyAddress(v4);
  const family = isIPv4(ip) ? 'ipv4' : isIPv6(ip) ? 'ipv6' : undefined;
  if (!family) return 'reserved';
  if (METADATA.includes(ip.toLowerCase())) return 'metadata';
  if (LOOPBACK.check(ip, family)) return 'loopback';
  if (UNSPECIFIED.check(ip, family)) return 'unspecified';
  if (LINK_LOCAL.check(ip, family)) return 'link-local';
  if (PRIVATE.check(ip, family)) return 'private';
  if (MULTICAST.check(ip, family)) return 'multicast';
  if (RESERVED.check(ip, family)) return 'reserved';
  if (ip === '255.255.255.255') return 'reserved';
  return 'public';
}

/** The addresses of this machine's interfaces (and the unspecified and loopback ones). */
export function localAddresses(): Set<string> {
  const out = new Set<string>(['0.0.0.0', '::', '127.0.0.1', '::1']);
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) out.add(a.address);
  return out;
}

/** What a webhook target may be. */
export interface TargetPolicy {
  /** Loopback, private, link-local and other non-public addresses are allowed (never metadata). */
  readonly allowPrivate: boolean;
  /** Whether `port` on this machine is one of hangar's own listeners (its API, its edge, its engines). */
  readonly isOwnPort: (port: number) => boolean;
}

/**
 * Why hangar refuses to connect to `ip`:`port` for a webhook, or undefined when it may. Cloud
 * metadata addresses and hangar's own listeners are refused always; other addresses that are not
 * public (loopback, private, link-local, multicast, reserved) unless `allowPrivate`.
 */
export function refusal(ip: string, port: number, policy: TargetPolicy, local: Set<string> = localAddresses()): string | undefined {
  const cls = classifyAddress(ip);
  if (cls === 'metadata') return `${ip} is a cloud metadata address`;
  const bare = ip.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/i, '$1');
  const ownHost = cls === 'loopback' || cls === 'unspecified' || local.has(bare);
  if (ownHost && policy.isOwnPort(port)) return `${ip}:${port} is one of hangar's own listeners`;
  if (cls === 'multicast' || cls === 'unspecified') return `${ip} is a ${cls} address`;
  if (cls !== 'public' && !policy.allowPrivate) {
    return `${ip} is a ${cls} address; hangar refuses webhook targets on loopback, private and link-local addresses unless HANGAR_WEBHOOK_ALLOW_PRIVATE=true`;
  }
  return undefined;
}
