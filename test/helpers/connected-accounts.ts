// The real parts of a connected-accounts test, started once here: the gateway's own authorization server (users alice
// and bob, and the gateway's sign-in client), the notes example as the upstream behind an authorization server of its
// own (with the gateway pre-registered there as a client), and a temporary directory for the token store. The
// gateway's port is chosen first, because both authorization servers must know its callback before it starts.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  startAuthorizationServer,
  type AuthorizationServer,
  type AuthorizationServerOptions,
  type ResourceOptions,
} from '../../examples/dev/authorization-server.js';
import { connectCallbackUrl, upstreamCallbackUrl } from '../../src/gateway/connected/oauth/gateway-client-urls.js';
import { startNotesServer, type RunningNotesServer } from '../../examples/notes-server.js';
import { loadGatewayConfig } from '../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { freePort } from './free-port.js';
import { postMcp, type HttpAnswer } from './http-client.js';
import { startToolsOnlyUpstream, type ToolsOnlyUpstream, type ToolsOnlyUpstreamOptions } from './tools-only-upstream.js';

/** Users of both authorization servers. Their `sub` is their username. */
export const CONNECTED_USERS = [
  { username: 'alice', password: 'alice-password' },
  { username: 'bob', password: 'bob-password' },
] as const;
/** A user of {@link CONNECTED_USERS}. */
export type ConnectedUser = (typeof CONNECTED_USERS)[number];
/** The gateway's sign-in client at its own authorization server (`MCP_AUTH_LOGIN_CLIENT_*`). */
export const LOGIN_CLIENT = { clientId: 'gateway-login', clientSecret: 'gateway-login-secret' } as const;
/** The gateway's client at the notes authorization server (`MCP_AUTH_UPSTREAM_CLIENT_*`, or a server's `auth`). */
export const UPSTREAM_CLIENT = { clientId: 'gateway-at-notes', clientSecret: 'gateway-at-notes-secret' } as const;
/** The token store's sealing key (`MCP_AUTH_TOKEN_STORE_SECRET`): 32 fixed bytes, base64url. */
export const STORE_KEY = Buffer.from(Array.from({ length: 32 }, (_, i) => (i * 53 + 7) % 256)).toString('base64url');
/** Every scope the notes example knows. */
export const NOTES_SCOPES: readonly string[] = ['notes:read', 'notes:write', 'notes:admin'];

/** Options of {@link startConnectedAccountsParts}. */
export interface ConnectedAccountsPartsOptions {
  /** Options of the notes authorization server besides its users and the gateway's client (e.g. `rotateRefreshTokens`). */
  readonly notesAs?: Omit<AuthorizationServerOptions, 'users' | 'clients'>;
  /** The notes resource at its authorization server, besides its scopes (e.g. `accessTokenTtl`). */
  readonly notesResource?: Partial<ResourceOptions>;
  /**
   * The notes server's name in the gateway, which names the redirect URI the gateway's client has at the notes
   * authorization server (`<origin>/connect/callback/<server>`). Default `""`, the single upstream.
   */
  readonly notesServer?: string;
}

/** The running parts. */
export interface ConnectedAccountsParts {
  /** The port the gateway is to listen on (free when chosen). */
  readonly port: number;
  /** `http://127.0.0.1:<port>`. */
  readonly origin: string;
  /** `<origin>/connect/callback`: the sign-in's redirect URI, registered at the gateway's authorization server. */
  readonly callback: string;
  /** `<origin>/connect/callback/<notesServer>` (`upstream` by default): registered at the notes' server. */
  readonly upstreamCallback: string;
  readonly gatewayAs: AuthorizationServer;
  readonly notesAs: AuthorizationServer;
  readonly notes: RunningNotesServer;
  /** The token store's directory (not created yet; its parent is the temporary directory). */
  readonly storeDir: string;
  /** The temporary directory: the store's parent, and free for a test's own files. */
  readonly tempDir: string;
  /** Lets the gateway's authorization server issue tokens for the gateway (`mcp`) once its resource is known. */
  trustGateway(resource: string): void;
  /** A token of the gateway's authorization server for `sub`, as an MCP client would send the gateway. */
  callerToken(resource: string, sub: string): Promise<string>;
  /** Stops everything started here and removes the temporary directory. */
  close(): Promise<void>;
}

