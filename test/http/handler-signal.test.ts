// The abort signal a plain function handler is given: made on first read, and right whenever it is read.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from '../helpers/child-process.js';
import { request, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import express from 'express';
import { mcpOAuthGuard, type HandlerContext, type JsonRpcMessage } from '../../src/index.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { postMcp } from '../helpers/http-client.js';

describe('mcpOAuthGuard handler context signal', () => {
  let issuer: TestIssuer;
  let server: Server;
  let url: string;
  let token: string;
  /** What each test's handler does, by tool name. */
  const behaviours = new Map<string, (context: HandlerContext) => Promise<void>>();
  /** Resolves when the server has seen the next connection close. */
  let serverSocketClosed: Promise<void>;

  before(async () => {
    issuer = await startTestIssuer();
    const app = express();
    server = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', resolve));
    server.on('connection', (socket: Socket) => {
      serverSocketClosed = new Promise((resolve) => socket.once('close', () => setImmediate(resolve)));
    });
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
    app.use(
      mcpOAuthGuard({
        issuer: issuer.issuer,
        resource: url,
        handler: async (message: JsonRpcMessage, context) => {
          const name = 'params' in message ? String(message.params?.name) : '';
          await behaviours.get(name)?.(context);
          return { jsonrpc: '2.0', id: 'id' in message ? (message.id as number) : 0, result: { content: [] } };
        },
      }),
    );
    token = await issuer.sign({ aud: url, sub: 'alice', client_id: 'c' });
  });
  after(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await issuer?.close();
  });

  /** Sends a tools/call and drops the connection once the handler has started. */
  async function callAndHangUp(name: string, started: Promise<void>): Promise<void> {
    const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` } });
    req.on('error', () => {});
    req.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name } }));
    await started;
    req.destroy();
  }

  test('a signal read before the client hangs up fires when it does', async () => {
    let markStarted!: () => void;
    const started = new Promise<void>((resolve) => (markStarted = resolve));
    let aborted!: Promise<void>;
    behaviours.set('early', async (context) => {
      const signal = context.signal;
      assert.equal(signal.aborted, false);
      aborted = new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      markStarted();
      await aborted;
    });
    await callAndHangUp('early', started);
    await aborted;
  });

  test('a signal first read after the client hung up is already aborted', async () => {
    let markStarted!: () => void;
    const started = new Promise<void>((resolve) => (markStarted = resolve));
    let gone!: () => void;
    const clientGone = new Promise<void>((resolve) => (gone = resolve));
    let markRead!: (aborted: boolean) => void;
    const read = new Promise<boolean>((resolve) => (markRead = resolve));
    behaviours.set('late', async (context) => {
      markStarted();
      await clientGone;
      markRead(context.signal.aborted);
    });
    await callAndHangUp('late', started);
    await serverSocketClosed;
    gone();
    assert.equal(await read, true);
  });

  test('a completed answer never aborts the signal, whenever it is read', async () => {
    let kept: HandlerContext | undefined;
    behaviours.set('done', async (context) => {
      kept = context;
    });
    const res = await postMcp(url, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'done' } }, token);
    assert.equal(res.status, 200);
    assert.equal(kept?.signal.aborted, false);
  });

  test('spreading a context copies its fields, the signal included, and nothing internal', async () => {
    let copy: Record<string, unknown> | undefined;
    behaviours.set('spread', async (context) => {
      copy = { ...context };
    });
    const res = await postMcp(url, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'spread' } }, token);
    assert.equal(res.status, 200);
    assert.ok(copy?.signal instanceof AbortSignal);
    assert.deepEqual(Reflect.ownKeys(copy!).sort(), ['auth', 'protocolVersion', 'sessionId', 'signal'], 'no internal property shows');
    assert.equal((copy?.auth as { extra: { sub: string } }).extra.sub, 'alice');
  });

  test("every request's context has fast properties and one hidden class", () => {
    // V8's own answer, in a child started with --allow-natives-syntax. A getter written in each context's object
    // literal made every context in dictionary mode, and the whole request survived young-generation collections
    // with it: a third of what each request allocated was promoted.
    const script = `
      import { createServer } from 'node:http';
      import { startTestIssuer } from ${JSON.stringify(new URL('../helpers/fake-issuer.ts', import.meta.url).href)};
      import { createGuard } from ${JSON.stringify(new URL('../../src/core/guard/create-guard.ts', import.meta.url).href)};
      import { createRequestPipeline } from ${JSON.stringify(new URL('../../src/http/request-pipeline.ts', import.meta.url).href)};
      const issuer = await startTestIssuer();
      const server = createServer().listen(0, '127.0.0.1');
      await new Promise((resolve) => server.once('listening', resolve));
      const url = 'http://127.0.0.1:' + server.address().port + '/mcp';
      const contexts = [];
      const pipeline = createRequestPipeline(createGuard({ issuer: issuer.issuer, resource: url }), (message, context) => {
        if (contexts.length === 1) void context.signal; // one read, one not: the same class either way
        contexts.push(context);
        return { jsonrpc: '2.0', id: message.id, result: {} };
      });
      server.on('request', (req, res) => pipeline.serve(req, res));
      const token = await issuer.sign({ aud: url, sub: 'alice' });
      for (let id = 1; id <= 3; id++) {
        await (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: 'Bearer ' + token }, body: JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' }) })).text();
      }
      server.close();
      await issuer.close();
      console.log(JSON.stringify([contexts.length, ...contexts.map((c) => eval('%HasFastProperties(c)')), eval('%HaveSameMap(contexts[0], contexts[2])')]));
    `;
    const out = execFileSync(process.execPath, ['--allow-natives-syntax', '--import', 'tsx', '--input-type=module', '--eval', script], { encoding: 'utf8', timeout: 30_000 });
    assert.deepEqual(JSON.parse(out.trim().split('\n').at(-1)!), [3, true, true, true, true]);
  });
});
