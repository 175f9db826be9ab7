import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RequestPipeline } from '../../src/http/request-pipeline.js';

/** Starts `server` on 127.0.0.1 with a free port and returns its base URL, `http://127.0.0.1:<port>`. */
export async function listenOnLoopback(server: Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Stops `server` and drops its open connections. */
export function closeServer(server: Server): void {
  server.closeAllConnections();
  server.close();
}

/**
 * Serves `pipeline` on 127.0.0.1 with a free port (404 for paths it does not serve) and returns the server and the
 * URL of its MCP endpoint (the guard's resource path on that port).
 */
export async function servePipeline(pipeline: RequestPipeline): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    if (!pipeline.serve(req, res)) res.writeHead(404).end();
  });
  return { server, url: `${await listenOnLoopback(server)}${pipeline.guard.resourcePath}` };
}
