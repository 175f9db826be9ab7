import type { IncomingMessage } from 'node:http';
import type { Guard, GuardHttpResponse } from '../../core/guard/create-guard.js';
import type { AuthInfo } from '../../core/kernel/auth-info.js';
import { policyRefusal } from '../../core/policy/insufficient-scope.js';
import { requestIdOf, type JsonRpcMessage } from '../../core/wire/jsonrpc.js';
import { auditDecidedAgain, auditServerRouted } from '../../http/audit-trail.js';
import { decisionRequestOf } from '../../http/decision-request.js';
import { refusalContext } from '../../http/refusal-context.js';

/**
 * Decides `message` again under the policy in force (`guard.policy`), for a request the pipeline allowed before its
 * server was known; returns the refusal to answer with, or undefined when allowed. A refusal is reported as the
 * pipeline's own are (`Guard.report`): the decision hook and the request log see `deny` with its reason, and the
 * audit record of `req` says `deny` with the reason, rule and condition of this decision, not the first one's, and
 * names `server`, the server whose rules refused it (as a record of a request handed to a server does).
 *
 * @example
 * const refused = decideAgain(guard, message, req.auth, req);
 * if (refused) writeError(res, refused);
 */
export function decideAgain(guard: Guard, message: JsonRpcMessage, auth: AuthInfo, req: IncomingMessage | undefined, server?: string): GuardHttpResponse | undefined {
  const policy = guard.policy;
  const decision = policy.authorize(message, auth);
  if (decision.allowed) return undefined;
  const error = policyRefusal(decision, message, () => policy.insufficientScopeError(decision, auth, message));
  const answer = guard.errorResponse(error, requestIdOf(message));
  if (req !== undefined) {
    const request = guard.options.onDecision ? decisionRequestOf(req) : undefined;
    const event = guard.report('deny', error.reason, answer.status, refusalContext(error, { request, httpMethod: req.method ?? 'POST', message, auth }));
    if (event !== undefined) auditDecidedAgain(req, event);
    // Refused before it was handed to its server, so the route hook that names the server in the record never ran.
    if (server !== undefined) auditServerRouted(req, server);
  }
  return answer;
}
