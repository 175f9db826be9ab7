// The SDK adapter: examples/sdk-server.ts (McpServer.registerTool) behind the guard, with a real oidc-provider
// issuing RFC 8707 JWT access tokens, driven by raw HTTP and by the SDK's own client.
import assert from 'node:assert/strict';
import { createServer as createHttpServer } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { startSdkNotesServer, type RunningSdkNotesServer } from '../../examples/sdk-server.js';
import { sdkStreamableHttpHandler, type SessionRefusedEvent } from '../../src/sdk/index.js';
import type { AuthInfo } from '../../src/core/kernel/auth-info.js';
import type { JsonRpcMessage } from '../../src/core/wire/jsonrpc.js';
import { ConfigurationError } from '../../src/core/kernel/errors.js';
import { send, type HttpAnswer, messages } from '../helpers/http-client.js';
import { SequentialEventStore } from '../helpers/sequential-event-store.js';
import { ownerKey } from '../../examples/notes-server.js';

const NOTES_SCOPES = ['notes:read', 'notes:write', 'notes:admin'];
const PROTOCOL = '2025-11-25';

let as: AuthorizationServer;
let otherClientId: string;

before(async () => {
  as = await startAuthorizationServer();
  // A second client, registered like any MCP client would (RFC 7591), to mint a same-user other-client token.
  const reg = await fetch(`${as.issuer}/reg`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: ['http://127.0.0.1:9/cb'], token_endpoint_auth_method: 'none', grant_types: ['authorization_code'] }),
  });
  assert.equal(reg.status, 201);
  otherClientId = ((await reg.json()) as { client_id: string }).client_id;
});
after(async () => {
  await as?.close();
});

async function startServer(stateful: boolean, json: boolean): Promise<RunningSdkNotesServer> {
  const server = await startSdkNotesServer({ issuer: as.issuer, stateful, transportOptions: { enableJsonResponse: json } });
  as.addResource(server.url, { scopes: NOTES_SCOPES });
  await server.router.guard.ready();
  return server;
}

const token = (server: RunningSdkNotesServer, scope: string, sub = 'alice', clientId?: string) =>
  as.issueAccessToken({ resource: server.url, scope, sub, ...(clientId ? { clientId } : {}) });


function post(server: RunningSdkNotesServer, accessToken: string, body: unknown, sessionId?: string): Promise<HttpAnswer> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${accessToken}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': PROTOCOL,
  };
  if (sessionId) headers['mcp-session-id'] = sessionId;
  return send(server.url, { method: 'POST', headers, body: JSON.stringify(body) });
}

const initialize = (id: number | string = 0) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'test', version: '1' } },
});
const toolsList = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
const call = (name: string, args: Record<string, unknown> = {}, id = 2) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

