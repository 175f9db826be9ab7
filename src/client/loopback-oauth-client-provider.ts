/**
 * The SDK's `OAuthClientProvider` for a native client: in memory, with a loopback redirect URI.
 *
 * @module
 */
import { InMemoryOAuthClientProvider, type ClientMetadataOverrides } from './in-memory-oauth-client-provider.js';
import type { LoopbackRedirectListener } from './loopback-redirect-listener.js';

/**
 * Brings the user to the authorization URL: opens a browser, prints the URL, or signs in as a scripted user
 * ({@link signInToDevelopmentServer}, development only). The user's way back is the redirect listener's.
 *
 * @example
 * ```ts
 * const printUrl: SendUserToSignIn = (url) => console.log(`Open this URL in your browser to sign in:\n  ${url.href}`);
 * ```
 */
export type SendUserToSignIn = (authorizationUrl: URL) => void | Promise<void>;

/**
 * Options of {@link LoopbackOAuthClientProvider}.
 *
 * @example
 * ```ts
 * const options: LoopbackOAuthClientProviderOptions = {
 *   listener: await LoopbackRedirectListener.listen(),
 *   sendUser: (url) => console.log(`Sign in: ${url.href}`),
 *   metadata: { client_name: 'my MCP client', scope: 'notes:read' },
 * };
 * ```
 */
export interface LoopbackOAuthClientProviderOptions {
  /** Where the user comes back with the code; its `redirectUri` is the one registered. */
  listener: LoopbackRedirectListener;
  /** Brings the user to the authorization URL. */
  sendUser: SendUserToSignIn;
  /**
   * Registration fields to change, e.g. `{ client_name: 'my MCP client' }`, or `{ scope: 'notes:read' }` to ask
   * for scopes when neither the server's challenge nor its metadata names any.
   */
  metadata?: ClientMetadataOverrides;
}

/**
 * An `OAuthClientProvider` for the official MCP TypeScript SDK client (1.x) that keeps the registration and
 * tokens in memory and receives the code on a {@link LoopbackRedirectListener}. The SDK runs the OAuth flow
 * (RFC 9728, RFC 8414, RFC 7591, authorization code + PKCE with `resource`, RFC 8707); where it would send the
 * user to sign in, this provider arms the listener with the request's `state` and calls `sendUser`; the SDK then
 * throws `UnauthorizedError`, and the application passes {@link LoopbackOAuthClientProvider.authorizationCode}
 * to `transport.finishAuth` and connects (or calls) again. Everything lasts one run.
 *
 * @example
 * ```ts
 * import { Client } from '@modelcontextprotocol/sdk/client/index.js';
 * import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
 * import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
 * import { LoopbackOAuthClientProvider, LoopbackRedirectListener } from 'mcp-oauth-guard/client';
 *
 * const listener = await LoopbackRedirectListener.listen();
 * const provider = new LoopbackOAuthClientProvider({ listener, sendUser: (url) => console.log(`Sign in: ${url.href}`) });
 * const url = new URL('https://mcp.example.com/mcp');
 * let transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
 * const client = new Client({ name: 'my MCP client', version: '1.0.0' });
 * try {
 *   await client.connect(transport);
 * } catch (error) {
 *   if (!(error instanceof UnauthorizedError)) throw error;
 *   await transport.finishAuth(await provider.authorizationCode());
 *   transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
 *   await client.connect(transport);
 * }
 * ```
 */
export class LoopbackOAuthClientProvider extends InMemoryOAuthClientProvider {
  readonly #listener: LoopbackRedirectListener;
  readonly #sendUser: SendUserToSignIn;
  #code: Promise<string> | undefined;
  #lastAuthorizationUrl: URL | undefined;

  /**
   * @param options - the listener, how the user is sent, and registration fields to change
   */
  constructor(options: LoopbackOAuthClientProviderOptions) {
    super(options.listener.redirectUri, options.metadata);
    this.#listener = options.listener;
    this.#sendUser = options.sendUser;
  }

  /**
   * The authorization request last sent, if any: its `scope` and `resource` parameters say what was asked for
   * (no `scope` at all when the server named none and none was configured), to explain a refusal.
   */
  get lastAuthorizationUrl(): URL | undefined {
    return this.#lastAuthorizationUrl;
  }

  /** Arms the listener with this request's `state`, then sends the user. */
  async redirectToAuthorization(authorizationUrl: URL): Promise<void> {
    this.#lastAuthorizationUrl = new URL(authorizationUrl);
    // Armed before the user is sent: a scripted user is back before sendUser resolves.
    this.#code = this.#listener.waitForCode(this.expectedState);
    await this.#sendUser(authorizationUrl);
  }

  /**
   * The code the user comes back with from the last sign-in, once: pass it to `transport.finishAuth` after the
   * SDK threw `UnauthorizedError`.
   *
   * @returns the code; rejects with {@link AuthorizationRedirectError} when the authorization server refused
   * @throws Error when the SDK did not send the user to sign in
   */
  authorizationCode(): Promise<string> {
    const code = this.#code;
    if (code === undefined) throw new Error('no sign-in in progress: the SDK did not send the user to sign in');
    this.#code = undefined;
    return code;
  }
}
