// A handler that throws, on real HTTP with jose-signed tokens: the client gets a bare JSON-RPC -32603 with its id (no
// stack, no message), and the operator one warning line through the guard's logger naming the error; for a plain
// function (throwing or rejecting, or its stream failing), a fetch-shaped handler and an HTTP handler alike.
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { createGuard } from '../../src/core/guard/create-guard.js';
import type { GuardOptions } from '../../src/core/guard/guard-options.js';
import { RequestRejectedError } from '../../src/core/kernel/errors.js';
import type { McpMessageHandler } from '../../src/core/mcp/handler.js';
import type { JsonRpcMessage } from '../../src/core/wire/jsonrpc.js';
import { fetchHandler } from '../../src/http/fetch-handler.js';
import { HANDLER_THREW_MESSAGE } from '../../src/http/handler-failure-log.js';
import { httpHandler } from '../../src/http/http-handler.js';
import { createRequestPipeline, type McpHandler } from '../../src/http/request-pipeline.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { messages, postMcp } from '../helpers/http-client.js';
import { closeServer, servePipeline } from '../helpers/loopback-server.js';

const RESOURCE = 'https://mcp.example.com/mcp';
const INTERNAL = { code: -32603, message: 'Internal error' };

let issuer: TestIssuer;
let token: string;

before(async () => {
  issuer = await startTestIssuer();
  token = await issuer.sign({ aud: RESOURCE, sub: 'alice', client_id: 'console', scope: 'notes:read' });
});
after(async () => {
  await issuer?.close();
});

/** Serves `handler` behind a guard whose logger keeps every line; stops it after `use`. */
async function withHandler(handler: McpHandler, use: (url: string, lines: { info: string[]; warn: string[] }) => Promise<void>, extra: Partial<GuardOptions> = {}): Promise<void> {
  const lines = { info: [] as string[], warn: [] as string[] };
  const logger = { info: (line: string) => void lines.info.push(line), warn: (line: string) => void lines.warn.push(line) };
  const pipeline = createRequestPipeline(createGuard({ issuer: issuer.issuer, resource: RESOURCE, logger, ...extra }), handler);
  const { server, url }: { server: Server; url: string } = await servePipeline(pipeline);
  try {
    await use(url, lines);
  } finally {
    closeServer(server);
    await pipeline.close();
  }
}

const call = (id: number | string, name: string): JsonRpcMessage => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name } });

/** The one warning written, parsed; fails unless there is exactly one and it holds no token. */
function oneWarning(warn: readonly string[]): Record<string, unknown> {
  assert.equal(warn.length, 1, warn.join('\n'));
  assert.ok(!warn[0]!.includes(token), 'the token is never logged');
  return JSON.parse(warn[0]!) as Record<string, unknown>;
}

