/**
 * Holds the requests the pins decide (`tools/call`, `tools/list`) while the gateway's start-up comparison of their
 * server with the pins is in progress (`MCP_AUTH_PINS=enforce`): each waits for it, at most the server's list
 * timeout, then goes on to be decided by the pins as they are then. A server still not compared after that gets 503
 * with `Retry-After` for those requests only; every other request, and every other server's, passes at once.
 */
import type { ServerResponse } from 'node:http';
import { splitExposedName } from '../../core/mcp/exposed-names.js';
import { asRecord } from '../../core/wire/as-record.js';
import { JsonRpcErrorCode, type JsonRpcMessage } from '../../core/wire/jsonrpc.js';
import type { GuardedRequest, HttpHandlerContext } from '../../http/http-handler.js';
import { writeGatewayError } from '../upstream/gateway-error.js';
import type { Upstream } from '../upstream/upstream.js';
import { SINGLE_UPSTREAM_PIN_NAME } from './pin-document.js';
import type { StartupComparisons } from './startup-comparison.js';

/** `Retry-After` of the 503 for a server whose start-up comparison outlasted its list timeout, in seconds. */
export const STARTUP_COMPARISON_RETRY_AFTER_S = 2;

/** Where requests wait: the comparisons, and each server's list timeout. */
export interface StartupComparisonWait {
  readonly comparisons: StartupComparisons;
  /** The servers' names (a configuration file's); absent for the single upstream, named `upstream`. */
  readonly servers?: readonly string[];
  /** A server's list timeout (`listTimeoutMs`), in milliseconds: the longest a request waits for it. */
  readonly timeoutMs: (server: string) => number;
}

/**
 * The upstream, with its `tools/call` and `tools/list` requests held while their server's start-up comparison is
 * in progress (see the module's description). At no cost once every comparison has ended.
 *
 * @example
 * const upstream = withStartupComparison(proxy, { comparisons: pins.startup, timeoutMs: () => 5_000 });
 */
export function withStartupComparison<U extends Upstream>(upstream: U, wait: StartupComparisonWait): U {
  const handle = upstream.handle;
  const known = wait.servers === undefined ? undefined : new Set(wait.servers);
  const hooked: Pick<Upstream, 'handle'> = {
    handle(req, res, context) {
      const servers = req.method === 'POST' ? concerned(req.body, wait.comparisons, known) : [];
      if (servers.length === 0) return handle.call(upstream, req, res, context);
      return waitThenHandle(req, res, context, servers);
    },
  };
  const waitThenHandle = async (req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext, servers: string[]): Promise<void> => {
    const left = await wait.comparisons.wait(servers, Math.max(...servers.map(wait.timeoutMs)));
    if (res.writableEnded || res.destroyed || context.signal.aborted) return;
    if (left.length > 0) {
      const id = (req.body as { id?: unknown } | undefined)?.id;
      const named = left.map((server) => server.slice(0, 64)).join(', ');
      writeGatewayError(res, 503, typeof id === 'string' || typeof id === 'number' ? id : null, `Service unavailable: the tools of ${named} are being compared with their pins; retry shortly`, String(STARTUP_COMPARISON_RETRY_AFTER_S), JsonRpcErrorCode.InternalError);
      return;
    }
    return handle.call(upstream, req, res, context);
  };
  return Object.assign(Object.create(upstream) as U, hooked);
}

/** The servers in comparison that `message` concerns: a tool's server for `tools/call`, every one for `tools/list`. */
function concerned(message: JsonRpcMessage | undefined, comparisons: StartupComparisons, known: ReadonlySet<string> | undefined): string[] {
  const method = (message as { method?: unknown } | undefined)?.method;
  if (method === 'tools/list') return known === undefined ? (comparisons.inProgress(SINGLE_UPSTREAM_PIN_NAME) ? [SINGLE_UPSTREAM_PIN_NAME] : []) : comparisons.servers();
  if (method !== 'tools/call') return [];
  if (known === undefined) return comparisons.inProgress(SINGLE_UPSTREAM_PIN_NAME) ? [SINGLE_UPSTREAM_PIN_NAME] : [];
  const name = asRecord((message as { params?: unknown }).params)?.name;
  const split = typeof name === 'string' ? splitExposedName(name) : undefined;
  return split !== undefined && known.has(split.server) && comparisons.inProgress(split.server) ? [split.server] : [];
}