/**
 * Starts both authorization servers and the notes example.
 *
 * @example
 * const parts = await startConnectedAccountsParts();
 * const gateway = await startGateway(loadGatewayConfig(singleUpstreamSettings(parts)));
 * parts.trustGateway(gateway.resource);
 */
export async function startConnectedAccountsParts(options: ConnectedAccountsPartsOptions = {}): Promise<ConnectedAccountsParts> {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const callback = connectCallbackUrl(origin);
  const upstreamCallback = upstreamCallbackUrl(origin, options.notesServer ?? '');
  const tempDir = mkdtempSync(join(tmpdir(), 'connected-accounts-'));
  const started: { gatewayAs?: AuthorizationServer; notesAs?: AuthorizationServer; notes?: RunningNotesServer } = {};
  const close = async (): Promise<void> => {
    await started.notes?.close();
    await started.notesAs?.close();
    await started.gatewayAs?.close();
    rmSync(tempDir, { recursive: true, force: true });
  };
  try {
    const users = [...CONNECTED_USERS];
    const gatewayAs = (started.gatewayAs = await startAuthorizationServer({ users, extraScopes: ['mcp'], clients: [{ ...LOGIN_CLIENT, redirectUris: [callback] }] }));
    const notesAs = (started.notesAs = await startAuthorizationServer({ ...options.notesAs, users, clients: [{ ...UPSTREAM_CLIENT, redirectUris: [upstreamCallback] }] }));
    const notes = (started.notes = await startNotesServer({ issuer: notesAs.issuer }));
    notesAs.addResource(notes.url, { scopes: NOTES_SCOPES, ...options.notesResource });
    return {
      port,
      origin,
      callback,
      upstreamCallback,
      gatewayAs,
      notesAs,
      notes,
      storeDir: join(tempDir, 'tokens'),
      tempDir,
      trustGateway: (resource) => gatewayAs.addResource(resource, { scopes: ['mcp'] }),
      callerToken: (resource, sub) => gatewayAs.issueAccessToken({ resource, scope: 'mcp', sub }),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * The settings of a gateway in front of the notes example alone, in connected mode with the pre-registered client,
 * asking for `scope` (default read and write).
 */
export function singleUpstreamSettings(parts: ConnectedAccountsParts, scope = 'notes:read notes:write'): Record<string, string> {
  return {
    MCP_AUTH_ISSUER: parts.gatewayAs.issuer,
    HOST: '127.0.0.1',
    PORT: String(parts.port),
    MCP_AUTH_UPSTREAM: parts.notes.url,
    MCP_AUTH_UPSTREAM_AUTH: 'connected',
    MCP_AUTH_UPSTREAM_CLIENT_ID: UPSTREAM_CLIENT.clientId,
    MCP_AUTH_UPSTREAM_CLIENT_SECRET: UPSTREAM_CLIENT.clientSecret,
    MCP_AUTH_UPSTREAM_SCOPE: scope,
    MCP_AUTH_TOKEN_STORE: parts.storeDir,
    MCP_AUTH_TOKEN_STORE_SECRET: STORE_KEY,
    MCP_AUTH_LOGIN_CLIENT_ID: LOGIN_CLIENT.clientId,
    MCP_AUTH_LOGIN_CLIENT_SECRET: LOGIN_CLIENT.clientSecret,
  };
}

/**
 * Starts a gateway with `settings` (e.g. {@link singleUpstreamSettings} and more), its log lines dropped, and lets the
 * gateway's authorization server issue tokens for it. The caller shuts it down.
 */
export async function startConnectedGateway(parts: ConnectedAccountsParts, settings: Record<string, string>): Promise<RunningGateway> {
  const gateway = await startGateway(loadGatewayConfig(settings), { log: () => undefined, warn: () => undefined });
  parts.trustGateway(gateway.resource);
  return gateway;
}

/** What an authorization server issued, seen from its side (`grant.success`), for checks that no token leaks. */
export interface IssuedTokens {
  /** Every access token and refresh token it issued, in order. */
  readonly tokens: string[];
  /** Refresh tokens among them. */
  readonly refreshTokens: string[];
  /** Successful token requests by grant type. */
  readonly grants: Map<string, number>;
}

/** Records every token `as` issues from now on. */
export function watchIssuedTokens(as: AuthorizationServer): IssuedTokens {
  const issued: IssuedTokens = { tokens: [], refreshTokens: [], grants: new Map() };
  as.provider.on('grant.success', (ctx: unknown) => {
    const { oidc, body } = ctx as { oidc: { params?: { grant_type?: unknown } }; body?: { access_token?: unknown; refresh_token?: unknown } };
    const type = String(oidc.params?.grant_type);
    issued.grants.set(type, (issued.grants.get(type) ?? 0) + 1);
    if (typeof body?.access_token === 'string') issued.tokens.push(body.access_token);
    if (typeof body?.refresh_token === 'string') {
      issued.tokens.push(body.refresh_token);
      issued.refreshTokens.push(body.refresh_token);
    }
  });
  return issued;
}

/**
 * Whether `token` is active at `as`, asked by RFC 7662 introspection with `as`'s own service client (5 s timeout):
 * how a test sees that a refresh token was rotated out or revoked at the authorization server.
 *
 * @example
 * assert.equal(await tokenActive(parts.notesAs, record.refreshToken), false, 'revoked');
 */
export async function tokenActive(as: AuthorizationServer, token: string): Promise<boolean> {
  const { clientId, clientSecret } = as.serviceClient;
  const response = await fetch(`${as.issuer}/token/introspection`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}` },
    body: new URLSearchParams({ token }),
    signal: AbortSignal.timeout(5_000),
  });
  return ((await response.json()) as { active: boolean }).active;
}

/** A client of a connected gateway's endpoint that opens 2025 sessions: see {@link connectedSessionClient}. */
export interface ConnectedSessionClient {
  /** Sends `user`'s `initialize` (asserting 200) and gives their token, the session id and the result. */
  initialize(user: string): Promise<{ token: string; sessionId: string; result: Record<string, unknown> }>;
  /** Sends `method` within the session. */
  request(token: string, sessionId: string, method: string, params?: object): Promise<HttpAnswer>;
}

/**
 * Opens sessions on the gateway `gateway()` returns, of the parts `parts()` returns (both read at each call: a test
 * starts them in its hooks, and may start another gateway), speaking `protocolVersion`, with ids of its own.
 *
 * @example
 * const client = connectedSessionClient(() => parts, () => gateway!, '2025-11-25');
 * const { token, sessionId } = await client.initialize('alice');
 */
export function connectedSessionClient(parts: () => ConnectedAccountsParts, gateway: () => RunningGateway, protocolVersion: string): ConnectedSessionClient {
  let nextId = 1;
  return {
    async initialize(user) {
      const token = await parts().callerToken(gateway().resource, user);
      const message = { jsonrpc: '2.0', id: nextId++, method: 'initialize', params: { protocolVersion, capabilities: {}, clientInfo: { name: 'test', version: '1' } } };
      const answer = await postMcp(`${parts().origin}/mcp`, message, token);
      assert.equal(answer.status, 200, answer.text);
      return { token, sessionId: String(answer.headers['mcp-session-id']), result: answer.json.result };
    },
    request: (token, sessionId, method, params = {}) =>
      postMcp(`${parts().origin}/mcp`, { jsonrpc: '2.0', id: nextId++, method, params }, token, { 'mcp-protocol-version': protocolVersion, 'mcp-session-id': sessionId }),
  };
}

/**
 * The connected-accounts parts with a tools-only upstream protected by the notes authorization server, and the
 * settings of a single-upstream gateway in front of it.
 */
export async function startToolsOnlyConnectedParts(
  options: ToolsOnlyUpstreamOptions = {},
): Promise<{ parts: ConnectedAccountsParts; upstream: ToolsOnlyUpstream; settings: Record<string, string>; close(gateway?: RunningGateway): Promise<void> }> {
  const parts = await startConnectedAccountsParts();
  const upstream = await startToolsOnlyUpstream(options);
  parts.notesAs.addResource(upstream.url, { scopes: NOTES_SCOPES });
  const settings = { ...singleUpstreamSettings(parts), MCP_AUTH_UPSTREAM: upstream.url, MCP_AUTH_UPSTREAM_ISSUER: parts.notesAs.issuer, MCP_AUTH_UPSTREAM_RESOURCE: upstream.url };
  // Shuts `gateway` down (when one was started), then the upstream and the parts.
  const close = async (gateway?: RunningGateway): Promise<void> => {
    await gateway?.shutdown();
    upstream.close();
    await parts.close();
  };
  return { parts, upstream, settings, close };
}
