import type { IncomingMessage } from 'node:http';
import { boundedText, DECISION_REQUEST_HEADERS, type DecisionRequest } from '../core/kernel/decision.js';
import { requestPath } from './request-headers.js';

// One view per request, so a hook can key per-request state by it (as the gateway's request log does). Kept on the
// request under a symbol rather than in a WeakMap: one property instead of an ephemeron entry per request.
const VIEW = Symbol('decision request view');
type ViewedRequest = IncomingMessage & { [VIEW]?: DecisionRequest };

/**
 * The request as the decision hook sees it (see {@link DecisionRequest}): method, path without the query, the
 * peer's address and the allow-listed headers, never a credential. The same object for every call with the same
 * `req`, and the one `onDecision` is given for it: key per-request state by it to join it with decisions.
 *
 * @example
 * const requestIds = new WeakMap<DecisionRequest, string>();
 * app.use((req, _res, next) => { requestIds.set(decisionRequestOf(req), randomUUID()); next(); });
 * // onDecision: (event, request) => log({ ...event, requestId: request && requestIds.get(request) })
 */
export function decisionRequestOf(req: IncomingMessage): DecisionRequest {
  let view = (req as ViewedRequest)[VIEW];
  if (view === undefined) (req as ViewedRequest)[VIEW] = view = describeRequest(req);
  return view;
}

function describeRequest(req: IncomingMessage): DecisionRequest {
  const headers: Record<string, string> = {};
  for (const name of DECISION_REQUEST_HEADERS) {
    const value = req.headers[name];
    if (value !== undefined) headers[name] = boundedText(Array.isArray(value) ? value.join(', ') : value);
  }
  const clientAddress = req.socket?.remoteAddress;
  const httpMethod = req.method ?? 'GET';
  // A target that is no URL is given as it came, cut at the query.
  const path = boundedText(requestPath(req) ?? (req.url ?? '/').split('?', 1)[0]!, 1024);
  Object.freeze(headers);
  // Two literals rather than a spread: no object made and copied for the optional field, on every request.
  return Object.freeze(clientAddress !== undefined ? { httpMethod, path, clientAddress, headers } : { httpMethod, path, headers });
}
