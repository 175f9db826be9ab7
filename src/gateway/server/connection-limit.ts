import type { Server, Socket } from 'node:net';
import { addressGroup } from '../../core/kernel/address-group.js';

export { addressGroup } from '../../core/kernel/address-group.js';

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
