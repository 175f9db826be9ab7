// The gateway under the DPoP attack: one caller floods fresh proofs, dated as far ahead as allowed, at a small
// replay cache while its rate limit refuses it; another caller's fresh proof must still be served (before: 503
// once the cache held the flood). Real HTTP through the gateway to an upstream, real jose keys and tokens.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { loadGatewayConfig } from '../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { makeDpopKey, signDpopProof } from '../helpers/dpop.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { send, type HttpAnswer } from '../helpers/http-client.js';

const RESOURCE = 'https://mcp.example.com/mcp';
/** Set through MCP_AUTH_DPOP_REPLAY_CACHE_MAX_ENTRIES; 1 % of 200: two live proofs per caller once half full. */
const MAX_ENTRIES = 200;

describe('the gateway: one DPoP caller cannot lock out the others', () => {
  let issuer: TestIssuer;
  let upstream: Server;
  let gateway: RunningGateway;
  let forwarded = 0;

  before(async () => {
    issuer = await startTestIssuer();
    upstream = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.once('end', () => {
        forwarded++;
        const { id } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: number };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, result: { tools: [] } }));
      });
    });
    upstream.listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    const config = loadGatewayConfig({
      MCP_AUTH_UPSTREAM: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp`,
      MCP_AUTH_ISSUER: issuer.issuer,
      MCP_AUTH_RESOURCE: RESOURCE,
      MCP_AUTH_DPOP: 'require',
      MCP_AUTH_RATE_LIMIT: '1/min',
      MCP_AUTH_DPOP_REPLAY_CACHE_MAX_ENTRIES: String(MAX_ENTRIES),
      HOST: '127.0.0.1',
      PORT: '0',
    });
    gateway = await startGateway(config, { log: () => {}, warn: () => {} });
  });
  after(async () => {
    await gateway?.shutdown();
    upstream?.closeAllConnections();
    upstream?.close();
    await issuer?.close();
  });

  async function caller(sub: string): Promise<(id: number, aheadSeconds?: number) => Promise<HttpAnswer>> {
    const key = await makeDpopKey();
    const token = await issuer.sign({ aud: RESOURCE, sub, client_id: 'app', cnf: { jkt: key.thumbprint } });
    return async (id, aheadSeconds = 0) =>
      send(`${gateway.url}/mcp`, {
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-11-25',
          authorization: `DPoP ${token}`,
          dpop: await signDpopProof(key, { htu: RESOURCE, token, claims: { iat: Math.floor(Date.now() / 1000) + aheadSeconds } }),
        },
        body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/list' }),
      });
  }

  test("a flood of fresh proofs is refused past the caller's share, and another caller is served", async () => {
    const mallory = await caller('mallory');
    const answers: HttpAnswer[] = [];
    for (let sent = 0; sent < MAX_ENTRIES; sent += 10) answers.push(...(await Promise.all(Array.from({ length: 10 }, (_, i) => mallory(sent + i, 5)))));

    const alice = await (await caller('alice'))(1_000);
    assert.equal(alice.status, 200, alice.text);
    assert.deepEqual(alice.json, { jsonrpc: '2.0', id: 1_000, result: { tools: [] } });

    assert.deepEqual(
      answers.reduce<Record<number, number>>((counts, a) => ({ ...counts, [a.status]: (counts[a.status] ?? 0) + 1 }), {}),
      { 200: 1, 429: MAX_ENTRIES - 1 },
      'one served (its rate limit), every other refused with 429, none with 503',
    );
    const share = answers.filter((a) => /DPoP proofs in flight/.test(a.json.error?.message ?? ''));
    // The flood claims freely until the cache is half full, then past its share is refused.
    assert.equal(share.length, MAX_ENTRIES / 2);
    assert.equal(share[0]!.json.error.code, -31429);
    assert.ok(Number(share[0]!.headers['retry-after']) >= 60 && Number(share[0]!.headers['retry-after']) <= 70);
    assert.equal(forwarded, 2, 'only the served requests reached the upstream');
  });
});
