import type { ChildLogEvent } from './stdio/stdio-child.js';

/**
 * Why the upstream could not be listed, in the words both the gateway's start-up warning and `check` use: what
 * a stdio process did (its exit, its last stderr lines) and what to do, from the listing's reason. One place, so
 * that the two say the same thing.
 */

/** Most stderr lines of a stdio upstream kept, the last ones; each clipped. */
const MAX_STDERR_LINES = 3;
const MAX_STDERR_LINE_LENGTH = 200;

/** What a failed listing comes to. */
export interface ListingFailure {
  /** For a stdio upstream whose process ended: `exited with code 2`, `could not be started (ENOENT)`. */
  readonly exit?: string;
  /** Its last stderr lines, clipped, oldest first. */
  readonly stderr: readonly string[];
  /** What to change. */
  readonly fix: string;
}

/** Collects a listing's stdio process events, then explains its failure. */
export interface ListingFailureRecorder {
  /** Give it every event of the listing's process. */
  childLog(event: ChildLogEvent): void;
  /** The failure, from the listing's reason (a Node error code, an HTTP status, a JSON-RPC code, …). */
  explain(reason: string): ListingFailure;
}

/** What kind of upstream was listed, which decides the fix. */
export interface ListedUpstream {
  readonly stdio: boolean;
  /** Whether the gateway sent credentials of its own to an HTTP upstream (`MCP_AUTH_UPSTREAM_AUTH`). */
  readonly credentials: boolean;
}

/**
 * Starts recording a listing.
 *
 * @example
 * const failure = recordListingFailure({ stdio: true, credentials: false });
 * // pass failure.childLog to the listing; when it fails:
 * failure.explain('initialize: the upstream process ended (upstream_exited)');
 */
export function recordListingFailure(upstream: ListedUpstream): ListingFailureRecorder {
  const stderr: string[] = [];
  let exit: string | undefined;
  return {
    childLog(event) {
      if (event.event === 'upstream_stderr' && event.line !== undefined) {
        stderr.push(event.line.length > MAX_STDERR_LINE_LENGTH ? `${event.line.slice(0, MAX_STDERR_LINE_LENGTH)}…` : event.line);
        if (stderr.length > MAX_STDERR_LINES) stderr.shift();
      }
      if (event.event === 'upstream_exit') exit = event.code ? `could not be started (${event.code})` : `exited with ${event.signal ? `signal ${event.signal}` : `code ${String(event.exitCode)}`}`;
    },
    explain(reason) {
      return { ...(exit && upstream.stdio ? { exit } : {}), stderr: [...stderr], fix: fixFor(reason, upstream) };
    },
  };
}

/** What to do about a failed listing, from its reason. */
function fixFor(reason: string, upstream: ListedUpstream): string {
  if (upstream.stdio) {
    return 'run MCP_AUTH_UPSTREAM_COMMAND by hand: it must stay running and speak MCP (newline-delimited JSON-RPC) on stdin and stdout, logging to stderr only';
  }
  if (/ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ECONNRESET|cannot be reached/.test(reason)) return 'start the upstream MCP server, or correct the host and port in MCP_AUTH_UPSTREAM';
  if (/HTTP 401|HTTP 403/.test(reason)) {
    return upstream.credentials ? "check the upstream credentials (MCP_AUTH_UPSTREAM_AUTH and its settings): the upstream refused the gateway's" : 'the upstream wants credentials: set MCP_AUTH_UPSTREAM_AUTH (static or client_credentials) and its settings';
  }
  if (/HTTP 404|HTTP 405/.test(reason)) return 'set MCP_AUTH_UPSTREAM to the URL of the MCP endpoint itself (often ending in /mcp)';
  if (/no answer within/.test(reason)) return 'check that the upstream answers, or raise MCP_AUTH_HTTP_TIMEOUT_MS';
  if (/credential could not be obtained/.test(reason)) return "check the upstream credentials' settings (MCP_AUTH_UPSTREAM_CLIENT_ID, its secret, MCP_AUTH_UPSTREAM_ISSUER)";
  return 'check that MCP_AUTH_UPSTREAM is a Streamable HTTP MCP endpoint that answers initialize and the list methods';
}
