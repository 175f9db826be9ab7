import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import { JsonRpcErrorCode, type JsonRpcRequest, type JsonRpcResponse } from '../../core/wire/jsonrpc.js';
import { JSON_MEDIA_TYPE, MCP_POST_ACCEPT, mediaType } from '../../http/media-type.js';
import {
  catalogCallResult,
  catalogClientInfo,
  catalogInitializeParams,
  DEFAULT_CATALOG_MAX_ITEMS,
  DEFAULT_CATALOG_MAX_PAGES,
  listServerSession,
  readServerCatalog,
  type CatalogCall,
  type ListedServerCatalog,
} from '../../core/policy/read-server-catalog.js';
import { CLIENT_CAPABILITIES_META_KEY, LATEST_SESSION_PROTOCOL_VERSION, PROTOCOL_VERSION_META_KEY, STATELESS_PROTOCOL_VERSION } from '../../core/mcp/protocol-version.js';
import { childEnvironment } from './stdio/child-environment.js';
import { startStdioChild, type ChildLogEvent, type PendingRequest } from './stdio/stdio-child.js';
import type { StdioStartWatch } from './stdio/stdio-start-outcome.js';
import type { StdioUpstreamOptions } from './stdio/stdio-upstream.js';
import { isTimeout, nodeStyleHeaders, unreachableText, withUpstreamDispatcher } from './upstream-dispatcher.js';
import { findResponse, readAnswerBody, UpstreamAnswerTooLargeError } from './answer-response.js';
import type { UpstreamProxyOptions } from './http/upstream-proxy.js';

/**
 * Listing what the upstream offers (tools, prompts, resources, resource templates), as the gateway itself: a
 * service identity with no caller and no token, for the policy coverage check. Every call is bounded in time and
 * size, and so is the number of pages and items. No client's token is ever sent: the gateway has none to send.
 */

/** Bounds of a listing. */
export interface CatalogLimits {
  /** Time allowed for each request (connect, answer, body), in milliseconds. Default 10 000. */
  requestTimeoutMs?: number;
  /** Most pages read per list method; a longer list is reported as truncated. Default 20. */
  maxPages?: number;
  /** Most items kept per list method. Default 10 000. */
  maxItems?: number;
  /** Largest answer read, in bytes. Default 8 388 608 (8 MiB). */
  maxResponseBytes?: number;
  /** Keep each listed tool whole (`toolDefinitions` of the catalog), for the pins. Default false. */
  keepToolDefinitions?: boolean;
}

/** What the upstream listed; a kind it does not offer (no capability) is an empty list. */
export type UpstreamCatalog = ListedServerCatalog;

const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_RESPONSE_BYTES = 8 * 1_048_576;
/** Who answers a listing call, as its errors name it. */
const LISTER = 'the upstream';

function withDefaults(limits: CatalogLimits): Required<CatalogLimits> {
  return {
    requestTimeoutMs: limits.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    maxPages: limits.maxPages ?? DEFAULT_CATALOG_MAX_PAGES,
    maxItems: limits.maxItems ?? DEFAULT_CATALOG_MAX_ITEMS,
    maxResponseBytes: limits.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
    keepToolDefinitions: limits.keepToolDefinitions ?? false,
  };
}

function resultOf(response: JsonRpcResponse | undefined, method: string): Record<string, unknown> {
  return catalogCallResult(response, method, LISTER);
}

/**
 * Lists a Streamable HTTP upstream with the proxy's URL and connection settings (its `dispatcher`, or the TLS settings
 * of its `agent`), each request bounded by `requestTimeoutMs`. It first opens a session
 * (`initialize`, then `notifications/initialized`, with the `Mcp-Session-Id` the upstream gives, ended by DELETE);
 * an upstream that refuses `initialize` is asked again as a 2026-07-28 stateless server (each request carries the
 * revision in `_meta` and `MCP-Protocol-Version`). No identity headers and no client token are sent; with
 * `authorization` (the gateway's own upstream credential, `MCP_AUTH_UPSTREAM_AUTH` static or client_credentials),
 * every request carries it, so a protected upstream can be listed too.
 *
 * @throws an Error saying what failed (a Node error code, a status or a JSON-RPC error code; never upstream text).
 */
