/**
 * What every example server shares: listen first (so port 0 resolves to a real port), then build the guard
 * with `http://HOST:PORT/mcp` as the default resource, and a `main()` that is configured by environment only.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { ConfigurationError, loadOptionsFromEnv, type GuardOptions, type McpOAuthGuardRouter } from '../src/index.js';

/** A listening server with the guard mounted. */
export interface GuardedServer {
  /** The MCP endpoint URL (the canonical resource). */
  url: string;
  server: Server;
  router: McpOAuthGuardRouter;
  /** Stops listening and drops open connections (SSE streams included). */
  close(): Promise<void>;
}

/** `http://host:port/mcp`, with IPv6 hosts bracketed. */
export function defaultResourceUrl(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}/mcp`;
}

/**
 * Listens on `host:port` (port 0: any free port), then mounts the router `build` returns for the default
 * resource `http://HOST:PORT/mcp` with the port actually bound.
 */
export async function listenWithGuard(
  host: string,
  port: number,
  build: (defaultResource: string) => McpOAuthGuardRouter,
): Promise<GuardedServer> {
  const app = express();
  app.disable('x-powered-by');
  const server = app.listen(port, host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  let router: McpOAuthGuardRouter;
  try {
    router = build(defaultResourceUrl(host, (server.address() as AddressInfo).port));
  } catch (error) {
    server.close();
    throw error;
  }
  app.use(router);
  return {
    url: router.guard.resource,
    server,
    router,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Runs an example from the environment: HOST (default 127.0.0.1), PORT (default 3000), MCP_AUTH_ISSUER
 * (required: exits 2 with a message pointing at `npm run demo`), MCP_AUTH_RESOURCE (default
 * `http://HOST:PORT/mcp`) and the other MCP_AUTH_* variables. Configuration errors exit 2 with one line.
 */
export async function runExampleFromEnv(
  label: string,
  start: (options: GuardOptions & { host: string; port: number }) => Promise<{ url: string; close(): Promise<void> }>,
): Promise<void> {
  const host = process.env.HOST?.trim() || '127.0.0.1';
  const port = Number(process.env.PORT?.trim() || '3000');
  if (!process.env.MCP_AUTH_ISSUER?.trim()) {
    console.error(
      'MCP_AUTH_ISSUER is not set: point it at your authorization server (e.g. MCP_AUTH_ISSUER=https://auth.example.com npm run example),\n' +
        'or run `npm run demo` to start a local authorization server, this server and a client together.',
    );
    process.exit(2);
  }
  try {
    const fromEnv = loadOptionsFromEnv(process.env, { resource: defaultResourceUrl(host, port) });
    const running = await start({ ...fromEnv, host, port });
    const issuers = fromEnv.issuers ?? [fromEnv.issuer];
    console.log(`${label}: ${running.url}  (${issuers.length === 1 ? 'issuer' : 'issuers'} ${issuers.join(', ')})`);
    const stop = (): void => void running.close().then(() => process.exit(0));
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  } catch (error) {
    if (error instanceof ConfigurationError) {
      console.error(`configuration error: ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
}
