/**
 * The gateway signing a browser in with its own issuer, as an OpenID Connect relying party (OpenID Connect Core
 * 1.0 section 3.1, authorization code flow) through openid-client: PKCE S256 (RFC 7636), `nonce`, a one-time
 * `state`, and a browser binding. The pages use it to learn who is at the browser before acting for them: the
 * user a connect link was made for, or the user listing their connections.
 *
 * The pending sign-in is sealed in the token store under `login:<state>` for 10 minutes and taken once. It holds
 * the SHA-256 of a random value the browser keeps in an HttpOnly cookie of that flow: a callback carrying the state
 * but coming from another browser (a link passed on, a state seen in a log) is refused, and takes nothing.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import * as client from 'openid-client';
import { createIssuerDiscovery, createTimeoutFetch, isLoopbackHttpUrl, toOpenIdClientTimeout, type DiscoverIssuer } from '../../../core/token/issuer-discovery.js';
import { connectCallbackUrl } from '../oauth/gateway-client-urls.js';
import { checkClientAtTokenEndpoint } from '../oauth/token-endpoint-client-check.js';
import { oauthErrorAnswer } from '../../upstream-auth/oauth-error-answer.js';
import type { TokenStore } from '../store/token-store.js';
import type { PageSealer } from './page-ports.js';

/** Life of a pending sign-in, in milliseconds: 10 minutes. */
export const LOGIN_TTL_MS = 10 * 60_000;

/** Default timeout of each request to the login issuer, in milliseconds. */
export const DEFAULT_LOGIN_TIMEOUT_MS = 10_000;

/** How long a refusal of the login client by the issuer is remembered before it is asked again, in milliseconds. */
export const LOGIN_CLIENT_RECHECK_MS = 60_000;

/** Why a sign-in was started, carried through it: a connect ticket, or the connections page. */
export type LoginPurpose = { readonly kind: 'connect'; readonly ticketId: string } | { readonly kind: 'connections' };

/** Options of {@link createGatewayLogin}. */
export interface GatewayLoginOptions {
  /** The login issuer: the gateway's issuer, or with several, the one `MCP_AUTH_LOGIN_ISSUER` names. */
  issuer: string;
  /** `MCP_AUTH_LOGIN_CLIENT_ID`: a client registered at the issuer with the redirect `<gateway origin>/connect/callback`. */
  clientId: string;
  /** `MCP_AUTH_LOGIN_CLIENT_SECRET[_FILE]`, sent with HTTP Basic (RFC 6749 section 2.3.1); none: a public client (PKCE only). */
  clientSecret?: string;
  /** The gateway's origin, from its configured resource URI (never from a `Host` header). */
  gatewayOrigin: string;
  store: TokenStore;
  sealer: PageSealer;
  /** Timeout of each request to the issuer (discovery, token, keys), in milliseconds. Default {@link DEFAULT_LOGIN_TIMEOUT_MS}. */
  timeoutMs?: number;
  /** The issuer's metadata; default: discovered (RFC 8414, then OpenID Connect Discovery) and memoized. */
  discover?: DiscoverIssuer;
}

/** A verified sign-in: who, from the ID token, and why it was started. */
export interface GatewayLoginResult {
  /** `iss` of the ID token: the login issuer. */
  readonly issuer: string;
  /** `sub` of the ID token. */
  readonly subject: string;
  readonly purpose: LoginPurpose;
}

/** The sign-in part of the pages. */
export interface GatewayLogin {
  /** The login issuer, as configured. */
  readonly issuer: string;
  /** The `redirect_uri`: `<gateway origin>/connect/callback`. */
  readonly redirectUri: URL;
  /**
   * Starts a sign-in: the issuer's authorization URL, its `state`, and the browser binding to keep in an HttpOnly
   * cookie of that flow. Before the first, the issuer's token endpoint is asked whether it accepts the login client
   * (`checkClientAtTokenEndpoint`), once per process: a client it refuses would leave the user on the issuer's own
   * error page, which the gateway never hears of. `owner`: the `userKey` of the user a connect link was made for,
   * whose share of the store the pending sign-in counts against.
   *
   * @throws AuthorizationServerUnavailableError when the issuer's metadata cannot be had; GatewayLoginError (with
   *   its `setting`) when the issuer refuses the login client (asked again after {@link LOGIN_CLIENT_RECHECK_MS})
   */
  beginLogin(purpose: LoginPurpose, owner?: string): Promise<{ url: URL; state: string; binding: string }>;
  /**
   * Completes a sign-in from the callback URL (built on the gateway origin) and the browser's binding cookie.
   * Undefined when its `state` is no pending sign-in (an upstream's, a replay, expired). The binding is checked
   * before the pending sign-in is taken: a browser without it (another's, a state seen in a log) is refused and
   * leaves the sign-in pending for the browser that started it; any other outcome uses it up.
   *
   * @throws GatewayLoginError when the binding differs, the user declined, or the response or ID token is refused
   *   (openid-client checks `state`, `iss` per RFC 9207, and the ID token's signature, `iss`, `aud`, `nonce`, `exp`)
   */
  completeLogin(callbackUrl: URL, binding: string | undefined): Promise<GatewayLoginResult | undefined>;
}

