/**
 * Which client a request came from when the gateway runs behind reverse proxies (a TLS-terminating load balancer):
 * every request then arrives from a proxy's address, and only the proxy knows the client's, which it appends to
 * `X-Forwarded-For`. That header is believed only when the peer is a proxy the operator named; anyone else could
 * write any address in it.
 */
import { BlockList, isIP } from 'node:net';

/** The proxies the operator trusts (addresses and CIDR ranges), and the client address behind them. */
export interface TrustedProxies {
  /** Whether none is named: the peer is always the client. */
  readonly none: boolean;
  /**
   * The client's address: the peer's own unless it is a trusted proxy, in which case the right-most address of
   * `X-Forwarded-For` (every header line, in order) that is not itself a trusted proxy; the peer's when the header
   * names none (or only trusted proxies, or text that is no address).
   */
  clientAddress(peer: string | undefined, forwardedFor: string | readonly string[] | undefined): string | undefined;
}

/**
 * Parses a comma-separated list of IP addresses and CIDR ranges (IPv4 or IPv6, e.g. `10.0.0.0/8, 2001:db8::/32,
 * 192.0.2.7`); an empty list trusts none.
 *
 * @throws Error naming the first entry that is neither an address nor a range (its message is for a setting's problem).
 * @example
 * const proxies = parseTrustedProxies('127.0.0.1, 10.0.0.0/8');
 * proxies.clientAddress('10.1.2.3', '198.51.100.7, 10.0.0.9'); // '198.51.100.7'
 * proxies.clientAddress('203.0.113.5', '198.51.100.7'); // '203.0.113.5': not a trusted proxy, its header is ignored
 */
export function parseTrustedProxies(text: string): TrustedProxies {
  const list = new BlockList();
  const entries = text.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
  for (const entry of entries) {
    const [address = '', prefix, extra] = entry.split('/');
    const family = isIP(address);
    const bits = prefix === undefined ? undefined : /^\d{1,3}$/.test(prefix) ? Number(prefix) : NaN;
    if (family === 0 || extra !== undefined || (bits !== undefined && !(bits >= 0 && bits <= (family === 4 ? 32 : 128)))) {
      throw new Error(`has "${entry}", which is neither an IP address nor a CIDR range (e.g. 10.0.0.0/8 or 2001:db8::/32)`);
    }
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (bits === undefined) list.addAddress(address, type);
    else list.addSubnet(address, bits, type);
  }
  const trusted = (address: string): boolean => {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1] ?? address;
    const family = isIP(mapped);
    return family !== 0 && list.check(mapped, family === 4 ? 'ipv4' : 'ipv6');
  };
  return {
    none: entries.length === 0,
    clientAddress(peer, forwardedFor) {
      if (entries.length === 0 || peer === undefined || !trusted(peer) || forwardedFor === undefined) return peer;
      const hops = (typeof forwardedFor === 'string' ? [forwardedFor] : forwardedFor).flatMap((line) => line.split(',')).map((hop) => hop.trim());
      for (let i = hops.length - 1; i >= 0; i--) {
        const hop = hops[i]!;
        // Text that is no address ends the walk: what lies left of it was written by someone untrusted.
        if (isIP(hop) === 0) return peer;
        if (!trusted(hop)) return hop;
      }
      return peer;
    },
  };
}
