// Ports for servers the tests start as programs (redis-server, nginx) or before they know their port, which must be told a port up front.
import { once } from 'node:events';
import { createConnection, createServer } from 'node:net';

/**
 * Ports chosen from below the kernel's ephemeral range (Linux: 32768 and up). A port the kernel hands out for `listen(0)`
 * or an outgoing connection comes from that range, so a port taken from it here could be taken again by another test
 * file running beside this one between the probe's release and the program's bind (`EADDRINUSE`); below it, only
 * another probe could.
 */
const LOW_PORTS = { from: 20_000, to: 32_000 } as const;

/** A free TCP port on 127.0.0.1, released again at once for a program (or a server a test starts later) to bind. */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const port = LOW_PORTS.from + Math.floor(Math.random() * (LOW_PORTS.to - LOW_PORTS.from));
    if (await bindsAndReleases(port)) return port;
  }
  const probe = createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Whether `port` on 127.0.0.1 can be bound now; it is released again before this resolves. */
function bindsAndReleases(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/** Whether something accepts TCP connections on 127.0.0.1:`port` now. */
export function acceptsConnections(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