/**
 * A sign-in that came back refused. `reason` is for the page; `cause` for the operator's log (its name only), with
 * the issuer's OAuth error code and, when the issuer refused the login client itself, the setting to check.
 */
export class GatewayLoginError extends Error {
  readonly reason: 'browser_mismatch' | 'denied' | 'failed';
  /** The issuer's OAuth error code (`oauthErrorAnswer`), e.g. `invalid_client`; never its description. */
  readonly error: string | undefined;
  /**
   * `MCP_AUTH_LOGIN_CLIENT_SECRET` or `MCP_AUTH_LOGIN_CLIENT_ID` when the issuer refused the login client; both
   * (`MCP_AUTH_LOGIN_CLIENT_ID or MCP_AUTH_LOGIN_CLIENT_SECRET`) when the client id was not proven good first.
   */
  readonly setting: string | undefined;
  /**
   * @param hasSecret - whether the login client has a secret.
   * @param idProven - whether the issuer had accepted the client id (its authorization page sent the browser back).
   */
  constructor(reason: GatewayLoginError['reason'], cause?: unknown, hasSecret = false, idProven = true) {
    super(`the sign-in was refused (${reason})`, { cause });
    this.name = 'GatewayLoginError';
    this.reason = reason;
    this.error = oauthErrorAnswer(cause)?.code;
    const secret = idProven ? 'MCP_AUTH_LOGIN_CLIENT_SECRET' : 'MCP_AUTH_LOGIN_CLIENT_ID or MCP_AUTH_LOGIN_CLIENT_SECRET';
    this.setting = this.error === 'invalid_client' ? (hasSecret ? secret : 'MCP_AUTH_LOGIN_CLIENT_ID') : this.error === 'unauthorized_client' ? 'MCP_AUTH_LOGIN_CLIENT_ID' : undefined;
  }
}

interface PendingLogin {
  purpose: LoginPurpose;
  verifier: string;
  nonce: string;
  /** base64url SHA-256 of the browser binding. */
  binding: string;
}

/** A state the store is asked about: what openid-client's `randomState()` makes, with room for others. */
const STATE = /^[A-Za-z0-9_-]{16,128}$/;

/** The store key of the pending sign-in of `state`. */
export function pendingLoginKey(state: string): string {
  return `login:${state}`;
}

/** The SHA-256 of a binding value, base64url: what is stored instead of the value itself. */
export function bindingDigest(binding: string): string {
  return createHash('sha256').update(binding).digest('base64url');
}

