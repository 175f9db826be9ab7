// `MCP_AUTH_LISTS` in the gateway, for an HTTP upstream and a stdio upstream: "filtered" (the default) lists what the
// token may use, "all" lists everything; in both a call the token cannot make gets the 403 that starts the step-up,
// and a token with the scope makes it.
import { JsonRpcErrorCode } from '../../src/core/wire/jsonrpc.js';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { ConfigurationError } from '../../src/core/kernel/errors.js';
import { loadGatewayConfig, parseGatewayArgs } from '../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { messages, postMcp, type HttpAnswer } from '../helpers/http-client.js';
import { NODE_SERVER, PROTOCOL_VERSION, quote, RawSession } from '../helpers/stdio-gateway.js';

const SCOPES = ['mcp:basic', 'mcp:math'];

let dir: string;
let policyFile: string;
let as: AuthorizationServer;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gateway-lists-'));
  policyFile = join(dir, 'policy.json');
  // `add` needs mcp:math; every other tool the base scope.
  writeFileSync(policyFile, JSON.stringify({ scopesSupported: SCOPES, requiredScopes: ['mcp:basic'], tools: { add: ['mcp:math'], '*': [] } }));
  as = await startAuthorizationServer({ extraScopes: SCOPES });
});
after(async () => {
  await as?.close();
  rmSync(dir, { recursive: true, force: true });
});

const toolNames = (answer: HttpAnswer, id: number): string[] => messages(answer).find((m) => m.id === id).result.tools.map((t: { name: string }) => t.name);

/** The step-up refusal: 403, `insufficient_scope`, and the scope the call needs in the challenge. */
function assertStepUp(answer: HttpAnswer): void {
  assert.equal(answer.status, 403, answer.text);
  const challenge = String(answer.headers['www-authenticate']);
  assert.match(challenge, /^Bearer .*error="insufficient_scope"/);
  // The body: a JSON-RPC error of the MCP authorization range, saying the same.
  const body = JSON.parse(answer.text) as { jsonrpc?: string; error?: { code?: number; data?: { error?: string } } };
  assert.equal(body.jsonrpc, '2.0');
  assert.equal(body.error?.code, JsonRpcErrorCode.Forbidden);
  assert.equal(body.error?.data?.error, 'insufficient_scope');
  assert.match(challenge, /scope="[^"]*mcp:math/);
}

async function startGatewayFor(upstream: Record<string, string>, lists: string | undefined): Promise<RunningGateway> {
  const config = loadGatewayConfig({ ...upstream, MCP_AUTH_ISSUER: as.issuer, MCP_AUTH_POLICY: policyFile, HOST: '127.0.0.1', PORT: '0', ...(lists === undefined ? {} : { MCP_AUTH_LISTS: lists }) });
  const gateway = await startGateway(config, { log: () => {}, warn: () => {} });
  as.addResource(gateway.resource, { scopes: SCOPES });
  return gateway;
}

const token = (gateway: RunningGateway, scope: string) => as.issueAccessToken({ resource: gateway.resource, scope, sub: 'alice' });

