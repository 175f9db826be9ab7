// The Express adapter end to end: real oidc-provider tokens, real HTTP on 127.0.0.1, one test per bad input.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { dispatchTable, type DecisionEvent, type JsonRpcMessage, type McpMessageHandler } from '../../src/index.js';
import { startGuardedApp, type GuardedApp } from '../helpers/guarded-app.js';
import { postMcp, send } from '../helpers/http-client.js';

const SCOPES = ['x:read', 'x:write', 'x:admin'];

describe('mcpOAuthGuard (Express adapter)', () => {
  let as: AuthorizationServer;
  let app: GuardedApp;
  let readToken: string;
  const delivered: JsonRpcMessage[] = [];
  const decisions: DecisionEvent[] = [];

  const table = dispatchTable({
    'tools/list': () => ({
      tools: ['echo', 'constructor', '__proto__', 'toString', 'hasOwnProperty'].map((name) => ({ name, inputSchema: { type: 'object' } })),
      nextCursor: 'c2',
    }),
    'tools/call': (params) => ({ content: [{ type: 'text', text: `called ${String(params.name)}` }] }),
    'prompts/list': () => ({ prompts: [{ name: 'summary' }, { name: 'secret' }] }),
    'resources/list': () => ({ resources: [{ uri: 'notes://alice/1', name: 'n1' }, { uri: 'admin://config', name: 'cfg' }] }),
    'resources/templates/list': () => ({ resourceTemplates: [{ uriTemplate: 'notes://{user}/{id}', name: 't' }] }),
    'resources/read': (params) => ({ contents: [{ uri: String(params.uri), text: 'note' }], cacheScope: 'public', ttlMs: 1000 }),
    'notifications/initialized': () => undefined,
  });
  const handler: McpMessageHandler = async (message, context) => {
    delivered.push(message);
    if ('method' in message && message.method === 'tools/call' && message.params?.name === 'boom') throw new Error('secret internal detail');
    if ('method' in message && message.method === 'tools/call' && message.params?.name === 'slow_stream' && 'id' in message) {
      const id = message.id;
      return (async function* () {
        yield { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'p', progress: 1, total: 2 } } as JsonRpcMessage;
        yield { jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'done' }] } } as JsonRpcMessage;
      })();
    }
    if ('method' in message && message.method === 'tools/list' && message.params?.stream === true && 'id' in message) {
      const id = message.id;
      const listed = await table(message, context);
      return (async function* () {
        yield { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'listing' } } as JsonRpcMessage;
        yield { ...(listed as object), id } as JsonRpcMessage;
      })();
    }
    return table(message, context);
  };

  before(async () => {
    as = await startAuthorizationServer();
    app = await startGuardedApp((origin) => ({
      issuer: as.issuer,
      resource: `${origin}/mcp`,
      allowedOrigins: ['https://inspector.example'],
      maxBodyBytes: 4096,
      policy: {
        scopesSupported: SCOPES,
        tools: { echo: [], toString: [], hasOwnProperty: ['x:read'], constructor: ['x:admin'], ['__proto__']: ['x:admin'], slow_stream: [], boom: [] },
        prompts: { summary: ['x:read'], '*': ['x:admin'] },
        resources: { 'notes://{user}/{id}': ['x:read'], '*': ['x:admin'] },
        scopeHierarchy: { 'x:admin': ['x:write'], 'x:write': ['x:read'] },
      },
      onDecision: (e) => decisions.push(e),
      handler,
    }));
    as.addResource(app.url, { scopes: SCOPES });
    readToken = await as.issueAccessToken({ resource: app.url, scope: 'x:read', sub: 'alice' });
  });
  after(async () => {
    await app?.close();
    await as?.close();
  });

  const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' };

  test('invalid JSON gets 400 with -32700 and id null', async () => {
    const res = await postMcp(app.url, '{"jsonrpc": "2.0", "id": 1,', readToken);
    assert.equal(res.status, 400);
    assert.deepEqual(res.json, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: the body is not valid JSON' } });
  });

  test('an object that is not JSON-RPC 2.0 gets 400 with -32600 and its id', async () => {
    const res = await postMcp(app.url, { jsonrpc: '1.0', id: 5, method: 'tools/list' }, readToken);
    assert.equal(res.status, 400);
    assert.equal(res.json.id, 5);
    assert.equal(res.json.error.code, -32600);
  });

  test('an id that is neither a string nor a number gets -32600 with id null', async () => {
    for (const id of [null, true, { a: 1 }, [1]]) {
      const res = await postMcp(app.url, { jsonrpc: '2.0', id, method: 'tools/list' }, readToken);
      assert.equal(res.status, 400, JSON.stringify(id));
      assert.equal(res.json.id, null);
      assert.equal(res.json.error.code, -32600);
    }
  });

  test('a batch array is refused with a clear -32600', async () => {
    const res = await postMcp(app.url, [list, { ...list, id: 2 }], readToken);
    assert.equal(res.status, 400);
    assert.equal(res.json.error.code, -32600);
    assert.match(res.json.error.message, /batches are not supported/);
  });

  test('deeply nested params get 400, not 500', async () => {
    const deep = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":' + '['.repeat(500) + ']'.repeat(500) + '}}';
    const res = await postMcp(app.url, deep, readToken);
    assert.equal(res.status, 400);
    assert.equal(res.json.error.code, -32600);
    assert.match(res.json.error.message, /nested deeper than 64/);
  });

  test('a body over the limit gets 413', async () => {
    const big = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { t: 'x'.repeat(10_000) } } });
    const res = await postMcp(app.url, big, readToken);
    assert.equal(res.status, 413);
    assert.equal(res.json.error.code, -32600);
  });

  test('a body that is not application/json gets 415', async () => {
    const res = await send(app.url, { headers: { 'content-type': 'text/plain', authorization: `Bearer ${readToken}` }, body: JSON.stringify(list) });
    assert.equal(res.status, 415);
  });

  test('a token in the query string is refused with invalid_request', async () => {
    const res = await postMcp(`${app.url}?access_token=${readToken}`, list, readToken);
    assert.equal(res.status, 400);
    assert.match(String(res.headers['www-authenticate']), /^Bearer error="invalid_request"/);
    assert.ok(!res.text.includes(readToken), 'the token must not be echoed');
  });

  test('two Authorization headers are refused with invalid_request', async () => {
    const res = await postMcp(app.url, list, undefined, { authorization: [`Bearer ${readToken}`, `Bearer ${readToken}`] });
    assert.equal(res.status, 400);
    assert.match(String(res.headers['www-authenticate']), /error="invalid_request"/);
  });

  test('a token that does not match the RFC 6750 grammar is refused with invalid_request', async () => {
    const res = await postMcp(app.url, list, undefined, { authorization: 'Bearer abc def' });
    assert.equal(res.status, 400);
    assert.match(String(res.headers['www-authenticate']), /error="invalid_request"/);
  });

  test('a garbage token gets 401 invalid_token', async () => {
    const res = await postMcp(app.url, list, 'not.a.jwt');
    assert.equal(res.status, 401);
    assert.match(String(res.headers['www-authenticate']), /^Bearer error="invalid_token", error_description="[^"]+", resource_metadata="/);
  });

  test('the Bearer scheme is case-insensitive', async () => {
    const res = await postMcp(app.url, list, undefined, { authorization: `bEaReR ${readToken}` });
    assert.equal(res.status, 200);
  });

  test('an Origin that is present and not allowed gets 403; an allowed one gets CORS headers', async () => {
    const bad = await postMcp(app.url, list, readToken, { origin: 'https://evil.example' });
    assert.equal(bad.status, 403);
    assert.equal(bad.json.error.code, -32600);
    const good = await postMcp(app.url, list, readToken, { origin: 'https://inspector.example' });
    assert.equal(good.status, 200);
    assert.equal(good.headers['access-control-allow-origin'], 'https://inspector.example');
    assert.match(String(good.headers['access-control-expose-headers']), /WWW-Authenticate/);
  });

  test('GET and DELETE get 405 with Allow when the handler is a plain function', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await send(app.url, { method, headers: { authorization: `Bearer ${readToken}` } });
      assert.equal(res.status, 405, method);
      assert.equal(res.headers.allow, 'POST, OPTIONS');
    }
  });

  test('a notification is delivered to the handler and answered 202 with no body', async () => {
    const before = delivered.length;
    const res = await postMcp(app.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, readToken);
    assert.equal(res.status, 202);
    assert.equal(res.text, '');
    assert.deepEqual(delivered.slice(before), [{ jsonrpc: '2.0', method: 'notifications/initialized' }]);
  });

  test('a client response to a server request is delivered and answered 202', async () => {
    const reply = { jsonrpc: '2.0', id: 'srv-1', result: { action: 'accept', content: { ok: true } } };
    const before = delivered.length;
    const res = await postMcp(app.url, reply, readToken);
    assert.equal(res.status, 202);
    assert.deepEqual(delivered.slice(before), [reply]);
  });

  test('a notification without a token still gets 401', async () => {
    const res = await postMcp(app.url, { jsonrpc: '2.0', method: 'notifications/initialized' });
    assert.equal(res.status, 401);
  });

  test('tools named constructor, __proto__, toString are authorized and filtered like any other', async () => {
    const res = await postMcp(app.url, list, readToken);
    assert.deepEqual(res.json.result.tools.map((t: { name: string }) => t.name), ['echo', 'toString', 'hasOwnProperty']);
    assert.equal(res.json.result.nextCursor, 'c2');
    for (const name of ['constructor', '__proto__']) {
      const denied = await postMcp(app.url, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name } }, readToken);
      assert.equal(denied.status, 403, name);
      assert.match(String(denied.headers['www-authenticate']), /scope="x:admin x:read"/);
    }
    const ok = await postMcp(app.url, { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'toString' } }, readToken);
    assert.equal(ok.status, 200);
    assert.equal(ok.json.result.content[0].text, 'called toString');
  });

  test('prompts, resources and resource templates lists are filtered too', async () => {
    const prompts = await postMcp(app.url, { jsonrpc: '2.0', id: 1, method: 'prompts/list' }, readToken);
    assert.deepEqual(prompts.json.result.prompts, [{ name: 'summary' }]);
    const resources = await postMcp(app.url, { jsonrpc: '2.0', id: 2, method: 'resources/list' }, readToken);
    assert.deepEqual(resources.json.result.resources, [{ uri: 'notes://alice/1', name: 'n1' }]);
    const templates = await postMcp(app.url, { jsonrpc: '2.0', id: 3, method: 'resources/templates/list' }, readToken);
    assert.equal(templates.json.result.resourceTemplates.length, 1);
    const read = await postMcp(app.url, { jsonrpc: '2.0', id: 4, method: 'resources/read', params: { uri: 'admin://config' } }, readToken);
    assert.equal(read.status, 403);
  });

  test('an async iterable result streams as SSE: progress first, then the response', async () => {
    const res = await postMcp(app.url, { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'slow_stream' } }, readToken);
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'text/event-stream');
    const events = res.text.split('\n\n').filter(Boolean).map((e) => JSON.parse(e.split('\n').find((l) => l.startsWith('data: '))!.slice(6)));
    assert.equal(events.length, 2);
    assert.equal(events[0].method, 'notifications/progress');
    assert.deepEqual(events[1], { jsonrpc: '2.0', id: 9, result: { content: [{ type: 'text', text: 'done' }] } });
  });

  test('a list result streamed as SSE is filtered in its final event', async () => {
    const res = await postMcp(app.url, { jsonrpc: '2.0', id: 10, method: 'tools/list', params: { stream: true } }, readToken);
    const events = res.text.split('\n\n').filter(Boolean).map((e) => JSON.parse(e.slice(e.indexOf('data: ') + 6)));
    assert.equal(events[0].method, 'notifications/message');
    assert.deepEqual(events[1].result.tools.map((t: { name: string }) => t.name), ['echo', 'toString', 'hasOwnProperty']);
  });

  test('a handler that throws gets 500 with a generic JSON-RPC error and no detail', async () => {
    const res = await postMcp(app.url, { jsonrpc: '2.0', id: 11, method: 'tools/call', params: { name: 'boom' } }, readToken);
    assert.equal(res.status, 500);
    assert.deepEqual(res.json, { jsonrpc: '2.0', id: 11, error: { code: -32603, message: 'Internal error' } });
    assert.ok(!res.text.includes('secret internal detail'));
  });

  describe('2026-07-28 header mirroring', () => {
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
    const modernCall = (name: string) => ({ jsonrpc: '2.0', id: 20, method: 'tools/call', params: { name, _meta: meta } });
    const headers = (name: string) => ({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name });

    test('matching headers pass', async () => {
      const res = await postMcp(app.url, modernCall('echo'), readToken, headers('echo'));
      assert.equal(res.status, 200);
    });

    test('an Mcp-Name that differs from the body gets 400 with -32020', async () => {
      const res = await postMcp(app.url, modernCall('echo'), readToken, headers('toString'));
      assert.equal(res.status, 400);
      assert.equal(res.json.error.code, -32020);
      assert.equal(res.json.id, 20);
      assert.match(res.json.error.message, /Mcp-Name header value 'toString' does not match body value 'echo'/);
    });

    test('the base64 sentinel form of Mcp-Name is decoded before comparing', async () => {
      const encoded = `=?base64?${Buffer.from('echo').toString('base64')}?=`;
      const ok = await postMcp(app.url, modernCall('echo'), readToken, headers(encoded));
      assert.equal(ok.status, 200);
      const wrong = `=?base64?${Buffer.from('toString').toString('base64')}?=`;
      const bad = await postMcp(app.url, modernCall('echo'), readToken, headers(wrong));
      assert.equal(bad.json.error.code, -32020);
    });

    test('an Mcp-* header sent twice is refused even though Node joins the values', async () => {
      const res = await postMcp(app.url, modernCall('echo'), readToken, { ...headers('echo'), 'mcp-param-region': ['eu', 'us'] });
      assert.equal(res.status, 400);
      assert.equal(res.json.error.code, -32020);
      assert.match(res.json.error.message, /Mcp-Param-region header sent more than once/);
    });

    test('a missing Mcp-Method gets -32020', async () => {
      const res = await postMcp(app.url, modernCall('echo'), readToken, { 'mcp-protocol-version': '2026-07-28', 'mcp-name': 'echo' });
      assert.equal(res.status, 400);
      assert.equal(res.json.error.code, -32020);
    });

    test('MCP-Protocol-Version inconsistent with _meta gets -32020', async () => {
      const res = await postMcp(app.url, modernCall('echo'), readToken, { ...headers('echo'), 'mcp-protocol-version': '2025-11-25' });
      assert.equal(res.status, 400);
      assert.equal(res.json.error.code, -32020);
    });

    test('header mismatch is checked before scopes: a forbidden tool with wrong headers gets 400, not 403', async () => {
      const res = await postMcp(app.url, modernCall('constructor'), readToken, headers('echo'));
      assert.equal(res.status, 400);
    });

    test('an unknown method gets 404 with -32601 (a 2025 request would get 200)', async () => {
      const modern = await postMcp(app.url, { jsonrpc: '2.0', id: 22, method: 'foo/bar', params: { _meta: meta } }, readToken, {
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'foo/bar',
      });
      assert.equal(modern.status, 404);
      assert.equal(modern.json.error.code, -32601);
      const legacy = await postMcp(app.url, { jsonrpc: '2.0', id: 23, method: 'foo/bar' }, readToken);
      assert.equal(legacy.status, 200);
      assert.equal(legacy.json.error.code, -32601);
    });

    test('a public resources/read result for a scope-restricted resource is kept private', async () => {
      const res = await postMcp(
        app.url,
        { jsonrpc: '2.0', id: 24, method: 'resources/read', params: { uri: 'notes://alice/1', _meta: meta } },
        readToken,
        { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'resources/read', 'mcp-name': 'notes://alice/1' },
      );
      assert.equal(res.status, 200);
      assert.equal(res.json.result.cacheScope, 'private');
      assert.equal(res.json.result.ttlMs, 1000);
    });

    test('filtered lists are marked cacheScope private', async () => {
      const res = await postMcp(app.url, { jsonrpc: '2.0', id: 21, method: 'tools/list', params: { _meta: meta } }, readToken, {
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/list',
      });
      assert.equal(res.status, 200);
      assert.equal(res.json.result.cacheScope, 'private');
      assert.equal(res.json.result.resultType, 'complete');
    });
  });

  test('a resource URI spelled with stray whitespace is refused with -32602 before the policy runs', async () => {
    const res = await postMcp(app.url, { jsonrpc: '2.0', id: 25, method: 'resources/read', params: { uri: ' admin://config' } }, readToken);
    assert.equal(res.status, 400);
    assert.equal(res.json.error.code, -32602);
  });

  test('the decision hook bounds client-chosen names', async () => {
    decisions.length = 0;
    await postMcp(app.url, { jsonrpc: '2.0', id: 26, method: 'tools/call', params: { name: 'n'.repeat(3000) } }, readToken);
    assert.equal(decisions.length, 1);
    assert.ok(decisions[0]!.name!.length <= 257);
  });

  test('the decision hook reports allows and denies with stable reasons and never the token', async () => {
    decisions.length = 0;
    await postMcp(app.url, { jsonrpc: '2.0', id: 30, method: 'tools/call', params: { name: 'echo' } }, readToken);
    await postMcp(app.url, { jsonrpc: '2.0', id: 31, method: 'tools/call', params: { name: 'constructor' } }, readToken);
    await postMcp(app.url, list);
    assert.deepEqual(
      decisions.map((d) => [d.decision, d.reason, d.status, d.method, d.name]),
      [
        ['allow', 'allowed', 200, 'tools/call', 'echo'],
        ['deny', 'scope_insufficient', 403, 'tools/call', 'constructor'],
        ['deny', 'token_missing', 401, 'tools/list', undefined],
      ],
    );
    assert.equal(decisions[0]!.subject, 'alice');
    assert.deepEqual(decisions[1]!.requiredScopes, ['x:admin']);
    assert.ok(!JSON.stringify(decisions).includes(readToken));
  });

  test('an unreachable authorization server gets 503 with Retry-After, never 401', async () => {
    const down = await startGuardedApp((origin) => ({ issuer: 'http://127.0.0.1:9', resource: `${origin}/mcp`, httpTimeoutMs: 1000, handler }));
    try {
      // A token naming the unreachable issuer: its signature cannot be checked until the keys can be fetched.
      // (A token naming another issuer is refused for that, 401, whether or not this one is reachable.)
      const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
      const theirs = `${b64({ alg: 'ES256', kid: 'k' })}.${b64({ iss: 'http://127.0.0.1:9', aud: down.url, exp: Math.floor(Date.now() / 1000) + 60 })}.${'A'.repeat(86)}`;
      const res = await postMcp(down.url, list, theirs);
      assert.equal(res.status, 503);
      assert.ok(Number(res.headers['retry-after']) > 0);
      assert.equal(res.json.error.code, -31503);
      assert.equal(res.headers['www-authenticate'], undefined);
    } finally {
      await down.close();
    }
  });
});
