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
 * Fields `node:http` keeps the first value of when a response repeats them (its `IncomingMessage.headers`); every
 * other repeated field's values are joined with `", "` (RFC 9110 §5.3). `Set-Cookie` is left as undici gives it (a
 * string or an array): the gateway never passes it on.
 */
const FIRST_VALUE_WINS = new Set([
  'age',
  'authorization',
  'content-length',
  'content-type',
  'etag',
  'expires',
  'from',
  'host',
  'if-modified-since',
  'if-unmodified-since',
  'last-modified',
  'location',
  'max-forwards',
  'proxy-authorization',
  'referer',
  'retry-after',
  'server',
  'user-agent',
]);

/** Response headers as `node:http` hands them over, which the rest of the gateway reads ({@link FIRST_VALUE_WINS}). */
export function nodeStyleHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  for (const name in headers) {
    const value = headers[name];
    if (!Array.isArray(value) || name === 'set-cookie') continue;
    headers[name] = FIRST_VALUE_WINS.has(name) ? value[0] : value.join(', ');
  }
  return headers;
}

/**
 * Whether a request may be sent once more after its connection failed before any answer: only a GET (a stream
 * being opened) or a DELETE (ending a session), which may safely reach the upstream twice. A POST is never sent
 * again: the upstream may have received it (a `tools/call` must not run twice), and the pool cannot tell a
 * connection the upstream closed as it was reused from one that failed after delivering the request. That race
 * is rare, as the pool closes idle connections before the upstream's announced keep-alive timeout.
 */
export function mayRetry(method: string, error: Error & { code?: string }): boolean {
  if (method !== 'GET' && method !== 'DELETE') return false;
  return error.code === 'UND_ERR_SOCKET' || error.code === 'ECONNRESET' || error.code === 'EPIPE';
}

/** Whether an upstream request failed by running out of time: a timeout signal, or the pool's connect timeout. */
export function isTimeout(error: unknown): boolean {
  const failure = error as { name?: unknown; code?: unknown } | null;
  return failure?.name === 'TimeoutError' || failure?.code === 'UND_ERR_CONNECT_TIMEOUT';
}

/** The words for an upstream that could not be reached, with Node's error code ({@link nodeErrorCode}). */
export function unreachableText(error: unknown): string {
  return `the upstream cannot be reached (${nodeErrorCode(error as Error & { code?: string }) ?? 'error'})`;
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
