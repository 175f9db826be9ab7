import { emitWarning, type LineSink } from '../../core/kernel/log-line.js';
import type { SessionSealer } from '../../core/session/session-seal.js';
import { callerReachOf } from '../config/caller-reach.js';
import type { ServerConfig } from '../config/server-config.js';
import { createUpstreamCredentials } from '../upstream-auth/upstream-auth-config.js';
import type { UpstreamCredentials } from '../upstream-auth/upstream-credentials.js';
import { createUpstreamProxy } from '../upstream/http/upstream-proxy.js';
import type { ChildLogEvent } from '../upstream/stdio/stdio-child.js';
import { createStdioStartOutcomes, type StdioStartOutcomes } from '../upstream/stdio/stdio-start-outcome.js';
import { createStdioUpstream } from '../upstream/stdio/stdio-upstream.js';
import { withRouteHook, type UpstreamRouteHook } from '../upstream/upstream-route-hook.js';
import { DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_CALLER, DEFAULT_SESSION_IDLE_TIMEOUT_MS, type Upstream, type UpstreamHooks } from '../upstream/upstream.js';
import { compileToolSelection } from '../../core/policy/tool-selection.js';
import type { ListFailureReason } from './merge-lists.js';
import { PASS_THROUGH_SESSION_IDS } from './member-session-pass-through.js';
import { createServerSet, type ServerSet, type ServerSetOptions } from './server-set.js';
import type { GatewayInfo } from './merge-initialize.js';
import type { ToolPins } from '../pins/tool-pins.js';

/** What {@link buildServerSet} needs from the gateway around it. */
export interface ServerSetParts {
  readonly hooks: Pick<UpstreamHooks, 'onUpstreamError' | 'onSessionRefused' | 'onAnsweredInstead'>;
  /** Each server's own `onExchangeEnd` (metrics labelled with its name), by its name. */
  readonly exchangeEndOf?: (server: string) => UpstreamHooks['onExchangeEnd'];
  /** Told of each request handed to a server, with its name (the request log's `server`). */
  readonly onRouted?: UpstreamRouteHook;
  /**
   * What each server's upstream shares with the gateway's readiness, by server name ({@link createServerResources}).
   * A server not in it gets credentials of its own and the gateway's `stdioStarts`.
   */
  readonly resources?: ReadonlyMap<string, ServerResources>;
  readonly childLog: (event: ChildLogEvent) => void;
  readonly stdioStarts: StdioStartOutcomes;
  readonly warn: LineSink;
  readonly info: GatewayInfo;
  /** Time allowed for each server's part of a merged list, in milliseconds. Default 5 000. */
  readonly listTimeoutMs?: number;
  /** Key material for list cursors (the sealed sessions' keys), so that any replica opens them. */
  readonly cursorSecrets?: readonly Uint8Array[];
  /** Told of each server left out of a list (metrics). */
  readonly onListFailure?: (server: string, method: string, reason: ListFailureReason) => void;
  /** Seals clients' session ids (`MCP_AUTH_SESSION_SECRET`), which then carry every HTTP server's session. */
  readonly sessionSealer?: SessionSealer;
  /** Decides a message again under the policy in force (see `ServerSetOptions.recheck`). */
  readonly recheck?: ServerSetOptions['recheck'];
  /** Connected accounts, when a server is in connected mode (see `ServerSetOptions.connectedLists`). */
  readonly connectedLists?: ServerSetOptions['connectedLists'];
  /** Whether a caller may use anything of a server (see `ServerSetOptions.mayReach`). */
  readonly mayReach?: ServerSetOptions['mayReach'];
  /** The pinned tool definitions (`MCP_AUTH_PINS`); absent when off. */
  readonly pins?: ToolPins;
  /** Bounds of clients' sessions with the endpoint. Default: as a single upstream's. */
  readonly sessionLimits?: { readonly maxSessions?: number; readonly maxSessionsPerCaller?: number; readonly sessionIdleTimeoutMs?: number };
}

/** What one server's upstream shares with the rest of the gateway (readiness probes it with the same instances). */
export interface ServerResources {
  /** Its credentials (`auth`); absent for none, and for stdio. */
  readonly credentials?: UpstreamCredentials;
  /** The outcomes of its own process starts (stdio). */
  readonly stdioStarts?: StdioStartOutcomes;
}

/** Builds what {@link ServerResources} says for one server: its credentials once, its own start outcomes. */
export function createServerResources(server: ServerConfig): ServerResources {
  if (server.stdio) return { stdioStarts: createStdioStartOutcomes() };
  return server.upstreamAuth ? { credentials: createUpstreamCredentials(server.upstreamAuth) } : {};
}

/** Least time between two warnings about one server left out of lists, in milliseconds. */
const LIST_FAILURE_WARNING_INTERVAL_MS = 60_000;

/**
 * Builds the upstream of every server of a configuration file (each with its own credentials, identity, bounds and
 * sessions) and the server set in front of them. Any server's options may still be refused: then the ones built
 * are closed and the error is thrown.
 */
