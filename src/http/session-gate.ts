import type { ServerResponse } from 'node:http';
import type { AuthInfo } from '../core/kernel/auth-info.js';
import type { BoundSession, SessionRegistry } from '../core/session/session-registry.js';
import { checkNamedSession, sessionNotFoundAnswer, type SessionRefusal } from '../core/session/session-gate.js';
import { requestIdOf } from '../core/wire/jsonrpc.js';
import { keepHeldRefusal } from './held-session-refusals.js';
import type { GuardedRequest } from './http-handler.js';
import { writeJson } from './write-response.js';

/**
 * Told of each request refused because of the session it named, for logs or audit: the request, why (never
 * told to the caller), and the caller it was refused for. Errors it throws are ignored.
 */
export type SessionRefusedHook = (req: GuardedRequest, refusal: SessionRefusal, auth: AuthInfo) => void;

/**
 * Refuses a request because of the session it named: tells `onRefused`, then answers 404 with JSON-RPC -32001
 * `Session not found` and the request's id (see `sessionNotFoundAnswer`), the same answer for every reason. The
 * request must not be forwarded. One answer for every path that keeps sessions (the SDK adapter, the HTTP and
 * stdio upstreams, sealed session ids). While the request's refusals are held (`holdSessionRefusals`: a server set
 * that may still send it again in a new session), `onRefused` is told only if the refusal stands.
 *
 * @example
 * const opened = await sealer.open(sessionId, context.auth);
 * if ('refused' in opened) return refuseSession(req, res, { reason: opened.refused, sessionId }, context.auth, onSessionRefused);
 */
export function refuseSession(req: GuardedRequest, res: ServerResponse, refusal: SessionRefusal, auth: AuthInfo, onRefused?: SessionRefusedHook): void {
  if (onRefused && !keepHeldRefusal(req, () => tellRefused(onRefused, req, refusal, auth))) tellRefused(onRefused, req, refusal, auth);
  const answer = sessionNotFoundAnswer(requestIdOf(req.body));
  writeJson(res, answer.status, answer.body);
}

function tellRefused(onRefused: SessionRefusedHook, req: GuardedRequest, refusal: SessionRefusal, auth: AuthInfo): void {
  try {
    onRefused(req, refusal, auth);
  } catch {
    // Logging must never break serving.
  }
}

/**
 * The session gate for adapters that keep sessions in a {@link SessionRegistry} (or anything that looks sessions up
 * as it does): the session `sessionId` names,
 * when it is the caller's; else the request is refused ({@link refuseSession}) and `undefined` is returned.
 *
 * @example
 * const session = passSessionGate(registry, sessionId, req, res, context.auth, onSessionRefused);
 * if (session === undefined) return; // answered 404
 * session.acquire();
 */
export function passSessionGate<T>(
  registry: Pick<SessionRegistry<T>, 'lookup'>,
  sessionId: string,
  req: GuardedRequest,
  res: ServerResponse,
  auth: AuthInfo,
  onRefused?: SessionRefusedHook,
): BoundSession<T> | undefined {
  const passed = checkNamedSession(registry, sessionId, auth);
  if (!('reason' in passed)) return passed;
  refuseSession(req, res, passed, auth, onRefused);
  return undefined;
}
