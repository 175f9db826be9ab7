// One list of credential headers (CREDENTIAL_HEADERS), dropped by every adapter: a DPoP-bound request carrying
// each of them goes through the guard to the fetch handler, the SDK 1.x and 2.x adapters' tools and the gateway's
// upstream, and none of them sees any header of the list nor its value. Real HTTP, real jose tokens and proofs,
// the real SDK servers.
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { McpServer as Sdk1McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { McpServer as Sdk2McpServer, type ServerContext } from '@modelcontextprotocol/server';
import { createGuard } from '../../src/core/guard/create-guard.js';
import { ConfigurationError } from '../../src/core/kernel/errors.js';
import { createUpstreamProxy } from '../../src/gateway/upstream/http/upstream-proxy.js';
import { checkIdentityHeaders } from '../../src/gateway/upstream/http/identity-headers.js';
import { CREDENTIAL_HEADERS } from '../../src/http/credential-headers.js';
import { fetchHandler } from '../../src/http/fetch-handler.js';
import type { McpHttpHandler } from '../../src/http/http-handler.js';
import { createRequestPipeline } from '../../src/http/request-pipeline.js';
import { sdkStreamableHttpHandler } from '../../src/sdk/sdk-streamable-http-handler.js';
import { sdk2McpHandler } from '../../src/sdk/sdk2.js';
import { makeDpopKey, signDpopProof, type DpopKey } from '../helpers/dpop.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { messages, send } from '../helpers/http-client.js';
import { closeServer, listenOnLoopback, servePipeline } from '../helpers/loopback-server.js';

const RESOURCE = 'https://mcp.example.com/mcp';
const PROTOCOL = '2025-11-25';

let issuer: TestIssuer;
let key: DpopKey;
const servers: Server[] = [];

before(async () => {
  issuer = await startTestIssuer();
  key = await makeDpopKey();
});
after(async () => {
  for (const server of servers) closeServer(server);
  await issuer?.close();
});

/** Serves `handler` behind a DPoP-accepting guard on 127.0.0.1 and returns the endpoint URL. */
async function guarded(handler: McpHttpHandler): Promise<string> {
  const { server, url } = await servePipeline(createRequestPipeline(createGuard({ issuer: issuer.issuer, resource: RESOURCE, dpop: 'allow' }), handler));
  servers.push(server);
  return url;
}

/**
 * A value for every credential header: a DPoP-bound token and its proof, proxy credentials, a cookie. A header
 * added to the list without a value here fails the test, so the list and the test cannot drift apart.
 */
async function credentials(): Promise<Record<string, string>> {
  const token = await issuer.sign({ aud: RESOURCE, sub: 'alice', scope: 'mcp', cnf: { jkt: key.thumbprint } });
  const values: Record<string, string> = {
    authorization: `DPoP ${token}`,
    dpop: await signDpopProof(key, { htu: RESOURCE, token }),
    'proxy-authorization': 'Basic cHJveHk6cHJveHktc2VjcmV0',
    cookie: 'session=cookie-secret-4711',
  };
  assert.deepEqual(Object.keys(values).sort(), [...CREDENTIAL_HEADERS].sort(), 'a value for each credential header');
  return values;
}

/** Calls the tool `echo_headers` with every credential header and returns the headers the far side reported. */
async function headersSeenThrough(url: string): Promise<{ seen: Record<string, unknown>; sent: Record<string, string> }> {
  const sent = await credentials();
  const answer = await send(url, {
    headers: { ...sent, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': PROTOCOL, 'user-agent': 'credential-test/1.0' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo_headers', arguments: {} } }),
  });
  assert.equal(answer.status, 200, answer.text);
  const response = messages(answer).find((m) => m.id === 2);
  assert.ok(response?.result, answer.text);
  return { seen: JSON.parse(response.result.content[0].text), sent };
}

function assertNoCredential(seen: Record<string, unknown>, sent: Record<string, string>): void {
  assert.equal(seen['user-agent'], 'credential-test/1.0', 'other headers do get through');
  const names = Object.keys(seen).map((name) => name.toLowerCase());
  const text = JSON.stringify(seen);
  for (const name of CREDENTIAL_HEADERS) {
    assert.ok(!names.includes(name), `${name} reached the handler`);
    assert.ok(!text.includes(sent[name]!.split(' ').pop()!), `the value of ${name} reached the handler`);
  }
}

function headerRecord(headers: Headers | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  headers?.forEach((value, name) => (out[name] = value));
  return out;
}

const toolResult = (headers: Record<string, unknown>) => ({ content: [{ type: 'text' as const, text: JSON.stringify(headers) }] });

describe('every adapter drops every credential header', () => {
  test('fetchHandler: the Request the handler gets', async () => {
    const url = await guarded(
      fetchHandler((request, { parsedBody }) =>
        Response.json({ jsonrpc: '2.0', id: (parsedBody as { id: number }).id, result: toolResult(headerRecord(request.headers)) }),
      ),
    );
    const { seen, sent } = await headersSeenThrough(url);
    assertNoCredential(seen, sent);
  });

  test('SDK 1.x adapter: extra.requestInfo.headers in a tool', async () => {
    const url = await guarded(
      sdkStreamableHttpHandler({
        createServer: () => {
          const server = new Sdk1McpServer({ name: 'headers', version: '1.0.0' });
          server.registerTool('echo_headers', { description: 'The request headers the tool sees.' }, (extra) => toolResult({ ...extra.requestInfo?.headers }));
          return server;
        },
      }),
    );
    const { seen, sent } = await headersSeenThrough(url);
    assertNoCredential(seen, sent);
  });

  test('SDK 2.x adapter: ctx.http.req in a tool', async () => {
    const handler = sdk2McpHandler({
      createServer: () => {
        const server = new Sdk2McpServer({ name: 'headers', version: '1.0.0' });
        server.registerTool('echo_headers', { description: 'The request headers the tool sees.' }, (ctx: ServerContext) =>
          toolResult(headerRecord(ctx.http?.req?.headers)),
        );
        return server;
      },
    });
    try {
      const { seen, sent } = await headersSeenThrough(await guarded(handler));
      assertNoCredential(seen, sent);
    } finally {
      await handler.close();
    }
  });

  test("the gateway's upstream proxy: the request the upstream gets", async () => {
    let received: IncomingHttpHeaders | undefined;
    const upstream = createServer((req, res) => {
      received = req.headers;
      req.resume().once('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: 2, result: toolResult(req.headers) }));
      });
    });
    servers.push(upstream);
    const proxy = createUpstreamProxy({ upstream: `${await listenOnLoopback(upstream)}/mcp` });
    try {
      const { seen, sent } = await headersSeenThrough(await guarded(proxy));
      assert.ok(received);
      assertNoCredential(seen, sent);
    } finally {
      proxy.close();
    }
  });

  test('no gateway identity header may take the name of a credential header', () => {
    for (const name of CREDENTIAL_HEADERS) {
      assert.throws(() => checkIdentityHeaders({ subject: name.toUpperCase() }, 'MCP_AUTH_IDENTITY_HEADERS'), (error: unknown) => {
        assert.ok(error instanceof ConfigurationError);
        assert.equal(error.setting, 'MCP_AUTH_IDENTITY_HEADERS');
        assert.match(error.message, new RegExp(`subject: "${name.toUpperCase()}" is reserved`));
        return true;
      });
    }
  });
});