/** Whether `binding` hashes to `digest`, in constant time. */
export function bindingMatches(binding: string | undefined, digest: string): boolean {
  if (binding === undefined) return false;
  const a = Buffer.from(bindingDigest(binding));
  const b = Buffer.from(digest);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Creates the gateway's sign-in. Nothing is fetched until the first sign-in.
 *
 * @example
 * const login = createGatewayLogin({ issuer, clientId: 'gateway-login', clientSecret, gatewayOrigin, store, sealer });
 * const { url, binding } = await login.beginLogin({ kind: 'connections' });
 */
export function createGatewayLogin(options: GatewayLoginOptions): GatewayLogin {
  const timeoutMs = options.timeoutMs ?? DEFAULT_LOGIN_TIMEOUT_MS;
  const discover = options.discover ?? createIssuerDiscovery({ issuer: options.issuer, timeoutMs });
  const redirectUri = new URL(connectCallbackUrl(options.gatewayOrigin));
  let configuration: client.Configuration | undefined;
  const configure = async (): Promise<client.Configuration> => (configuration ??= loginClientConfiguration(await discover(), options, timeoutMs));
  const { store, sealer } = options;
  // One check of the client at a time, kept: a pass for good, a refusal for LOGIN_CLIENT_RECHECK_MS.
  let clientCheck: { at: number; refusal: Promise<GatewayLoginError | undefined> } | undefined;
  const clientRefusal = async (config: client.Configuration): Promise<GatewayLoginError | undefined> => {
    const now = Date.now();
    if (clientCheck === undefined || ((await clientCheck.refusal) !== undefined && now - clientCheck.at >= LOGIN_CLIENT_RECHECK_MS)) {
      clientCheck = { at: now, refusal: loginClientRefusal(config, redirectUri.href, options.clientSecret !== undefined) };
    }
    return clientCheck.refusal;
  };

  return {
    issuer: options.issuer,
    redirectUri,
    async beginLogin(purpose, owner) {
      const config = await configure();
      const refusal = await clientRefusal(config);
      if (refusal !== undefined) throw refusal;
      const state = client.randomState();
      const nonce = client.randomNonce();
      const verifier = client.randomPKCECodeVerifier();
      const binding = randomBytes(32).toString('base64url');
      const key = pendingLoginKey(state);
      const pending: PendingLogin = { purpose, verifier, nonce, binding: bindingDigest(binding) };
      await store.set(key, await sealer.seal(key, pending, LOGIN_TTL_MS), LOGIN_TTL_MS, owner);
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri.href,
        response_type: 'code',
        scope: 'openid',
        state,
        nonce,
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      });
      return { url, state, binding };
    },
    async completeLogin(callbackUrl, binding) {
      const state = callbackUrl.searchParams.get('state') ?? '';
      if (!STATE.test(state)) return undefined;
      const key = pendingLoginKey(state);
      const found = await store.get(key);
      const pending = found === undefined ? undefined : await sealer.open<PendingLogin>(key, found);
      if (!pending) return undefined;
      // Checked before anything is taken: a request without this browser's binding cannot use up its sign-in.
      if (!bindingMatches(binding, pending.binding)) throw new GatewayLoginError('browser_mismatch');
      // One-time: of two callbacks with the binding at once, only the one that takes it goes on.
      if ((await store.take(key)) === undefined) return undefined;
      const config = await configure();
      let claims: client.IDToken | undefined;
      try {
        const tokens = await client.authorizationCodeGrant(config, callbackUrl, {
          pkceCodeVerifier: pending.verifier,
          expectedNonce: pending.nonce,
          expectedState: state,
          idTokenExpected: true,
        });
        claims = tokens.claims();
      } catch (error) {
        throw new GatewayLoginError(error instanceof client.AuthorizationResponseError ? 'denied' : 'failed', error, options.clientSecret !== undefined);
      }
      if (!claims || typeof claims.sub !== 'string' || claims.sub === '') throw new GatewayLoginError('failed');
      return { issuer: claims.iss, subject: claims.sub, purpose: pending.purpose };
    },
  };
}

/** The refusal of the login client by the issuer's token endpoint, if it refuses it; an answer that tells nothing passes. */
async function loginClientRefusal(config: client.Configuration, redirectUri: string, hasSecret: boolean): Promise<GatewayLoginError | undefined> {
  const checked = await checkClientAtTokenEndpoint(config, redirectUri);
  return checked.outcome === 'refused' ? new GatewayLoginError('failed', checked.cause, hasSecret, false) : undefined;
}

/**
 * openid-client's configuration for the login client (HTTP Basic with a secret, else a public client), every request
 * bounded by `timeoutMs`: the sign-in's, and `check`'s of the same client.
 *
 * @example
 * const config = loginClientConfiguration(metadata, { clientId: 'gw-login', clientSecret }, 10_000);
 */
export function loginClientConfiguration(metadata: client.ServerMetadata, options: Pick<GatewayLoginOptions, 'clientId' | 'clientSecret'>, timeoutMs: number): client.Configuration {
  const secret = options.clientSecret;
  const config = new client.Configuration(
    metadata,
    options.clientId,
    secret === undefined ? undefined : { client_secret: secret },
    secret === undefined ? client.None() : client.ClientSecretBasic(secret),
  );
  const tokenFetch = createTimeoutFetch(timeoutMs, 'token');
  const jwksFetch = createTimeoutFetch(timeoutMs, 'jwks');
  config[client.customFetch] = (url, init) => (url === metadata.jwks_uri ? jwksFetch : tokenFetch)(url, init);
  config.timeout = toOpenIdClientTimeout(timeoutMs);
  // The ID token comes straight from the token endpoint, where TLS would vouch for the issuer (OpenID Connect Core
  // section 3.1.3.7); a loopback issuer in development has no TLS, so its signature is checked always.
  if (metadata.jwks_uri !== undefined) client.enableNonRepudiationChecks(config);
  if (isLoopbackHttpUrl(new URL(metadata.issuer))) client.allowInsecureRequests(config);
  return config;
}
