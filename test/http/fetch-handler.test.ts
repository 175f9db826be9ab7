// fetchHandler: a fetch-shaped handler behind the guard, with a real oidc-provider issuing the tokens and real
// HTTP on loopback. What the handler sees of the request, and how its Response reaches the client.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import express from 'express';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { notesPolicy, notesTools } from '../../examples/notes-server.js';
import { fetchHandler, mcpOAuthGuard, type FetchHandle, type FetchHandlerContext, type McpOAuthGuardRouter } from '../../src/index.js';
import type { GuardedRequest } from '../../src/http/http-handler.js';
import { postMcp, send } from '../helpers/http-client.js';

const NOTES_SCOPES = ['notes:read', 'notes:write', 'notes:admin'];

/** What one request showed the handler. */
interface Seen {
  request: Request;
  context: FetchHandlerContext;
  body: string;
}

let as: AuthorizationServer;
let server: Server;
let router: McpOAuthGuardRouter;
let origin: string;
let url: string;
let readToken: string;
/** The handler's behaviour for the next request, set by each test. */
let behaviour: FetchHandle = () => new Response(null, { status: 500 });
const handle: FetchHandle = (request, context) => behaviour(request, context);
const handler = fetchHandler(handle);

before(async () => {
  as = await startAuthorizationServer();
  const app = express();
  app.disable('x-powered-by');
  server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  url = `${origin}/mcp`;
  router = mcpOAuthGuard({ issuer: as.issuer, resource: url, policy: notesPolicy, handler });
  // HEAD never reaches an MCP handler through the guard (the endpoint has no HEAD), so the one case the
  // adapter still has to get right is served here directly, with the context the guard would give.
  app.head('/raw', (req, res) => {
    const controller = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) controller.abort();
    });
    const auth = { token: 't', clientId: 'c', scopes: [], extra: { claims: {}, tokenType: 'jwt' as const } };
    void handler.handle(Object.assign(req, { auth }), res, { auth, signal: controller.signal, filterResponse: (_request, response) => response });
  });
  app.use(router);
  as.addResource(url, { scopes: NOTES_SCOPES });
  await router.guard.ready();
  readToken = await as.issueAccessToken({ resource: url, scope: 'notes:read', sub: 'alice' });
});
after(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await as?.close();
});

/** Records what the handler sees, then answers with `answer`. */
function recording(answer: () => Response): { seen: Promise<Seen> } {
  let resolve!: (s: Seen) => void;
  const seen = new Promise<Seen>((r) => (resolve = r));
  behaviour = async (request, context) => {
    resolve({ request, context, body: await request.text() });
    return answer();
  };
  return { seen };
}

/** Opens a request and resolves with the response as soon as its head arrives. */
function open(target: string, init: { method?: string; headers?: Record<string, string>; body?: string }): Promise<{ res: IncomingMessage; abort: () => void }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(target, { method: init.method ?? 'POST', headers: init.headers }, (res) => resolve({ res, abort: () => req.destroy() }));
    req.on('error', reject);
    req.end(init.body);
  });
}

/** A readable stream of SSE text that the test writes to by hand. */
function controlledStream(): { stream: ReadableStream<Uint8Array>; push: (text: string) => void; close: () => void; cancelled: Promise<unknown> } {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let onCancel!: (reason: unknown) => void;
  const cancelled = new Promise<unknown>((r) => (onCancel = r));
  const stream = new ReadableStream<Uint8Array>({
    start: (c) => {
      controller = c;
    },
    cancel: (reason) => onCancel(reason),
  });
  const encoder = new TextEncoder();
  return { stream, push: (text) => controller.enqueue(encoder.encode(text)), close: () => controller.close(), cancelled };
}

const sseHeaders = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };
const call = (name: string, id = 1) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } });

