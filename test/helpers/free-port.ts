// Ports for servers the tests start as programs (redis-server, nginx), which must be told a port up front.
import { once } from 'node:events';
import { createConnection, createServer } from 'node:net';

/** A free TCP port on 127.0.0.1, released again at once for a program to bind. */
export async function freePort(): Promise<number> {
  const probe = createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
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
