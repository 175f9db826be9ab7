import { randomBytes, randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { isStatelessRevision } from '../../../core/mcp/protocol-version.js';
import type { SessionSealer } from '../../../core/session/session-seal.js';
import type { GuardedRequest, HttpHandlerContext } from '../../../http/http-handler.js';
import { sessionIdHeader } from '../../../http/request-headers.js';
import { refuseSession } from '../../../http/session-gate.js';
import type { UpstreamHooks } from '../upstream.js';

/** The id of the session an `initialize` opens, chosen and sealed before it is opened. */
interface PreparedSession {
  readonly id: string;
  readonly sealed: string;
}

/**
 * Sealed session ids for the stdio upstream (`sessionSealer`): a process lives in the gateway that started it,
 * so the ids given to clients are sealed with the id of this upstream instance, and only this instance opens
 * them; any other (another replica, or this one after a restart) answers 404 like an unknown session.
 */
export class SessionIdSealing {
  /** Names this instance in the ids it seals: another replica, or this gateway once restarted, holds none of its processes. */
  private readonly instance = randomBytes(9).toString('base64url');
  private readonly prepared = new WeakMap<GuardedRequest, PreparedSession>();

  constructor(
    private readonly sealer: SessionSealer,
    /** Told of each request refused because its id did not open, for logs. */
    private readonly onSessionRefused: UpstreamHooks['onSessionRefused'],
  ) {}

  /**
   * Before a 2025 request is served: the id it names is opened to the session's own id (refused with 404, like
   * an unknown session, unless it opens for this caller and this instance), and an `initialize` gets the id of
   * its new session chosen and sealed, as its answer carries it. False once answered.
   */
  async unseal(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext): Promise<boolean> {
    if (isStatelessRevision(context.protocolVersion)) return true;
    if (req.headers['mcp-session-id'] === undefined) {
      const message = req.body;
      if (message && 'method' in message && message.method === 'initialize' && 'id' in message) {
        const id = randomUUID();
        // Undefined for a token naming nobody, which opens no process anyway.
        const sealed = await this.sealer.seal(id, context.auth, this.instance);
        if (sealed !== undefined) this.prepared.set(req, { id, sealed });
      }
      return true;
    }
    const sessionId = sessionIdHeader(req)!;
    const opened = await this.sealer.open(sessionId, context.auth, this.instance);
    if ('refused' in opened) {
      refuseSession(req, res, { reason: opened.refused, sessionId }, context.auth, this.onSessionRefused);
      return false;
    }
    req.headers['mcp-session-id'] = opened.session.upstreamSessionId;
    return !context.signal.aborted;
  }

  /** The gateway's own id chosen for the session this `initialize` opens, if one was sealed for it. */
  sessionIdFor(req: GuardedRequest): string | undefined {
    return this.prepared.get(req)?.id;
  }

  /** The sealed id the answer to this `initialize` gives the client, if one was sealed for it. */
  sealedIdFor(req: GuardedRequest): string | undefined {
    return this.prepared.get(req)?.sealed;
  }
}
