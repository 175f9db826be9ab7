// The SDK 2.x adapter: examples/sdk2-server.ts (McpServer.registerTool from @modelcontextprotocol/server) behind
// the guard, with a real oidc-provider issuing RFC 8707 JWT access tokens, driven by raw HTTP in both protocol
// eras and by the SDK 1.x client.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ServerContext } from '@modelcontextprotocol/server';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { createSdk2NotesServer, startSdk2NotesServer, type RunningSdk2NotesServer, type Sdk2NotesServerOptions } from '../../examples/sdk2-server.js';
import { ConfigurationError } from '../../src/core/kernel/errors.js';
import { sdk2McpHandler } from '../../src/sdk/sdk2.js';
import { send, type HttpAnswer, messages } from '../helpers/http-client.js';
import { ownerKey } from '../../examples/notes-server.js';

const NOTES_SCOPES = ['notes:read', 'notes:write', 'notes:admin'];
const LEGACY = '2025-11-25';
const MODERN = '2026-07-28';

let as: AuthorizationServer;
before(async () => {
  as = await startAuthorizationServer();
});
after(async () => {
  await as?.close();
});

/** What the server factory and the test tools saw, per server. */
interface Observed {
  /** Requests the factory was called for (one per request that reached the SDK). */
  factoryCalls: Array<{ era: string; authorization: string | null; cookie: string | null; sub: unknown }>;
  /** Resolves each time a `wait` tool call starts, with the tool's abort signal. */
  waiting: Array<(signal: AbortSignal) => void>;
}

async function startServer(options: Partial<Sdk2NotesServerOptions> = {}): Promise<RunningSdk2NotesServer & { observed: Observed }> {
  const observed: Observed = { factoryCalls: [], waiting: [] };
  const server = await startSdk2NotesServer({
    issuer: as.issuer,
    ...options,
    createServer: (store, context) => {
      // The SDK calls the factory first for every request it serves, with the request it was given.
      observed.factoryCalls.push({
        era: context.era,
        authorization: context.requestInfo?.headers.get('authorization') ?? null,
        cookie: context.requestInfo?.headers.get('cookie') ?? null,
        sub: (context.authInfo?.extra as { sub?: string } | undefined)?.sub,
      });
      const mcp = createSdk2NotesServer(store);
      // Test-only tools (the notes policy lets admins call tools it does not name).
      mcp.registerTool('peek', { description: 'What the tool sees of the HTTP request.' }, (ctx: ServerContext) => {
        const req = ctx.http?.req;
        const auth = ctx.http?.authInfo;
        return {
          content: [{ type: 'text', text: JSON.stringify({
            authorization: req?.headers.get('authorization') ?? null,
            cookie: req?.headers.get('cookie') ?? null,
            url: req?.url ?? null,
            resourceMetadataUrl: auth?.resourceMetadataUrl ?? null,
            sub: (auth?.extra as { sub?: string } | undefined)?.sub ?? null,
          }) }],
        };
      });
      mcp.registerTool('wait', { description: 'Waits until the request is cancelled.' }, async (ctx: ServerContext) => {
        const signal = ctx.mcpReq.signal;
        observed.waiting.shift()?.(signal);
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
        return { content: [{ type: 'text', text: 'cancelled' }] };
      });
      return mcp;
    },
  });
  as.addResource(server.url, { scopes: NOTES_SCOPES });
  await server.router.guard.ready();
  return Object.assign(server, { observed });
}

const token = (server: RunningSdk2NotesServer, scope: string, sub = 'alice') => as.issueAccessToken({ resource: server.url, scope, sub });


const answerTo = (answer: HttpAnswer, id: number) => messages(answer).find((m) => m.id === id);

/** A 2026-07-28 request: `_meta` in the body, mirrored in MCP-Protocol-Version / Mcp-Method / Mcp-Name. */
function modern(method: string, id: number, params: Record<string, unknown> = {}) {
  const body = {
    jsonrpc: '2.0',
    id,
    method,
    params: {
      ...params,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': MODERN,
        'io.modelcontextprotocol/clientCapabilities': {},
        'io.modelcontextprotocol/clientInfo': { name: 'sdk2-test', version: '1.0.0' },
      },
    },
  };
  const headers: Record<string, string> = { 'mcp-protocol-version': MODERN, 'mcp-method': method };
  if (typeof params.name === 'string') headers['mcp-name'] = params.name;
  return { body, headers };
}

/** A 2025-11-25 request (after initialize, as a stateless client sends it). */
function legacy(method: string, id: number, params?: Record<string, unknown>) {
  return { body: { jsonrpc: '2.0', id, method, ...(params && { params }) }, headers: { 'mcp-protocol-version': LEGACY } };
}

