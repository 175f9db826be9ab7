// One session gate for every path that keeps sessions: the SDK adapter and the gateway's HTTP upstream answer an
// unknown or foreign session with the same 404, byte for byte, and share one set of session defaults.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, test } from 'node:test';
import { createSdkNotesServer } from '../../examples/sdk-server.js';
import { NotesStore } from '../../examples/notes-server.js';
import type { AuthInfo } from '../../src/core/kernel/auth-info.js';
import { DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_CALLER, DEFAULT_SESSION_IDLE_TIMEOUT_MS } from '../../src/core/session/session-defaults.js';
import { sessionNotFoundAnswer } from '../../src/core/session/session-gate.js';
import type { McpHttpHandler } from '../../src/http/http-handler.js';
import { GATEWAY_SETTINGS } from '../../src/gateway/config/gateway-config.js';
import { createUpstreamProxy } from '../../src/gateway/upstream/http/upstream-proxy.js';
import { sdkStreamableHttpHandler, type SessionRefusedEvent } from '../../src/sdk/index.js';
import type { SessionRefusal } from '../../src/gateway/index.js';

const PROTOCOL = '2025-11-25';
const ALICE: AuthInfo = { token: 'alice-token', clientId: 'client-1', scopes: ['notes:read'], extra: { sub: 'alice', claims: { sub: 'alice' }, tokenType: 'jwt' } };
const BOB: AuthInfo = { ...ALICE, token: 'bob-token', extra: { sub: 'bob', claims: { sub: 'bob' }, tokenType: 'jwt' } };

const servers: Server[] = [];
after(() => {
  for (const server of servers) {
    server.closeAllConnections();
    server.close();
  }
});

async function listen(server: Server): Promise<string> {
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
}

/** Serves `handler` as the guard would: parsed body in `req.body`, the caller (`Authorization: Bearer bob`) in `req.auth`. */
function serve(handler: McpHttpHandler): Promise<string> {
  return listen(
    createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
      const auth = req.headers.authorization === 'Bearer bob' ? BOB : ALICE;
      const controller = new AbortController();
      res.once('close', () => controller.abort());
      await handler.handle(Object.assign(req, { auth, body }), res, { auth, protocolVersion: PROTOCOL, signal: controller.signal, filterResponse: (_request, response) => response });
    }),
  );
}

/** An upstream MCP server that opens a session on `initialize` and answers everything else. */
function startUpstream(): Promise<string> {
  let issued = 0;
  return listen(
    createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const message = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { id?: number; method?: string };
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (message.method === 'initialize') headers['mcp-session-id'] = `upstream-session-${++issued}`;
        res.writeHead(200, headers).end(JSON.stringify({ jsonrpc: '2.0', id: message.id ?? null, result: {} }));
      });
    }),
  );
}

interface Answer {
  status: number;
  contentType: string | null;
  contentLength: string | null;
  body: string;
}

async function post(url: string, message: object, caller: 'alice' | 'bob', sessionId?: string): Promise<Answer & { sessionId: string | null }> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${caller}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': PROTOCOL,
  };
  if (sessionId !== undefined) headers['mcp-session-id'] = sessionId;
  const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(message) });
  return { status: res.status, contentType: res.headers.get('content-type'), contentLength: res.headers.get('content-length'), body: await res.text(), sessionId: res.headers.get('mcp-session-id') };
}

const initialize = (id: number) => ({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'test', version: '1' } } });
const listTools = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/list', params: {} });

/** The unknown-session and foreign-session answers of a handler, without what varies by connection. */
async function refusals(url: string): Promise<{ unknown: Answer; foreign: Answer }> {
  const opened = await post(url, initialize(1), 'alice');
  assert.equal(opened.status, 200, opened.body);
  assert.ok(opened.sessionId);
  const { sessionId: _unknownSession, ...unknown } = await post(url, listTools(7), 'alice', 'no-such-session');
  const { sessionId: _foreignSession, ...foreign } = await post(url, listTools(7), 'bob', opened.sessionId);
  return { unknown, foreign };
}