export async function listHttpUpstream(proxy: UpstreamProxyOptions, limits: CatalogLimits = {}, authorization?: string): Promise<UpstreamCatalog> {
  const bounds = withDefaults(limits);
  return withUpstreamDispatcher(proxy, bounds.requestTimeoutMs, (dispatcher) => listOn(dispatcher, new URL(proxy.upstream), bounds, authorization));
}

async function listOn(dispatcher: Dispatcher, url: URL, bounds: Required<CatalogLimits>, authorization: string | undefined): Promise<UpstreamCatalog> {
  let nextId = 1;
  const credential: OutgoingHttpHeaders = authorization === undefined ? {} : { authorization };
  const post = (body: object, headers: OutgoingHttpHeaders): Promise<HttpAnswer> =>
    exchange(dispatcher, url, bounds, 'POST', { 'content-type': JSON_MEDIA_TYPE, accept: MCP_POST_ACCEPT, ...credential, ...headers }, JSON.stringify(body));

  const id = nextId++;
  const initialized = await post({ jsonrpc: '2.0', id, method: 'initialize', params: catalogInitializeParams() }, {});
  const initResponse = initialized.status === 200 ? findResponse(initialized.contentType, initialized.body, id) : undefined;
  if (initResponse && 'result' in initResponse) {
    const result = resultOf(initResponse, 'initialize');
    const sessionId = initialized.headers['mcp-session-id'];
    const version = typeof result.protocolVersion === 'string' ? result.protocolVersion : LATEST_SESSION_PROTOCOL_VERSION;
    const headers: OutgoingHttpHeaders = { 'mcp-protocol-version': version, ...(typeof sessionId === 'string' ? { 'mcp-session-id': sessionId } : {}) };
    try {
      await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
      const call: CatalogCall = async (method, params) => {
        const callId = nextId++;
        const answer = await post({ jsonrpc: '2.0', id: callId, method, params }, headers);
        if (answer.status !== 200) throw new Error(`${method}: the upstream answered HTTP ${answer.status}`);
        return resultOf(findResponse(answer.contentType, answer.body, callId), method);
      };
      const capabilities = result.capabilities;
      return await readServerCatalog(call, typeof capabilities === 'object' && capabilities !== null ? (capabilities as Record<string, unknown>) : {}, bounds);
    } finally {
      // Ends the session the listing opened; best effort, bounded like every call.
      if (typeof sessionId === 'string') await exchange(dispatcher, url, bounds, 'DELETE', { ...credential, ...headers }).catch(() => undefined);
    }
  }
  if (initialized.status >= 500) throw new Error(`initialize: the upstream answered HTTP ${initialized.status}`);
  // No session: a 2026-07-28 server, which answers initialize with an error (or 4xx) and each request on its own.
  const call: CatalogCall = async (method, params) => {
    const callId = nextId++;
    const meta = { [PROTOCOL_VERSION_META_KEY]: STATELESS_PROTOCOL_VERSION, [CLIENT_CAPABILITIES_META_KEY]: {}, clientInfo: catalogClientInfo() };
    const answer = await post({ jsonrpc: '2.0', id: callId, method, params: { ...params, _meta: meta } }, { 'mcp-protocol-version': STATELESS_PROTOCOL_VERSION, 'mcp-method': method });
    const response = findResponse(answer.contentType, answer.body, callId);
    // A 2026-07-28 server answers an unknown method with 404 and -32601: that list is not offered.
    const notFound = response !== undefined && 'error' in response && response.error?.code === JsonRpcErrorCode.MethodNotFound;
    if (answer.status !== 200 && !notFound) throw new Error(`${method}: the upstream answered HTTP ${answer.status}`);
    return resultOf(response, method);
  };
  return readServerCatalog(call, undefined, bounds);
}

interface HttpAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  contentType: string | undefined;
  body: string;
}

