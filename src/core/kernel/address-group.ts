import { isIPv6 } from 'node:net';

/**
 * The group a client address is counted in: the IPv4 address itself (IPv4-mapped IPv6 included), or the /64
 * prefix of an IPv6 address, written `a:b:c:d::/64` with hextets in lowercase without leading zeros: one host
 * usually holds a whole /64, so a bound per address would otherwise be one per address it picks.
 *
 * @example
 * addressGroup('2001:db8::1'); // '2001:db8:0:0::/64'
 */
export function addressGroup(remoteAddress: string | undefined): string | undefined {
  if (remoteAddress === undefined || remoteAddress === '') return undefined;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(remoteAddress);
  if (mapped) return mapped[1];
  if (!isIPv6(remoteAddress)) return remoteAddress;
  const hextets = expandIPv6(remoteAddress.split('%')[0] as string);
  return `${hextets.slice(0, 4).map((h) => h.toString(16)).join(':')}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (as `isIPv6` accepts, zone id removed). */
function expandIPv6(address: string): number[] {
  const [head = '', tail] = address.split('::');
  const parse = (part: string): number[] => {
    if (part === '') return [];
    const groups: number[] = [];
    for (const piece of part.split(':')) {
      if (piece.includes('.')) {
        // An embedded IPv4 address fills the last two groups.
        const [a = 0, b = 0, c = 0, d = 0] = piece.split('.').map(Number);
        groups.push((a << 8) | b, (c << 8) | d);
      } else {
        groups.push(Number.parseInt(piece, 16));
      }
    }
    return groups;
  };
  const first = parse(head);
  if (tail === undefined) return first;
  const last = parse(tail);
  return [...first, ...new Array<number>(8 - first.length - last.length).fill(0), ...last];
}
