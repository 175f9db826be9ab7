/**
 * The authorization code flow with an upstream's authorization server, for one user's connection: the
 * authorization URL the browser is sent to (PKCE S256, a one-time `state`, `resource`), and the exchange of the
 * code the browser brings back to the gateway's callback.
 */
import * as client from 'openid-client';
import { scopeTokens } from '../../../core/wire/scope-token.js';
import type { UpstreamTarget } from '../../upstream-auth/upstream-resource-metadata.js';
import type { TokenStore } from '../store/token-store.js';
import type { ConnectionRecord } from './connection-record.js';
import { upstreamCallbackUrl } from './gateway-client-urls.js';
import type { Sealer } from './sealer.js';
import { tokenResponseRecord } from './token-response-record.js';
import { configuredClientSetting, UpstreamAuthorizationError, upstreamAuthorizationFailure } from './upstream-authorization-error.js';
import type { UpstreamClient } from './upstream-client.js';
import type { RegisteredClient } from './upstream-client-configuration.js';

/** Longest life of a pending authorization, in milliseconds: 10 minutes. */
export const MAX_FLOW_TTL_MS = 10 * 60_000;

/** Kept a little past its life so that a late callback is told `expired` rather than `unknown_state`. */
const EXPIRED_GRACE_MS = 60_000;

/** Longest `state` accepted from a callback; the gateway's are 43 characters. */
const MAX_STATE_LENGTH = 128;

/** A pending authorization, sealed under `flow:<state>`. */
interface PendingFlow {
  /** Tells it from the gateway's own sign-in flows, kept under the same prefix. */
  kind: 'upstream';
  server: string;
  ticketId: string;
  scope?: string;
  /** The scope the connect link asked for (a step-up), kept in the record as `stepUpScope`. */
  stepUp?: string;
  /** PKCE code verifier (RFC 7636 §4.1). */
  verifier: string;
  issuer: string;
  clientId: string;
  /** Milliseconds since the epoch. */
  expiresAt: number;
}

/** Options of {@link createAuthorizationCodeFlow}. */
export interface AuthorizationCodeFlowOptions {
  /** The configuration file's server name, `""` for the single upstream. */
  server: string;
  /** The gateway's public origin: the redirect URI is `<origin>/connect/callback/<server>` (`upstreamCallbackUrl`). */
  gatewayOrigin: string | URL;
  /** `MCP_AUTH_UPSTREAM_SCOPE` (space-separated): the scope asked for, before the upstream's challenge and `scopes_supported`. */
  scope?: string;
  /** `createUpstreamClient(...)`. */
  upstreamClient: () => Promise<UpstreamClient>;
  store: TokenStore;
  sealer: Sealer;
  /** Life of a pending authorization, in milliseconds. Default and most {@link MAX_FLOW_TTL_MS}. */
  flowTtlMs?: number;
  /** The code exchange was refused with `invalid_client`: drops a dynamic registration (`ClientRegistration.forget`). */
  forgetClient?: (client: RegisteredClient) => Promise<void>;
}

/** What a completed authorization gives: the ticket it was started for and the new connection. */
export interface CompletedAuthorization {
  ticketId: string;
  record: ConnectionRecord;
}

/** Starts and completes authorizations at one upstream's authorization server. */
export interface AuthorizationCodeFlow {
  /**
   * Creates a pending authorization for `ticketId` and returns the URL to send the browser to.
   *
   * @param input.scope - scopes the upstream asked for (its challenge's `scope`, e.g. on `insufficient_scope`).
   * @param input.owner - the `userKey` of the ticket's user: the pending authorization counts against its share.
   */
  begin(input: { ticketId: string; scope?: string; owner?: string }): Promise<URL>;
  /**
   * Handles the browser's return to `<gateway>/connect/callback/<server>`: takes the pending authorization named by
   * `state` (one time), checks the response (state, `iss` per RFC 9207 when the server supports it, an error),
   * and exchanges the code with the PKCE verifier and `resource`.
   *
   * @throws UpstreamAuthorizationError `unknown_state`, `expired`, `refused:<error>`, `invalid_response`, `unavailable`.
   */
  complete(callbackUrl: URL): Promise<CompletedAuthorization>;
}

/**
 * The scope asked for, in this order: the configured scope (`MCP_AUTH_UPSTREAM_SCOPE`, `auth.scope`); else the
 * `scope` of the upstream's 401 challenge; else every scope of its RFC 9728 `scopes_supported`; else none (MCP
 * 2025-11-25 `basic/authorization`, "Scope Selection Strategy", with the operator's choice first). The scope the
 * request names (an upstream's `insufficient_scope` challenge) is always added, so that a step-up asks for what
 * the upstream wants even when a scope is configured. Scope tokens only; undefined: no `scope` parameter.
 *
 * @example requestedScope('notes:read', { scopesSupported: ['notes:read', 'notes:write'] }, 'notes:write'); // 'notes:read notes:write'
 * @example requestedScope(undefined, { challengeScope: 'notes:read', scopesSupported: ['notes:read', 'notes:write'] }, undefined); // 'notes:read'
 */
