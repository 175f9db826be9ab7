import { hash } from 'node:crypto';
import type { AuthInfo } from '../kernel/auth-info.js';
import { RateLimitedError } from '../kernel/errors.js';
import type { JsonRpcMessage } from '../wire/jsonrpc.js';
import type { RateLimit, ToolRateLimit } from './rate-limit.js';
import type { RateLimiter } from './rate-limiter.js';
import { callerOrIssuerKey } from '../kernel/caller-key.js';
import { storeUnavailableError } from '../kernel/store-unavailable.js';

/** What {@link createRateLimitCheck} enforces. */
export interface RateLimitCheckOptions {
  /** Every request of one caller, whatever it is. */
  callerLimit?: RateLimit;
  /**
   * `tools/call` of one caller per tool name, on top of `callerLimit`. The key `*` is the limit of every tool
   * without one of its own, each tool counted apart (as `*` in the policy's tool rules covers every tool not named).
   */
  toolLimits?: ReadonlyMap<string, RateLimit>;
  /**
   * The limit of `tools/call` of the tool `name` and the rule it comes from, when a lookup in `toolLimits`
   * cannot find it (a policy set's per-server `*`, see `CompiledPolicy.toolRateLimit`): given, it is asked instead
   * of `toolLimits`. Default: none.
   */
  toolLimit?: (name: string) => ToolRateLimit | undefined;
  limiter: RateLimiter;
}

/**
 * Counts one request of a caller; throws (or rejects with) a 429 {@link RateLimitedError} over a limit, and a
 * 503 when the limiter's store is unavailable.
 */
export type RateLimitCheck = (message: JsonRpcMessage | undefined, auth: AuthInfo) => void | Promise<void>;

// Keys of identities already counted, by their frozen `extra` (a cached token's requests all share one), with the
// client id they were computed with: the one part of the caller's key outside `extra`.
const callerDigests = new WeakMap<object, { readonly clientId: unknown; readonly key: string }>();

/**
 * The key a caller is counted under: the SHA-256 digest (base64url, 43 characters) of `callerOrIssuerKey` (issuer,
 * subject, client), or for a token with neither a subject nor a client id, of its issuer alone: such tokens cannot
 * be told apart, so they share one count per issuer rather than each escaping the limit. A digest, so that a
 * counter's size does not depend on how long the token's claims are.
 */
export function rateLimitKey(auth: AuthInfo): string {
  const extra = auth.extra as object;
  const known = callerDigests.get(extra);
  if (known !== undefined && known.clientId === auth.clientId) return known.key;
  const key = digest(callerOrIssuerKey(auth));
  if (Object.isFrozen(extra)) callerDigests.set(extra, { clientId: auth.clientId, key });
  return key;
}

/**
 * The key of a caller's count for one tool: a digest of the caller's key (fixed length, so it cannot run into the
 * name) and the name, so that a name of any length costs a counter of the same size.
 */
export function toolRateLimitKey(callerKey: string, toolName: string): string {
  return digest(callerKey + toolName);
}

function digest(text: string): string {
  return hash('sha256', text, 'base64url');
}

/**
 * Builds the rate-limit step of the guard, or undefined when no limit is set (then the guard does nothing per
 * request). With the in-memory limiter a request costs a map lookup or two and no promise.
 */
export function createRateLimitCheck(options: RateLimitCheckOptions): RateLimitCheck | undefined {
  const { callerLimit, limiter } = options;
  const toolLimits = options.toolLimits !== undefined && options.toolLimits.size > 0 ? options.toolLimits : undefined;
  const resolveToolLimit = options.toolLimit;
  if (callerLimit === undefined && toolLimits === undefined && resolveToolLimit === undefined) return undefined;

  const refuse = (waitMs: number, limit: RateLimit, what: string): never => {
    throw new RateLimitedError(`Rate limit exceeded: at most ${limit.text} ${what}; retry later`, waitMs);
  };
  const unavailable = (): never => {
    throw storeUnavailableError('Rate limiter unavailable: retry later', 'rate_limiter_unavailable');
  };
  const settle = (result: number | Promise<number>, limit: RateLimit, what: string): void | Promise<void> => {
    if (typeof result === 'number') {
      if (result > 0) refuse(result, limit, what);
      return;
    }
    return result.then((waitMs) => {
      if (waitMs > 0) refuse(waitMs, limit, what);
    }, unavailable);
  };
  const consume = (key: string, caller: string, limit: RateLimit, what: string): void | Promise<void> => {
    let result: number | Promise<number>;
    try {
      result = limiter.consume(key, limit, caller);
    } catch {
      return unavailable();
    }
    return settle(result, limit, what);
  };

  return (message, auth) => {
    const caller = rateLimitKey(auth);
    const toolLimit = toolLimits === undefined && resolveToolLimit === undefined ? undefined : toolLimitFor(message, toolLimits, resolveToolLimit);
    const first = callerLimit === undefined ? undefined : consume(caller, caller, callerLimit, 'requests per caller');
    if (toolLimit === undefined) return first;
    const [name, { rule, limit }] = toolLimit;
    const what = rule === name ? `calls of tool ${quote(name)} per caller` : `calls of tool ${quote(name)} per caller (the limit of ${quote(rule)})`;
    // Each tool is counted apart, under its rule's limit (as documented for "*"), and its count is kept under the
    // caller and the name, apart from the caller's own. A caller's made-up names cost it counters only: the
    // in-memory limiter gives each caller a share of its counters, and Redis keys expire with their window.
    const next = (): void | Promise<void> => consume(toolRateLimitKey(caller, name), caller, limit, what);
    return first === undefined ? next() : first.then(next);
  };
}

function quote(name: string): string {
  return JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name);
}

function toolLimitFor(
  message: JsonRpcMessage | undefined,
  limits: ReadonlyMap<string, RateLimit> | undefined,
  resolve: ((name: string) => ToolRateLimit | undefined) | undefined,
): [string, ToolRateLimit] | undefined {
  const m = message as { method?: unknown; params?: { name?: unknown } } | undefined;
  if (m?.method !== 'tools/call' || typeof m.params?.name !== 'string') return undefined;
  const name = m.params.name;
  if (resolve !== undefined) {
    const found = resolve(name);
    return found === undefined ? undefined : [name, found];
  }
  const named = limits?.get(name);
  if (named !== undefined) return [name, { rule: name, limit: named }];
  const every = limits?.get('*');
  return every === undefined ? undefined : [name, { rule: '*', limit: every }];
}