export function buildServerSet(servers: readonly ServerConfig[], parts: ServerSetParts): ServerSet & { readonly credentials: ReadonlyMap<string, UpstreamCredentials> } {
  const built: Upstream[] = [];
  const credentials = new Map<string, UpstreamCredentials>();
  try {
    for (const server of servers) {
      // Built once per server: its upstream sends them, and readiness and the gateway's own listing use them too.
      const shared = parts.resources?.get(server.name);
      const own = shared ? shared.credentials : server.upstreamAuth ? createUpstreamCredentials(server.upstreamAuth) : undefined;
      if (own) credentials.set(server.name, own);
      built.push(buildServer(server, parts, own));
    }
  } catch (error) {
    for (const upstream of built) void upstream.close();
    throw error;
  }
  const warned = new Map<string, number>();
  const set = createServerSet({
    servers: servers.map((server, i) => ({
      name: server.name,
      upstream: built[i]!,
      selects: compileToolSelection(server.tools, `servers.${server.name}.tools`),
      ...(server.listTimeoutMs !== undefined ? { listTimeoutMs: server.listTimeoutMs } : {}),
      ...(server.listReuseMs !== undefined ? { listReuseMs: server.listReuseMs } : {}),
      callerBlind: callerReachOf({ identityHeaders: server.proxy?.identityHeaders !== undefined, identityEnv: server.stdio?.identityEnv === true, authMode: server.upstreamAuth?.mode, processPerCaller: server.transport === 'stdio' }) === undefined,
      ...(credentials.get(server.name)?.profile ? { kept: credentials.get(server.name)!.profile! } : {}),
    })),
    ...(parts.listTimeoutMs !== undefined ? { listTimeoutMs: parts.listTimeoutMs } : {}),
    maxSessions: parts.sessionLimits?.maxSessions ?? DEFAULT_MAX_SESSIONS,
    maxSessionsPerCaller: parts.sessionLimits?.maxSessionsPerCaller ?? DEFAULT_MAX_SESSIONS_PER_CALLER,
    sessionIdleTimeoutMs: parts.sessionLimits?.sessionIdleTimeoutMs ?? DEFAULT_SESSION_IDLE_TIMEOUT_MS,
    info: parts.info,
    ...(parts.cursorSecrets ? { cursorSecrets: parts.cursorSecrets } : {}),
    ...(parts.hooks.onSessionRefused ? { onSessionRefused: parts.hooks.onSessionRefused } : {}),
    ...(parts.sessionSealer ? { sessionSealer: parts.sessionSealer } : {}),
    ...(parts.recheck ? { recheck: parts.recheck } : {}),
    ...(parts.connectedLists ? { connectedLists: parts.connectedLists } : {}),
    ...(parts.mayReach ? { mayReach: parts.mayReach } : {}),
    ...(parts.pins ? { pins: parts.pins } : {}),
    onListFailure: (server, method, reason, sessionless) => {
      parts.onListFailure?.(server, method, reason);
      const key = `${server}\n${reason}\n${sessionless === true}`;
      const now = Date.now();
      if (now - (warned.get(key) ?? -Infinity) < LIST_FAILURE_WARNING_INTERVAL_MS) return;
      warned.set(key, now);
      // Nothing will change for such requests: the client must open a session (initialize) to see the server's items.
      const text = sessionless
        ? 'a server was left out of a merged list: it needs a session, and the client sent none (Mcp-Session-Id); clients in a session see its items'
        : 'a server was left out of a merged list; its items are missing until it answers again';
      emitWarning(parts.warn, text, { server, method, reason });
    },
    onResourceConflict: ({ uri, kept, ignored }) =>
      emitWarning(parts.warn, `two servers claim one resource: ${kept} keeps it (the first in the configuration file), ${ignored}'s claim is ignored`, { uri: uri.slice(0, 200), kept, ignored }),
  });
  return Object.assign(set, { credentials });
}

function buildServer(server: ServerConfig, parts: ServerSetParts, credentials: UpstreamCredentials | undefined): Upstream {
  const upstream = buildUpstream(server, parts, credentials);
  return parts.onRouted ? withRouteHook(upstream, parts.onRouted) : upstream;
}

function buildUpstream(server: ServerConfig, parts: ServerSetParts, credentials: UpstreamCredentials | undefined): Upstream {
  const shared = parts.resources?.get(server.name);
  if (server.stdio) {
    // Its processes' lines name the server: several stdio servers may run side by side.
    const log = (event: ChildLogEvent): void => parts.childLog({ ...event, server: server.name });
    return createStdioUpstream({ ...server.stdio, name: server.name, ...parts.hooks, log, stdioStarts: shared?.stdioStarts ?? parts.stdioStarts });
  }
  const onExchangeEnd = parts.exchangeEndOf?.(server.name);
  return createUpstreamProxy({
    ...server.proxy!,
    name: server.name,
    ...parts.hooks,
    ...(credentials ? { credentials } : {}),
    // With sealed ids, the set's id carries this server's session: any replica forwards it as it is.
    ...(parts.sessionSealer ? { sessionSealer: PASS_THROUGH_SESSION_IDS } : {}),
    ...(onExchangeEnd ? { onExchangeEnd } : {}),
  });
}
