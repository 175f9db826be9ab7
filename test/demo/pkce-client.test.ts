import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { DEMO_SCOPES, startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { startNotesServer, type RunningNotesServer } from '../../examples/notes-server.js';
import { McpHttpError } from '../../examples/demo/mcp-errors.js';
import { McpOAuthClient } from '../../examples/demo/mcp-oauth-client.js';
import { canonicalResourceUrl, protectedResourceMetadataCandidates } from '../../examples/demo/resource-url.js';
import { runPkceClientFlow } from '../../examples/demo/run-pkce-client-flow.js';
import { redactToken, type TranscriptEvent } from '../../examples/demo/transcript.js';
import { defaultAuthorizationMode } from '../../examples/demo/user-sign-in.js';
import { findBearerChallenge, findChallenge, parseWwwAuthenticate } from '../../examples/demo/www-authenticate-parse.js';

describe('WWW-Authenticate parsing', () => {
  it('reads the MCP Bearer challenge', () => {
    const [challenge] = parseWwwAuthenticate(
      'Bearer resource_metadata="http://127.0.0.1:9300/.well-known/oauth-protected-resource/mcp", scope="notes:read notes:write"',
    );
    assert.deepEqual(challenge, {
      scheme: 'Bearer',
      params: {
        resource_metadata: 'http://127.0.0.1:9300/.well-known/oauth-protected-resource/mcp',
        scope: 'notes:read notes:write',
      },
    });
  });

  it('handles several challenges, token68, unquoted values, escapes, commas in quotes and case', () => {
    const challenges = parseWwwAuthenticate(
      'Basic abc123==, DPoP algs="ES256 EdDSA", BEARER Error=insufficient_scope, error_description="needs \\"write\\", sorry", scope=notes:write',
    );
    assert.equal(challenges.length, 3);
    assert.deepEqual(challenges[0], { scheme: 'Basic', params: {}, token68: 'abc123==' });
    assert.deepEqual(challenges[1], { scheme: 'DPoP', params: { algs: 'ES256 EdDSA' } });
    assert.deepEqual(challenges[2], {
      scheme: 'BEARER',
      params: { error: 'insufficient_scope', error_description: 'needs "write", sorry', scope: 'notes:write' },
    });
    assert.equal(findBearerChallenge('Basic realm="x", Bearer realm="y"')?.params.realm, 'y');
    assert.equal(findBearerChallenge('Basic realm="x"'), undefined);
    assert.equal(findBearerChallenge(null), undefined);
    assert.deepEqual(parseWwwAuthenticate('Bearer'), [{ scheme: 'Bearer', params: {} }]);
  });

  it('finds the challenge of the scheme a DPoP client uses, beside the Bearer one', () => {
    const header = 'Bearer scope="a", resource_metadata="http://x/m", DPoP error="invalid_dpop_proof", algs="ES256", scope="a", resource_metadata="http://x/m"';
    assert.equal(findChallenge(header, 'dpop')?.params.error, 'invalid_dpop_proof');
    assert.equal(findChallenge(header, 'Bearer')?.params.error, undefined);
    assert.equal(findChallenge('Bearer realm="x"', 'DPoP'), undefined);
  });

  it('computes canonical resource URLs and well-known candidates', () => {
    assert.equal(canonicalResourceUrl('HTTP://Example.COM:8443/mcp/'), 'http://example.com:8443/mcp');
    assert.equal(canonicalResourceUrl('https://example.com/'), 'https://example.com');
    assert.equal(canonicalResourceUrl('https://example.com/mcp#frag'), 'https://example.com/mcp');
    assert.deepEqual(protectedResourceMetadataCandidates('https://example.com/a/mcp'), [
      'https://example.com/.well-known/oauth-protected-resource/a/mcp',
      'https://example.com/.well-known/oauth-protected-resource',
    ]);
    assert.deepEqual(protectedResourceMetadataCandidates('https://example.com'), [
      'https://example.com/.well-known/oauth-protected-resource',
    ]);
    assert.equal(redactToken('eyJhbGciOiJFUzI1NiJ9.payload.sig'), 'eyJhbG…');
    assert.equal(defaultAuthorizationMode({ CI: 'true', DISPLAY: ':0' }, 'linux'), 'headless');
    assert.equal(defaultAuthorizationMode({}, 'linux'), 'headless');
    assert.equal(defaultAuthorizationMode({ DISPLAY: ':0' }, 'linux'), 'browser');
    assert.equal(defaultAuthorizationMode({}, 'darwin'), 'browser');
  });
});

interface StandInOptions {
  /** Put resource_metadata in the 401 challenge. */
  challengeWithMetadataUrl: boolean;
  /** Serve metadata naming this resource instead of the real one. */
  resourceOverride?: string;
}

/**
 * A minimal protected MCP endpoint: RFC 9728 metadata, 401/403 Bearer challenges, JWT checks with jose.
 * tools/list answers as an event stream, everything else as JSON, to exercise both parsers.
 */
async function startStandIn(as: AuthorizationServer, options: StandInOptions) {
  const seenTokens: string[] = [];
  const jwks = createRemoteJWKSet(new URL(as.jwksUri));
  const server: Server = createServer((req, res) => {
    handle(req).then(
      ({ status, headers = {}, body }) => {
        res.writeHead(status, headers);
        res.end(body);
      },
      (error: unknown) => {
        res.writeHead(500);
        res.end(String(error));
      },
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const url = `${origin}/mcp`;
  const metadataUrl = `${origin}/.well-known/oauth-protected-resource/mcp`;
  const challenge = (extra: string) =>
    `Bearer ${extra}${options.challengeWithMetadataUrl ? `resource_metadata="${metadataUrl}", ` : ''}scope="notes:read"`;

  async function handle(req: IncomingMessage): Promise<{ status: number; headers?: Record<string, string>; body?: string }> {
    if (req.method === 'GET' && req.url === '/.well-known/oauth-protected-resource/mcp') {
      return {
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          resource: options.resourceOverride ?? url,
          authorization_servers: [as.issuer],
          scopes_supported: ['notes:read', 'notes:write'],
          bearer_methods_supported: ['header'],
        }),
      };
    }
    if (req.method !== 'POST' || req.url !== '/mcp') return { status: 404 };
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    const message = JSON.parse(Buffer.concat(chunks).toString()) as { id?: number; method: string; params?: { name?: string } };
    const token = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
    if (!token) return { status: 401, headers: { 'www-authenticate': challenge('') } };
    seenTokens.push(token);
    let scopes: string[];
    try {
      const { payload } = await jwtVerify(token, jwks, { issuer: as.issuer, audience: url });
      scopes = String(payload.scope ?? '').split(' ');
    } catch {
      return { status: 401, headers: { 'www-authenticate': challenge('error="invalid_token", ') } };
    }
    if (message.method === 'tools/call' && message.params?.name === 'write' && !scopes.includes('notes:write')) {
      return {
        status: 403,
        headers: {
          'www-authenticate': `Bearer error="insufficient_scope", scope="notes:read notes:write", resource_metadata="${metadataUrl}", error_description="write needs notes:write"`,
        },
      };
    }
    if (message.id === undefined) return { status: 202 };
    const json = (result: unknown) => JSON.stringify({ jsonrpc: '2.0', id: message.id, result });
    switch (message.method) {
      case 'initialize':
        return {
          status: 200,
          headers: { 'content-type': 'application/json', 'mcp-session-id': 'session-1' },
          body: json({ protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'stand-in', version: '1' } }),
        };
      case 'tools/list':
        return {
          status: 200,
          headers: { 'content-type': 'text/event-stream' },
          body: `event: message\ndata: ${json({ tools: [{ name: 'read' }, { name: 'write' }] })}\n\n`,
        };
      case 'tools/call':
        return { status: 200, headers: { 'content-type': 'application/json' }, body: json({ content: [{ type: 'text', text: `did ${message.params?.name}` }] }) };
      default:
        return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'no such method' } }) };
    }
  }

  return {
    url,
    seenTokens,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('PKCE demo client against a stand-in MCP server', () => {
  let as: AuthorizationServer;
  before(async () => {
    as = await startAuthorizationServer();
  });
  after(() => as.close());

  it('goes from a bare URL to tool calls, stepping up once, and prints tokens only redacted', async () => {
    const standIn = await startStandIn(as, { challengeWithMetadataUrl: true });
    as.addResource(standIn.url, { scopes: DEMO_SCOPES });
    const events: TranscriptEvent[] = [];
    try {
      const client = new McpOAuthClient({ mcpUrl: standIn.url, mode: 'headless', onEvent: (e) => events.push(e) });
      await client.connect();
      assert.equal(client.grantedScope, 'notes:read');
      assert.deepEqual((await client.listTools()).map((t) => t.name), ['read', 'write']);
      assert.deepEqual(await client.callTool('write', {}), { content: [{ type: 'text', text: 'did write' }] });
      assert.equal(client.grantedScope, 'notes:read notes:write');
      assert.equal(client.accessTokenClaims?.aud, standIn.url);
      assert.equal(client.accessTokenClaims?.sub, 'demo');

      const steps = events.map((e) => e.step);
      for (const step of ['probe', 'resource-metadata', 'authorization-server', 'registration', 'authorization-url', 'callback', 'token', 'step-up'] as const) {
        assert.ok(steps.includes(step), `transcript lacks ${step}: ${steps.join(' ')}`);
      }
      // One registration serves the first authorization and the step-up.
      assert.equal(steps.filter((s) => s === 'registration').length, 1);
      assert.equal(steps.filter((s) => s === 'token').length, 2);
      const probe = events.find((e) => e.step === 'probe')!;
      assert.match(String(probe.data?.wwwAuthenticate), /^Bearer resource_metadata=/);
      const authUrl = new URL(String(events.find((e) => e.step === 'authorization-url')!.data?.url));
      assert.equal(authUrl.searchParams.get('resource'), standIn.url);
      assert.equal(authUrl.searchParams.get('code_challenge_method'), 'S256');
      assert.equal(authUrl.searchParams.get('scope'), 'notes:read');

      const transcript = JSON.stringify(events);
      assert.ok(standIn.seenTokens.length >= 3);
      for (const token of new Set(standIn.seenTokens)) {
        assert.ok(!transcript.includes(token), 'a full access token leaked into the transcript');
        assert.ok(!transcript.includes(token.slice(0, 20)));
      }
      assert.ok(transcript.includes('…'));
    } finally {
      await standIn.close();
    }
  });

  it('falls back to the well-known URL when the challenge has no resource_metadata', async () => {
    const standIn = await startStandIn(as, { challengeWithMetadataUrl: false });
    as.addResource(standIn.url, { scopes: DEMO_SCOPES });
    const events: TranscriptEvent[] = [];
    try {
      const result = await runPkceClientFlow({ mcpUrl: standIn.url, mode: 'headless', onEvent: (e) => events.push(e), call: { name: 'read' } });
      assert.deepEqual(result.tools.map((t) => t.name), ['read', 'write']);
      assert.equal(result.grantedScope, 'notes:read');
      assert.match(events.find((e) => e.step === 'resource-metadata')!.message, /oauth-protected-resource\/mcp$/);
    } finally {
      await standIn.close();
    }
  });

  it('refuses metadata that names another resource', async () => {
    const standIn = await startStandIn(as, { challengeWithMetadataUrl: true, resourceOverride: 'http://127.0.0.1:1/elsewhere' });
    try {
      const client = new McpOAuthClient({ mcpUrl: standIn.url, mode: 'headless' });
      await assert.rejects(client.connect(), /names resource http:\/\/127\.0\.0\.1:1\/elsewhere, expected/);
      assert.deepEqual(standIn.seenTokens, []);
    } finally {
      await standIn.close();
    }
  });

  it('gives up with the 403 when step-up does not help', async () => {
    const standIn = await startStandIn(as, { challengeWithMetadataUrl: true });
    // The AS will not grant notes:write for this resource, so the re-authorized token still lacks it.
    as.addResource(standIn.url, { scopes: ['notes:read'] });
    try {
      const client = new McpOAuthClient({ mcpUrl: standIn.url, mode: 'headless' });
      await client.connect();
      await assert.rejects(client.callTool('write'), (error: unknown) => {
        assert.ok(error instanceof McpHttpError);
        assert.equal(error.status, 403);
        assert.match(error.message, /write needs notes:write/);
        return true;
      });
    } finally {
      await standIn.close();
    }
  });

  it('opens the browser callback in browser mode (simulated by the scripted user)', async () => {
    const standIn = await startStandIn(as, { challengeWithMetadataUrl: true });
    as.addResource(standIn.url, { scopes: DEMO_SCOPES });
    const opened: string[] = [];
    try {
      const { signInToDevelopmentServer: authorizeAsHeadlessUser } = await import('../../src/client/index.js');
      const client = new McpOAuthClient({
        mcpUrl: standIn.url,
        mode: 'browser',
        openBrowser: (url) => {
          opened.push(url);
          const redirectUri = new URL(url).searchParams.get('redirect_uri')!;
          // Not awaited: a real browser runs on its own while the client waits on its loopback listener.
          void authorizeAsHeadlessUser(url, { username: 'demo', password: 'demo-password', redirectUri });
        },
      });
      await client.connect();
      assert.equal(opened.length, 1);
      assert.equal(client.grantedScope, 'notes:read');
    } finally {
      await standIn.close();
    }
  });
});

describe('PKCE demo client against the notes example behind mcpOAuthGuard', () => {
  let as: AuthorizationServer;
  let notes: RunningNotesServer;
  before(async () => {
    as = await startAuthorizationServer();
    notes = await startNotesServer({ issuer: as.issuer });
    as.addResource(notes.url, { scopes: DEMO_SCOPES });
  });
  after(async () => {
    await notes?.close();
    await as?.close();
  });

  it('authorizes with the challenged scope, then steps up for notes_add', async () => {
    const events: TranscriptEvent[] = [];
    const client = new McpOAuthClient({ mcpUrl: notes.url, mode: 'headless', onEvent: (e) => events.push(e) });
    await client.connect();
    assert.equal(client.grantedScope, 'notes:read');
    const tools = (await client.listTools()).map((t) => t.name);
    assert.ok(tools.includes('notes_list'), tools.join());
    await client.callTool('notes_add', { text: 'hello' });
    assert.deepEqual(new Set(client.grantedScope?.split(' ')), new Set(['notes:read', 'notes:write']));
    const listed = (await client.callTool('notes_list')) as { content: Array<{ text: string }> };
    assert.match(JSON.stringify(listed), /hello/);
    assert.equal(events.filter((e) => e.step === 'step-up').length, 1);
  });
});