describe('one session gate', () => {
  const expected: Answer = {
    status: 404,
    contentType: 'application/json',
    contentLength: String(Buffer.byteLength(JSON.stringify(sessionNotFoundAnswer(7).body))),
    body: JSON.stringify(sessionNotFoundAnswer(7).body),
  };

  test('the HTTP upstream answers an unknown and a foreign session with the session gate\'s 404, and reports both', async () => {
    const refused: SessionRefusal[] = [];
    const proxy = createUpstreamProxy({ upstream: await startUpstream(), onSessionRefused: (_req, refusal) => refused.push(refusal) });
    try {
      const { unknown, foreign } = await refusals(await serve(proxy));
      assert.deepEqual(unknown, expected);
      assert.deepEqual(foreign, expected);
      assert.deepEqual(refused.map((r) => r.reason), ['session_unknown', 'session_owner_mismatch']);
    } finally {
      proxy.close();
    }
  });

  test('the SDK adapter answers an unknown and a foreign session with the same 404 as the HTTP upstream', async () => {
    const refused: SessionRefusedEvent[] = [];
    const handler = sdkStreamableHttpHandler({ stateful: true, createServer: () => createSdkNotesServer(new NotesStore()), onSessionRefused: (event) => refused.push(event) });
    const proxy = createUpstreamProxy({ upstream: await startUpstream() });
    try {
      const sdk = await refusals(await serve(handler));
      const gateway = await refusals(await serve(proxy));
      assert.deepEqual(sdk, gateway);
      assert.deepEqual(sdk.unknown, expected);
      assert.deepEqual(
        refused.map((e) => [e.reason, e.subject, e.clientId, e.httpMethod]),
        [
          ['session_unknown', 'alice', 'client-1', 'POST'],
          ['session_owner_mismatch', 'bob', 'client-1', 'POST'],
        ],
      );
    } finally {
      proxy.close();
      await handler.close();
    }
  });
});

describe('one set of session defaults', () => {
  test('the gateway documents and applies the shared defaults', () => {
    assert.deepEqual([DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_CALLER, DEFAULT_SESSION_IDLE_TIMEOUT_MS], [10_000, 16, 3_600_000]);
    const defaults = Object.fromEntries(GATEWAY_SETTINGS.map((setting) => [setting.env, setting.defaultValue]));
    assert.equal(defaults.MCP_AUTH_MAX_SESSIONS, String(DEFAULT_MAX_SESSIONS));
    assert.equal(defaults.MCP_AUTH_MAX_SESSIONS_PER_CALLER, String(DEFAULT_MAX_SESSIONS_PER_CALLER));
    assert.equal(defaults.MCP_AUTH_SESSION_IDLE_TIMEOUT_MS, String(DEFAULT_SESSION_IDLE_TIMEOUT_MS));
  });

  /** Whether a session opened at time 0 is still served after `idleMs` with nothing in progress. */
  async function servedAfter(handler: McpHttpHandler, idleMs: number, advance: (ms: number) => void): Promise<boolean> {
    const url = await serve(handler);
    const opened = await post(url, initialize(1), 'alice');
    assert.equal(opened.status, 200, opened.body);
    advance(idleMs);
    return (await post(url, listTools(2), 'alice', opened.sessionId!)).status === 200;
  }

  for (const idleMs of [DEFAULT_SESSION_IDLE_TIMEOUT_MS - 60_000, DEFAULT_SESSION_IDLE_TIMEOUT_MS]) {
    const served = idleMs < DEFAULT_SESSION_IDLE_TIMEOUT_MS;
    test(`after ${idleMs} ms idle, the SDK adapter and the HTTP upstream both ${served ? 'still serve' : 'forget'} a session`, async () => {
      let offset = 0;
      const proxy = createUpstreamProxy({ upstream: await startUpstream(), now: () => 1_000_000 + offset });
      assert.equal(await servedAfter(proxy, idleMs, (ms) => (offset = ms)), served, 'HTTP upstream');
      proxy.close();
      // The adapter reads the clock through Date.now, taken when it is created.
      const realNow = Date.now;
      let sdkOffset = 0;
      Date.now = () => realNow() + sdkOffset;
      const handler = sdkStreamableHttpHandler({ stateful: true, createServer: () => createSdkNotesServer(new NotesStore()) });
      try {
        assert.equal(await servedAfter(handler, idleMs, (ms) => (sdkOffset = ms)), served, 'SDK adapter');
      } finally {
        Date.now = realNow;
        await handler.close();
      }
    });
  }
});
