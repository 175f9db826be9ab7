// The gateway under a flood of made-up opaque tokens from one address, against a real introspection endpoint:
// by default the refusals one address causes are bounded (the rest get 429 before any call) while a valid new
// token from another address is served; with MCP_AUTH_INTROSPECTION_RATE_LIMIT=off every junk token is asked
// about. Real HTTP through the gateway to an upstream.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { loadGatewayConfig } from '../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { postMcp, type HttpAnswer } from '../helpers/http-client.js';

const RESOURCE = 'https://mcp.example.com/mcp';
const V = { 'mcp-protocol-version': '2025-11-25' };
const LIST = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
const junk = (): string => randomBytes(24).toString('base64url');

describe('the gateway: junk opaque tokens and the introspection endpoint', () => {
  let issuer: TestIssuer;
  let upstream: Server;
  const gateways: RunningGateway[] = [];

  before(async () => {
    issuer = await startTestIssuer();
    upstream = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.once('end', () => {
        const { id } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: number };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, result: { tools: [] } }));
      });
    });
    upstream.listen(0, '127.0.0.1');
    await once(upstream, 'listening');
  });
  after(async () => {
    for (const gateway of gateways) await gateway.shutdown();
    upstream?.closeAllConnections();
    upstream?.close();
    await issuer?.close();
  });

  async function start(extra: Record<string, string>): Promise<string> {
    const config = loadGatewayConfig({
      MCP_AUTH_UPSTREAM: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp`,
      MCP_AUTH_ISSUER: issuer.issuer,
      MCP_AUTH_RESOURCE: RESOURCE,
      MCP_AUTH_JWKS_URI: `${issuer.issuer}/jwks`,
      MCP_AUTH_INTROSPECTION_CLIENT_ID: 'rs-client',
      MCP_AUTH_INTROSPECTION_CLIENT_SECRET: 'rs-secret',
      MCP_AUTH_INTROSPECTION_ENDPOINT: issuer.introspectionEndpoint,
      HOST: '127.0.0.1',
      PORT: '0',
      ...extra,
    });
    const gateway = await startGateway(config, { log: () => {}, warn: () => {} });
    gateways.push(gateway);
    return `${gateway.url}/mcp`;
  }

  const valid = (): string => {
    const token = `valid-${junk()}`;
    issuer.setIntrospection(token, { active: true, sub: 'alice', client_id: 'app', aud: RESOURCE, exp: Math.floor(Date.now() / 1000) + 600 });
    return token;
  };

  async function flood(url: string, count: number): Promise<HttpAnswer[]> {
    const answers: HttpAnswer[] = [];
    for (let sent = 0; sent < count; sent += 10) answers.push(...(await Promise.all(Array.from({ length: 10 }, () => postMcp(url, LIST, junk(), V)))));
    return answers;
  }

  test('by default an address past its refusals gets 429 without a call; another address is served', { timeout: 60_000 }, async () => {
    const url = await start({ MCP_AUTH_INTROSPECTION_RATE_LIMIT: '20/min' });
    const before = issuer.requests('/introspect');
    const answers = await flood(url, 200);
    const calls = issuer.requests('/introspect') - before;
    // 20 refusals, plus at most the batch in flight when the bound was reached.
    assert.ok(calls >= 20 && calls <= 30, `${calls} introspection calls`);
    assert.equal(answers.filter((a) => a.status === 401).length, calls);
    const limited = answers.filter((a) => a.status === 429);
    assert.equal(limited.length, 200 - calls);
    assert.equal(limited[0]!.json.error.code, -31429);
    assert.match(limited[0]!.json.error.message, /^Too many refused access tokens from this address: at most 20\/min; retry later$/);
    assert.ok(Number(limited[0]!.headers['retry-after']) > 0);
    // A valid new token from the flooding address waits with it; from another address it is served.
    assert.equal((await postMcp(url, LIST, valid(), V)).status, 429);
    const other = await postMcp(url, LIST, valid(), V, '127.0.0.2');
    assert.equal(other.status, 200, other.text);
    assert.deepEqual(other.json, { jsonrpc: '2.0', id: 1, result: { tools: [] } });
  });

  test('with MCP_AUTH_INTROSPECTION_RATE_LIMIT=off every junk token is asked about, and refused 401', { timeout: 60_000 }, async () => {
    const url = await start({ MCP_AUTH_INTROSPECTION_RATE_LIMIT: 'off' });
    const before = issuer.requests('/introspect');
    const answers = await flood(url, 100);
    assert.deepEqual([...new Set(answers.map((a) => a.status))], [401]);
    assert.equal(issuer.requests('/introspect') - before, 100);
    assert.equal((await postMcp(url, LIST, valid(), V)).status, 200);
  });
});
