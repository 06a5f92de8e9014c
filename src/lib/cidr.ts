import { BlockList, isIPv4, isIPv6 } from 'node:net';

export interface Cidr {
  /** Normalised text: a plain address for a single host, otherwise `network/prefix`. */
  readonly text: string;
  readonly family: 4 | 6;
  readonly network: string;
  readonly prefix: number;
}

/**
 * Parses an IPv4 or IPv6 address or CIDR range and normalises it: host bits cleared, IPv6 in
 * its canonical compressed form (RFC 5952), a full-length prefix written as the bare address.
 * Returns undefined when the text is neither.
 */
export function parseCidr(input: string): Cidr | undefined {
  const slash = input.indexOf('/');
  const addr = slash < 0 ? input : input.slice(0, slash);
  const prefixText = slash < 0 ? undefined : input.slice(slash + 1);
  const family = isIPv4(addr) && /^\d+(\.\d+){3}$/.test(addr) ? 4 : isIPv6(addr) && !addr.includes('%') ? 6 : 0;
  if (family === 0) return undefined;
  const bits = family === 4 ? 32 : 128;
  let prefix = bits;
  if (prefixText !== undefined) {
    if (!/^\d{1,3}$/.test(prefixText)) return undefined;
    prefix = Number(prefixText);
    if (prefix > bits) return undefined;
  }
  const bytes = family === 4 ? v4Bytes(addr) : v6Bytes(addr);
  if (!bytes) return undefined;
  for (let i = 0; i < bytes.length; i++) {
    const keep = Math.max(0, Math.min(8, prefix - i * 8));
    bytes[i]! &= (0xff << (8 - keep)) & 0xff;
  }
  const network = family === 4 ? bytes.join('.') : v6Text(bytes);
  return { text: prefix === bits ? network : `${network}/${prefix}`, family, network, prefix };
}

/**
 * What a person should be told of a range as it will be stored: that its host bits were
 * cleared (`10.1.2.3/8 was stored as 10.0.0.0/8`), and that it admits every address of the
 * internet (`/0`). Nothing for a range written as it is stored, however its letters are spelled.
 */
export function rangeNotes(input: string, cidr: Cidr, stored: string): string[] {
  const notes: string[] = [];
  const slash = input.indexOf('/');
  const address = parseCidr(slash < 0 ? input : input.slice(0, slash));
  if (address && address.network !== cidr.network) notes.push(`${input} was stored as ${stored}`);
  if (cidr.prefix === 0) notes.push(`${stored} admits every IPv${cidr.family} address: anyone on the internet can reach the instance`);
  return notes;
}

/**
 * Why a text that parseCidr refused is not an address or range: its prefix length, when the
 * address before the `/` is one (`10.0.0.0/33`: 0 to 32 for IPv4, 0 to 128 for IPv6); undefined
 * when the address itself is not one.
 */
export function prefixProblem(input: string): string | undefined {
  const slash = input.indexOf('/');
  if (slash < 0) return undefined;
  const address = parseCidr(input.slice(0, slash));
  if (!address) return undefined;
  const [bits, other] = address.family === 4 ? ([32, 'IPv6: 0 to 128'] as const) : ([128, 'IPv4: 0 to 32'] as const);
  return `the prefix length after "/" must be a whole number from 0 to ${bits} for an IPv${address.family} address (${other})`;
}

function v4Bytes(addr: string): number[] | undefined {
  const parts = addr.split('.').map(Number);
  return parts.length === 4 && parts.every((p) => p >= 0 && p <= 255) ? parts : undefined;
}

function v6Bytes(addr: string): number[] | undefined {
  let text = addr;
  // an embedded IPv4 tail (::ffff:1.2.3.4) becomes two hextets
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const b = v4Bytes(v4[1]!);
    if (!b) return undefined;
    text = `${text.slice(0, -v4[1]!.length)}${((b[0]! << 8) | b[1]!).toString(16)}:${((b[2]! << 8) | b[3]!).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  if (groups.length !== 8) return undefined;
  const bytes: number[] = [];
  for (const g of groups) {
    const n = parseInt(g, 16);
    if (!/^[0-9a-fA-F]{1,4}$/.test(g) || Number.isNaN(n)) return undefined;
    bytes.push(n >> 8, n & 0xff);
  }
  return bytes;
}

function v6Text(bytes: number[]): string {
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((bytes[i]! << 8) | bytes[i + 1]!);
  // longest run of zero groups (length >= 2) becomes '::', the first one on a tie
  let best = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}

/** Whether two ACL rules name the same range, however written (`1.2.3.4` and `1.2.3.4/32`). */
export function sameRange(a: string, b: string): boolean {
  return (parseCidr(a)?.text ?? a) === (parseCidr(b)?.text ?? b);
}

/** A matcher for "is this source address admitted by any of these ranges". */
export function matcher(cidrs: readonly string[]): (address: string) => boolean {
  const list = new BlockList();
  for (const c of cidrs) {
    const p = parseCidr(c);
    if (!p) continue;
    list.addSubnet(p.network, p.prefix, p.family === 4 ? 'ipv4' : 'ipv6');
  }
  return (address) => {
    const a = address.startsWith('::ffff:') && isIPv4(address.slice(7)) ? address.slice(7) : address;
    return isIPv4(a) ? list.check(a, 'ipv4') : isIPv6(a) ? list.check(a, 'ipv6') : false;
  };
}
