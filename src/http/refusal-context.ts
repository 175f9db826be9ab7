import type { DecisionContext } from '../core/guard/create-guard.js';
import type { AuthInfo } from '../core/kernel/auth-info.js';
import type { DecisionRequest } from '../core/kernel/decision.js';
import { ConditionDeniedError, InsufficientScopeError, RequestRejectedError, type GuardError } from '../core/kernel/errors.js';
import type { JsonRpcMessage } from '../core/wire/jsonrpc.js';

/**
 * What a refusal tells `Guard.report`: the scopes it asked for, the policy rule (and condition) that decided when
 * one did, the server the request was for when the policy (or a hidden target) names one, and its message. Shared by the endpoint's refusals and the gateway's second decision on a request whose
 * server was learnt late, so that both reach the decision hook, the request log and the audit trail alike.
 *
 * @example
 * const event = guard.report('deny', error.reason, answer.status, refusalContext(error, { httpMethod: 'POST', message, auth }));
 */
export function refusalContext(
  error: GuardError,
  about: { request?: DecisionRequest | undefined; httpMethod: string; message?: JsonRpcMessage | undefined; auth?: AuthInfo | undefined },
): DecisionContext {
  return {
    request: about.request,
    httpMethod: about.httpMethod,
    message: about.message,
    auth: about.auth,
    requiredScopes: 'requiredScopes' in error ? (error.requiredScopes as readonly string[]) : undefined,
    ...(error instanceof InsufficientScopeError || error instanceof ConditionDeniedError ? decisionRule(error) : {}),
    // A hidden target's refusal may name its server (a tool the gateway's pins hide).
    ...(error instanceof RequestRejectedError && error.server !== undefined ? { server: error.server } : {}),
    detail: error.message,
  };
}

function decisionRule(error: InsufficientScopeError | ConditionDeniedError): { rule?: string; condition?: string; server?: string } {
  const { rule, server } = error;
  const condition = error instanceof ConditionDeniedError ? error.condition : undefined;
  if (server === undefined) return condition === undefined ? (rule === undefined ? {} : { rule }) : { rule, condition };
  return { rule, condition, server };
}