describe('gateway, HTTP upstream', () => {
  let upstream: Server;
  let upstreamUrl: string;
  before(async () => {
    // A stateless upstream: a list of two tools, and a call that adds.
    upstream = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const message = JSON.parse(body) as { id: number; method: string; params?: { arguments?: { a: number; b: number } } };
        const result = message.method === 'tools/list' ? { tools: [{ name: 'echo', inputSchema: { type: 'object' } }, { name: 'add', inputSchema: { type: 'object' } }] } : { content: [{ type: 'text', text: String((message.params?.arguments?.a ?? 0) + (message.params?.arguments?.b ?? 0)) }] };
        const text = JSON.stringify({ jsonrpc: '2.0', id: message.id, result });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
      });
    }).listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp`;
  });
  after(() => upstream?.close());

  for (const lists of [undefined, 'filtered', 'all']) {
    it(`MCP_AUTH_LISTS ${lists ?? 'unset'}: ${lists === 'all' ? 'every tool listed' : 'only what the token may call'}; the call is refused with a step-up 403, then made with the scope`, async () => {
      const gateway = await startGatewayFor({ MCP_AUTH_UPSTREAM: upstreamUrl }, lists);
      try {
        const headers = { 'mcp-protocol-version': PROTOCOL_VERSION };
        const basic = await token(gateway, 'mcp:basic');
        const listed = await postMcp(gateway.resource, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, basic, headers);
        assert.equal(listed.status, 200, listed.text);
        assert.deepEqual(toolNames(listed, 1), lists === 'all' ? ['echo', 'add'] : ['echo']);
        const add = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'add', arguments: { a: 1, b: 2 } } };
        assertStepUp(await postMcp(gateway.resource, add, basic, headers));
        const math = await token(gateway, 'mcp:basic mcp:math');
        const added = await postMcp(gateway.resource, add, math, headers);
        assert.equal(added.status, 200, added.text);
        assert.equal(messages(added)[0].result.content[0].text, '3');
        assert.deepEqual(toolNames(await postMcp(gateway.resource, { jsonrpc: '2.0', id: 3, method: 'tools/list' }, math, headers), 3), ['echo', 'add']);
      } finally {
        await gateway.shutdown();
      }
    });
  }
});

describe('gateway, stdio upstream', () => {
  for (const lists of ['filtered', 'all']) {
    it(`MCP_AUTH_LISTS=${lists}: ${lists === 'all' ? 'every tool listed' : 'only what the token may call'}; the call is refused with a step-up 403, then made with the scope`, async () => {
      const gateway = await startGatewayFor({ MCP_AUTH_UPSTREAM_COMMAND: `${quote(process.execPath)} ${quote(NODE_SERVER)}` }, lists);
      try {
        const basic = new RawSession(gateway.resource, await token(gateway, 'mcp:basic'));
        assert.equal((await basic.initialize()).status, 200);
        const listed = await basic.post({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
        assert.equal(listed.status, 200, listed.text);
        const names = toolNames(listed, 1);
        assert.equal(names.includes('add'), lists === 'all', names.join(', '));
        assert.ok(names.includes('echo'));
        assertStepUp(await basic.call('add', { a: 1, b: 2 }, 2));
        // The step-up: a new token with the scope, a new session.
        const math = new RawSession(gateway.resource, await token(gateway, 'mcp:basic mcp:math'));
        assert.equal((await math.initialize()).status, 200);
        assert.equal(await math.text('add', { a: 1, b: 2 }), '3');
        await basic.delete();
        await math.delete();
      } finally {
        await gateway.shutdown();
      }
    });
  }
});

describe('gateway configuration of lists', () => {
  const base = { MCP_AUTH_UPSTREAM: 'http://127.0.0.1:3001/mcp', MCP_AUTH_ISSUER: 'https://auth.example.com' };

  it('--lists sets MCP_AUTH_LISTS and wins over the environment; unset it is filtered; any case is accepted', () => {
    const args = parseGatewayArgs(['--lists', 'all'], { ...base, MCP_AUTH_LISTS: 'filtered' });
    assert.equal(args.help, false);
    if (args.help) return;
    assert.equal(args.settings.MCP_AUTH_LISTS, 'all');
    assert.equal(loadGatewayConfig(args.settings).guard.lists, 'all');
    assert.equal(loadGatewayConfig(base).guard.lists, undefined, 'left to the guard, whose default is filtered');
    assert.equal(loadGatewayConfig({ ...base, MCP_AUTH_LISTS: 'ALL' }).guard.lists, 'all');
  });

  it('a bad value fails at start-up in the one message that names every bad setting', () => {
    assert.throws(
      () => loadGatewayConfig({ ...base, MCP_AUTH_LISTS: 'everything', MCP_AUTH_MAX_BODY_BYTES: 'lots' }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigurationError);
        const settings = error.problems.map((p) => p.setting);
        assert.ok(settings.includes('MCP_AUTH_LISTS'), settings.join(', '));
        assert.ok(settings.includes('MCP_AUTH_MAX_BODY_BYTES'), settings.join(', '));
        assert.match(error.message, /MCP_AUTH_LISTS: must be one of filtered, all \(got "everything"\)/);
        return true;
      },
    );
  });
});