/** Connects the SDK's own client with a fixed bearer token. */
async function sdkClient(server: RunningSdkNotesServer, accessToken: string): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(server.url), {
    requestInit: { headers: { authorization: `Bearer ${accessToken}` } },
  });
  const client = new Client({ name: 'sdk-adapter-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

const textOf = (result: unknown): string => ((result as { content: Array<{ text: string }> }).content[0]!.text);

for (const stateful of [false, true]) {
  for (const json of [false, true]) {
    describe(`SDK server ${stateful ? 'stateful' : 'stateless'}, ${json ? 'JSON' : 'SSE'} answers`, () => {
      let server: RunningSdkNotesServer;
      before(async () => {
        server = await startServer(stateful, json);
      });
      after(async () => {
        await server?.close();
      });

      /** Initializes when stateful; returns the session id to send. */
      async function open(accessToken: string): Promise<string | undefined> {
        if (!stateful) return undefined;
        const init = await post(server, accessToken, initialize());
        assert.equal(init.status, 200);
        const sid = init.headers['mcp-session-id'];
        assert.equal(typeof sid, 'string');
        const initialized = await post(server, accessToken, { jsonrpc: '2.0', method: 'notifications/initialized' }, sid as string);
        assert.equal(initialized.status, 202);
        return sid as string;
      }

      test('the SDK client: extra.authInfo reaches the tool; tools/list is filtered by scope', async () => {
        const readToken = await token(server, 'notes:read');
        const { client } = await sdkClient(server, readToken);
        try {
          const who = JSON.parse(textOf(await client.callTool({ name: 'whoami', arguments: {} })));
          assert.deepEqual(who, { subject: 'alice', client: 'mcp-oauth-guard-service', scopes: ['notes:read'] });
          const { tools } = await client.listTools();
          assert.deepEqual(tools.map((t) => t.name), ['whoami', 'notes_list']);
        } finally {
          await client.close();
        }
      });

      test(`raw tools/list answers ${json ? 'application/json' : 'text/event-stream'}, filtered, with a correct length`, async () => {
        const readToken = await token(server, 'notes:read');
        const sid = await open(readToken);
        const answer = await post(server, readToken, toolsList, sid);
        assert.equal(answer.status, 200);
        assert.match(String(answer.headers['content-type']), json ? /^application\/json/ : /^text\/event-stream/);
        if (json) assert.equal(Number(answer.headers['content-length']), Buffer.byteLength(answer.text));
        const [response] = messages(answer).filter((m) => m.id === 1);
        assert.deepEqual(response.result.tools.map((t: { name: string }) => t.name), ['whoami', 'notes_list']);
        const admin = await token(server, 'notes:admin', 'carol');
        const adminSid = await open(admin);
        const all = messages(await post(server, admin, toolsList, adminSid)).find((m) => m.id === 1);
        assert.deepEqual(all.result.tools.map((t: { name: string }) => t.name), ['whoami', 'notes_list', 'notes_add', 'notes_clear']);
      });

      test('notes_add with a read token: 403 insufficient_scope naming granted and needed scopes; the SDK never sees it', async () => {
        const readToken = await token(server, 'notes:read', 'dave');
        const sid = await open(readToken);
        const denied = await post(server, readToken, call('notes_add', { text: 'x' }), sid);
        assert.equal(denied.status, 403);
        const challenge = String(denied.headers['www-authenticate']);
        assert.match(challenge, /^Bearer /);
        assert.match(challenge, /error="insufficient_scope"/);
        const scopes = /\bscope="([^"]*)"/.exec(challenge)?.[1]?.split(' ').sort();
        assert.deepEqual(scopes, ['notes:read', 'notes:write']);
        assert.equal(denied.json.id, 2);
        assert.equal(server.store.list(ownerKey(as.issuer, 'dave')).length, 0);
        // After step-up (a token with notes:write), the call goes through, in the same session when stateful.
        const writeToken = await token(server, 'notes:read notes:write', 'dave');
        const ok = messages(await post(server, writeToken, call('notes_add', { text: 'hello' }), sid)).find((m) => m.id === 2);
        assert.equal(ok.result.content[0].text, 'added note #1');
        assert.deepEqual(server.store.list(ownerKey(as.issuer, 'dave')), ['hello']);
      });

      test('argument errors are tool results with isError', async () => {
        const writeToken = await token(server, 'notes:write', 'erin');
        const sid = await open(writeToken);
        const bad = messages(await post(server, writeToken, call('notes_add', { text: '' }), sid)).find((m) => m.id === 2);
        assert.equal(bad.result.isError, true);
      });

      test('notifications get 202', async () => {
        const readToken = await token(server, 'notes:read');
        const sid = await open(readToken);
        const answer = await post(server, readToken, { jsonrpc: '2.0', method: 'notifications/roots/list_changed' }, sid);
        assert.equal(answer.status, 202);
      });

      test('a request without a token gets 401, session id or not', async () => {
        const answer = await send(server.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': 'anything' },
          body: JSON.stringify(toolsList),
        });
        assert.equal(answer.status, 401);
      });
    });
  }
}

