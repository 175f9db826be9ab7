/**
 * What the official MCP TypeScript SDK client (1.x) asks an application for during OAuth, kept in memory: the
 * client's registration (RFC 7591), its tokens, the PKCE verifier, the `state` of the sign-in in progress and the
 * discovery results. Subclasses say how the user is brought to the authorization server
 * (`redirectToAuthorization`). Everything lasts one run: a real application keeps the registration and the tokens
 * (never in plain text on a shared machine) so that its users sign in once.
 *
 * Used by `examples/sdk-client.ts` (a loopback redirect listener) and by the tests' scripted user.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import type { OAuthClientProvider, OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';

/** Registration fields a subclass may change; the redirect URI is always the provider's own. */
export type ClientMetadataOverrides = Partial<Omit<OAuthClientMetadata, 'redirect_uris'>>;

/** The storage half of an `OAuthClientProvider`, in memory; subclasses bring the user to sign in. */
export abstract class InMemoryOAuthClientProvider implements OAuthClientProvider {
  /** The `state` sent with the last authorization request: the redirect must bring it back (RFC 6749 §10.12). */
  protected expectedState = '';
  private registration: OAuthClientInformationMixed | undefined;
  private savedTokens: OAuthTokens | undefined;
  private verifier: string | undefined;
  private discovery: OAuthDiscoveryState | undefined;

  /**
   * @param redirectUrl the loopback redirect URI registered for the client (RFC 8252 §7.3),
   *   e.g. `http://127.0.0.1:PORT/callback`
   * @param metadata registration fields to change, e.g. `{ grant_types: ['authorization_code', 'refresh_token'] }`
   */
  constructor(
    readonly redirectUrl: string,
    private readonly metadata: ClientMetadataOverrides = {},
  ) {}

  abstract redirectToAuthorization(authorizationUrl: URL): void | Promise<void>;

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'mcp-oauth-guard SDK client example',
      // No refresh_token: the SDK 1.x client answers a 403 step-up by refreshing, which cannot add a scope.
      grant_types: ['authorization_code'],
      response_types: ['code'],
      // A public client: PKCE instead of a client secret (OAuth 2.1 §2.1, RFC 8252 §8.4).
      token_endpoint_auth_method: 'none',
      ...this.metadata,
      redirect_uris: [this.redirectUrl],
    };
  }

  state(): string {
    this.expectedState = randomBytes(16).toString('base64url');
    return this.expectedState;
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.registration;
  }

  saveClientInformation(registration: OAuthClientInformationMixed): void {
    this.registration = registration;
  }

  tokens(): OAuthTokens | undefined {
    return this.savedTokens;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.savedTokens = tokens;
  }

  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }

  codeVerifier(): string {
    if (this.verifier === undefined) throw new Error('no PKCE code verifier saved');
    return this.verifier;
  }

  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.discovery = state;
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.discovery;
  }

  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): void {
    if (scope === 'all' || scope === 'client') this.registration = undefined;
    if (scope === 'all' || scope === 'tokens') this.savedTokens = undefined;
    if (scope === 'all' || scope === 'verifier') this.verifier = undefined;
    if (scope === 'all' || scope === 'discovery') this.discovery = undefined;
  }
}
