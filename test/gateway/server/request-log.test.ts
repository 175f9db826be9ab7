// The gateway's request log, wired as the gateway wires it (middleware first, the guard's onDecision, the
// proxy's onUpstreamError) in front of a real guard, with tokens from a real oidc-provider.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import express from 'express';
import { startAuthorizationServer, type AuthorizationServer } from '../../../examples/dev/authorization-server.js';
import { httpHandler } from '../../../src/http/http-handler.js';
import { mcpOAuthGuard } from '../../../src/express/mcp-oauth-guard.js';
import { createRequestLog } from '../../../src/gateway/server/request-log.js';
import { postMcp, send } from '../../helpers/http-client.js';

const SCOPES = ['x:read', 'x:admin'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const FIELD_ORDER = ['time', 'requestId', 'httpMethod', 'path', 'method', 'name', 'decision', 'reason', 'detail', 'requiredScopes', 'subject', 'clientId', 'status', 'durationMs', 'upstreamError', 'aborted'];

let as: AuthorizationServer;
let server: Server;
let url: string;
let token: string;
let writeThrows = false;
let thrown: (() => void) | undefined;
const lines: string[] = [];
const lineWaiters: Array<(line: string) => void> = [];
/** Resolves when the next log line is written (lines are written when the answer ends). */
function nextLine(): Promise<Record<string, unknown>> {
  const ready = lines.shift();
  const line = ready !== undefined ? Promise.resolve(ready) : new Promise<string>((resolve) => lineWaiters.push(resolve));
  return line.then((l) => {
    assert.ok(!l.includes('\n'), 'one line');
    const entry = JSON.parse(l) as Record<string, unknown>;
    // Fields come in a fixed order.
    const keys = Object.keys(entry);
    assert.deepEqual(keys, FIELD_ORDER.filter((k) => keys.includes(k)), l);
    return entry;
  });
}

before(async () => {
  as = await startAuthorizationServer();
  const log = createRequestLog({
    write: (line) => {
      if (writeThrows) {
        thrown?.();
        throw new Error('log sink down');
      }
      const waiter = lineWaiters.shift();
      if (waiter) waiter(line);
      else lines.push(line);
    },
  });
  const app = express();
  server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  const handler = httpHandler((req, res) => {
    const body = req.body as { id?: number; method?: string; params?: { name?: string } } | undefined;
    if (body?.params?.name === 'upstream_down') {
      log.onUpstreamError(req, { reason: 'upstream_unreachable', status: 502, code: 'ECONNREFUSED' });
      res.writeHead(502, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"Bad gateway"}}');
      return;
    }
    if (req.method === 'GET') {
      // A standalone stream that never ends by itself.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': open\n\n');
      return;
    }
    // Express's res.json, as a plain Express MCP handler answers.
    (res as unknown as express.Response).json({ jsonrpc: '2.0', id: body?.id ?? null, result: { content: [] } });
  });
  app.use(log.middleware);
  app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
  app.use(
    mcpOAuthGuard({
      issuer: as.issuer,
      resource: url,
      policy: { scopesSupported: SCOPES, requiredScopes: ['x:read'], tools: { echo: [], upstream_down: [], admin_tool: ['x:admin'] } },
      onDecision: log.onDecision,
      handler,
    }),
  );
  as.addResource(url, { scopes: SCOPES });
  token = await as.issueAccessToken({ resource: url, scope: 'x:read', sub: 'alice' });
});
after(async () => {
  server?.closeAllConnections();
  server?.close();
  await as?.close();
});

const call = (name: string) => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: {} } });