describe('SDK server, stateful sessions', () => {
  let server: RunningSdkNotesServer;
  before(async () => {
    server = await startServer(true, false);
  });
  after(async () => {
    await server?.close();
  });

  async function openSession(accessToken: string): Promise<string> {
    const init = await post(server, accessToken, initialize());
    assert.equal(init.status, 200);
    return init.headers['mcp-session-id'] as string;
  }

  test("another subject's token with a session id gets 404 Session not found, like an unknown id", async () => {
    const alice = await token(server, 'notes:admin', 'alice');
    const sid = await openSession(alice);
    const mallory = await token(server, 'notes:admin', 'mallory');
    const hijack = await post(server, mallory, call('whoami'), sid);
    assert.equal(hijack.status, 404);
    assert.deepEqual(hijack.json, { jsonrpc: '2.0', id: 2, error: { code: -32001, message: 'Session not found' } });
    const unknown = await post(server, mallory, call('whoami'), 'no-such-session');
    assert.equal(unknown.status, 404);
    assert.deepEqual(unknown.json, hijack.json);
    // The owner still uses it.
    const mine = messages(await post(server, alice, call('whoami'), sid)).find((m) => m.id === 2);
    assert.equal(JSON.parse(mine.result.content[0].text).subject, 'alice');
  });

  test('the same user through another client may not use the session either', async () => {
    const alice = await token(server, 'notes:read', 'alice');
    const sid = await openSession(alice);
    const viaOtherClient = await token(server, 'notes:read', 'alice', otherClientId);
    assert.equal((await post(server, viaOtherClient, call('whoami'), sid)).status, 404);
  });

  test('a refreshed token of the same caller keeps the session', async () => {
    const first = await token(server, 'notes:read', 'frank');
    const sid = await openSession(first);
    const second = await token(server, 'notes:read notes:write', 'frank');
    const answer = messages(await post(server, second, call('whoami'), sid)).find((m) => m.id === 2);
    assert.deepEqual(JSON.parse(answer.result.content[0].text).scopes, ['notes:read', 'notes:write']);
  });

  test('requests other than initialize without Mcp-Session-Id get 400', async () => {
    const alice = await token(server, 'notes:read');
    const answer = await post(server, alice, toolsList);
    assert.equal(answer.status, 400);
    assert.equal(answer.json.error.message, 'Bad Request: Mcp-Session-Id header is required');
  });

  test('GET opens the standalone stream for the owner only; DELETE ends the session', async () => {
    const alice = await token(server, 'notes:read', 'grace');
    const sid = await openSession(alice);
    const before = server.handler.sessionCount;
    const mallory = await token(server, 'notes:read', 'mallory');
    const stolen = await send(server.url, {
      method: 'GET',
      headers: { authorization: `Bearer ${mallory}`, accept: 'text/event-stream', 'mcp-session-id': sid },
    });
    assert.equal(stolen.status, 404);
    // The owner's GET stream: read the status and headers, then hang up.
    const controller = new AbortController();
    const stream = await fetch(server.url, {
      headers: { authorization: `Bearer ${alice}`, accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': PROTOCOL },
      signal: controller.signal,
    });
    assert.equal(stream.status, 200);
    assert.match(stream.headers.get('content-type') ?? '', /^text\/event-stream/);
    controller.abort();
    await stream.body?.cancel().catch(() => {});

    const otherDelete = await send(server.url, { method: 'DELETE', headers: { authorization: `Bearer ${mallory}`, 'mcp-session-id': sid } });
    assert.equal(otherDelete.status, 404);
    const del = await send(server.url, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${alice}`, 'mcp-session-id': sid, 'mcp-protocol-version': PROTOCOL },
    });
    assert.equal(del.status, 200);
    assert.equal(server.handler.sessionCount, before - 1);
    const after = await post(server, alice, toolsList, sid);
    assert.equal(after.status, 404);
  });

  test('the SDK client keeps one session across calls and ends it with terminateSession', async () => {
    const alice = await token(server, 'notes:read notes:write', 'heidi');
    const { client, transport } = await sdkClient(server, alice);
    const sid = transport.sessionId;
    assert.equal(typeof sid, 'string');
    await client.callTool({ name: 'notes_add', arguments: { text: 'one' } });
    assert.equal(textOf(await client.callTool({ name: 'notes_list', arguments: {} })), '1. one');
    assert.equal(transport.sessionId, sid);
    await transport.terminateSession();
    await client.close();
    assert.equal((await post(server, alice, toolsList, sid)).status, 404);
  });
});

describe('SDK server, stateless', () => {
  let server: RunningSdkNotesServer;
  before(async () => {
    server = await startServer(false, false);
  });
  after(async () => {
    await server?.close();
  });

  test('GET and DELETE get 405 from the guard', async () => {
    const alice = await token(server, 'notes:read');
    for (const method of ['GET', 'DELETE']) {
      const answer = await send(server.url, { method, headers: { authorization: `Bearer ${alice}`, accept: 'text/event-stream' } });
      assert.equal(answer.status, 405, method);
      assert.equal(answer.headers.allow, 'POST, OPTIONS');
    }
  });

  test('every request gets its own server: requests without initialize work and no session id is issued', async () => {
    const alice = await token(server, 'notes:read');
    for (let i = 0; i < 3; i++) {
      const answer = await post(server, alice, call('whoami', {}, 10 + i));
      assert.equal(answer.status, 200);
      assert.equal(answer.headers['mcp-session-id'], undefined);
      assert.equal(messages(answer).find((m) => m.id === 10 + i).result.isError, undefined);
    }
  });
});

describe('sdkStreamableHttpHandler options and bounds', () => {
  test('rejects bad options at construction, naming the setting', () => {
    assert.throws(() => sdkStreamableHttpHandler({} as never), (e: unknown) => e instanceof ConfigurationError && e.setting === 'options.createServer');
    assert.throws(
      () => sdkStreamableHttpHandler({ createServer: () => ({}) as never, maxSessions: 0 }),
      (e: unknown) => e instanceof ConfigurationError && e.setting === 'options.maxSessions',
    );
    assert.throws(
      () => sdkStreamableHttpHandler({ createServer: () => ({}) as never, sessionIdleTimeoutMs: -1 }),
      (e: unknown) => e instanceof ConfigurationError && e.setting === 'options.sessionIdleTimeoutMs',
    );
  });

  test('per-caller and total session limits close the least recently used; refusals are reported', async () => {
    const { mcpOAuthGuard } = await import('../../src/index.js');
    const { createSdkNotesServer } = await import('../../examples/sdk-server.js');
    const { NotesStore, notesPolicy } = await import('../../examples/notes-server.js');
    const express = (await import('express')).default;
    const refused: SessionRefusedEvent[] = [];
    const store = new NotesStore();
    const handler = sdkStreamableHttpHandler({
      createServer: () => createSdkNotesServer(store),
      stateful: true,
      maxSessions: 3,
      maxSessionsPerCaller: 2,
      // No idle expiry here (see the next test): only the limits close sessions.
      sessionIdleTimeoutMs: 0,
      onSessionRefused: (e) => refused.push(e),
    });
    const app = express();
    const http = app.listen(0, '127.0.0.1');
    await new Promise((r) => http.once('listening', r));
    const url = `http://127.0.0.1:${(http.address() as { port: number }).port}/mcp`;
    as.addResource(url, { scopes: NOTES_SCOPES });
    const router = mcpOAuthGuard({ issuer: as.issuer, resource: url, policy: notesPolicy, handler });
    app.use(router);
    const running = { url, store, handler, router, server: http, close: async () => {} } as unknown as RunningSdkNotesServer;
    try {
      const a = await token(running, 'notes:read', 'ann');
      const b = await token(running, 'notes:read', 'bob');
      const open = async (t: string) => (await post(running, t, initialize())).headers['mcp-session-id'] as string;
      const a1 = await open(a);
      const a2 = await open(a);
      const a3 = await open(a); // ann's third: her least recently used (a1) is closed
      assert.equal(handler.sessionCount, 2);
      assert.equal((await post(running, a, toolsList, a1)).status, 404);
      const b1 = await open(b); // 3 in all
      await post(running, a, toolsList, a2); // a2 is now more recent than a3
      const b2 = await open(b); // total limit: the least recently used overall (a3) is closed
      assert.equal(handler.sessionCount, 3);
      assert.equal((await post(running, a, toolsList, a3)).status, 404);
      assert.equal((await post(running, a, toolsList, a2)).status, 200);
      assert.equal((await post(running, b, toolsList, a2)).status, 404);
      assert.deepEqual(
        refused.map((e) => [e.reason, e.subject]),
        [
          ['session_unknown', 'ann'],
          ['session_unknown', 'ann'],
          ['session_owner_mismatch', 'bob'],
        ],
      );
      assert.equal((await post(running, b, toolsList, b1)).status, 200, 'sessions within the limits stay open');
      assert.equal((await post(running, b, toolsList, b2)).status, 200);
    } finally {
      await handler.close();
      http.closeAllConnections();
      await new Promise((r) => http.close(r));
    }
  });

  // Waits on the sessions' close, not on the clock: with idle expiry broken the test times out.
  test('idle sessions with nothing in flight are closed, and then refused as unknown', { timeout: 10_000 }, async (t) => {
    const { createSdkNotesServer } = await import('../../examples/sdk-server.js');
    const { NotesStore } = await import('../../examples/notes-server.js');
    const store = new NotesStore();
    const refused: SessionRefusedEvent[] = [];
    let closed = 0;
    let markAllClosed!: () => void;
    const allClosed = new Promise<void>((resolve) => (markAllClosed = resolve));
    const handler = sdkStreamableHttpHandler({
      createServer: () => {
        const server = createSdkNotesServer(store);
        server.server.onclose = () => {
          if (++closed === 2) markAllClosed();
        };
        return server;
      },
      stateful: true,
      sessionIdleTimeoutMs: 1,
      onSessionRefused: (e) => refused.push(e),
    });
    const { running, close } = await startWith(handler);
    try {
      const b = await token(running, 'notes:read', 'bob');
      const open = async () => (await post(running, b, initialize())).headers['mcp-session-id'] as string;
      const b1 = await open();
      const b2 = await open();
      assert.ok(b1 && b2 && b1 !== b2);
      // On the test's timeout, stop waiting so that `finally` releases the servers.
      await Promise.race([allClosed, new Promise((_, reject) => t.signal.addEventListener('abort', () => reject(new Error('idle sessions were not closed')), { once: true }))]);
      assert.equal(handler.sessionCount, 0);
      assert.equal((await post(running, b, toolsList, b1)).status, 404);
      assert.equal((await post(running, b, toolsList, b2)).status, 404);
      assert.deepEqual(refused.map((e) => [e.reason, e.subject]), [['session_unknown', 'bob'], ['session_unknown', 'bob']]);
    } finally {
      await close();
    }
  });
});

/** A guarded Express app around a handler built by the test, with the notes policy and scopes. */
async function startWith(handler: ReturnType<typeof sdkStreamableHttpHandler>): Promise<{ running: RunningSdkNotesServer; close: () => Promise<void> }> {
  const { mcpOAuthGuard } = await import('../../src/index.js');
  const { NotesStore, notesPolicy } = await import('../../examples/notes-server.js');
  const express = (await import('express')).default;
  const app = express();
  const http = app.listen(0, '127.0.0.1');
  await new Promise((r) => http.once('listening', r));
  const url = `http://127.0.0.1:${(http.address() as { port: number }).port}/mcp`;
  as.addResource(url, { scopes: NOTES_SCOPES });
  // Logging off: the start-up listing would build one more server than these tests count.
  const router = mcpOAuthGuard({ issuer: as.issuer, resource: url, policy: notesPolicy, handler, logLevel: 'off' });
  app.use(router);
  await router.guard.ready();
  const running = { url, store: new NotesStore(), handler, router, server: http } as unknown as RunningSdkNotesServer;
  return {
    running,
    close: async () => {
      await handler.close();
      http.closeAllConnections();
      await new Promise((r) => http.close(r));
    },
  };
}

describe('SDK server: credentials never reach tools', () => {
  for (const stateful of [false, true]) {
    test(`${stateful ? 'stateful' : 'stateless'}: extra.requestInfo.headers holds no Authorization, Proxy-Authorization or Cookie`, async () => {
      const { createSdkNotesServer } = await import('../../examples/sdk-server.js');
      const { NotesStore } = await import('../../examples/notes-server.js');
      const store = new NotesStore();
      const handler = sdkStreamableHttpHandler({
        stateful,
        createServer: () => {
          const server = createSdkNotesServer(store);
          server.registerTool('echo_headers', { description: 'Returns the request headers the tool sees.' }, (extra) => ({
            content: [{ type: 'text', text: JSON.stringify(extra.requestInfo?.headers ?? null) }],
          }));
          return server;
        },
      });
      const { running, close } = await startWith(handler);
      try {
        const admin = await token(running, 'notes:admin', 'ivan');
        const headers: Record<string, string> = {
          authorization: `Bearer ${admin}`,
          'proxy-authorization': 'Basic c2VjcmV0OnNlY3JldA==',
          cookie: 'session=secret-cookie',
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': PROTOCOL,
          'x-trace': 'kept',
        };
        if (stateful) {
          const init = await send(running.url, { method: 'POST', headers, body: JSON.stringify(initialize()) });
          assert.equal(init.status, 200);
          headers['mcp-session-id'] = init.headers['mcp-session-id'] as string;
        }
        const answer = await send(running.url, { method: 'POST', headers, body: JSON.stringify(call('echo_headers')) });
        assert.equal(answer.status, 200);
        const seen = messages(answer).find((m) => m.id === 2).result.content[0].text as string;
        assert.equal(JSON.parse(seen)['x-trace'], 'kept');
        assert.ok(!seen.includes(admin), 'the token must not be visible');
        assert.ok(!/authorization|cookie|secret/i.test(seen), seen);
      } finally {
        await close();
      }
    });
  }
});

/** A stateful notes server whose sessions all share one event store (resumable streams). */
async function startWithSharedEventStore() {
  const { createSdkNotesServer } = await import('../../examples/sdk-server.js');
  const { NotesStore } = await import('../../examples/notes-server.js');
  const store = new NotesStore();
  return startWith(
    sdkStreamableHttpHandler({
      stateful: true,
      createServer: () => createSdkNotesServer(store),
      transportOptions: { eventStore: new SequentialEventStore() },
    }),
  );
}

describe('SDK server, stateful with an event store', () => {
  test('a Last-Event-ID replay of tools/list is filtered for the caller like the live answer', { timeout: 10_000 }, async () => {
    const { running, close } = await startWithSharedEventStore();
    try {
      const readToken = await token(running, 'notes:read', 'judy');
      const init = await post(running, readToken, initialize());
      const sid = init.headers['mcp-session-id'] as string;
      assert.equal((await post(running, readToken, { jsonrpc: '2.0', method: 'notifications/initialized' }, sid)).status, 202);
      const live = await post(running, readToken, toolsList, sid);
      assert.equal(live.status, 200);
      assert.deepEqual(messages(live).find((m) => m.id === 1).result.tools.map((t: { name: string }) => t.name), ['whoami', 'notes_list']);
      const priming = /^id: (.+)$/m.exec(live.text)?.[1];
      assert.ok(priming, 'the SSE answer starts with a priming event');

      // Resume after the priming event: the stream replays the tools/list response; read until it arrives.
      const resume = async (): Promise<any> => {
        const resumed = await fetch(running.url, {
          headers: { authorization: `Bearer ${readToken}`, accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': PROTOCOL, 'last-event-id': priming },
          signal: AbortSignal.timeout(8_000),
        });
        assert.equal(resumed.status, 200);
        const reader = resumed.body!.getReader();
        const decoder = new TextDecoder();
        let text = '';
        let replayed: any;
        while (!replayed) {
          const { done, value } = await reader.read();
          if (done) break;
          text += decoder.decode(value, { stream: true });
          replayed = messages({ status: 200, headers: { 'content-type': 'text/event-stream' }, text: `${text}\n\n`, json: undefined }).find((m) => m.id === 1);
        }
        await reader.cancel().catch(() => {});
        assert.ok(replayed, `tools/list response replayed: ${text}`);
        return replayed;
      };
      assert.deepEqual((await resume()).result.tools.map((t: { name: string }) => t.name), ['whoami', 'notes_list']);

      // The policy narrows: notes_list now needs notes:admin. A replay of the same stored answer is filtered
      // under the policy in force when it is replayed, like a live answer would be.
      const { notesPolicy } = await import('../../examples/notes-server.js');
      await running.router.guard.setPolicy({ ...notesPolicy, tools: { ...notesPolicy.tools, notes_list: ['notes:admin'] } });
      assert.deepEqual((await resume()).result.tools.map((t: { name: string }) => t.name), ['whoami']);
    } finally {
      await close();
    }
  });
});

describe('SDK server, stateful with a shared event store', () => {
  test("a Last-Event-ID from another caller's session replays nothing", { timeout: 10_000 }, async () => {
    const { running, close } = await startWithSharedEventStore();
    try {
      const aliceToken = await token(running, 'notes:admin', 'alice');
      const aliceSid = (await post(running, aliceToken, initialize())).headers['mcp-session-id'] as string;
      await post(running, aliceToken, { jsonrpc: '2.0', method: 'notifications/initialized' }, aliceSid);
      const aliceWho = await post(running, aliceToken, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } }, aliceSid);
      const aliceEvent = /^id: (.+)$/m.exec(aliceWho.text)?.[1];
      assert.ok(aliceEvent, 'the SSE answer carries event ids');
      assert.ok(aliceEvent.startsWith(`${aliceSid}:`), 'event ids are scoped to the session');

      const bobToken = await token(running, 'notes:read', 'bob');
      const bobSid = (await post(running, bobToken, initialize())).headers['mcp-session-id'] as string;
      await post(running, bobToken, { jsonrpc: '2.0', method: 'notifications/initialized' }, bobSid);
      const stolen = await fetch(running.url, {
        headers: {
          authorization: `Bearer ${bobToken}`,
          accept: 'text/event-stream',
          'mcp-session-id': bobSid,
          'mcp-protocol-version': PROTOCOL,
          'last-event-id': aliceEvent,
        },
      });
      const body = await stolen.text();
      assert.equal(stolen.status, 400);
      assert.doesNotMatch(body, /alice/);
    } finally {
      await close();
    }
  });
});

describe('SDK server, session limits under concurrency', () => {
  test('200 concurrent initialize calls of one caller leave at most maxSessionsPerCaller sessions', { timeout: 30_000 }, async () => {
    const { createSdkNotesServer } = await import('../../examples/sdk-server.js');
    const { NotesStore } = await import('../../examples/notes-server.js');
    const store = new NotesStore();
    // No session is registered until every initialize has either reached createServer or been answered,
    // so all 200 are in flight at once.
    const total = 200;
    let creating = 0;
    let answeredEarly = 0;
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    const checkGate = () => {
      if (creating + answeredEarly === total) openGate();
    };
    const handler = sdkStreamableHttpHandler({
      stateful: true,
      maxSessionsPerCaller: 4,
      createServer: async () => {
        creating++;
        checkGate();
        await gate;
        return createSdkNotesServer(store);
      },
    });
    const { running, close } = await startWith(handler);
    try {
      const t = await token(running, 'notes:read', 'kim');
      const answers = await Promise.all(
        Array.from({ length: total }, (_, i) =>
          post(running, t, initialize(i)).then((answer) => {
            if (answer.status !== 200) {
              answeredEarly++;
              checkGate();
            }
            return answer;
          }),
        ),
      );
      const statuses = answers.map((a) => a.status);
      assert.ok(statuses.every((s) => s === 200 || s === 429), String([...new Set(statuses)]));
      assert.equal(creating, 4, 'only maxSessionsPerCaller sessions were being opened at once');
      assert.equal(statuses.filter((s) => s === 200).length, 4);
      const refused = answers.find((a) => a.status === 429);
      assert.equal(refused?.json.error.code, -32000);
      assert.equal(handler.sessionCount, 4);
    } finally {
      await close();
    }
  });

  test('a session that fails to open gives its slot back', async () => {
    const { createSdkNotesServer } = await import('../../examples/sdk-server.js');
    const { NotesStore } = await import('../../examples/notes-server.js');
    const store = new NotesStore();
    let fail = true;
    const handler = sdkStreamableHttpHandler({
      stateful: true,
      maxSessionsPerCaller: 1,
      maxSessions: 1,
      createServer: () => {
        if (fail) {
          fail = false;
          throw new Error('boom');
        }
        return createSdkNotesServer(store);
      },
    });
    const { running, close } = await startWith(handler);
    try {
      const t = await token(running, 'notes:read', 'lee');
      assert.equal((await post(running, t, initialize())).status, 500);
      assert.equal((await post(running, t, initialize())).status, 200);
      assert.equal(handler.sessionCount, 1);
    } finally {
      await close();
    }
  });
});

/**
 * Serves the adapter directly, as the guard would, with the caller (and the guard's filter) given by the test.
 * Mirrors the pipeline's hand-off: parsed body in `req.body`, the caller in `req.auth` and the context.
 */
async function serveAs(
  handler: ReturnType<typeof sdkStreamableHttpHandler>,
  auth: AuthInfo,
  filterResponse: (request: JsonRpcMessage, response: JsonRpcMessage) => JsonRpcMessage = (_request, response) => response,
) {
  const http = createHttpServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    const controller = new AbortController();
    res.once('close', () => controller.abort());
    await handler.handle(Object.assign(req, { auth, body }), res, { auth, protocolVersion: PROTOCOL, signal: controller.signal, filterResponse });
  });
  http.listen(0, '127.0.0.1');
  await new Promise((r) => http.once('listening', r));
  return { url: `http://127.0.0.1:${(http.address() as { port: number }).port}/mcp`, http };
}

