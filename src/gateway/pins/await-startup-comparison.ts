/**
 * Holds the requests the pins decide (`tools/call`, `tools/list`) while the gateway's start-up comparison of their
 * server with the pins is in progress (`MCP_AUTH_PINS=enforce`): each waits for it, at most the server's list
 * timeout, then goes on to be decided by the guard and the pins as they are then. A server still not compared after
 * that gets 503 with `Retry-After` for those requests only; every other request, and every other server's, passes at
 * once. The wait comes before the guard's decision (the handler's `holdBeforeDecision`): until the comparison ends,
 * the pins cannot say which tools are hidden, and a condition's 403 or a missing scope's given meanwhile would tell a
 * caller that a tool hidden a moment later exists. A refusal the pins cannot change (a caller without the base
 * scopes) is given before the wait (`Guard.refuseBeforeHold`): it never waits for the comparison.
 */
import type { ServerResponse } from 'node:http';
import { splitExposedName } from '../../core/mcp/exposed-names.js';
import { asRecord } from '../../core/wire/as-record.js';
import { JsonRpcErrorCode, requestIdOf, type JsonRpcMessage } from '../../core/wire/jsonrpc.js';
import { abortSignalFor } from '../../http/abort-signal.js';
import { writeGatewayError } from '../upstream/gateway-error.js';
import { decorateUpstream } from '../upstream/decorated-upstream.js';
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
 * The upstream, with its `tools/call` and `tools/list` requests held before the guard decides while their server's
 * start-up comparison is in progress (see the module's description). At no cost once every comparison has ended.
 *
 * @example
 * const upstream = withStartupComparison(proxy, { comparisons: pins.startup, timeoutMs: () => 5_000 });
 */
export function withStartupComparison<U extends Upstream>(upstream: U, wait: StartupComparisonWait): U {
  const known = wait.servers === undefined ? undefined : new Set(wait.servers);
  const hold = async (message: JsonRpcMessage, res: ServerResponse, servers: string[]): Promise<void> => {
    // Raced with the client's going away: a client that left keeps nothing waiting for it.
    const left = await wait.comparisons.wait(servers, Math.max(...servers.map(wait.timeoutMs)), abortSignalFor(res));
    if (left.length === 0 || res.writableEnded || res.destroyed) return;
    const named = left.map((server) => server.slice(0, 64)).join(', ');
    writeGatewayError(res, 503, requestIdOf(message), `Service unavailable: the tools of ${named} are being compared with their pins; retry shortly`, String(STARTUP_COMPARISON_RETRY_AFTER_S), JsonRpcErrorCode.InternalError);
  };
  const hooked: Pick<Upstream, 'holdBeforeDecision'> = {
    holdBeforeDecision(message, res) {
      if (wait.comparisons.idle) return undefined;
      const servers = concerned(message, wait.comparisons, known);
      return servers.length === 0 ? undefined : hold(message, res, servers);
    },
  };
  return decorateUpstream(upstream, hooked as Partial<U>);
}

/** The servers in comparison that `message` concerns: a tool's server for `tools/call`, every one for `tools/list`. */
function concerned(message: JsonRpcMessage, comparisons: StartupComparisons, known: ReadonlySet<string> | undefined): string[] {
  const method = (message as { method?: unknown }).method;
  if (method !== 'tools/list' && method !== 'tools/call') return [];
  if (known === undefined) return comparisons.inProgress(SINGLE_UPSTREAM_PIN_NAME) ? [SINGLE_UPSTREAM_PIN_NAME] : [];
  if (method === 'tools/list') return comparisons.servers();
  const name = asRecord((message as { params?: unknown }).params)?.name;
  const split = typeof name === 'string' ? splitExposedName(name) : undefined;
  return split !== undefined && known.has(split.server) && comparisons.inProgress(split.server) ? [split.server] : [];
}
