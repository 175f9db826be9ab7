/**
 * Steps 5 and 6 of the demo client's flow: authorization code with PKCE S256, `resource` set to the MCP
 * server (RFC 8707) in both the authorization request and the code exchange, and in DPoP mode a proof with the
 * exchange (RFC 9449 §5).
 *
 * @module
 */
import * as oidc from 'openid-client';
import type { CookieJar, LoopbackRedirectListener } from 'mcp-oauth-guard/client';
import { redactToken, type EmitTranscript } from './transcript.js';
import { defaultAuthorizationMode, sendUserToAuthorize, type AuthorizationMode, type OpenBrowser } from './user-sign-in.js';

/** Options of {@link runAuthorizationCodeFlow}. */
export interface AuthorizationCodeFlowOptions {
  /** openid-client configuration with the client id to authorize. */
  config: oidc.Configuration;
  /** The MCP server's resource URL, as its metadata names it. */
  resource: string;
  /** Scopes to request; none: the `scope` parameter is left out. */
  scope: string | undefined;
  /** The listener whose redirect URI receives the code. */
  listener: LoopbackRedirectListener;
  /** How to reach the user. Default: {@link defaultAuthorizationMode}. */
  mode?: AuthorizationMode;
  /** Credentials the headless user signs in with. Default: the demo user. */
  user?: { username: string; password: string };
  /** The headless user's cookies. */
  cookies: CookieJar;
  /** Opens a URL for the user in `browser` mode. */
  openBrowser?: OpenBrowser;
  /** Signs a DPoP proof for the code exchange, so that the token is bound to this client's key (RFC 9449 §5). */
  dpop?: oidc.DPoPHandle;
}

/** Sends the user to authorize, waits for the redirect, and exchanges the code for tokens. */
export async function runAuthorizationCodeFlow(
  options: AuthorizationCodeFlowOptions,
  emit: EmitTranscript,
): Promise<oidc.TokenEndpointResponse> {
  const { config, resource, scope, listener } = options;
  const codeVerifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const parameters: Record<string, string> = {
    redirect_uri: listener.redirectUri,
    code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    state,
    resource,
  };
  if (scope) parameters.scope = scope;
  const authorizationUrl = oidc.buildAuthorizationUrl(config, parameters);
  const mode = options.mode ?? defaultAuthorizationMode();
  emit('authorization-url', `authorization request (${mode})`, {
    url: authorizationUrl.href,
    scope,
    resource,
  });

  // Armed before the user is sent: the headless user is back before sendUserToAuthorize resolves.
  const redirect = listener.waitForRedirect(state);
  await sendUserToAuthorize(
    authorizationUrl,
    { mode, redirectUri: listener.redirectUri, user: options.user, cookies: options.cookies, openBrowser: options.openBrowser },
    emit,
  );

  const callbackUrl = await redirect;
  const code = callbackUrl.searchParams.get('code');
  emit('callback', `redirect received on ${listener.redirectUri}`, {
    code: redactToken(code ?? undefined),
    error: callbackUrl.searchParams.get('error') ?? undefined,
    iss: callbackUrl.searchParams.get('iss') ?? undefined,
  });
  return oidc.authorizationCodeGrant(
    config,
    callbackUrl,
    { pkceCodeVerifier: codeVerifier, expectedState: state },
    { resource },
    options.dpop ? { DPoP: options.dpop } : undefined,
  );
}
