/** The 403 `insufficient_scope` error of a denied policy decision (RFC 6750 §3.1, MCP 2025-11-25 step-up). */
import type { AuthInfo } from '../kernel/auth-info.js';
import { ConditionDeniedError, InsufficientScopeError, type GuardError } from '../kernel/errors.js';
import { RESOURCE_METHODS } from '../mcp/mcp-methods.js';
import { asRecord } from '../wire/as-record.js';
import type { JsonRpcMessage } from '../wire/jsonrpc.js';
import { isScopeToken } from '../wire/scope-token.js';
import type { AuthorizationDecision } from './evaluate-policy.js';
import { EMPTY, OFFLINE_ACCESS } from './policy-rules.js';

/**
 * Builds the 403 `insufficient_scope` error (RFC 6750 §3.1) for a denied decision. The message names the
 * method, the tool/prompt/resource and the missing scopes, and never the token; names are shortened and
 * reduced to the characters RFC 6750 §3 allows in `error_description`. The challenge scopes are
 * required ∪ granted (done by {@link InsufficientScopeError}, for SDK 1.x clients that replace their scope
 * with the challenged one), without `offline_access` (MCP 2026-07-28) or malformed granted scopes.
 *
 * @param message The message that was denied; omit it for a check of the base scopes only.
 */
export function createInsufficientScopeError(
  decision: AuthorizationDecision,
  auth: AuthInfo,
  message?: JsonRpcMessage,
): InsufficientScopeError {
  const target = describeTarget(message);
  let text: string;
  if (!decision.allowed && decision.failedRule !== undefined) {
    text = `Access to ${target} denied: the server's policy could not evaluate it`;
  } else {
    const missing = decision.allowed ? EMPTY : decision.missingScopes;
    text = `Insufficient scope for ${target}: missing ${missing.length === 0 ? '(none)' : missing.map(sanitize).join(' ')}`;
  }
  const granted = (Array.isArray(auth.scopes) ? auth.scopes : EMPTY).filter((s) => isScopeToken(s) && s !== OFFLINE_ACCESS);
  return new InsufficientScopeError(text, decision.requiredScopes, granted, decision.rule, decision.server);
}

/**
 * The refusal of a denied decision: a {@link ConditionDeniedError} (403, no challenge) when a rule's condition
 * refused it or a rule function failed (`condition_error`: no scope could lift either, and a challenge would send
 * the client into a step-up loop), else `insufficientScope(decision)` (403 `insufficient_scope`, the policy's own
 * builder). Either names the decision's `server`, when it has one.
 *
 * @example
 * if (!decision.allowed) throw policyRefusal(decision, message, () => policy.insufficientScopeError(decision, auth, message));
 */
export function policyRefusal(decision: AuthorizationDecision, message: JsonRpcMessage | undefined, insufficientScope: () => GuardError): GuardError {
  if (decision.allowed) return insufficientScope();
  const rule = decision.rule ?? 'policy';
  if (decision.failedRule !== undefined && decision.condition === undefined) {
    // `failedRule` names the function's path for logs only; the client is told the rule, as for a condition.
    return new ConditionDeniedError(`Access to ${describeTarget(message)} denied: the server's policy could not evaluate it`, rule, undefined, true, decision.server);
  }
  if (decision.condition === undefined) return insufficientScope();
  const text =
    decision.conditionError === undefined
      ? `Access to ${describeTarget(message)} denied by the condition of policy rule ${sanitize(rule)}`
      : `Access to ${describeTarget(message)} denied: the condition of policy rule ${sanitize(rule)} could not be evaluated`;
  return new ConditionDeniedError(text, rule, decision.condition, decision.conditionError !== undefined, decision.server);
}

function describeTarget(message: JsonRpcMessage | undefined): string {
  const method = (message as { method?: unknown } | undefined)?.method;
  if (typeof method !== 'string') return 'this request';
  const params = (message as { params?: unknown } | undefined)?.params;
  const named = asRecord(params);
  switch (method) {
    case 'tools/call':
      return typeof named?.name === 'string' ? `tool '${sanitize(named.name)}' (${method})` : method;
    case 'prompts/get':
      return typeof named?.name === 'string' ? `prompt '${sanitize(named.name)}' (${method})` : method;
    default:
      if (RESOURCE_METHODS.has(method)) return typeof named?.uri === 'string' ? `resource '${sanitize(named.uri)}' (${method})` : method;
      return `method '${sanitize(method)}'`;
  }
}

/** Shortens client-supplied text and keeps only RFC 6750 §3 `error_description` characters. */
function sanitize(text: string): string {
  const short = text.length > 80 ? `${text.slice(0, 77)}...` : text;
  return short.replace(/[^\x20\x21\x23-\x5B\x5D-\x7E]/g, '?');
}