describe('createRequestLog', () => {
  test('an allowed call: one line with the method, target, decision, caller, status and duration', async () => {
    const res = await postMcp(url, call('echo'), token);
    assert.equal(res.status, 200);
    const entry = await nextLine();
    assert.match(String(entry.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(typeof entry.durationMs, 'number');
    assert.ok((entry.durationMs as number) >= 0);
    assert.match(String(entry.requestId), UUID, 'a request without X-Request-Id gets a random UUID');
    const { time, durationMs, requestId, ...rest } = entry;
    void time;
    void durationMs;
    void requestId;
    assert.deepEqual(rest, {
      httpMethod: 'POST',
      path: '/mcp',
      method: 'tools/call',
      name: 'echo',
      decision: 'allow',
      reason: 'allowed',
      requiredScopes: ['x:read'],
      subject: 'alice',
      clientId: as.serviceClient.clientId,
      status: 200,
    });
    assert.equal(lines.length, 0, 'exactly one line per request');
  });

  test("the request id is the client's X-Request-Id when usable, else a fresh UUID per request", async () => {
    assert.equal((await postMcp(url, call('echo'), token, { 'x-request-id': 'trace-42' })).status, 200);
    assert.equal((await nextLine()).requestId, 'trace-42');
    assert.equal((await postMcp(url, call('echo'), token, { 'x-request-id': 'bad"id' })).status, 200);
    const unusable = await nextLine();
    assert.match(String(unusable.requestId), UUID, 'an unusable header is replaced, never logged');
    assert.equal((await postMcp(url, call('echo'), token)).status, 200);
    assert.notEqual((await nextLine()).requestId, unusable.requestId);
  });

  test('never logs the token, from the Authorization header or the query string, nor the query string at all', async () => {
    const res = await postMcp(`${url}?access_token=${token}&x=secret-value`, call('echo'), token);
    assert.equal(res.status, 400);
    const entry = await nextLine();
    assert.equal(entry.path, '/mcp');
    assert.equal(entry.decision, 'deny');
    assert.equal(entry.reason, 'token_in_query');
    assert.equal(entry.status, 400);
    const text = JSON.stringify(entry);
    assert.ok(!text.includes(token), text);
    assert.ok(!text.includes(token.slice(0, 20)), text);
    assert.ok(!text.includes('secret-value'), text);
    assert.ok(!text.includes('access_token'), text);
  });

  test('a token for another resource: the line says which audience was expected and which the token carried', async () => {
    const other = 'http://127.0.0.1:9/other-mcp';
    as.addResource(other, { scopes: SCOPES });
    const foreign = await as.issueAccessToken({ resource: other, scope: 'x:read', sub: 'alice' });
    const res = await postMcp(url, call('echo'), foreign);
    assert.equal(res.status, 401);
    const entry = await nextLine();
    assert.equal(entry.reason, 'token_audience');
    assert.equal(entry.detail, `access token was issued for ${other} (aud), not for this resource: expected ${url}`);
    assert.ok(!JSON.stringify(entry).includes(foreign));
  });

  test('a request without a token: deny token_missing, 401, no caller fields', async () => {
    const res = await postMcp(url, call('echo'));
    assert.equal(res.status, 401);
    const entry = await nextLine();
    assert.equal(entry.decision, 'deny');
    assert.equal(entry.reason, 'token_missing');
    assert.equal(entry.status, 401);
    assert.equal(entry.method, 'tools/call');
    assert.equal(entry.name, 'echo');
    for (const absent of ['subject', 'clientId', 'requiredScopes', 'aborted', 'upstreamError']) assert.equal(Object.hasOwn(entry, absent), false, absent);
  });

  test('a refused call: deny scope_insufficient with the required scopes and the caller', async () => {
    const res = await postMcp(url, call('admin_tool'), token);
    assert.equal(res.status, 403);
    const entry = await nextLine();
    assert.equal(entry.decision, 'deny');
    assert.equal(entry.reason, 'scope_insufficient');
    assert.equal(entry.status, 403);
    assert.equal(entry.name, 'admin_tool');
    assert.deepEqual([...(entry.requiredScopes as string[])].sort(), ['x:admin', 'x:read']);
    assert.equal(entry.subject, 'alice');
  });

  test('requests the guard does not decide on are logged without a decision', async () => {
    const health = await send(`${url.replace('/mcp', '/healthz')}?probe=1`, { method: 'GET' });
    assert.equal(health.status, 200);
    const entry = await nextLine();
    const { time, durationMs, requestId, ...rest } = entry;
    void time;
    void durationMs;
    assert.match(String(requestId), UUID);
    assert.deepEqual(rest, { httpMethod: 'GET', path: '/healthz', status: 200 });

    const metadata = await send(url.replace('/mcp', '/.well-known/oauth-protected-resource/mcp'), { method: 'GET' });
    assert.equal(metadata.status, 200);
    const metadataEntry = await nextLine();
    assert.equal(metadataEntry.path, '/.well-known/oauth-protected-resource/mcp');
    assert.equal(Object.hasOwn(metadataEntry, 'decision'), false);
  });

  test('an upstream failure reported by the proxy is logged with its reason', async () => {
    const res = await postMcp(url, call('upstream_down'), token);
    assert.equal(res.status, 502);
    const entry = await nextLine();
    assert.equal(entry.decision, 'allow');
    assert.equal(entry.status, 502);
    assert.equal(entry.upstreamError, 'upstream_unreachable');
  });

  test('a client that goes away before the answer is complete is logged as aborted', async () => {
    const req = request(url, { method: 'GET', headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } });
    req.on('error', () => {});
    req.end();
    const [res] = (await once(req, 'response')) as [IncomingMessage];
    assert.equal(res.statusCode, 200);
    res.on('error', () => {});
    req.destroy();
    const entry = await nextLine();
    assert.equal(entry.httpMethod, 'GET');
    assert.equal(entry.decision, 'allow');
    assert.equal(entry.status, 200);
    assert.equal(entry.aborted, true);
  });

  test('a failing log sink does not break serving', async () => {
    const sinkFailed = new Promise<void>((resolve) => (thrown = resolve));
    writeThrows = true;
    try {
      const res = await postMcp(url, call('echo'), token);
      assert.equal(res.status, 200);
      await sinkFailed; // the line was attempted and the sink threw
    } finally {
      writeThrows = false;
    }
    assert.equal(lines.length, 0);
    // The server still serves and logs afterwards.
    const res = await postMcp(url, call('echo'), token);
    assert.equal(res.status, 200);
    assert.equal((await nextLine()).status, 200);
  });
});
