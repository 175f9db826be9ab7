import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { requestPath } from '../../http/request-headers.js';
import { PLAIN_TEXT_CONTENT_TYPE } from '../../http/media-type.js';

/** Path the metrics are served at, as Prometheus scrapes by default. */
export const METRICS_PATH = '/metrics';

/** Options of {@link startMetricsListener}. */
export interface MetricsListenerOptions {
  /** Interface to listen on; the gateway's default is loopback, so metrics are never public by accident. */
  host: string;
  /** TCP port; 0 picks a free one. */
  port: number;
  registry: Registry;
}

/** A running metrics listener. */
export interface MetricsListener {
  /** Where the metrics are, e.g. `http://127.0.0.1:9464/metrics`. */
  readonly url: string;
  readonly server: Server;
  /** Stops listening and drops open connections. Idempotent. */
  close(): Promise<void>;
}

/**
 * Serves the registry in Prometheus' text format at `GET /metrics` (and `HEAD`), on a listener of its own, apart
 * from the MCP endpoint: a scrape needs no token, so it must be reachable only where the operator chose. Other
 * paths get 404, other methods 405. Nothing else is served and no request body is read.
 *
 * @throws the listen error (e.g. `EADDRINUSE`), after which nothing is left listening.
 */
export async function startMetricsListener(options: MetricsListenerOptions): Promise<MetricsListener> {
  const { registry } = options;
  const server = createServer((req, res) => {
    if (requestPath(req) !== METRICS_PATH) {
      res.writeHead(404, { 'Content-Type': PLAIN_TEXT_CONTENT_TYPE }).end(`Not found: metrics are at ${METRICS_PATH}\n`);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': PLAIN_TEXT_CONTENT_TYPE }).end('Method not allowed\n');
      return;
    }
    registry.metrics().then(
      (text) => {
        res.writeHead(200, { 'Content-Type': registry.contentType, 'Content-Length': Buffer.byteLength(text), 'Cache-Control': 'no-store' });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      () => {
        res.writeHead(500, { 'Content-Type': PLAIN_TEXT_CONTENT_TYPE }).end('Metrics could not be collected\n');
      },
    );
  });
  // Scrapes are short: an idle connection is not kept for long.
  server.keepAliveTimeout = 5_000;
  server.headersTimeout = 10_000;
  server.requestTimeout = 10_000;
  server.listen(options.port, options.host);
  await Promise.race([
    once(server, 'listening'),
    once(server, 'error').then(([error]) => {
      throw error;
    }),
  ]);
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}${METRICS_PATH}`,
    server,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
