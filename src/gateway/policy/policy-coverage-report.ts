import { checkPolicyCoverage, withProtectedElsewhere, type CoveredKind, type PolicyCoverage } from '../../core/policy/policy-coverage.js';
import { coverageCounts, warnAboutCoverage } from '../../core/policy/policy-coverage-log.js';
import type { PolicyDefinition } from '../../core/policy/policy-definition.js';
import type { GatewayConfig } from '../config/gateway-config.js';
import type { ChildLogEvent } from '../upstream/stdio/stdio-child.js';
import type { StdioStartOutcomes } from '../upstream/stdio/stdio-start-outcome.js';
import { listHttpUpstream, listStdioUpstream, type CatalogLimits, type UpstreamCatalog } from '../upstream/upstream-catalog.js';
import { GATEWAY_ITSELF, type UpstreamCredentials } from '../upstream-auth/upstream-credentials.js';
import { recordListingFailure, type ListingFailure } from '../upstream/upstream-listing-failure.js';
import { emitWarning, formatLogLine, writeSafely } from '../../core/kernel/log-line.js';
import { unmatchedToolPatterns, type ToolSelectionDefinition } from '../../core/policy/tool-selection.js';

/**
 * The gateway's policy coverage log: lists the upstream as itself (see `upstream-catalog.ts`), compares the policy
 * with it (`checkPolicyCoverage`), and writes one warning per finding and one summary line. Run at start-up, and
 * meant to be run again whenever a policy is loaded.
 */

/** What {@link reportPolicyCoverage} needs. */
export interface PolicyCoverageReportOptions {
  config: Pick<GatewayConfig, 'proxy' | 'stdio' | 'settings'>;
  /** The policy in force; undefined is the empty policy. */
  policy: PolicyDefinition | undefined;
  /** Issuers trusted, for the summary. */
  issuers: readonly string[];
  /** Receives the summary line (JSON). */
  log(line: string): void;
  /** Receives each warning line (JSON). */
  warn(line: string): void;
  /** Receives a stdio listing child's own log events. */
  childLog?: (event: ChildLogEvent) => void;
  limits?: CatalogLimits;
  /** Ends the listing at once (a stdio listing process is stopped), e.g. on shutdown. */
  signal?: AbortSignal;
  /** The gateway's own credentials for the HTTP upstream, the proxy's, so a protected upstream can be listed. */
  credentials?: UpstreamCredentials;
  /** Told how a stdio listing process's start went, for readiness. */
  stdioStarts?: Pick<StdioStartOutcomes, 'watch'>;
  /** The server's name, with several servers: written in the summary and every warning. Default none. */
  server?: string;
  /** Which listed tools the endpoint exposes (a server's `tools` selection); the others are not checked. Default all. */
  selects?: (tool: string) => boolean;
  /** That selection as configured, and where: a pattern matching no listed tool is warned about. */
  selection?: { definition: ToolSelectionDefinition; path: string };
  /**
   * Scopes every request needs besides `policy`'s own (with several servers, the gateway-wide policy's): an item with
   * no rule is then open to a token with those scopes, not to any token, and the warning says so. Default none.
   */
  otherRequiredScopes?: readonly string[];
  /**
   * Whether another policy in force protects an item, by its name upstream (with several servers, the gateway-wide
   * policy, by the item's exposed name): such an item counts as protected, not open. Default: none does.
   */
  protectedElsewhere?: (kind: CoveredKind, name: string) => boolean;
}

/** What was found, or why nothing could be checked (with the stdio process's exit and stderr, and the fix). */
export type PolicyCoverageReport =
  | { coverage: PolicyCoverage; catalog: UpstreamCatalog }
  /** `final`: listing again cannot help (the upstream takes only tokens made for each caller): no retry. */
  | { skipped: string; failure?: ListingFailure; final?: true };

/**
 * The upstream as logs name it: an HTTP upstream's origin and path (never its query, which may carry a key), or a
 * stdio upstream's program (never its arguments, which may carry what its operator keeps private).
 */
export function describeUpstream(config: Pick<GatewayConfig, 'proxy' | 'stdio'>): { upstream: string } | { upstreamCommand: string } | Record<string, never> {
  if (config.proxy) {
    const url = new URL(config.proxy.upstream);
    return { upstream: `${url.origin}${url.pathname}` };
  }
  return config.stdio ? { upstreamCommand: config.stdio.command } : {};
}

/** The policy file as the summary names it (`MCP_AUTH_POLICY`), or null without one. */
export function policyFileOf(settings: Readonly<Record<string, string | undefined>>): string | null {
  return settings.MCP_AUTH_POLICY?.trim() || null;
}

