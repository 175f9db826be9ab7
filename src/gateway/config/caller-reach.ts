/**
 * Whether a server is told who asks: one rule for every feature that serves one caller's answer to another (a
 * list page kept for `listReuseMs`, identical list requests sharing one exchange).
 */

/** What decides whether a server learns the caller, as a configuration gives it. */
export interface CallerReachSettings {
  /** Identity headers sent to an HTTP server (`identityHeaders`, `MCP_AUTH_IDENTITY_HEADERS` not `off`). */
  readonly identityHeaders: boolean;
  /** The caller's identity in a stdio server's environment (`identityEnv`, `MCP_AUTH_IDENTITY_ENV`). */
  readonly identityEnv: boolean;
  /** The upstream authentication mode (`auth.mode`, `MCP_AUTH_UPSTREAM_AUTH`); absent: `none`. */
  readonly authMode: string | undefined;
  /** Whether each caller's requests may go to a process of that caller's own (a stdio server). */
  readonly processPerCaller: boolean;
}

/** Modes whose credential is the caller's own: the server learns who asks from it. */
const PER_CALLER_MODES: ReadonlySet<string> = new Set(['token_exchange', 'connected']);

/**
 * The setting through which a server learns who asks (for messages: `identityHeaders`, `identityEnv`,
 * `auth.mode "token_exchange"`, `command`), or undefined when every caller's request reaches it alike: no identity
 * headers or environment, a credential that is the gateway's own (`none`, `static`, `client_credentials`), and one
 * server for everyone (a stdio server runs a process per caller outside sessions, whose state is that caller's).
 *
 * @example
 * callerReachOf({ identityHeaders: false, identityEnv: false, authMode: 'client_credentials', processPerCaller: false }); // undefined
 * callerReachOf({ identityHeaders: false, identityEnv: false, authMode: 'connected', processPerCaller: false }); // 'auth.mode "connected"'
 */
export function callerReachOf(settings: CallerReachSettings): string | undefined {
  if (settings.identityHeaders) return 'identityHeaders';
  if (settings.identityEnv) return 'identityEnv';
  if (settings.authMode !== undefined && PER_CALLER_MODES.has(settings.authMode)) return `auth.mode "${settings.authMode}"`;
  if (settings.processPerCaller) return 'command';
  return undefined;
}
