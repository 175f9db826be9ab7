/**
 * The bounds on sessions that every adapter keeping sessions starts from: the SDK adapter
 * (`sdkStreamableHttpHandler`) and the gateway's upstreams (`createUpstreamProxy`, `createStdioUpstream`,
 * `MCP_AUTH_MAX_SESSIONS`). One set, so that a server moved from the adapter to the gateway, or back, keeps the
 * same limits.
 */

/** Most sessions held in all; at the limit the least recently used is forgotten. */
export const DEFAULT_MAX_SESSIONS = 10_000;

/**
 * Most sessions one caller (issuer, subject, client) holds; one more forgets that caller's own least recently
 * used session, so that one caller cannot push out everyone else's.
 */
export const DEFAULT_MAX_SESSIONS_PER_CALLER = 16;

/**
 * Most bytes the sessions' kept values retain together, by their owners' estimates, in bytes: 64 MiB. What a
 * session keeps is small for most (nothing, or a server set's bounded `initialize`), but a session the gateway
 * answered itself before the user connected keeps the client's whole `initialize` request, which may be as large as
 * the body limit (1 MiB by default): without this bound, `DEFAULT_MAX_SESSIONS` of those would be 10 GiB. Past it the
 * least recently used sessions are forgotten, as past the count.
 */
export const DEFAULT_MAX_SESSION_BYTES = 64 * 1024 * 1024;

/** A session with nothing in progress and no use for this long is forgotten, in milliseconds: one hour. */
export const DEFAULT_SESSION_IDLE_TIMEOUT_MS = 3_600_000;
