import { ConfigurationError } from './errors.js';
import { collectConfigurationProblems } from './configuration-problems.js';
import { writeWarningToStderr, type LineSink } from './log-line.js';

/**
 * What is logged, and where: the level, the per-request log, and the logger the lines go to. The gateway and the
 * middleware read the same options (`MCP_AUTH_LOG_LEVEL`, `MCP_AUTH_REQUEST_LOG`); each line is one JSON object
 * (see `log-line.ts`), never with a token in it.
 */

/**
 * The levels, from the most written to the least: `info` writes everything (the start-up line, the coverage summary,
 * the request log when it is on, and the warnings), `warn` only the warnings, `off` nothing. There is no `debug`
 * nor `error`: no line is written at either, and a level that selects nothing anyone could tell from another is
 * refused rather than taken in silence.
 *
 * @example
 * ```ts
 * LOG_LEVELS.join(', '); // 'info, warn, off'
 * ```
 */
export const LOG_LEVELS = ['info', 'warn', 'off'] as const;

/**
 * A level of {@link LOG_LEVELS}.
 *
 * @example
 * ```ts
 * const logLevel: LogLevel = 'warn'; // the warnings only: no start-up line, no request log
 * app.use(mcpOAuthGuard({ ...loadOptionsFromEnv(), handler, logLevel }));
 * ```
 */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The level a line is written at. */
export type LineLevel = 'info' | 'warn';

/** Default {@link GuardLogOptions.logLevel}. */
export const DEFAULT_LOG_LEVEL: LogLevel = 'info';

/**
 * Receives the log lines, each one JSON object as a string, without its newline. `console` fits, and so does a
 * pino or winston logger (which then wraps each line as its message).
 *
 * @example
 * ```ts
 * import pino from 'pino';
 *
 * const log = pino();
 * const logger: GuardLogger = { info: (line) => log.info(line), warn: (line) => log.warn(line) };
 * app.use(mcpOAuthGuard({ ...loadOptionsFromEnv(), handler, logger }));
 * ```
 */
export interface GuardLogger {
  /** A line at `info`: the start-up line, a coverage summary, a request. */
  info(line: string): void;
  /** A line at `warn`: a warning (`"event":"warning"`). */
  warn(line: string): void;
}

/** The default logger: every line to stderr, so that a server's own stdout (a stdio MCP server's) stays its own. */
export const STDERR_LOGGER: GuardLogger = { info: writeWarningToStderr, warn: writeWarningToStderr };

/**
 * The logging options of the guard, shared by the middleware and the gateway.
 *
 * @example
 * ```ts
 * const logging: GuardLogOptions = { logger: console, logLevel: 'info', requestLog: true };
 * app.use(mcpOAuthGuard({ ...loadOptionsFromEnv(), handler, ...logging }));
 * ```
 */
export interface GuardLogOptions {
  /**
   * Where the middleware's log lines go (`mcpOAuthGuard`, the SDK adapters under it). Default: stderr, one line
   * each (the gateway writes its information lines to stdout and its warnings to stderr instead).
   */
  logger?: GuardLogger;
  /**
   * Least level written (`MCP_AUTH_LOG_LEVEL`): `info`, `warn` or `off` (see {@link LOG_LEVELS}). Default `info`.
   */
  logLevel?: LogLevel;
  /**
   * Whether each request is logged, one JSON line when its answer ends, at `info` (`MCP_AUTH_REQUEST_LOG`). Default:
   * off in the middleware, on in the gateway. The line holds identifiers only (method, tool name, decision,
   * subject, client, status, duration), never the token, the body or the query string.
   */
  requestLog?: boolean;
}

/** Whether a line at `level` is written under `threshold`. */
export function logsAt(threshold: LogLevel, level: LineLevel): boolean {
  return threshold === 'info' || (threshold === 'warn' && level === 'warn');
}

/**
 * Where warnings go under the logging options: the logger's `warn`, else stderr (one line each); nowhere below level
 * `warn`. Read defensively, as options may not be checked yet: a logger without a `warn` method counts as none.
 *
 * @example
 * const warn = warningSink({ logger: console, logLevel: 'warn' }); // (line) => console.warn(line)
 */
export function warningSink(options: Pick<GuardLogOptions, 'logger' | 'logLevel'> | undefined): LineSink {
  if (!logsAt(options?.logLevel ?? DEFAULT_LOG_LEVEL, 'warn')) return ignoreWarning;
  const logger = options?.logger;
  return typeof logger?.warn === 'function' ? (line) => logger.warn(line) : writeWarningToStderr;
}

const ignoreWarning: LineSink = () => {};

/**
 * Reads a level as written in a setting, in any case; undefined when unset or blank.
 *
 * @throws ConfigurationError naming `setting` for anything but a level of {@link LOG_LEVELS}.
 */
export function parseLogLevel(text: string | undefined, setting: string): LogLevel | undefined {
  const value = text?.trim().toLowerCase();
  if (value === undefined || value === '') return undefined;
  if (!(LOG_LEVELS as readonly string[]).includes(value)) throw new ConfigurationError(setting, `is "${text!.trim()}"; use ${LOG_LEVELS.join(', ')}`);
  return value as LogLevel;
}

/**
 * Checks the logging options given in code.
 *
 * @param names - How each option is named in the error (`options.logLevel`, or the variable it was read from).
 * @throws ConfigurationError naming every bad option.
 */
export function checkLogOptions(options: GuardLogOptions, names: { logger: string; logLevel: string; requestLog: string }): void {
  collectConfigurationProblems((problems) => {
    const { logger, logLevel, requestLog } = options;
    if (logger !== undefined && (typeof logger !== 'object' || logger === null || typeof logger.info !== 'function' || typeof logger.warn !== 'function')) {
      problems.add(names.logger, 'must have info(line) and warn(line) methods, as console has');
    }
    if (logLevel !== undefined && !(LOG_LEVELS as readonly unknown[]).includes(logLevel)) problems.add(names.logLevel, `is ${JSON.stringify(logLevel)}; use ${LOG_LEVELS.join(', ')}`);
    if (requestLog !== undefined && typeof requestLog !== 'boolean') problems.add(names.requestLog, 'must be true or false');
  });
}
