/**
 * Where the authorization server sends the user back with the code: a one-shot listener on 127.0.0.1 with
 * a random port (RFC 8252 section 7.3), the redirect URI of a native client.
 *
 * @module
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A listening redirect URI and the redirect it is waiting for. */
export interface LoopbackListener {
  /** `http://127.0.0.1:PORT/callback`. */
  redirectUri: string;
  /** The URL the user's browser was redirected to (carrying `code` and `state`, or `error`). */
  callback: Promise<URL>;
  /** Stops listening and drops open connections. */
  close(): Promise<void>;
}

/** Listens on 127.0.0.1 (RFC 8252 section 7.3) for the single redirect back from the authorization server. */
export async function listenForCallback(timeoutMs: number): Promise<LoopbackListener> {
  let resolveCallback!: (url: URL) => void;
  let rejectCallback!: (error: Error) => void;
  const callback = new Promise<URL>((resolve, reject) => {
    resolveCallback = resolve;
    rejectCallback = reject;
  });
  callback.catch(() => undefined);
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    if (url.pathname !== '/callback') {
      res.statusCode = 404;
      res.end();
      return;
    }
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.end('<!DOCTYPE html><title>Signed in</title><p>You can close this window and return to the terminal.</p>');
    resolveCallback(url);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const timer = setTimeout(() => rejectCallback(new Error('timed out waiting for the authorization redirect')), timeoutMs);
  timer.unref();
  const { port } = server.address() as AddressInfo;
  return {
    redirectUri: `http://127.0.0.1:${port}/callback`,
    callback,
    async close() {
      clearTimeout(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
