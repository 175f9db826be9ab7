import type { SessionSealer } from '../../core/session/session-seal.js';

/**
 * The session "sealer" an HTTP server of a set gets when the set's own session ids are sealed: it seals nothing
 * and opens every id as itself. The set's sealed id carries the server's session id, bound to its caller, and the
 * set always writes (or removes) `Mcp-Session-Id` before the server's handler sees a request, so no client can
 * name a server's id directly; and any replica forwards the id, as no replica's memory is needed to know it.
 */
export const PASS_THROUGH_SESSION_IDS: SessionSealer = {
  seal: (upstreamSessionId) => Promise.resolve(upstreamSessionId),
  open: (sealed) => Promise.resolve({ session: { upstreamSessionId: sealed, issuedAt: Math.floor(Date.now() / 1000) } }),
};
