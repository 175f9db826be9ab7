import { AuthorizationServerUnavailableError, ConfigurationError, GuardError, InvalidTokenError } from '../../../core/kernel/errors.js';
import { explainFailure } from '../../../core/kernel/explain-failure.js';
import { IssuerDiscoveryError, IssuerMismatchError } from '../../../core/token/issuer-discovery.js';
import { printableOAuthErrorCode } from '../../../http/oauth-error-code.js';
import type { TokenVerifier } from '../../../core/token/token-verifier.js';
import type { CheckResult } from './check-result.js';

/**
 * What is introspected: no token any authorization server issued (no dots, so it is never taken for a JWT), and
 * nothing secret. An endpoint that accepts the guard's client answers it `active: false`.
 */
export const MADE_UP_TOKEN = 'mcp-oauth-guard-check-made-up-token';

const CREDENTIALS_FIX =
  'check MCP_AUTH_INTROSPECTION_CLIENT_ID and MCP_AUTH_INTROSPECTION_CLIENT_SECRET: the client must exist at the authorization server, with that secret, and may use client_secret_basic';

/**
 * Introspects {@link MADE_UP_TOKEN} through the guard's own token verifier (RFC 7662, the configured client
 * credentials, the timeout), so the request is the one the guard makes for an opaque token: `active: false` shows
 * the endpoint is reachable and the client authenticates; a 401 means the credentials are refused.
 *
 * @param endpoint - Shown as the subject: the configured or discovered introspection endpoint, when known.
 */
export async function checkIntrospection(verifier: Pick<TokenVerifier, 'verify'>, endpoint: string | undefined): Promise<CheckResult> {
  const base = { check: 'introspection', ...(endpoint ? { subject: endpoint } : {}) } as const;
  try {
    await verifier.verify(MADE_UP_TOKEN);
  } catch (error) {
    if (error instanceof InvalidTokenError && error.reason === 'token_inactive') {
      return { ...base, status: 'ok', message: 'the client authenticates: a made-up token is answered active: false' };
    }
    if (error instanceof InvalidTokenError) {
      return { ...base, status: 'fail', message: `a made-up token was answered as active (${error.message})`, fix: 'check that the endpoint is the RFC 7662 introspection endpoint of MCP_AUTH_INTROSPECTION_ISSUER' };
    }
    return unavailable(base, error);
  }
  return { ...base, status: 'fail', message: 'a made-up token was accepted as an active token for this resource', fix: 'check that the endpoint is the RFC 7662 introspection endpoint of MCP_AUTH_INTROSPECTION_ISSUER' };
}

function unavailable(base: { check: 'introspection'; subject?: string }, error: unknown): CheckResult {
  const causes = causesOf(error);
  if (causes.some((cause) => cause instanceof IssuerDiscoveryError || cause instanceof IssuerMismatchError)) {
    return { ...base, status: 'skip', message: "not checked, as the issuer's metadata was not usable (see its line)" };
  }
  const missing = causes.find((cause): cause is ConfigurationError => cause instanceof ConfigurationError && cause.setting === 'introspection.endpoint');
  if (missing) {
    return { ...base, status: 'fail', message: "the issuer's metadata names no introspection_endpoint", fix: 'set MCP_AUTH_INTROSPECTION_ENDPOINT to the authorization server\'s RFC 7662 endpoint' };
  }
  const status = statusOf(causes);
  const code = errorCodeOf(causes);
  // Only a status the endpoint answered is shown; openid-client may report invalid_client without one.
  const answered = [status === undefined ? undefined : `HTTP ${status}`, code].filter((part) => part !== undefined).join(' ');
  if (status === 401 || code === 'invalid_client') {
    return { ...base, status: 'fail', message: `the endpoint refused the client's credentials (${answered})`, fix: CREDENTIALS_FIX };
  }
  if (status !== undefined && status >= 500) {
    return {
      ...base,
      status: 'fail',
      message: `the endpoint answered ${answered}, a server error: the credentials could not be judged`,
      fix: 'the authorization server failed: check its logs and that MCP_AUTH_INTROSPECTION_ENDPOINT is its RFC 7662 endpoint, then run check again',
    };
  }
  if (status !== undefined) {
    return { ...base, status: 'fail', message: `the endpoint answered ${answered}`, fix: `${status === 404 ? 'correct MCP_AUTH_INTROSPECTION_ENDPOINT (or the metadata\'s introspection_endpoint)' : CREDENTIALS_FIX}` };
  }
  const detail = error instanceof AuthorizationServerUnavailableError ? explainFailure(error.cause, 300) : explainFailure(error, 300);
  return { ...base, status: 'fail', message: `the endpoint cannot be used: ${detail}`, fix: 'check that the introspection endpoint is up and reachable from here, or raise MCP_AUTH_HTTP_TIMEOUT_MS' };
}

function causesOf(error: unknown): unknown[] {
  const causes: unknown[] = [];
  for (let current: unknown = error; current !== undefined && current !== null && causes.length < 8; current = (current as { cause?: unknown }).cause) {
    if (causes.includes(current)) break;
    causes.push(current);
  }
  return causes;
}

/** The HTTP status the endpoint answered, from openid-client's errors (a `status`, or the `Response` itself). */
function statusOf(causes: readonly unknown[]): number | undefined {
  for (const cause of causes) {
    // The guard's own 503 wraps what the endpoint answered.
    if (cause instanceof GuardError) continue;
    if (cause instanceof Response) return cause.status;
    const status = (cause as { status?: unknown } | null)?.status;
    if (typeof status === 'number' && status >= 100 && status < 600) return status;
  }
  return undefined;
}

/**
 * The OAuth error code the endpoint answered (RFC 6749 §5.2), e.g. `invalid_client`: openid-client keeps it as
 * `error` for a JSON error body, and in the parameters of each challenge of a `WWW-Authenticate` answer.
 */
function errorCodeOf(causes: readonly unknown[]): string | undefined {
  const candidates = causes.flatMap((cause) =>
    Array.isArray(cause) ? cause.map((challenge) => (challenge as { parameters?: { error?: unknown } } | null)?.parameters?.error) : [(cause as { error?: unknown } | null)?.error],
  );
  return candidates.map(printableOAuthErrorCode).find((code) => code !== undefined);
}