describe('a plain function handler that throws', () => {
  test('synchronously: 500 with -32603 and the id, nothing of the error; one warning naming it', async () => {
    const handler: McpMessageHandler = () => {
      throw new TypeError('rows is undefined in the notes table');
    };
    await withHandler(handler, async (url, lines) => {
      const answer = await postMcp(url, call(41, 'search'), token);
      assert.equal(answer.status, 500);
      assert.deepEqual(answer.json, { jsonrpc: '2.0', id: 41, error: INTERNAL });
      assert.ok(!answer.text.includes('rows is undefined') && !answer.text.includes('TypeError'), answer.text);
      const warning = oneWarning(lines.warn);
      assert.equal(warning.event, 'warning');
      assert.equal(warning.message, HANDLER_THREW_MESSAGE);
      assert.equal(warning.method, 'tools/call');
      assert.equal(warning.error, 'TypeError');
      assert.equal(warning.detail, 'rows is undefined in the notes table');
      assert.ok(!('stack' in warning));
    });
  });

  test("the warning never carries the caller's token, though the handler's error does", async () => {
    const handler: McpMessageHandler = (_message, { auth }) => {
      throw new Error(`upstream refused Bearer ${auth.token} and the token ${auth.token} itself`);
    };
    await withHandler(handler, async (url, lines) => {
      const answer = await postMcp(url, call(43, 'search'), token);
      assert.equal(answer.status, 500);
      assert.deepEqual(answer.json, { jsonrpc: '2.0', id: 43, error: INTERNAL });
      const warning = oneWarning(lines.warn);
      assert.equal(warning.detail, 'upstream refused Bearer [redacted] and the token [redacted] itself');
      assert.ok(!lines.warn.join('\n').includes(token.split('.')[1]!), 'no part of the token in the log');
    });
  });

  test('asynchronously (a rejection): the same answer, with a string id, and the same warning', async () => {
    const handler: McpMessageHandler = async () => {
      await new Promise((resolve) => setImmediate(resolve));
      throw new RangeError('page out of range', { cause: new Error('cursor 9 of 3') });
    };
    await withHandler(handler, async (url, lines) => {
      const answer = await postMcp(url, call('req-7', 'search'), token);
      assert.equal(answer.status, 500);
      assert.deepEqual(answer.json, { jsonrpc: '2.0', id: 'req-7', error: INTERNAL });
      const warning = oneWarning(lines.warn);
      assert.equal(warning.error, 'RangeError');
      assert.equal(warning.detail, 'page out of range: cursor 9 of 3');
    });
  });

  test('its stream failing after the head was sent: -32603 as the last event, the stream ended, one warning', async () => {
    const handler: McpMessageHandler = (message) =>
      (async function* () {
        yield { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'p', progress: 1 } } as JsonRpcMessage;
        throw new Error(`stream broke after progress for ${(message as { id: number }).id}`);
      })();
    await withHandler(handler, async (url, lines) => {
      const answer = await postMcp(url, call(5, 'long'), token);
      assert.equal(answer.status, 200);
      assert.deepEqual(messages(answer).at(-1), { jsonrpc: '2.0', id: 5, error: INTERNAL });
      assert.equal(oneWarning(lines.warn).detail, 'stream broke after progress for 5');
    });
  });

  test('a thrown value that is no Error is named by its type', async () => {
    const handler: McpMessageHandler = () => {
      throw 'plain string failure';
    };
    await withHandler(handler, async (url, lines) => {
      const answer = await postMcp(url, call(1, 'x'), token);
      assert.deepEqual(answer.json, { jsonrpc: '2.0', id: 1, error: INTERNAL });
      const warning = oneWarning(lines.warn);
      assert.equal(warning.error, 'string');
      assert.equal(warning.detail, 'plain string failure');
    });
  });

  test('with the log level at off, the client gets the same answer and nothing is written', async () => {
    const handler: McpMessageHandler = () => {
      throw new Error('quiet failure');
    };
    await withHandler(
      handler,
      async (url, lines) => {
        const answer = await postMcp(url, call(2, 'x'), token);
        assert.deepEqual(answer.json, { jsonrpc: '2.0', id: 2, error: INTERNAL });
        assert.deepEqual(lines.warn, []);
      },
      { logLevel: 'off' },
    );
  });
});

describe('the other adapters', () => {
  test('a fetch-shaped handler that throws before its Response: 500 with -32603, one warning', async () => {
    const handler = fetchHandler(() => {
      throw new Error('database password rejected');
    });
    await withHandler(handler, async (url, lines) => {
      const answer = await postMcp(url, call(3, 'x'), token);
      assert.equal(answer.status, 500);
      assert.deepEqual(answer.json, { jsonrpc: '2.0', id: 3, error: INTERNAL });
      assert.ok(!answer.text.includes('password'));
      const warning = oneWarning(lines.warn);
      assert.equal(warning.method, 'tools/call');
      assert.equal(warning.detail, 'database password rejected');
    });
  });

  test('an HTTP handler that throws after sending its head: the response is ended, one warning', async () => {
    const handler = httpHandler(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': started\n\n');
      await new Promise((resolve) => setImmediate(resolve));
      throw new Error('upstream socket vanished');
    });
    await withHandler(handler, async (url, lines) => {
      const answer = await postMcp(url, call(4, 'x'), token);
      assert.equal(answer.status, 200);
      assert.equal(answer.text, ': started\n\n');
      assert.equal(oneWarning(lines.warn).detail, 'upstream socket vanished');
    });
  });

  test("an HTTP handler's own refusal (a guard error) is a refusal, not a failure: its answer, no warning", async () => {
    const handler = httpHandler(() => {
      throw new RequestRejectedError('Bad request: no such note', { status: 400, reason: 'request_invalid', jsonRpcCode: -32602 });
    });
    await withHandler(handler, async (url, lines) => {
      const answer = await postMcp(url, call(6, 'x'), token);
      assert.equal(answer.status, 400);
      assert.equal(answer.json.error.code, -32602);
      assert.deepEqual(lines.warn, []);
    });
  });
});
