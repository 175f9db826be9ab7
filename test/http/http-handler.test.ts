// httpHandler(...) end to end: a plain Express-style MCP handler behind the guard, answering with res.json,
// with setHeader + end, or with a hand-written event stream. Real oidc-provider tokens, real HTTP.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import express from 'express';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import type { AuthInfo } from '../../src/core/kernel/auth-info.js';
import { httpHandler, isHttpHandler, type GuardedRequest, type HttpHandlerContext } from '../../src/http/http-handler.js';
import { mcpOAuthGuard } from '../../src/express/mcp-oauth-guard.js';
import { postMcp, send, type HttpAnswer } from '../helpers/http-client.js';

const SCOPES = ['x:read', 'x:admin'];
const TOOLS = [{ name: 'echo' }, { name: 'admin_tool' }, { name: 'read_tool' }];
const policy = { scopesSupported: SCOPES, tools: { echo: [], read_tool: ['x:read'], admin_tool: ['x:admin'] } };

interface Seen {
  method: string;
  body: unknown;
  auth: AuthInfo;
  context: HttpHandlerContext;
}

let as: AuthorizationServer;
let server: Server;
let origin: string;
let fullUrl: string;
let postOnlyUrl: string;
let token: string;
let postOnlyToken: string;
const seen: Seen[] = [];

/** The inner MCP handler: how it answers is chosen by the test through `x-answer`. */
function innerHandler(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext): void {
  seen.push({ method: req.method ?? '', body: req.body, auth: req.auth, context });
  const id = (req.body as { id?: unknown } | undefined)?.id ?? null;
  const method = (req.body as { method?: unknown } | undefined)?.method;
  const result = method === 'tools/list' || req.headers['x-answer-tools'] === '1' ? { tools: TOOLS } : { content: [] };
  const response = { jsonrpc: '2.0', id, result };
  if (req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(': standalone stream\n\n');
    return;
  }
  if (req.method === 'DELETE') {
    res.writeHead(200, { 'content-length': '0' }).end();
    return;
  }
  switch (req.headers['x-answer']) {
    case 'json':
      (res as unknown as express.Response).json(response);
      return;
    case 'set-header':
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(response));
      return;
    case 'sse':
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":{"tools":["admin_tool"]}}}\n\n');
      res.write(`event: message\ndata: ${JSON.stringify(response)}\n\n`);
      res.end();
      return;
    case 'accepted':
      res.writeHead(202).end();
      return;
  }
}

before(async () => {
  as = await startAuthorizationServer();
  const app = express();
  server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fullUrl = `${origin}/mcp`;
  postOnlyUrl = `${origin}/post-only`;
  app.use(mcpOAuthGuard({ issuer: as.issuer, resource: fullUrl, policy, handler: httpHandler(innerHandler) }));
  app.use(
    mcpOAuthGuard({
      issuer: as.issuer,
      resource: postOnlyUrl,
      policy,
      handler: httpHandler(innerHandler, { supportsGet: false, supportsDelete: false }),
    }),
  );
  as.addResource(fullUrl, { scopes: SCOPES });
  as.addResource(postOnlyUrl, { scopes: SCOPES });
  token = await as.issueAccessToken({ resource: fullUrl, scope: 'x:read', sub: 'alice' });
  postOnlyToken = await as.issueAccessToken({ resource: postOnlyUrl, scope: 'x:read', sub: 'alice' });
});
after(async () => {
  server?.closeAllConnections();
  server?.close();
  await as?.close();
});

const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' };

/** The JSON-RPC messages of an SSE body, in order. */
function sseMessages(text: string): unknown[] {
  return text
    .split('\n\n')
    .filter((block) => block.includes('data:'))
    .map((block) => JSON.parse(block.split('\n').find((l) => l.startsWith('data:'))!.slice(5).trim()));
}