describe('fetchHandler: the Request', () => {
  /** Sends one request line and headers as typed, so the target can be in absolute form (RFC 9112 §3.2.2). */
  function rawPost(target: string, body: string): Promise<number> {
    return new Promise((resolve, reject) => {
      const socket = connect(Number(new URL(origin).port), '127.0.0.1');
      let text = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (text += chunk));
      socket.on('error', reject);
      socket.on('end', () => {
        resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]));
      });
      // write, not end: a client that half-closes first gets its request aborted by Node's server.
      socket.write(
        `POST ${target} HTTP/1.1\r\nHost: ${new URL(origin).host}\r\nAuthorization: Bearer ${readToken}\r\n` +
          'Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n' +
          `Connection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
    });
  }

  test('an absolute-form target: only its path and query are used, even when its authority is not a valid URL', async () => {
    for (const authority of ['x:99999', 'evil.example']) {
      const { seen } = recording(() => Response.json({ jsonrpc: '2.0', id: 1, result: { content: [] } }));
      const status = await rawPost(`http://${authority}/mcp?tenant=b`, JSON.stringify(call('whoami')));
      assert.equal(status, 200, authority);
      assert.equal((await seen).request.url, `${url}?tenant=b`);
    }
  });

  test('a target that yields no URL gets 400 Invalid request target; the handler is not called', async () => {
    let called = false;
    behaviour = () => {
      called = true;
      return new Response(null, { status: 204 });
    };
    const auth = { token: 't', clientId: 'c', scopes: [], extra: { claims: {}, tokenType: 'jwt' as const } };
    const written: { status?: number; body?: string } = {};
    const res = {
      writeHead: (status: number) => (written.status = status),
      end: (body: string) => (written.body = body),
    } as unknown as ServerResponse;
    const req = { method: 'POST', url: '*', headers: {}, rawHeaders: [], auth, body: call('whoami', 3), socket: {} } as unknown as GuardedRequest;
    await handler.handle(req, res, { auth, signal: new AbortController().signal, filterResponse: (_request, response) => response });
    assert.equal(called, false);
    assert.equal(written.status, 400);
    assert.deepEqual(JSON.parse(written.body!), { jsonrpc: '2.0', id: 3, error: { code: -32600, message: 'Invalid request target' } });
  });

  test('absolute URL from the resource, method, headers without credentials, JSON body, parsed message and caller', async () => {
    const { seen } = recording(() => Response.json({ jsonrpc: '2.0', id: 1, result: { content: [] } }));
    const message = call('whoami');
    const answer = await send(`${url}?tenant=a%20b`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${readToken}`,
        cookie: 'session=secret',
        'proxy-authorization': 'Basic eA==',
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-11-25',
        'x-trace': ['one', 'two'],
        connection: 'keep-alive, x-hop',
        'x-hop': 'for the next hop only',
        // Pretty-printed on the wire: the handler gets the re-serialized message, so its length differs.
        host: new URL(url).host,
      },
      body: JSON.stringify(message, null, 2),
    });
    assert.equal(answer.status, 200);
    const { request, context, body } = await seen;
    assert.equal(request.url, `${url}?tenant=a%20b`);
    assert.equal(request.method, 'POST');
    assert.equal(request.headers.get('authorization'), null);
    assert.equal(request.headers.get('cookie'), null);
    assert.equal(request.headers.get('proxy-authorization'), null);
    assert.equal(request.headers.get('content-length'), null);
    assert.equal(request.headers.get('connection'), null);
    assert.equal(request.headers.get('x-hop'), null);
    assert.equal(request.headers.get('content-type'), 'application/json');
    assert.equal(request.headers.get('mcp-protocol-version'), '2025-11-25');
    assert.equal(request.headers.get('x-trace'), 'one, two');
    assert.equal(body, JSON.stringify(message));
    assert.deepEqual(context.parsedBody, message);
    assert.equal(context.auth.extra.sub, 'alice');
    assert.deepEqual(context.auth.scopes, ['notes:read']);
    assert.equal(context.auth.resource?.href, url);
    assert.equal(context.protocolVersion, '2025-11-25');
    assert.equal(context.signal.aborted, false);
  });

  test('GET reaches the handler with no body and no parsed message', async () => {
    const { seen } = recording(() => new Response('ok', { headers: { 'content-type': 'text/plain' } }));
    const answer = await send(url, { method: 'GET', headers: { authorization: `Bearer ${readToken}`, accept: 'text/event-stream' } });
    assert.equal(answer.status, 200);
    assert.equal(answer.text, 'ok');
    const { request, context, body } = await seen;
    assert.equal(request.method, 'GET');
    assert.equal(body, '');
    assert.equal(context.parsedBody, undefined);
  });

  test('the handler is not called for a request the guard refuses', async () => {
    let called = false;
    behaviour = () => {
      called = true;
      return new Response(null, { status: 204 });
    };
    const answer = await postMcp(url, call('notes_add'), readToken);
    assert.equal(answer.status, 403);
    assert.match(String(answer.headers['www-authenticate']), /error="insufficient_scope"/);
    assert.equal(called, false);
  });
});

describe('fetchHandler: the Response', () => {
  test('status, status text and headers, each Set-Cookie kept whole', async () => {
    behaviour = () => {
      const headers = new Headers({ 'content-type': 'application/json', 'x-answer': '42', 'cache-control': 'no-store' });
      headers.append('set-cookie', 'a=1; Expires=Wed, 21 Oct 2037 07:28:00 GMT; Path=/');
      headers.append('set-cookie', 'b=2; HttpOnly');
      return new Response(JSON.stringify({ jsonrpc: '2.0', id: 1, result: {} }), { status: 201, statusText: 'Made Here', headers });
    };
    const { res } = await open(url, {
      headers: { authorization: `Bearer ${readToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    assert.equal(res.statusCode, 201);
    assert.equal(res.statusMessage, 'Made Here');
    assert.equal(res.headers['x-answer'], '42');
    assert.equal(res.headers['cache-control'], 'no-store');
    assert.deepEqual(res.headers['set-cookie'], ['a=1; Expires=Wed, 21 Oct 2037 07:28:00 GMT; Path=/', 'b=2; HttpOnly']);
    res.resume();
    await once(res, 'end');
  });

  test('202 with no body for a notification', async () => {
    behaviour = () => new Response(null, { status: 202 });
    const answer = await postMcp(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, readToken);
    assert.equal(answer.status, 202);
    assert.equal(answer.text, '');
  });

  test('HEAD: status and headers, no body, and the handler stream is cancelled', async () => {
    const body = controlledStream();
    body.push('never sent');
    behaviour = () => new Response(body.stream, { status: 200, headers: { 'content-type': 'text/plain', 'x-head': 'yes' } });
    const answer = await send(`${origin}/raw`, { method: 'HEAD' });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers['x-head'], 'yes');
    assert.equal(answer.text, '');
    await body.cancelled;
  });

  test('streaming: the first SSE event reaches the client before the handler ends its stream', async () => {
    const body = controlledStream();
    behaviour = () => new Response(body.stream, { headers: sseHeaders });
    const { res } = await open(url, {
      headers: { authorization: `Bearer ${readToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify(call('whoami', 5)),
    });
    // The head is out before any event exists.
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'text/event-stream');
    res.setEncoding('utf8');
    body.push('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}\n\n');
    const [first] = (await once(res, 'data')) as [string];
    assert.match(first, /notifications\/progress/);
    body.push('event: message\ndata: {"jsonrpc":"2.0","id":5,"result":{"content":[]}}\n\n');
    body.close();
    let rest = '';
    res.on('data', (c: string) => (rest += c));
    await once(res, 'end');
    assert.match(rest, /"id":5/);
  });

  test('tools/list answers are filtered by the caller\'s scopes, JSON and SSE alike', async () => {
    const list = (id: number) => ({ jsonrpc: '2.0', id, result: { tools: notesTools } });
    for (const sse of [false, true]) {
      behaviour = (_request, context) => {
        const id = (context.parsedBody as { id: number }).id;
        if (!sse) return Response.json(list(id));
        return new Response(`event: message\ndata: ${JSON.stringify(list(id))}\n\n`, { headers: sseHeaders });
      };
      const answer = await postMcp(url, { jsonrpc: '2.0', id: 9, method: 'tools/list' }, readToken);
      assert.equal(answer.status, 200);
      const message = sse ? JSON.parse(/^data: (.*)$/m.exec(answer.text)![1]!) : answer.json;
      assert.deepEqual(message.result.tools.map((t: { name: string }) => t.name), ['whoami', 'notes_list'], sse ? 'SSE' : 'JSON');
      if (!sse) assert.equal(Number(answer.headers['content-length']), Buffer.byteLength(answer.text));
    }
  });

  test('a slow reader holds the handler back (backpressure), then gets every byte', async () => {
    const chunk = new Uint8Array(64 * 1024).fill(0x61);
    const total = 512; // 32 MiB: far more than the socket buffers hold
    let pulled = 0;
    behaviour = () =>
      new Response(
        new ReadableStream<Uint8Array>({
          pull: (controller) => {
            pulled++;
            controller.enqueue(chunk);
            if (pulled === total) controller.close();
          },
        }),
        { headers: { 'content-type': 'application/octet-stream' } },
      );
    const { res } = await open(url, {
      headers: { authorization: `Bearer ${readToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify(call('whoami')),
    });
    res.pause();
    // Let the server run until it stops pulling (no pull for 20 event-loop turns), however long that takes:
    // an adapter that ignored backpressure would have pulled the whole body by then.
    for (let quiet = 0, last = -1; quiet < 20; ) {
      await new Promise((r) => setImmediate(r));
      quiet = pulled === last ? quiet + 1 : 0;
      last = pulled;
    }
    assert.ok(pulled < total / 2, `the handler was read ${pulled} times while the client read nothing`);
    let bytes = 0;
    res.on('data', (c: Buffer) => (bytes += c.length));
    res.resume();
    await once(res, 'end');
    assert.equal(bytes, total * chunk.length);
  });

  test('client disconnect: the context signal and the Request signal abort, and the body is cancelled', async () => {
    const body = controlledStream();
    const { seen } = recording(() => new Response(body.stream, { headers: sseHeaders }));
    const { res, abort } = await open(url, {
      headers: { authorization: `Bearer ${readToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify(call('whoami')),
    });
    const { request, context } = await seen;
    body.push(': first\n\n');
    await once(res, 'data');
    assert.equal(context.signal.aborted, false);
    const requestAborted = new Promise((r) => request.signal.addEventListener('abort', r, { once: true }));
    abort();
    await body.cancelled;
    await requestAborted;
    assert.equal(context.signal.aborted, true);
  });

  test('a body that fails midway cuts the response instead of ending it cleanly', async () => {
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    behaviour = () =>
      new Response(
        new ReadableStream<Uint8Array>({
          start: (c) => {
            controller = c;
            c.enqueue(new TextEncoder().encode(': partial\n\n'));
          },
        }),
        { headers: sseHeaders },
      );
    const { res } = await open(url, {
      headers: { authorization: `Bearer ${readToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify(call('whoami')),
    });
    await once(res, 'data');
    const outcome = new Promise<string>((resolve) => {
      res.once('end', () => resolve('end'));
      res.once('aborted', () => resolve('aborted'));
      res.once('error', () => resolve('aborted'));
    });
    controller.error(new Error('upstream broke'));
    assert.equal(await outcome, 'aborted');
  });

  test('a handler that throws before answering gets the guard\'s 500 with no detail', async () => {
    behaviour = () => {
      throw new Error('database password is hunter2');
    };
    const answer = await postMcp(url, call('whoami', 3), readToken);
    assert.equal(answer.status, 500);
    assert.deepEqual(answer.json, { jsonrpc: '2.0', id: 3, error: { code: -32603, message: 'Internal error' } });
  });
});

describe('fetchHandler with the SDK 1.x web-standard transport', () => {
  test('initialize and tools/call, the caller reaching the tool as extra.authInfo', async () => {
    behaviour = async (request, { auth, parsedBody }) => {
      const mcp = new McpServer({ name: 'web-standard', version: '1.0.0' });
      mcp.registerTool('whoami', { description: 'Who is calling.' }, (extra) => ({
        content: [{ type: 'text', text: String(extra.authInfo?.extra?.sub) }],
      }));
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      await mcp.connect(transport);
      return transport.handleRequest(request, { authInfo: auth, parsedBody });
    };
    const headers = { 'mcp-protocol-version': '2025-11-25' };
    const init = await postMcp(url, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }, readToken);
    assert.equal(init.status, 200);
    assert.equal(init.json.result.serverInfo.name, 'web-standard');
    const who = await postMcp(url, call('whoami', 4), readToken, headers);
    assert.equal(who.status, 200);
    assert.equal(who.json.result.content[0].text, 'alice');
  });
});