describe('SDK server, callers without identity', () => {
  const anonymous: AuthInfo = { token: 't', clientId: '', scopes: ['notes:read'], extra: { claims: {}, tokenType: 'jwt' } };

  // An empty subject identifies nobody: the same rule as the gateway's (one definition, callerKey).
  for (const [label, caller] of [
    ['neither sub nor client id', anonymous],
    ['an empty sub and no client id', { ...anonymous, extra: { ...anonymous.extra, sub: '' } }],
  ] as const) test(`initialize with ${label} gets 400, and no session is created`, async () => {
    const { createSdkNotesServer } = await import('../../examples/sdk-server.js');
    const { NotesStore } = await import('../../examples/notes-server.js');
    const handler = sdkStreamableHttpHandler({ stateful: true, createServer: () => createSdkNotesServer(new NotesStore()) });
    const { url, http } = await serveAs(handler, caller);
    try {
      const answer = await send(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify(initialize(7)),
      });
      assert.equal(answer.status, 400);
      assert.deepEqual(answer.json, { jsonrpc: '2.0', id: 7, error: { code: -32000, message: 'Bad Request: stateful sessions need an identified caller' } });
      assert.equal(handler.sessionCount, 0);
    } finally {
      await handler.close();
      http.closeAllConnections();
      await new Promise((r) => http.close(r));
    }
  });

  test('a caller identified by its client id alone still gets a session', async () => {
    const { createSdkNotesServer } = await import('../../examples/sdk-server.js');
    const { NotesStore } = await import('../../examples/notes-server.js');
    const handler = sdkStreamableHttpHandler({ stateful: true, createServer: () => createSdkNotesServer(new NotesStore()) });
    const { url, http } = await serveAs(handler, { ...anonymous, clientId: 'svc' });
    try {
      const answer = await send(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify(initialize()),
      });
      assert.equal(answer.status, 200);
      assert.equal(handler.sessionCount, 1);
    } finally {
      await handler.close();
      http.closeAllConnections();
      await new Promise((r) => http.close(r));
    }
  });
});

