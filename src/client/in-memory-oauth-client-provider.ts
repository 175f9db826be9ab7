/**
 * What the official MCP TypeScript SDK client (1.x) asks an application for during OAuth, kept in memory: the
 * client's registration (RFC 7591), its tokens, the PKCE verifier, the `state` of the sign-in in progress and the
 * discovery results. Subclasses say how the user is brought to the authorization server
 * (`redirectToAuthorization`). Everything lasts one run: a real application keeps the registration and the tokens
 * (never in plain text on a shared machine) so that its users sign in once.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import type { OAuthClientProvider, OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';

/**
 * Registration fields (RFC 7591 §2) a provider may change; the redirect URI is always the provider's own.
 *
 * @example
 * ```ts
 * const overrides: ClientMetadataOverrides = { client_name: 'my MCP client', scope: 'notes:read' };
 * ```
 */
export type ClientMetadataOverrides = Partial<Omit<OAuthClientMetadata, 'redirect_uris'>>;

/**
 * The storage half of the SDK's `OAuthClientProvider`, in memory; a subclass brings the user to sign in
 * (`redirectToAuthorization`). It registers a public client (no secret: PKCE instead, OAuth 2.1 §2.1, RFC 8252
 * §8.4) for `authorization_code` only, because the SDK 1.x client answers a 403 step-up by refreshing when it
 * holds a refresh token, and a refresh cannot add a scope. {@link LoopbackOAuthClientProvider} is the
 * subclass for a loopback redirect URI.
 *
 * @example
 * ```ts
 * import { InMemoryOAuthClientProvider } from 'mcp-oauth-guard/client';
 *
 * class PrintingProvider extends InMemoryOAuthClientProvider {
 *   redirectToAuthorization(authorizationUrl: URL): void {
 *     console.log(`Open ${authorizationUrl.href} to sign in`);
 *   }
 * }
 * const provider = new PrintingProvider('http://127.0.0.1:8765/callback', { client_name: 'my MCP client' });
 * ```
 */
export abstract class InMemoryOAuthClientProvider implements OAuthClientProvider {
  /** The `state` sent with the last authorization request: the redirect must bring it back (RFC 6749 §10.12). */
  protected expectedState = '';
  private registration: OAuthClientInformationMixed | undefined;
  private savedTokens: OAuthTokens | undefined;
  private verifier: string | undefined;
  private discovery: OAuthDiscoveryState | undefined;

  /**
   * @param redirectUrl - the loopback redirect URI registered for the client (RFC 8252 §7.3),
   *   e.g. `http://127.0.0.1:PORT/callback`
   * @param metadata - registration fields to change, e.g. `{ scope: 'notes:read' }`: the SDK asks for this scope
   *   when neither the server's challenge nor its metadata names one
   */
  constructor(
    /** The redirect URI registered for the client, where the user comes back with the code. */
    readonly redirectUrl: string,
    private readonly metadata: ClientMetadataOverrides = {},
  ) {}

  /** Brings the user to the authorization URL (a browser, a printed URL, a scripted user). */
  abstract redirectToAuthorization(authorizationUrl: URL): void | Promise<void>;

  /** What the client registers with (RFC 7591 §2): a public native client with this provider's redirect URI. */
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'mcp-oauth-guard client',
      // No refresh_token: the SDK 1.x client answers a 403 step-up by refreshing, which cannot add a scope.
      grant_types: ['authorization_code'],
      response_types: ['code'],
      // A public client: PKCE instead of a client secret (OAuth 2.1 §2.1, RFC 8252 §8.4).
      token_endpoint_auth_method: 'none',
      ...this.metadata,
      redirect_uris: [this.redirectUrl],
    };
  }

  /** A fresh random `state` for the next authorization request, remembered to check the redirect. */
  state(): string {
    this.expectedState = randomBytes(16).toString('base64url');
    return this.expectedState;
  }

  /** The registration saved by the SDK, if any. */
  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.registration;
  }

  /** Keeps the registration for this run. */
  saveClientInformation(registration: OAuthClientInformationMixed): void {
    this.registration = registration;
  }

  /** The tokens saved by the SDK, if any. */
  tokens(): OAuthTokens | undefined {
    return this.savedTokens;
  }

  /** Keeps the tokens for this run. */
  saveTokens(tokens: OAuthTokens): void {
    this.savedTokens = tokens;
  }

  /** Keeps the PKCE verifier of the authorization in progress. */
  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }

  /** The PKCE verifier of the authorization in progress; throws when none was saved. */
  codeVerifier(): string {
    if (this.verifier === undefined) throw new Error('no PKCE code verifier saved');
    return this.verifier;
  }

  /** Keeps what discovery found (RFC 9728 and RFC 8414 metadata). */
  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.discovery = state;
  }

  /** What discovery found, if any: the protected-resource metadata is in `resourceMetadata`. */
  discoveryState(): OAuthDiscoveryState | undefined {
    return this.discovery;
  }

  /** Forgets what the SDK says is no longer valid. */
  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): void {
    if (scope === 'all' || scope === 'client') this.registration = undefined;
    if (scope === 'all' || scope === 'tokens') this.savedTokens = undefined;
    if (scope === 'all' || scope === 'verifier') this.verifier = undefined;
    if (scope === 'all' || scope === 'discovery') this.discovery = undefined;
  }
}
