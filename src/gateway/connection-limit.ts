import { isIPv6, type Server, type Socket } from 'node:net';

/** What {@link limitConnectionsPerAddress} reports about a refused connection. */
export interface RefusedConnection {
  /** The client address group refused: an IPv4 address, or an IPv6 /64 prefix such as `2001:db8:0:1::/64`. */
  readonly address: string;
  /** The limit in force. */
  readonly limit: number;
}

/** The live count of {@link limitConnectionsPerAddress}, for tests and health output. */
export interface ConnectionLimit {
  /** Open connections of an address group (see {@link RefusedConnection.address}). */
  openConnections(address: string): number;
  /** Stops counting and refusing. */
  remove(): void;
}

/**
 * Bounds the open connections of each client address: past `limit`, a new connection from that address is
 * destroyed as it is accepted, before a byte is read or parsed, so a client opening connection after connection
 * (slow bodies, idle keep-alives) cannot use up the server's sockets and memory for everyone else. No HTTP answer
 * is sent: writing one would mean reading and parsing the request the limit is there to avoid.
 *
 * IPv6 clients are counted per /64 prefix, since one host usually holds a whole /64 and could otherwise pick a
 * fresh address per connection; IPv4-mapped IPv6 addresses (`::ffff:192.0.2.1`) count as their IPv4 address.
 *
 * Behind a reverse proxy every connection comes from the proxy's address, so the limit caps the proxy's pool of
 * connections to the gateway (one per request in progress or stream open): there, set it to 0 (unlimited) or
 * above the proxy's pool size, and bound clients at the proxy, which sees their addresses. `X-Forwarded-For` is
 * not used: it arrives after the connection, and anyone can send it.
 *
 * @param server - The server whose `connection` events are counted.
 * @param limit - Most open connections per address group; 0 counts nothing and refuses nothing.
 * @param onRefused - Called for each refused connection (e.g. a rate-limited warning).
 */
export function limitConnectionsPerAddress(server: Server, limit: number, onRefused?: (refused: RefusedConnection) => void): ConnectionLimit {
  const open = new Map<string, number>();
  const onConnection = (socket: Socket): void => {
    const address = addressGroup(socket.remoteAddress);
    // Already closed (no address): nothing to count.
    if (address === undefined) return;
    const count = open.get(address) ?? 0;
    if (count >= limit) {
      socket.destroy();
      onRefused?.({ address, limit });
      return;
    }
    open.set(address, count + 1);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left <= 0) open.delete(address);
      else open.set(address, left);
    });
  };
  if (limit > 0) server.prependListener('connection', onConnection);
  return {
    openConnections: (address) => open.get(address) ?? 0,
    remove: () => void server.off('connection', onConnection),
  };
}

/**
 * The group a client address is counted in: the IPv4 address itself (IPv4-mapped IPv6 included), or the /64
 * prefix of an IPv6 address, written `a:b:c:d::/64` with hextets in lowercase without leading zeros.
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