/** The `Authorization` the gateway sends the upstream for itself, if it has one; token exchange needs a caller. */
async function ownAuthorization(credentials: UpstreamCredentials | undefined): Promise<string | undefined> {
  if (credentials === undefined) return undefined;
  if (credentials.perCaller) throw new Error("it accepts only tokens made for each caller (MCP_AUTH_UPSTREAM_AUTH=token_exchange or connected), and the gateway has no caller of its own");
  try {
    return await credentials.authorization(GATEWAY_ITSELF);
  } catch (error) {
    throw new Error(`the gateway's upstream credential could not be obtained (${error instanceof Error ? error.message : 'unknown error'})`);
  }
}

/**
 * Lists the upstream and logs how the policy covers it: a warning for each kind with items that no rule covers
 * (open beyond the base scopes), a warning for each rule that matches nothing upstream with the closest name, and
 * a summary line naming the issuers, the policy file, the upstream and how many tools are protected and open.
 * When the upstream cannot be listed, the summary says why and nothing else is written. Never throws.
 */
export async function reportPolicyCoverage(options: PolicyCoverageReportOptions): Promise<PolicyCoverageReport> {
  const { config, log, warn } = options;
  const server = options.server;
  // With several servers, every line names the server it is about, right after its message.
  const tag = server === undefined ? {} : { server };
  const summaryBase = { ...(server !== undefined ? { server } : {}), issuers: [...options.issuers], policy: policyFileOf(config.settings), ...describeUpstream(config) };
  /** The summary line for a listing that could not be made, and the report saying why. */
  const skip = (reason: string, failure?: ListingFailure): PolicyCoverageReport => {
    const skipped = `the upstream could not be listed: ${reason}`;
    writeSafely(log, formatLogLine('summary', { ...summaryBase, tools: null, coverage: 'skipped', reason: skipped }));
    return failure ? { skipped, failure } : { skipped };
  };
  let catalog: UpstreamCatalog;
  const recorder = recordListingFailure({ stdio: Boolean(config.stdio), credentials: options.credentials !== undefined });
  const childLog = (event: ChildLogEvent): void => {
    recorder.childLog(event);
    options.childLog?.(event);
  };
  // Credentials made for each caller (token exchange, connected accounts) have nothing to list with, ever.
  if (config.proxy && options.credentials?.perCaller) return { ...skip("it accepts only tokens made for each caller (MCP_AUTH_UPSTREAM_AUTH=token_exchange or connected), and the gateway has no caller of its own"), final: true };
  try {
    if (config.stdio) catalog = await listStdioUpstream(config.stdio, childLog, options.limits, options.signal, options.stdioStarts?.watch());
    else if (config.proxy) catalog = await listHttpUpstream(config.proxy, options.limits, await ownAuthorization(options.credentials));
    else return skip('no upstream is configured');
  } catch (error) {
    const reason = error instanceof Error ? error.message : 'unknown error';
    const failure = recorder.explain(reason);
    if (!config.stdio || options.signal?.aborted) return skip(reason, failure);
    // A stdio program that fails (a misspelt script, a missing module) left only this summary on stdout, easy to
    // miss among its own lines: its exit, its last stderr line and what to do go to stderr with the warnings.
    emitWarning(warn, `policy: not compared with the upstream, which could not be listed: ${reason}`, {
      ...tag,
      ...(failure.exit ? { exit: failure.exit } : {}),
      ...(failure.stderr.length > 0 ? { stderr: failure.stderr.at(-1) } : {}),
      fix: failure.fix,
    });
    return skip(reason, failure);
  }
  if (options.selection && catalog.tools) {
    for (const { path, pattern, closest } of unmatchedToolPatterns(options.selection.definition, catalog.tools, options.selection.path)) {
      emitWarning(warn, `tools: ${path} matches no tool the server lists${closest ? `; did you mean ${closest}?` : ''}`, { ...tag, pattern });
    }
  }
  // A tool the selection leaves out is exposed to nobody: it needs no rule.
  if (options.selects && catalog.tools) catalog = { ...catalog, tools: catalog.tools.filter(options.selects) };
  const own = checkPolicyCoverage(options.policy, catalog);
  const coverage = options.protectedElsewhere ? withProtectedElsewhere(own, options.protectedElsewhere) : own;
  const other = options.otherRequiredScopes ?? [];
  const worded = other.length > 0 ? { ...options.policy, requiredScopes: [...(options.policy?.requiredScopes ?? []), ...other] } : options.policy;
  warnAboutCoverage(coverage, { policy: worded, warn, fields: tag });
  writeSafely(
    log,
    formatLogLine('summary', {
      ...summaryBase,
      ...coverageCounts(coverage),
      ...(catalog.truncated.length > 0 ? { truncated: catalog.truncated } : {}),
    }),
  );
  return { coverage, catalog };
}