function post(server: RunningSdk2NotesServer, accessToken: string, message: { body: unknown; headers: Record<string, string> }, extra: Record<string, string> = {}): Promise<HttpAnswer> {
  return send(server.url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${accessToken}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...message.headers,
      ...extra,
    },
    body: JSON.stringify(message.body),
  });
}

const initialize = { body: { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'sdk2-test', version: '1' } } }, headers: {} };
const textOf = (response: any): string => response.result.content[0].text;
const toolNames = (response: any): string[] => response.result.tools.map((t: { name: string }) => t.name);
const ALL_NOTES_TOOLS = ['whoami', 'notes_list', 'notes_add', 'notes_clear'];

for (const responseMode of ['auto', 'sse'] as const) {
  describe(`SDK 2.x server, 2026-07-28 answers in ${responseMode === 'auto' ? 'JSON (auto)' : 'SSE'}`, () => {
    let server: Awaited<ReturnType<typeof startServer>>;
    before(async () => {
      server = await startServer({ responseMode });
    });
    after(async () => {
      await server?.close();
    });

    const expectType = responseMode === 'auto' ? /^application\/json/ : /^text\/event-stream/;

    test('2026-07-28 stateless: whoami returns the token\'s subject through ctx.http.authInfo', async () => {
      const readToken = await token(server, 'notes:read');
      const answer = await post(server, readToken, modern('tools/call', 2, { name: 'whoami', arguments: {} }));
      assert.equal(answer.status, 200);
      assert.match(String(answer.headers['content-type']), expectType);
      const response = answerTo(answer, 2);
      assert.equal(response.result.resultType, 'complete');
      assert.deepEqual(JSON.parse(textOf(response)), { subject: 'alice', client: 'mcp-oauth-guard-service', scopes: ['notes:read'] });
    });

    test('2026-07-28 stateless: tools/list is filtered by the caller\'s scopes and marked private', async () => {
      const readToken = await token(server, 'notes:read');
      const answer = await post(server, readToken, modern('tools/list', 3));
      assert.equal(answer.status, 200);
      assert.match(String(answer.headers['content-type']), expectType);
      if (responseMode === 'auto') assert.equal(Number(answer.headers['content-length']), Buffer.byteLength(answer.text));
      const response = answerTo(answer, 3);
      assert.deepEqual(toolNames(response), ['whoami', 'notes_list']);
      assert.equal(response.result.cacheScope, 'private');
      const admin = await token(server, 'notes:admin', 'carol');
      const all = answerTo(await post(server, admin, modern('tools/list', 4)), 4);
      assert.deepEqual(toolNames(all), [...ALL_NOTES_TOOLS, 'peek', 'wait']);
    });

    test('2025-11-25: initialize, then tools/call and a filtered tools/list (SSE, the SDK\'s stateless fallback)', async () => {
      const readToken = await token(server, 'notes:read', 'bob');
      const init = await post(server, readToken, initialize);
      assert.equal(init.status, 200);
      const initResult = answerTo(init, 0).result;
      assert.equal(initResult.protocolVersion, LEGACY);
      assert.equal(initResult.serverInfo.name, 'notes-sdk2-example');
      assert.equal((await post(server, readToken, { body: { jsonrpc: '2.0', method: 'notifications/initialized' }, headers: { 'mcp-protocol-version': LEGACY } })).status, 202);
      const who = await post(server, readToken, legacy('tools/call', 1, { name: 'whoami', arguments: {} }));
      assert.equal(who.status, 200);
      assert.match(String(who.headers['content-type']), /^text\/event-stream/);
      assert.equal(JSON.parse(textOf(answerTo(who, 1))).subject, 'bob');
      const list = await post(server, readToken, legacy('tools/list', 2));
      assert.match(String(list.headers['content-type']), /^text\/event-stream/);
      assert.deepEqual(toolNames(answerTo(list, 2)), ['whoami', 'notes_list']);
    });

    test('notes_add with a read token: 403 step-up before the SDK is reached, in both eras; then it works', async () => {
      for (const [era, build] of [['modern', modern], ['legacy', legacy]] as const) {
        const sub = `dave-${era}`;
        const readToken = await token(server, 'notes:read', sub);
        const before = server.observed.factoryCalls.length;
        const denied = await post(server, readToken, build('tools/call', 7, { name: 'notes_add', arguments: { text: 'x' } }));
        assert.equal(denied.status, 403, era);
        const challenge = String(denied.headers['www-authenticate']);
        assert.match(challenge, /^Bearer /);
        assert.match(challenge, /error="insufficient_scope"/);
        assert.deepEqual(/\bscope="([^"]*)"/.exec(challenge)?.[1]?.split(' ').sort(), ['notes:read', 'notes:write']);
        assert.match(challenge, new RegExp(`resource_metadata="${server.router.guard.resourceMetadataUrl}"`));
        assert.equal(denied.json.id, 7);
        assert.equal(server.observed.factoryCalls.length, before, `${era}: no SDK server was created`);
        assert.deepEqual(server.store.list(ownerKey(as.issuer, sub)), []);
        const writeToken = await token(server, 'notes:read notes:write', sub);
        const ok = await post(server, writeToken, build('tools/call', 8, { name: 'notes_add', arguments: { text: 'hello' } }));
        assert.equal(textOf(answerTo(ok, 8)), 'added note #1', era);
        assert.deepEqual(server.store.list(ownerKey(as.issuer, sub)), ['hello']);
      }
    });

    test('the SDK never sees the Authorization or Cookie header, only the verified caller', async () => {
      const admin = await token(server, 'notes:admin', 'erin');
      for (const build of [modern, legacy]) {
        const answer = await post(server, admin, build('tools/call', 5, { name: 'peek', arguments: {} }), { cookie: 'sid=abc' });
        assert.equal(answer.status, 200);
        assert.deepEqual(JSON.parse(textOf(answerTo(answer, 5))), {
          authorization: null,
          cookie: null,
          url: server.url,
          resourceMetadataUrl: server.router.guard.resourceMetadataUrl,
          sub: 'erin',
        });
      }
      assert.ok(server.observed.factoryCalls.length > 0);
      for (const seen of server.observed.factoryCalls) {
        assert.equal(seen.authorization, null);
        assert.equal(seen.cookie, null);
      }
    });

    test('a client that disconnects aborts the tool\'s signal, in both eras', async () => {
      const admin = await token(server, 'notes:admin', 'frank');
      for (const build of [modern, legacy]) {
        const started = new Promise<AbortSignal>((resolve) => server.observed.waiting.push(resolve));
        const message = build('tools/call', 6, { name: 'wait', arguments: {} });
        const req = httpRequest(server.url, {
          method: 'POST',
          headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...message.headers },
        });
        req.on('error', () => {});
        req.end(JSON.stringify(message.body));
        const signal = await started;
        assert.equal(signal.aborted, false);
        const aborted = new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
        req.destroy();
        await aborted;
      }
    });

    test('a 2026-07-28 request whose Mcp-Name disagrees with the body: 400 -32020 from the guard', async () => {
      const readToken = await token(server, 'notes:read');
      const message = modern('tools/call', 9, { name: 'whoami', arguments: {} });
      const before = server.observed.factoryCalls.length;
      const answer = await post(server, readToken, message, { 'mcp-name': 'notes_list' });
      assert.equal(answer.status, 400);
      assert.equal(answer.json.error.code, -32020);
      assert.equal(server.observed.factoryCalls.length, before);
    });

    test('GET and DELETE get 405 from the guard (the SDK 2.x entry is stateless)', async () => {
      const readToken = await token(server, 'notes:read');
      for (const method of ['GET', 'DELETE']) {
        const answer = await send(server.url, { method, headers: { authorization: `Bearer ${readToken}`, accept: 'text/event-stream' } });
        assert.equal(answer.status, 405, method);
        assert.equal(answer.headers.allow, 'POST, OPTIONS');
      }
    });
  });
}

describe('SDK 2.x server with the SDK 1.x client (2025-11-25)', () => {
  let server: Awaited<ReturnType<typeof startServer>>;
  before(async () => {
    server = await startServer();
  });
  after(async () => {
    await server?.close();
  });

  test('callTool reaches ctx.http.authInfo; listTools is filtered by scope', async () => {
    const readToken = await token(server, 'notes:read');
    const transport = new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: { authorization: `Bearer ${readToken}` } } });
    const client = new Client({ name: 'sdk1-client', version: '1.0.0' });
    await client.connect(transport);
    try {
      const who = (await client.callTool({ name: 'whoami', arguments: {} })) as { content: Array<{ text: string }> };
      assert.deepEqual(JSON.parse(who.content[0]!.text), { subject: 'alice', client: 'mcp-oauth-guard-service', scopes: ['notes:read'] });
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name), ['whoami', 'notes_list']);
    } finally {
      await client.close();
    }
  });
});

describe('sdk2McpHandler options', () => {
  test('createServer is required', () => {
    assert.throws(() => sdk2McpHandler({} as never), (error: unknown) => error instanceof ConfigurationError && /options\.createServer/.test(error.message));
  });
});
