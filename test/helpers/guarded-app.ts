import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { mcpOAuthGuard, type McpOAuthGuardOptions, type McpOAuthGuardRouter } from '../../src/index.js';

/** An Express app on 127.0.0.1 with the guard mounted; the resource is known once the port is. */
export interface GuardedApp {
  url: string;
  origin: string;
  router: McpOAuthGuardRouter;
  close(): Promise<void>;
}

export async function startGuardedApp(options: (origin: string) => McpOAuthGuardOptions): Promise<GuardedApp> {
  const app = express();
  const server: Server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  let router: McpOAuthGuardRouter;
  try {
    router = mcpOAuthGuard(options(origin));
  } catch (error) {
    server.close();
    throw error;
  }
  app.use(router);
  return {
    url: router.guard.resource,
    origin,
    router,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