describe('SDK server, stateful with an event store: a restricted public read', () => {
  test('the copy the event store keeps is downgraded to private like the live answer', { timeout: 10_000 }, async () => {
    const { McpServer } = await import('@modelcontextprotocol/sdk/server/mcp.js');
    const { createGuard } = await import('../../src/core/guard/create-guard.js');
    // A real guard's filter: mem://private needs a scope beyond the base, so a public cache hint must go.
    const guard = createGuard({
      issuer: 'http://127.0.0.1:9',
      resource: 'http://127.0.0.1:9/mcp',
      handler: undefined as never,
      policy: { requiredScopes: ['base'], resources: { 'mem://private': ['secret'] } },
    } as never);
    const eventStore = new SequentialEventStore();
    const handler = sdkStreamableHttpHandler({
      stateful: true,
      transportOptions: { eventStore },
      createServer: () => {
        const server = new McpServer({ name: 'reads', version: '1.0.0' });
        server.registerResource('private', 'mem://private', {}, async (uri) => ({ contents: [{ uri: uri.href, text: 'x' }], cacheScope: 'public' }));
        return server;
      },
    });
    const auth: AuthInfo = { token: 't', clientId: 'c', scopes: ['base', 'secret'], extra: { sub: 'u', claims: {}, tokenType: 'jwt' } };
    const { url, http } = await serveAs(handler, auth, (request, response) => guard.filterResponse(request, response, auth, PROTOCOL));
    const headers = (sid?: string) => ({ 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': PROTOCOL, ...(sid ? { 'mcp-session-id': sid } : {}) });
    try {
      const init = await send(url, { method: 'POST', headers: headers(), body: JSON.stringify(initialize()) });
      const sid = init.headers['mcp-session-id'] as string;
      assert.ok(sid);
      await send(url, { method: 'POST', headers: headers(sid), body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
      const read = await send(url, { method: 'POST', headers: headers(sid), body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'resources/read', params: { uri: 'mem://private' } }) });
      assert.equal(read.status, 200);
      const stored = eventStore.stored().find((m) => 'id' in m && m.id === 5) as { result?: { cacheScope?: string } } | undefined;
      assert.equal(stored?.result?.cacheScope, 'private', JSON.stringify(eventStore.stored()));
    } finally {
      await handler.close();
      http.closeAllConnections();
      await new Promise((r) => http.close(r));
    }
  });
});

describe('SDK server, stateful: cancelled reads do not use up the in-flight bound', () => {
  test('65 reads cancelled by the client leave the session able to read', { timeout: 20_000 }, async () => {
    const { McpServer } = await import('@modelcontextprotocol/sdk/server/mcp.js');
    let release!: () => void;
    const never = new Promise<void>((r) => (release = r));
    const handler = sdkStreamableHttpHandler({
      stateful: true,
      transportOptions: { eventStore: new SequentialEventStore() },
      createServer: () => {
        const server = new McpServer({ name: 'slow', version: '1.0.0' });
        server.registerResource('slow', 'mem://slow', {}, async (uri) => {
          await never;
          return { contents: [{ uri: uri.href, text: 'late' }] };
        });
        server.registerResource('fast', 'mem://fast', {}, async (uri) => ({ contents: [{ uri: uri.href, text: 'ok' }] }));
        return server;
      },
    });
    const auth: AuthInfo = { token: 't', clientId: 'c', scopes: [], extra: { sub: 'u', claims: {}, tokenType: 'jwt' } };
    const { url, http } = await serveAs(handler, auth);
    const headers = (sid?: string) => ({ 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': PROTOCOL, ...(sid ? { 'mcp-session-id': sid } : {}) });
    const read = (sid: string, id: number, uri: string) => send(url, { method: 'POST', headers: headers(sid), body: JSON.stringify({ jsonrpc: '2.0', id, method: 'resources/read', params: { uri } }) });
    try {
      const init = await send(url, { method: 'POST', headers: headers(), body: JSON.stringify(initialize()) });
      const sid = init.headers['mcp-session-id'] as string;
      await send(url, { method: 'POST', headers: headers(sid), body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
      for (let id = 100; id < 165; id++) {
        const controller = new AbortController();
        const pending = fetch(url, { method: 'POST', headers: headers(sid), body: JSON.stringify({ jsonrpc: '2.0', id, method: 'resources/read', params: { uri: 'mem://slow' } }), signal: controller.signal })
          .then((r) => r.body?.cancel())
          .catch(() => {});
        const cancelled = await send(url, { method: 'POST', headers: headers(sid), body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } }) });
        assert.equal(cancelled.status, 202);
        controller.abort();
        await pending;
      }
      const answer = await read(sid, 999, 'mem://fast');
      assert.equal(answer.status, 200, answer.text);
      assert.match(answer.text, /"text":"ok"/);
    } finally {
      release();
      await handler.close();
      http.closeAllConnections();
      await new Promise((r) => http.close(r));
    }
  });
});
