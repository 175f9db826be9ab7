import { ConfigurationError } from '../kernel/errors.js';

/** A request rate: at most `points` requests per fixed window of `windowMs` milliseconds. */
export interface RateLimit {
  /** Requests allowed per window (at least 1). */
  readonly points: number;
  /** Window length in milliseconds: 1 000 (`/s`), 60 000 (`/min`) or 3 600 000 (`/h`). */
  readonly windowMs: number;
  /** The limit as written, normalized (`120/min`): names the limit in messages and store keys. */
  readonly text: string;
}

/**
 * The limit of calls to a tool, with the rule it comes from (for messages). Each tool is counted apart, per caller,
 * whichever rule sets its limit.
 */
export interface ToolRateLimit {
  /**
   * The rule the limit comes from: the tool's name for a limit of its own, `*` (or `<server>__*` for one server's
   * tools in a policy set) for a limit of every tool without one.
   */
  readonly rule: string;
  /** The limit the rule sets. */
  readonly limit: RateLimit;
}

const WINDOW_MS: ReadonlyMap<string, [number, string]> = new Map([
  ['s', [1_000, 's']],
  ['sec', [1_000, 's']],
  ['second', [1_000, 's']],
  ['min', [60_000, 'min']],
  ['minute', [60_000, 'min']],
  ['h', [3_600_000, 'h']],
  ['hour', [3_600_000, 'h']],
]);

/** Most requests a limit allows per window; beyond it a limit is no limit, and a typo is more likely. */
const MAX_POINTS = 1_000_000_000;

/**
 * Parses a rate limit written `<count>/<unit>`: `120/min`, `10/s`, `5000/h` (units `s`, `sec`, `second`,
 * `min`, `minute`, `h`, `hour`). The one syntax for `MCP_AUTH_RATE_LIMIT`, the `rateLimit` option and the
 * policy file's `rateLimits`.
 *
 * @example
 * parseRateLimit('120/min', 'MCP_AUTH_RATE_LIMIT'); // { points: 120, windowMs: 60000, text: '120/min' }
 * @throws ConfigurationError naming `setting` when the value is not of that form or the count is not 1..10^9.
 */
export function parseRateLimit(value: unknown, setting: string): RateLimit {
  const match = typeof value === 'string' ? /^\s*(\d{1,10})\s*\/\s*([a-z]+)\s*$/i.exec(value) : null;
  const unit = match ? WINDOW_MS.get((match[2] as string).toLowerCase()) : undefined;
  const points = match ? Number(match[1]) : NaN;
  if (!match || unit === undefined || !(points >= 1 && points <= MAX_POINTS)) {
    throw new ConfigurationError(
      setting,
      `must be a rate such as "120/min": a count from 1 to ${MAX_POINTS}, "/", and s, min or h (got ${JSON.stringify(value)})`,
    );
  }
  return Object.freeze({ points, windowMs: unit[0], text: `${points}/${unit[1]}` });
}
