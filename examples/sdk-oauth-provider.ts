/**
 * An `OAuthClientProvider` for the official TypeScript SDK client (1.x) that keeps everything in memory and
 * plays the user with the headless user of `examples/headless-user.ts` instead of opening a browser.
 *
 * The SDK drives the OAuth flow itself (401 → RFC 9728 metadata → RFC 8414 discovery → RFC 7591
 * registration → authorization code + PKCE with `resource` → token). Where it would send the user to the
 * authorization server, it calls {@link HeadlessOAuthClientProvider.redirectToAuthorization}; this provider
 * signs in and consents there, and keeps the code. The SDK then throws `UnauthorizedError`, and the
 * application does what it would after a browser redirect: `transport.finishAuth(provider.takeAuthorizationCode())`
 * and retry. That is the SDK's documented shape for interactive authorization, so the tests exercise the
 * same path a desktop client takes.
 *
 * For tests and demos on loopback only: tokens are kept in plain memory.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import type { OAuthClientProvider, OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { authorizeAsHeadlessUser, createCookieJar, type CookieJar } from './headless-user.js';

/** Options of {@link HeadlessOAuthClientProvider}. */
export interface HeadlessOAuthClientProviderOptions {
  /** The loopback redirect URI registered for the client (RFC 8252 §7.3), e.g. `http://127.0.0.1:PORT/callback`. */
  redirectUrl: string;
  /** Credentials typed into the authorization server's login page. */
  username: string;
  password: string;
  /** Press Deny on the consent page. Default false. */
  deny?: boolean;
  /**
   * Grant types to register. Default `['authorization_code']`. With `refresh_token` the SDK 1.x client
   * answers a 403 `insufficient_scope` by refreshing (same scopes) instead of authorizing again for the
   * challenged scope, so step-up then fails until the application drops the tokens.
   */
  grantTypes?: readonly string[];
  /** `client_name` sent at registration. Default `mcp-oauth-guard SDK interop client`. */
  clientName?: string;
}

/** Every authorization URL the SDK sent the "user" to, parsed, for assertions and transcripts. */
export interface AuthorizationVisit {
  url: URL;
  /** The redirect the authorization server answered with (`code`, `state`, or `error`). */
  redirect: URL;
}

/** In-memory {@link OAuthClientProvider} that authorizes as a scripted user. */
export class HeadlessOAuthClientProvider implements OAuthClientProvider {
  readonly visits: AuthorizationVisit[] = [];
  private readonly cookies: CookieJar = createCookieJar();
  private client: OAuthClientInformationMixed | undefined;
  private storedTokens: OAuthTokens | undefined;
  private verifier: string | undefined;
  private discovery: OAuthDiscoveryState | undefined;
  private expectedState: string | undefined;
  private pendingCode: string | undefined;

  constructor(private readonly options: HeadlessOAuthClientProviderOptions) {}

  get redirectUrl(): string {
    return this.options.redirectUrl;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.options.clientName ?? 'mcp-oauth-guard SDK interop client',
      redirect_uris: [this.options.redirectUrl],
      grant_types: [...(this.options.grantTypes ?? ['authorization_code'])],
      response_types: ['code'],
      // A public native client: PKCE instead of a secret (OAuth 2.1 §2.1, RFC 8252 §8.4).
      token_endpoint_auth_method: 'none',
    };
  }

  /** A fresh `state` per authorization, checked when the code comes back (CSRF protection, RFC 6749 §10.12). */
  state(): string {
    this.expectedState = randomBytes(16).toString('base64url');
    return this.expectedState;
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.client;
  }

  saveClientInformation(info: OAuthClientInformationMixed): void {
    this.client = info;
  }

  tokens(): OAuthTokens | undefined {
    return this.storedTokens;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.storedTokens = tokens;
  }

  saveCodeVerifier(codeVerifier: string): void {
    this.verifier = codeVerifier;
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
    if (scope === 'all' || scope === 'client') this.client = undefined;
    if (scope === 'all' || scope === 'tokens') this.storedTokens = undefined;
    if (scope === 'all' || scope === 'verifier') this.verifier = undefined;
    if (scope === 'all' || scope === 'discovery') this.discovery = undefined;
  }

  /** Signs in and consents at the authorization server as the configured user, and keeps the code. */
  async redirectToAuthorization(authorizationUrl: URL): Promise<void> {
    const redirect = await authorizeAsHeadlessUser(authorizationUrl, {
      username: this.options.username,
      password: this.options.password,
      redirectUri: this.options.redirectUrl,
      deny: this.options.deny,
      cookies: this.cookies,
    });
    this.visits.push({ url: new URL(authorizationUrl), redirect });
    const error = redirect.searchParams.get('error');
    if (error) throw new Error(`authorization refused: ${error}`);
    if (redirect.searchParams.get('state') !== this.expectedState) throw new Error('authorization answer has the wrong state');
    const code = redirect.searchParams.get('code');
    if (!code) throw new Error('authorization answer has no code');
    this.pendingCode = code;
  }

  /** The code of the last authorization, once (pass it to `transport.finishAuth`). */
  takeAuthorizationCode(): string {
    const code = this.pendingCode;
    if (code === undefined) throw new Error('no authorization code: the SDK did not send the user to authorize');
    this.pendingCode = undefined;
    return code;
  }
}
