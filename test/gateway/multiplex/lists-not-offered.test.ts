// A server that offers no prompts or resources answers their lists with -32601 (Method not found): its part of a
// merged list is empty, not a failure. No warning, no failure counted, not named unavailable; when no server offers
// the list, the answer is an empty list. Telling so reads no answer that is a 200: a merge reused byte for byte parses
// no page. Real parts: an authorization server and raw HTTP servers on loopback.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { describe, it } from 'node:test';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import type { ServerConfig } from '../../../src/gateway/config/server-config.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { listenOnLoopback } from '../../helpers/loopback-server.js';
import { postMcp, send } from '../../helpers/http-client.js';
import { multiplexParts } from '../../helpers/multiplex-parts.js';

const STATELESS = '2026-07-28';
const META = { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': {} };
const UNAVAILABLE = 'io.github.mcp-oauth-guard/unavailable';

/**
 * A sessionless raw MCP server offering only the lists in `offers` (by method); any other method gets -32601, with
 * 404 under 2026-07-28 and 200 before it, as MCP servers answer.
 */
async function rawServer(offers: Record<string, Record<string, unknown>>): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const message = JSON.parse(body) as { id?: string | number; method: string };
      if (message.id === undefined) return void res.writeHead(202).end();
      const stateless = req.headers['mcp-protocol-version'] === STATELESS;
      const result = offers[message.method];
      const answer =
        result !== undefined
          ? { jsonrpc: '2.0', id: message.id, result: { ...(stateless ? { resultType: 'complete' } : {}), ...result } }
          : { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: `Method not found: ${message.method}` } };
      res.writeHead(result === undefined && stateless ? 404 : 200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    });
  });
  return { url: `${await listenOnLoopback(server)}/mcp`, server };
}

let gateway: RunningGateway;
const warnings: string[] = [];

const parts = multiplexParts(async ({ servers, gateways }) => {
  const tools = await rawServer({ 'tools/list': { tools: [{ name: 't', inputSchema: { type: 'object' } }] } });
  const prompts = await rawServer({ 'tools/list': { tools: [] }, 'prompts/list': { prompts: [{ name: 'p' }] } });
  servers.push(tools.server, prompts.server);
  const config = loadGatewayConfig({ MCP_AUTH_ISSUER: parts.as.issuer, HOST: '127.0.0.1', PORT: '0', MCP_AUTH_METRICS_PORT: '0' }, { upstreamRequired: false });
  const list: ServerConfig[] = [
    { name: 'tools', transport: 'http', proxy: { upstream: tools.url }, required: false },
    { name: 'prompts', transport: 'http', proxy: { upstream: prompts.url }, required: false },
  ];
  gateway = await startGateway({ ...config, servers: list, listTimeoutMs: 2_000 }, { log: () => {}, warn: (line) => warnings.push(line) });
  gateways.push(gateway);
  parts.as.addResource(gateway.resource, { scopes: ['mcp'] });
});

async function list(method: string, revision: '2025-11-25' | typeof STATELESS) {
  const token = await parts.as.issueAccessToken({ resource: gateway.resource, scope: 'mcp', sub: 'alice' });
  if (revision === STATELESS) return postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 1, method, params: { _meta: META } }, token, { 'mcp-protocol-version': STATELESS, 'mcp-method': method });
  return postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 1, method, params: {} }, token, { 'mcp-protocol-version': revision });
}

describe('a server that does not offer a list (-32601)', { timeout: 30_000 }, () => {
  for (const revision of ['2025-11-25', STATELESS] as const) {
    it(`adds nothing to it and has not failed (${revision})`, async () => {
      const answer = await list('prompts/list', revision);
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(answer.json.result.prompts.map((p: { name: string }) => p.name), ['prompts__p']);
      assert.equal(answer.json.result._meta?.[UNAVAILABLE], undefined, answer.text);
    });
  }

  it('gives an empty list when no server offers it, in both revisions', async () => {
    for (const revision of ['2025-11-25', STATELESS] as const) {
      const answer = await list('resources/list', revision);
      assert.equal(answer.status, 200, `${revision}: ${answer.text}`);
      assert.deepEqual(answer.json.result.resources, [], revision);
      assert.equal(answer.json.result._meta?.[UNAVAILABLE], undefined, revision);
    }
  });

  it('is neither warned about nor counted as a list failure', async () => {
    await list('resources/templates/list', '2025-11-25');
    assert.deepEqual(warnings.filter((line) => /merged list/.test(line)), []);
    const scrape = await send(gateway.metricsUrl!, { method: 'GET' });
    assert.equal(scrape.status, 200);
    assert.doesNotMatch(scrape.text, /^mcp_guard_upstream_list_failures_total\{/m, 'no list failure counted');
  });
});

describe('a list whose servers answer byte for byte as last time', { timeout: 30_000 }, () => {
  it('reuses the last merge without parsing a page: the check for -32601 reads no answer that is a 200', async () => {
    const first = await list('tools/list', '2025-11-25');
    assert.equal(first.status, 200, first.text);
    // The server's page names its tool `t`; every answer the gateway writes names it `tools__t`.
    const parse = JSON.parse;
    let pagesParsed = 0;
    JSON.parse = function (text: string, reviver?: (key: string, value: unknown) => unknown) {
      if (typeof text === 'string' && text.includes('"name":"t","inputSchema"')) pagesParsed++;
      return parse.call(JSON, text, reviver);
    } as typeof JSON.parse;
    let again;
    try {
      again = await list('tools/list', '2025-11-25');
    } finally {
      JSON.parse = parse;
    }
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.json.result.tools.map((t: { name: string }) => t.name), ['tools__t']);
    assert.equal(pagesParsed, 0, 'no page parsed');
  });
});

describe('a server that answers a list with another JSON-RPC error', { timeout: 30_000 }, () => {
  it('is named among the unavailable servers, and the merge is not reused as complete', async () => {
    const failing = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const message = JSON.parse(body) as { id?: string | number };
        if (message.id === undefined) return void res.writeHead(202).end();
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32603, message: 'Internal error' } }));
      });
    });
    const failingUrl = `${await listenOnLoopback(failing)}/mcp`;
    const tools = await rawServer({ 'tools/list': { tools: [{ name: 't', inputSchema: { type: 'object' } }] } });
    parts.servers.push(failing, tools.server);
    const config = loadGatewayConfig({ MCP_AUTH_ISSUER: parts.as.issuer, HOST: '127.0.0.1', PORT: '0' }, { upstreamRequired: false });
    const list: ServerConfig[] = [
      { name: 'tools', transport: 'http', proxy: { upstream: tools.url }, required: false },
      { name: 'broken', transport: 'http', proxy: { upstream: failingUrl }, required: false },
    ];
    const own = await startGateway({ ...config, servers: list, listTimeoutMs: 2_000 }, { log: () => {}, warn: () => {} });
    try {
      parts.as.addResource(own.resource, { scopes: ['mcp'] });
      const token = await parts.as.issueAccessToken({ resource: own.resource, scope: 'mcp', sub: 'alice' });
      for (let i = 0; i < 2; i++) {
        const answer = await postMcp(`${own.url}/mcp`, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }, token, { 'mcp-protocol-version': '2025-11-25' });
        assert.equal(answer.status, 200, answer.text);
        assert.deepEqual(answer.json.result.tools.map((t: { name: string }) => t.name), ['tools__t']);
        assert.deepEqual(answer.json.result._meta?.[UNAVAILABLE], ['broken'], `answer ${i + 1}: ${answer.text}`);
      }
    } finally {
      await own.shutdown();
    }
  });
});
