// What the several-servers test files start and stop alike: an authorization server offering the `mcp` scope, and
// the raw servers and gateways a file registers, stopped after its tests (gateways first).
import type { Server } from 'node:http';
import { after, before } from 'node:test';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import type { RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { closeServer } from './loopback-server.js';

/** The parts of {@link multiplexParts}: `as` is set once the file's `before` hooks run. */
export interface MultiplexParts {
  readonly as: AuthorizationServer;
  /** Raw servers the file started: closed after its tests. */
  readonly servers: Server[];
  /** Gateways the file started: shut down after its tests, before the servers. */
  readonly gateways: RunningGateway[];
}

/**
 * Registers the file's `before` (the authorization server, then `setUp` if given) and `after` (everything registered
 * stopped) hooks, at the top level of a test file.
 *
 * @example
 * const parts = multiplexParts(async ({ as, gateways }) => gateways.push(await gatewayFor(as)));
 */
export function multiplexParts(setUp?: (parts: MultiplexParts) => Promise<void>): MultiplexParts {
  let as: AuthorizationServer | undefined;
  const parts = {
    get as(): AuthorizationServer {
      if (as === undefined) throw new Error('the authorization server starts in before()');
      return as;
    },
    servers: [] as Server[],
    gateways: [] as RunningGateway[],
  };
  before(async () => {
    as = await startAuthorizationServer({ extraScopes: ['mcp'] });
    await setUp?.(parts);
  });
  after(async () => {
    for (const gateway of parts.gateways) await gateway.shutdown();
    for (const server of parts.servers) closeServer(server);
    await as?.close();
  });
  return parts;
}
