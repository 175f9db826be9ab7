import { decodeProtectedHeader } from 'jose';
import type { AuthInfo } from '../../../core/kernel/auth-info.js';
import type { Guard } from '../../../core/guard/create-guard.js';
import { boundedText, type DecisionReason } from '../../../core/kernel/decision.js';
import type { AuthorizationDecision } from '../../../core/policy/evaluate-policy.js';
import { GuardError } from '../../../core/kernel/errors.js';
import { explainFailure } from '../../../core/kernel/explain-failure.js';
import type { CheckResult } from './check-result.js';

/** Most tools named in one line; the line says how many more there were. */
const MAX_TOOLS_SHOWN = 20;

/**
 * `check --token-file`: verifies a token with the guard's own verifier (signature and algorithm, issuer, audience,
 * expiry, the claims the settings require) and says what the gateway would do with it: the refusal it would log,
 * or who it speaks for and, against the policy, the tools it may call and those it may not with the scopes each
 * lacks. The token itself is never part of a result: only its claims' values, the header's `alg` and scope names.
 *
 * @param tools - The tools to weigh it against: the upstream's list when it could be listed, else the policy's
 *   tool rules (`*` aside).
 * @example
 * const results = await checkToken(guard, token, ['whoami', 'counter_get']);
 */
export async function checkToken(guard: Guard, token: string, tools: readonly string[], now: () => number = Date.now): Promise<CheckResult[]> {
  const algorithm = headerAlgorithm(token);
  let auth: AuthInfo;
  try {
    auth = await guard.verifier.verify(token);
  } catch (error) {
    if (!(error instanceof GuardError)) return [{ check: 'token', status: 'fail', message: `could not be verified: ${explainFailure(error, 300)}`, fix: 'check the issuer and key lines above' }];
    return [
      {
        check: 'token',
        status: 'fail',
        message: `refused with HTTP ${error.status} (${error.reason}): ${error.message}`,
        ...(algorithm ? { details: [`signed with ${algorithm}`] } : {}),
        fix: FIXES[error.reason] ?? 'see the message: the gateway logs the same words as the detail of the refused request',
      },
    ];
  }
  const expires = auth.expiresAt === undefined ? 'no expiry' : `expires in ${Math.round(auth.expiresAt - now() / 1000)} s (${new Date(auth.expiresAt * 1000).toISOString()})`;
  const audience = auth.extra.claims['aud'];
  const details = [
    `issuer ${auth.extra.iss ?? '(none)'}, audience ${JSON.stringify(audience ?? guard.resource)}, ${expires}`,
    `subject ${auth.extra.sub ?? '(none)'}, client ${auth.clientId || '(none)'}, ${auth.extra.tokenType === 'jwt' ? `a JWT signed with ${algorithm ?? 'an unknown algorithm'}` : 'introspected'}`,
    `scopes: ${auth.scopes.length > 0 ? auth.scopes.join(' ') : '(none)'}`,
  ];
  const allowed: string[] = [];
  const refused: string[] = [];
  const perCall: string[] = [];
  for (const name of tools) {
    const decision = guard.policy.authorize({ jsonrpc: '2.0', id: 0, method: 'tools/call', params: { name } }, auth);
    const by = decision.rule === undefined ? '' : `rule ${decision.rule}`;
    if (decision.allowed) allowed.push(`${JSON.stringify(name)}${by && ` (${by})`}`);
    else if (decision.condition !== undefined && isListed(guard, name, auth)) perCall.push(`${JSON.stringify(name)} (${by}, when ${JSON.stringify(boundedText(decision.condition, 120))})`);
    else refused.push(`${JSON.stringify(name)} (${refusalReason(decision, by)})`);
  }
  if (tools.length > 0) {
    details.push(`may call: ${shown(allowed) || '(none)'}`);
    if (perCall.length > 0) details.push(`listed, decided per call by a condition on the arguments: ${shown(perCall)}`);
    if (refused.length > 0) details.push(`refused with 403: ${shown(refused)}`);
  }
  return [{ check: 'token', status: 'ok', message: 'accepted: the gateway would serve it', details }];
}

/** Whether the tool is listed for the caller: a condition that refuses a call without arguments may still list it. */
function isListed(guard: Guard, name: string, auth: AuthInfo): boolean {
  const result = guard.policy.filterListResult('tools/list', { tools: [{ name }] }, auth);
  return Array.isArray(result.tools) && result.tools.length === 1;
}

/** Why a tool is refused: the condition that decided (false, or not evaluable), else the scopes it lacks. */
function refusalReason(decision: Extract<AuthorizationDecision, { allowed: false }>, by: string): string {
  if (decision.condition !== undefined) {
    const when = `when ${JSON.stringify(boundedText(decision.condition, 120))}`;
    return decision.conditionError === undefined ? `${by}: ${when} is false` : `${by}: ${when} could not be evaluated: ${boundedText(decision.conditionError, 160)}`;
  }
  const needs = `needs ${decision.missingScopes.join(' ') || 'a rule that did not fail'}`;
  return by === '' ? needs : `${by} ${needs}`;
}

/** The JWS header's `alg`, for the report; undefined for an opaque token. */
function headerAlgorithm(token: string): string | undefined {
  try {
    const { alg } = decodeProtectedHeader(token);
    return typeof alg === 'string' ? alg.slice(0, 20) : undefined;
  } catch {
    return undefined;
  }
}

function shown(list: readonly string[]): string {
  const head = list.slice(0, MAX_TOOLS_SHOWN).join(', ');
  return list.length > MAX_TOOLS_SHOWN ? `${head} and ${list.length - MAX_TOOLS_SHOWN} more` : head;
}

/** What to do about each refusal a token alone can cause. */
const FIXES: Partial<Record<DecisionReason, string>> = {
  token_malformed: 'the file must hold the access token alone (a JWT is three base64url parts joined by dots)',
  token_expired: 'get a new token: it has expired (or raise MCP_AUTH_CLOCK_TOLERANCE if the clocks disagree by seconds)',
  token_not_yet_valid: 'check the clocks of this machine and of the authorization server, or raise MCP_AUTH_CLOCK_TOLERANCE',
  token_signature: 'the token was not signed by a key of the configured issuer: check MCP_AUTH_ISSUER and MCP_AUTH_JWKS_URI',
  token_algorithm: 'allow the algorithm it was signed with in MCP_AUTH_ALGORITHMS, or have the authorization server sign with an allowed one',
  token_type: 'the token is not an RFC 9068 access token (typ at+jwt): turn MCP_AUTH_STRICT_JWT off, or have the authorization server issue that type',
  token_issuer: 'add the token\'s iss to MCP_AUTH_ISSUER exactly as spelt (a list trusts each issuer in it), or get the token from a configured issuer',
  token_audience: 'ask the authorization server for a token for this resource (RFC 8707 resource parameter), or set MCP_AUTH_RESOURCE to the URL clients use',
  token_claims: 'have the authorization server put the required claims in the token, or relax MCP_AUTH_STRICT_JWT',
  token_inactive: 'the introspection endpoint says the token is not active: get a new one',
  authorization_server_unavailable: 'see the issuer and keys lines: the authorization server could not be reached',
};
