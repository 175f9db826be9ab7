/**
 * Whether an authorization server accepts one of the gateway's clients, asked at its token endpoint without a user:
 * an authorization code grant (RFC 6749 §4.1.3) with a code that was never issued. The server authenticates the client
 * first (§3.2.1), so `invalid_client` (or a 401) means it refused the client id or secret, and `invalid_grant` means
 * the client passed and only the made-up code was refused. Nothing is issued either way. What this cannot tell: the
 * redirect URIs registered for the client, which the server checks only on its authorization page.
 */
import { randomBytes } from 'node:crypto';
import * as client from 'openid-client';
import { oauthErrorAnswer } from '../../upstream-auth/oauth-error-answer.js';

/**
 * What the token endpoint said of the client:
 * - `accepted`: it authenticated the client (it refused only the made-up code);
 * - `refused`: it refused the client itself, `error` being `invalid_client` (wrong id or secret) or
 *   `unauthorized_client` (the client may not use the authorization code grant);
 * - `unknown`: no answer that tells (unreachable, a timeout, a 5xx, another error code), `detail` saying which.
 */
export type TokenEndpointClientCheck =
  | { readonly outcome: 'accepted' }
  | { readonly outcome: 'refused'; readonly error: 'invalid_client' | 'unauthorized_client'; readonly cause: unknown }
  | { readonly outcome: 'unknown'; readonly detail: string };

/**
 * Sends the made-up grant with `config` (the client as the gateway configures it: its id, secret and authentication
 * method, and timeouts) and `redirectUri`. Never rejects. The code and verifier sent are random and used nowhere else.
 *
 * @example
 * const checked = await checkClientAtTokenEndpoint(config, 'https://mcp.example.com/connect/callback');
 * if (checked.outcome === 'refused') console.log(checked.error); // 'invalid_client'
 */
export async function checkClientAtTokenEndpoint(config: client.Configuration, redirectUri: string): Promise<TokenEndpointClientCheck> {
  try {
    await client.genericGrantRequest(config, 'authorization_code', {
      code: randomBytes(32).toString('base64url'),
      redirect_uri: redirectUri,
      // Some servers ask for the PKCE verifier before they look the code up.
      code_verifier: client.randomPKCECodeVerifier(),
    });
    // A server that issues tokens for a code it never gave out authenticated the client, at least.
    return { outcome: 'accepted' };
  } catch (error) {
    const answer = oauthErrorAnswer(error);
    if (answer?.code === 'invalid_client' || answer?.code === 'unauthorized_client') return { outcome: 'refused', error: answer.code, cause: error };
    if (answer?.code === 'invalid_grant') return { outcome: 'accepted' };
    if (answer !== undefined) return { outcome: 'unknown', detail: `the token endpoint answered ${answer.code}` };
    const code = error instanceof client.ClientError && error.code !== undefined ? ` (${error.code})` : '';
    return { outcome: 'unknown', detail: `the token endpoint could not be asked${code}` };
  }
}
