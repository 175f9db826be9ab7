/**
 * What `mcp-oauth-guard check` reports: one result per check, each with a status, what was found, and for a
 * problem what to do about it. Results never carry a token or a secret: only URLs, names, statuses and counts.
 */

/**
 * How a check came out:
 * - `ok`: it would work;
 * - `warn`: it works, but likely not as meant (an open tool, a policy rule that matches nothing);
 * - `fail`: requests would fail (an issuer that cannot be discovered, no usable signing key, an upstream that
 *   does not initialize, introspection credentials refused, a Redis that cannot be used);
 * - `skip`: not checked, with the reason (nothing configured to check, or what it depends on failed).
 */
export type CheckStatus = 'ok' | 'warn' | 'fail' | 'skip';

/** The kinds of check, in the order the report lists them. */
export type CheckName = 'config' | 'resource' | 'listen' | 'issuer' | 'authorization server' | 'keys' | 'introspection' | 'shared store' | 'connected accounts' | 'upstream' | 'policy' | 'pins' | 'token';

/** One line of the report. */
export interface CheckResult {
  readonly check: CheckName;
  readonly status: CheckStatus;
  /** What was checked, when there are several of a kind: an issuer, a JWKS URL. */
  readonly subject?: string;
  /** What was found, one sentence. */
  readonly message: string;
  /** Further lines: the keys of a set, the two spellings of an issuer. */
  readonly details?: readonly string[];
  /** For `warn` and `fail`: what to change. */
  readonly fix?: string;
}

/** The exit code of `check`: 0 when everything would work, 1 when a check failed (or, with `strict`, warned). */
export function checkExitCode(results: readonly CheckResult[], strict: boolean): 0 | 1 {
  return results.some((result) => result.status === 'fail' || (strict && result.status === 'warn')) ? 1 : 0;
}
