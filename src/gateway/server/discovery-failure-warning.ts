import { IssuerDiscoveryError, IssuerMismatchError } from '../../core/token/issuer-discovery.js';

/**
 * The `message` of the gateway's warning when issuer discovery fails at start-up, saying what requests really get
 * (the `detail` beside it says which URL answered what):
 * - the issuer cannot be discovered (down, no metadata): a token from it gets 503 until discovery succeeds;
 * - its metadata spells `issuer` differently (RFC 8414 §3.3): its tokens carry that spelling in `iss`, so they get
 *   401 invalid_token until the setting is corrected; waiting does not help.
 * One fixed sentence per case, so that log alerts can match it.
 *
 * @param error - What `guard.ready()` rejected with (its `cause` chain is read).
 * @param issuerCount - How many issuers are trusted: with several, the others are still served.
 * @example
 * guard.ready().catch((error) => warn(discoveryFailureWarning(error, guard.options.issuers.length)));
 */
export function discoveryFailureWarning(error: unknown, issuerCount: number): string {
  const causes = discoveryCauses(error);
  const misspelt = causes.filter(isIssuerMismatch).length;
  const unavailable = causes.length - misspelt;
  const refused = 'its tokens get 401 invalid_token (their "iss" is not the configured issuer) until MCP_AUTH_ISSUER is set to the metadata\'s spelling (see detail)';
  if (issuerCount <= 1) {
    return misspelt > 0 && unavailable === 0
      ? `the authorization server's metadata spells its issuer differently: ${refused}`
      : 'authorization server discovery failed; requests with a token get 503 until it succeeds';
  }
  if (unavailable === 0 && misspelt > 0) return `the metadata of one or more issuers spells the issuer differently: ${refused.replace('its tokens', 'their tokens')}; the others are served`;
  if (misspelt === 0) return 'discovery failed for one or more issuers; their tokens get 503 until it succeeds (see detail), the others are served';
  return 'discovery failed for one or more issuers (see detail): tokens of one that cannot be discovered get 503 until it succeeds, tokens of one whose metadata spells its issuer differently get 401 invalid_token until MCP_AUTH_ISSUER is corrected; the others are served';
}

/** The discovery failure of each issuer, found under the 503 error's `cause` (an AggregateError for several). */
function discoveryCauses(error: unknown): unknown[] {
  const cause = error instanceof Error && error.cause !== undefined ? error.cause : error;
  if (cause instanceof AggregateError) return cause.errors.flatMap((each: unknown) => discoveryCauses(each));
  return [cause];
}

function isIssuerMismatch(error: unknown): boolean {
  return error instanceof IssuerMismatchError || (error instanceof IssuerDiscoveryError && error.failures.some((failure) => failure.kind === 'issuer_mismatch'));
}