describe('httpHandler', () => {
  test('builds an http handler supporting GET and DELETE unless told otherwise', () => {
    const h = httpHandler(innerHandler);
    assert.equal(h.kind, 'http');
    assert.equal(h.supportsGet, true);
    assert.equal(h.supportsDelete, true);
    assert.equal(h.handle, innerHandler);
    assert.equal(isHttpHandler(h), true);
    const postOnly = httpHandler(innerHandler, { supportsGet: false, supportsDelete: false });
    assert.equal(postOnly.supportsGet, false);
    assert.equal(postOnly.supportsDelete, false);
    assert.equal(isHttpHandler(innerHandler), false);
    assert.equal(isHttpHandler(null), false);
  });

  for (const answer of ['json', 'set-header'] as const) {
    test(`tools/list answered with ${answer === 'json' ? 'res.json' : 'setHeader + end'} is filtered to the caller's tools`, async () => {
      const before = seen.length;
      const res = await postMcp(fullUrl, list, token, { 'x-answer': answer });
      assert.equal(res.status, 200);
      assert.match(String(res.headers['content-type']), /^application\/json/);
      assert.deepEqual(res.json, { jsonrpc: '2.0', id: 1, result: { tools: [{ name: 'echo' }, { name: 'read_tool' }] } });
      assert.equal(res.headers['content-length'], String(Buffer.byteLength(res.text)));
      assert.equal(seen.length, before + 1);
    });
  }

  test('tools/list answered as a hand-written event stream: the response is filtered, the notification untouched', async () => {
    const res = await postMcp(fullUrl, list, token, { 'x-answer': 'sse' });
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /^text\/event-stream/);
    assert.ok(
      res.text.startsWith('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":{"tools":["admin_tool"]}}}\n\n'),
      res.text,
    );
    assert.deepEqual(sseMessages(res.text), [
      { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: { tools: ['admin_tool'] } } },
      { jsonrpc: '2.0', id: 1, result: { tools: [{ name: 'echo' }, { name: 'read_tool' }] } },
    ]);
  });

  test('an admin caller gets the whole list', async () => {
    const admin = await as.issueAccessToken({ resource: fullUrl, scope: 'x:read x:admin', sub: 'root' });
    const res = await postMcp(fullUrl, list, admin, { 'x-answer': 'sse' });
    assert.deepEqual((sseMessages(res.text)[1] as { result: unknown }).result, { tools: TOOLS });
  });

  test('a refused tools/call never reaches the inner handler', async () => {
    const before = seen.length;
    const res = await postMcp(fullUrl, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'admin_tool' } }, token, { 'x-answer': 'json' });
    assert.equal(res.status, 403);
    assert.equal(res.json.error.code, -31403);
    assert.equal(res.json.error.data.error, 'insufficient_scope');
    const bad = await postMcp(fullUrl, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: ['echo'] } }, token, { 'x-answer': 'json' });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.code, -32602);
    const anonymous = await postMcp(fullUrl, { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'echo' } }, undefined, { 'x-answer': 'json' });
    assert.equal(anonymous.status, 401);
    assert.equal(seen.length, before, 'the inner handler was not called');
    // An allowed call does reach it.
    const ok = await postMcp(fullUrl, { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'read_tool' } }, token, { 'x-answer': 'json' });
    assert.equal(ok.status, 200);
    assert.equal(seen.length, before + 1);
  });

  test('a notification reaches the inner handler as sent, and a body answering it is filtered too', async () => {
    const notification = { jsonrpc: '2.0', method: 'notifications/initialized', params: { extra: [1, 'two'] } };
    const accepted = await postMcp(fullUrl, notification, token, { 'x-answer': 'accepted' });
    assert.equal(accepted.status, 202);
    assert.deepEqual(seen.at(-1)!.body, notification);
    // A notification gets no answer with a body; one shaped like a list is filtered by its shape all the same.
    const answered = await postMcp(fullUrl, notification, token, { 'x-answer': 'json', 'x-answer-tools': '1' });
    assert.deepEqual(answered.json.result, { tools: [{ name: 'echo' }, { name: 'read_tool' }] });
  });

  test('a client response (no method) reaches the inner handler untouched, and a body answering it is filtered', async () => {
    const clientResponse = { jsonrpc: '2.0', id: 'srv-1', result: { tools: TOOLS, roots: [{ uri: 'file:///x' }] } };
    const before = seen.length;
    const res = await postMcp(fullUrl, clientResponse, token, { 'x-answer': 'json', 'x-answer-tools': '1' });
    assert.equal(res.status, 200);
    assert.equal(seen.length, before + 1);
    assert.deepEqual(seen.at(-1)!.body, clientResponse);
    assert.deepEqual(res.json, { jsonrpc: '2.0', id: 'srv-1', result: { tools: [{ name: 'echo' }, { name: 'read_tool' }] } });
  });

  test('req.auth is the verified identity, the same one the context carries', async () => {
    await postMcp(fullUrl, { jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'echo' } }, token, {
      'x-answer': 'json',
      'mcp-protocol-version': '2025-11-25',
    });
    const { auth, context } = seen.at(-1)!;
    assert.equal(auth.token, token);
    assert.equal(auth.clientId, as.serviceClient.clientId);
    assert.deepEqual(auth.scopes, ['x:read']);
    assert.equal(auth.extra.sub, 'alice');
    assert.equal(auth.extra.iss, as.issuer);
    assert.equal(auth.resource?.href, new URL(fullUrl).href);
    assert.equal(context.auth, auth);
    assert.equal(context.protocolVersion, '2025-11-25');
    assert.equal(context.signal.aborted, false);
    // The context's filter applies this caller's scopes to a stored list response.
    const filtered = context.filterResponse(list as never, { jsonrpc: '2.0', id: 1, result: { tools: TOOLS } });
    assert.deepEqual((filtered as unknown as { result: unknown }).result, { tools: [{ name: 'echo' }, { name: 'read_tool' }] });
  });

  test('GET and DELETE reach a handler that supports them, authenticated, with no body', async () => {
    const before = seen.length;
    const get = await send(fullUrl, { method: 'GET', headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } });
    assert.equal(get.status, 200);
    assert.equal(get.text, ': standalone stream\n\n');
    const del = await send(fullUrl, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
    assert.equal(del.status, 200);
    assert.deepEqual(
      seen.slice(before).map((s) => [s.method, s.body, s.auth.extra.sub]),
      [
        ['GET', undefined, 'alice'],
        ['DELETE', undefined, 'alice'],
      ],
    );
    const anonymous = await send(fullUrl, { method: 'GET', headers: { accept: 'text/event-stream' } });
    assert.equal(anonymous.status, 401);
    assert.equal(seen.length, before + 2);
  });

  test('with supportsGet/supportsDelete false, GET and DELETE get 405 with Allow and never reach the handler', async () => {
    const before = seen.length;
    const answers: HttpAnswer[] = [];
    answers.push(await send(postOnlyUrl, { method: 'GET', headers: { authorization: `Bearer ${postOnlyToken}`, accept: 'text/event-stream' } }));
    answers.push(await send(postOnlyUrl, { method: 'DELETE', headers: { authorization: `Bearer ${postOnlyToken}` } }));
    for (const res of answers) {
      assert.equal(res.status, 405);
      assert.equal(res.headers.allow, 'POST, OPTIONS');
      assert.equal(res.json.error.code, -32600);
    }
    assert.equal(seen.length, before);
    // POST still works there.
    const post = await postMcp(postOnlyUrl, list, postOnlyToken, { 'x-answer': 'json' });
    assert.equal(post.status, 200);
    assert.equal(seen.length, before + 1);
    // And the supporting endpoint advertises GET and DELETE.
    const options = await send(fullUrl, { method: 'OPTIONS' });
    assert.equal(options.headers.allow, 'POST, GET, DELETE, OPTIONS');
  });
});
