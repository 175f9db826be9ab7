import type { Agent as HttpAgent, IncomingHttpHeaders } from 'node:http';
import type { ConnectionOptions } from 'node:tls';
import { Agent, type Dispatcher } from 'undici';

/**
 * The TLS settings of an `https.Agent` that carry over to an undici connector: the ones a private CA, a client
 * certificate or a pinned server name need. Everything else an agent does (its own `createConnection`, socket
 * limits) has no undici equivalent here.
 */
const TLS_OPTION_NAMES = [
  'ca',
  'cert',
  'key',
  'pfx',
  'passphrase',
  'crl',
  'ciphers',
  'ecdhCurve',
  'minVersion',
  'maxVersion',
  'secureOptions',
  'rejectUnauthorized',
  'servername',
  'checkServerIdentity',
] as const;

/**
 * The connection pool the gateway sends upstream requests on: undici's, which costs a hop about a third less CPU
 * per request than `node:http`'s client (no `ClientRequest`, agent bookkeeping or response stream per request).
 * Keep-alive, as an MCP session makes many short POSTs. undici's own header and body timeouts are off: the
 * proxy's idle timer covers both and counts a slow client draining the answer as activity, which undici cannot.
 *
 * @param connectTimeoutMs Time allowed to resolve and connect (TCP and TLS), in milliseconds.
 * @param agent A deprecated `https.Agent` whose TLS settings are used ({@link TLS_OPTION_NAMES}).
 */
export function createUpstreamDispatcher(connectTimeoutMs: number, agent?: HttpAgent): Dispatcher {
  return new Agent({ connect: { timeout: connectTimeoutMs, ...tlsOptionsOf(agent) }, headersTimeout: 0, bodyTimeout: 0 });
}

function tlsOptionsOf(agent: HttpAgent | undefined): ConnectionOptions {
  const given = (agent as { options?: Record<string, unknown> } | undefined)?.options;
  if (given === undefined) return {};
  const out: Record<string, unknown> = {};
  for (const name of TLS_OPTION_NAMES) if (given[name] !== undefined) out[name] = given[name];
  return out as ConnectionOptions;
}

/**
 * Response headers as `node:http` hands them over, which the rest of the gateway reads: a repeated field's values
 * joined with `", "` (RFC 9110 §5.3), except `Content-Type` and `Content-Length`, where the first counts.
 */
export function nodeStyleHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  for (const name in headers) {
    const value = headers[name];
    if (Array.isArray(value)) headers[name] = name === 'content-type' || name === 'content-length' ? value[0] : value.join(', ');
  }
  return headers;
}

/**
 * Whether a request failed because its pooled connection had been closed by the upstream just as it was reused,
 * before any answer: the upstream never saw the request, so sending it once more on a fresh connection is safe
 * (the case Node documents for `reusedSocket`). undici reports a peer's close with the socket's byte counts: bytes
 * read before this request mean the connection had already answered one. A reset carries no counts, and is
 * treated the same way.
 */
export function wasReusedConnection(error: Error & { code?: string; socket?: { bytesRead?: number } | null }): boolean {
  if (error.code === 'ECONNRESET' || error.code === 'EPIPE') return true;
  return error.code === 'UND_ERR_SOCKET' && (error.socket?.bytesRead ?? 0) > 0;
}

/**
 * The code reported for an upstream failure, in Node's terms (`ECONNREFUSED`, …): undici passes socket errors
 * through, and reports a connection closed before the answer as Node's client does (`ECONNRESET`). Its own codes
 * (`UND_ERR_*`) are not shown.
 */
export function nodeErrorCode(error: Error & { code?: string }): string | undefined {
  const code = error.code;
  if (code === 'UND_ERR_SOCKET') return 'ECONNRESET';
  return typeof code === 'string' && !code.startsWith('UND_ERR_') ? code : undefined;
}

/** What an occasional upstream request (the readiness probe, a listing) needs of the proxy's settings. */
export interface UpstreamConnectionSettings {
  dispatcher?: Dispatcher;
  agent?: HttpAgent;
}

/**
 * Runs `use` on the dispatcher the proxy's requests use, or, when the proxy owns its pool, on a fresh one closed
 * afterwards: a probe or a listing then opens its own connection, so that it sees the upstream as a new client
 * would, and holds none open after.
 */
export async function withUpstreamDispatcher<T>(settings: UpstreamConnectionSettings, connectTimeoutMs: number, use: (dispatcher: Dispatcher) => Promise<T>): Promise<T> {
  if (settings.dispatcher) return use(settings.dispatcher);
  const dispatcher = createUpstreamDispatcher(connectTimeoutMs, settings.agent);
  try {
    return await use(dispatcher);
  } finally {
    void dispatcher.destroy().catch(() => undefined);
  }
}