/** One bounded HTTP exchange with the upstream. */
async function exchange(dispatcher: Dispatcher, url: URL, bounds: Required<CatalogLimits>, method: string, headers: OutgoingHttpHeaders, body?: string): Promise<HttpAnswer> {
  const timeout = AbortSignal.timeout(bounds.requestTimeoutMs);
  let answer: Dispatcher.ResponseData;
  try {
    answer = await dispatcher.request({ origin: url.origin, path: `${url.pathname}${url.search}`, method, headers: headers as Record<string, string>, body: body ?? null, signal: timeout });
  } catch (error) {
    throw failureOf(error, method, url, bounds);
  }
  const status = answer.statusCode;
  const responseHeaders = nodeStyleHeaders(answer.headers as IncomingHttpHeaders);
  const contentType = mediaType(responseHeaders['content-type']);
  let text: string;
  try {
    text = await readAnswerBody(answer.body, contentType, bounds.maxResponseBytes);
  } catch (error) {
    throw error instanceof UpstreamAnswerTooLargeError ? error : failureOf(error, method, url, bounds);
  }
  return { status, headers: responseHeaders, contentType, body: text };
}

/** A listing request's failure, in words the check shows: the timeout, or Node's error code. */
function failureOf(error: unknown, method: string, url: URL, bounds: Required<CatalogLimits>): Error {
  if (isTimeout(error)) return Object.assign(new Error(`${method} ${url.pathname}: no answer within ${bounds.requestTimeoutMs} ms`), { code: 'ETIMEDOUT' });
  return new Error(unreachableText(error));
}

/**
 * Lists a stdio upstream through a short-lived child of its own, started as the sessions' children are (same
 * program, directory, environment and line limit; no caller identity, as it serves none), and stopped at the end.
 *
 * @param log - Receives the child's log events (labelled `policy-coverage`).
 * @param signal - Stops the child at once (the gateway is shutting down); the listing then fails.
 * @param start - Told how the child's start went (readiness, see `createStdioStartOutcomes`).
 * @throws an Error saying what failed.
 */
export async function listStdioUpstream(stdio: StdioUpstreamOptions, log: (event: ChildLogEvent) => void, limits: CatalogLimits = {}, signal?: AbortSignal, start?: StdioStartWatch): Promise<UpstreamCatalog> {
  if (signal?.aborted) throw new Error('the gateway is shutting down');
  const bounds = withDefaults(limits);
  let ended: string | undefined;
  const child = startStdioChild({
    command: stdio.command,
    args: stdio.args ?? [],
    ...(stdio.cwd !== undefined ? { cwd: stdio.cwd } : {}),
    env: stdio.env ?? childEnvironment([], process.env),
    maxLineBytes: stdio.maxLineBytes ?? 4 * 1_048_576,
    stopTimeoutMs: stdio.stopTimeoutMs ?? 5_000,
    label: 'policy-coverage',
    log: start
      ? (event) => {
          start.log(event);
          log(event);
        }
      : log,
    ...(start ? { onAnswered: () => start.answered() } : {}),
    // Sampling, elicitation, roots: nobody is there to answer, so the child gets an error at once.
    onMessage: () => false,
    onEnd: (reason) => {
      ended = reason;
    },
  });
  // A listing process must not outlive the gateway: it has a process group of its own.
  const onAbort = (): void => void child.stop();
  signal?.addEventListener('abort', onAbort, { once: true });
  let nextId = 1;
  const call: CatalogCall = (method, params) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      let pending: PendingRequest | undefined;
      const timer = setTimeout(() => {
        pending?.abandon(true, 'timeout');
        reject(new Error(`${method}: no answer within ${bounds.requestTimeoutMs} ms`));
      }, bounds.requestTimeoutMs);
      timer.unref();
      const message: JsonRpcRequest = { jsonrpc: '2.0', id: nextId++, method, ...(params ? { params } : {}) };
      pending = child.request(message, {
        message: () => false,
        response: (response) => {
          clearTimeout(timer);
          try {
            resolve(resultOf(response, method));
          } catch (error) {
            reject(error);
          }
        },
        fail: (reason) => {
          clearTimeout(timer);
          reject(new Error(`${method}: the upstream process ended (${reason})`));
        },
      });
      if (pending === undefined) {
        clearTimeout(timer);
        reject(new Error(`${method}: the upstream process is not running (${ended ?? 'upstream_exited'})`));
      }
    });
  try {
    return await listServerSession(call, (method) => child.notify({ jsonrpc: '2.0', method }), bounds);
  } finally {
    signal?.removeEventListener('abort', onAbort);
    await child.stop();
  }
}
