import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Guard } from '../core/guard/create-guard.js';
import type { GuardOptions } from '../core/guard/guard-options.js';
import type { DecisionEvent, DecisionRequest } from '../core/kernel/decision.js';
import { formatLogLine, writeSafely, type LineSink } from '../core/kernel/log-line.js';
import { DEFAULT_LOG_LEVEL, logsAt, STDERR_LOGGER, warningSink, type GuardLogger, type LogLevel } from '../core/kernel/log-options.js';
import { checkPolicyCoverage } from '../core/policy/policy-coverage.js';
import { clippedNames, coverageCounts, warnAboutCoverage } from '../core/policy/policy-coverage-log.js';
import { countPolicyRules } from '../core/policy/policy-rule-counts.js';
import type { ListedServerCatalog } from '../core/policy/read-server-catalog.js';
import { isDispatchTable } from '../core/mcp/dispatch-table.js';
import { isHttpHandler } from './http-handler.js';
import { listDispatchTable } from './list-dispatch-table.js';
import type { McpHandler, RequestPipeline } from './request-pipeline.js';
import { createRequestLog, type RequestLog } from './request-log.js';

/**
 * What the middleware (`mcpOAuthGuard`, and the SDK adapters under it) says, through its `logger` at its `logLevel`:
 *
 * - once per construction, the start-up line (`"event":"started"`: resource, issuers, the policy's rule counts,
 *   and, for a handler that can list what it offers, the tools, prompts and resources protected and open, and the
 *   open tools by name), after the coverage warnings the gateway writes for its upstream (items no rule covers,
 *   rules that match nothing);
 * - with `requestLog` on, the gateway's request log line for each request the guard serves (the MCP endpoint and
 *   the metadata documents; never the application's other routes).
 *
 * The lines are the gateway's (`log-line.ts`, `policy-coverage-log.ts`, `request-log.ts`), written by the same code.
 */
export class MiddlewareLog {
  private readonly logger: GuardLogger;
  private readonly level: LogLevel;
  /** Where warnings go: the logger's `warn`, else stderr; nowhere below level `warn`. */
  private readonly warnings: LineSink;
  /** The request log, when it is on. */
  private readonly requests: RequestLog | undefined;

  /**
   * Reads the logging options as given; the guard checks them (and refuses bad ones) when it is built, so nothing
   * here throws or calls the logger.
   */
  constructor(options: GuardOptions) {
    this.logger = options.logger ?? STDERR_LOGGER;
    this.level = options.logLevel ?? DEFAULT_LOG_LEVEL;
    this.warnings = warningSink(options);
    const on = options.requestLog === true && logsAt(this.level, 'info');
    this.requests = on ? createRequestLog({ write: (line) => this.logger.info(line) }) : undefined;
  }

  /**
   * The guard's options with the request log's decision hook added before the application's own (`onDecision`);
   * unchanged when the request log is off, so that a guard without it pays nothing per request.
   */
  guardOptions<Options extends GuardOptions>(options: Options): Options {
    const requests = this.requests;
    if (requests === undefined) return options;
    const own = options.onDecision;
    return {
      ...options,
      onDecision: (event: DecisionEvent, request?: DecisionRequest) => {
        requests.onDecision(event, request);
        own?.(event, request);
      },
    };
  }

  /**
   * `pipeline.serve`, with each request it serves logged when the request log is on (and nothing else done when it
   * is off): returns the function an adapter calls for each request.
   */
  serving(pipeline: RequestPipeline): (req: IncomingMessage, res: ServerResponse) => boolean {
    const requests = this.requests;
    if (requests === undefined) return pipeline.serve;
    return (req, res) => {
      let served = false;
      requests.middleware(req, res, () => {
        served = pipeline.serve(req, res);
      });
      // A request for another path is the application's: not the guard's to log.
      if (!served) requests.abandon(res);
      return served;
    };
  }

  /**
   * Writes the coverage warnings and the start-up line, once `handler` has listed what it offers (an SDK adapter
   * lists the server it would serve, see `McpHttpHandler.listCatalog`; a `dispatchTable` handler is asked its own
   * lists), or at once for any other handler, which is never called but by a request.
   * Never rejects, and never delays serving.
   */
  async announce(guard: Guard, handler: McpHandler): Promise<void> {
    if (!logsAt(this.level, 'info') && !logsAt(this.level, 'warn')) return;
    const policy = guard.policy.definition;
    const base = { resource: guard.resource, issuers: [...guard.options.issuers], policy: countPolicyRules(policy) };
    const listCatalog = isHttpHandler(handler) ? handler.listCatalog?.bind(handler) : isDispatchTable(handler) ? () => listDispatchTable(handler) : undefined;
    if (listCatalog === undefined) {
      this.info(formatLogLine('started', { ...base, tools: null, coverage: 'skipped', reason: 'the handler does not list what it offers (dispatchTable handlers and the SDK adapters do)' }));
      return;
    }
    let catalog: ListedServerCatalog;
    try {
      catalog = await listCatalog();
    } catch (error) {
      const reason = `the server could not be listed: ${error instanceof Error ? error.message : 'unknown error'}`;
      this.info(formatLogLine('started', { ...base, tools: null, coverage: 'skipped', reason }));
      return;
    }
    const coverage = checkPolicyCoverage(policy, catalog);
    warnAboutCoverage(coverage, { policy, warn: (line) => this.warn(line), lister: 'the server' });
    this.info(
      formatLogLine('started', {
        ...base,
        ...coverageCounts(coverage),
        // Every tool a token with the base scopes may call: those without a rule and those with an empty one.
        openTools: clippedNames([...(coverage.tools?.open ?? []), ...(coverage.tools?.explicitlyOpen ?? [])]).names,
        ...(catalog.truncated.length > 0 ? { truncated: catalog.truncated } : {}),
      }),
    );
  }

  private info(line: string): void {
    if (logsAt(this.level, 'info')) writeSafely((l) => this.logger.info(l), line);
  }

  private warn(line: string): void {
    writeSafely(this.warnings, line);
  }
}