export function requestedScope(configured: string | undefined, target: Pick<UpstreamTarget, 'challengeScope' | 'scopesSupported'>, asked: string | undefined): string | undefined {
  const base = configured ?? target.challengeScope ?? target.scopesSupported?.join(' ');
  const scopes = new Set([...scopeTokens(base), ...scopeTokens(asked)]);
  return scopes.size ? [...scopes].join(' ') : undefined;
}

/** The store key of the pending authorization `state`. */
export function flowKey(state: string): string {
  return `flow:${state}`;
}

/**
 * The server and ticket of a pending upstream authorization, without taking it: for the callback, to check that
 * the server its path names is the one the authorization was started with before anything is taken or exchanged.
 * Undefined when `state` names none (or names a sign-in flow).
 */
export async function pendingUpstreamFlow(store: TokenStore, sealer: Sealer, state: string): Promise<{ server: string; ticketId: string } | undefined> {
  if (state === '' || state.length > MAX_STATE_LENGTH) return undefined;
  const sealed = await store.get(flowKey(state));
  const flow = sealed === undefined ? undefined : await sealer.open<PendingFlow>(flowKey(state), sealed);
  return flow?.kind === 'upstream' ? { server: flow.server, ticketId: flow.ticketId } : undefined;
}

/** Creates the flow of one upstream. Nothing is fetched until the first `begin`. */
export function createAuthorizationCodeFlow(options: AuthorizationCodeFlowOptions): AuthorizationCodeFlow {
  const flowTtlMs = Math.min(options.flowTtlMs ?? MAX_FLOW_TTL_MS, MAX_FLOW_TTL_MS);
  const redirectUri = upstreamCallbackUrl(options.gatewayOrigin, options.server);
  return {
    async begin({ ticketId, scope, owner }) {
      const upstream = await options.upstreamClient();
      const state = client.randomState();
      const verifier = client.randomPKCECodeVerifier();
      const requested = requestedScope(options.scope, upstream.server.target, scope);
      const flow: PendingFlow = { kind: 'upstream', server: options.server, ticketId, verifier, issuer: upstream.client.issuer, clientId: upstream.client.clientId, expiresAt: Date.now() + flowTtlMs, ...(requested !== undefined ? { scope: requested } : {}), ...(scope !== undefined ? { stepUp: scope } : {}) };
      const key = flowKey(state);
      await options.store.set(key, await options.sealer.seal(key, flow, flowTtlMs + EXPIRED_GRACE_MS), flowTtlMs + EXPIRED_GRACE_MS, owner);
      return client.buildAuthorizationUrl(upstream.config, {
        redirect_uri: redirectUri,
        response_type: 'code',
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state,
        resource: upstream.server.target.resource,
        ...(requested !== undefined ? { scope: requested } : {}),
      });
    },
    async complete(callbackUrl) {
      const state = callbackUrl.searchParams.get('state') ?? '';
      if (state === '' || state.length > MAX_STATE_LENGTH) throw new UpstreamAuthorizationError('unknown_state', 'the callback names no pending authorization');
      const key = flowKey(state);
      const sealed = await options.store.take(key);
      const flow = sealed === undefined ? undefined : await options.sealer.open<PendingFlow>(key, sealed);
      if (flow?.kind !== 'upstream' || flow.server !== options.server) throw new UpstreamAuthorizationError('unknown_state', 'the callback names no pending authorization of this server');
      if (flow.expiresAt <= Date.now()) throw new UpstreamAuthorizationError('expired', 'the authorization took too long; start again');
      const upstream = await options.upstreamClient();
      // A code is only exchanged by the client, at the server, that the authorization was started with.
      if (upstream.client.issuer !== flow.issuer || upstream.client.clientId !== flow.clientId) {
        throw new UpstreamAuthorizationError('unknown_state', 'the authorization was started with another client; start again');
      }
      const requestedAt = Date.now();
      try {
        // openid-client sends the URL it is given, less its query, as `redirect_uri`: it must be the registered
        // one exactly, whatever host name the request reached the gateway by.
        const response = new URL(redirectUri);
        response.search = callbackUrl.search;
        const tokens = await client.authorizationCodeGrant(upstream.config, response, { pkceCodeVerifier: flow.verifier, expectedState: state }, { resource: upstream.server.target.resource });
        const context = { issuer: flow.issuer, clientId: flow.clientId, requestedAt, ...(flow.scope !== undefined ? { requestedScope: flow.scope } : {}), ...(flow.stepUp !== undefined ? { stepUpScope: flow.stepUp } : {}) };
        return { ticketId: flow.ticketId, record: tokenResponseRecord(tokens, context) };
      } catch (error) {
        const failure = upstreamAuthorizationFailure(error, 'the authorization');
        // A refused client is the operator's to fix: the log names the setting (never its value).
        if (failure.code.startsWith('refused:')) failure.setting = configuredClientSetting(options.server, upstream.client, failure.code.slice('refused:'.length));
        // A registration the server forgot: the user's next attempt registers afresh.
        if (failure.code === 'refused:invalid_client') await options.forgetClient?.(upstream.client);
        throw failure;
      }
    },
  };
}
