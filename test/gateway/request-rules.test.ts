// The gateway against the shared table of request rules (test/helpers/request-rule-cases.ts), in front of a raw
// node:http upstream that records every byte it receives: a refused request never reaches it, and a forwarded
// one arrives with the very method, names, URIs and mirrored headers that were authorized.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadGatewayConfig } from '../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { postMcp } from '../helpers/http-client.js';
import { closeServer, listenOnLoopback } from '../helpers/loopback-server.js';
import { PRIVATE_SCOPE, READ_SCOPE, refusalId, RULE_CASES, RULE_POLICY } from '../helpers/request-rule-cases.js';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

describe('request rules through the gateway', () => {
  let issuer: TestIssuer;
  let upstream: Server;
  let gateway: RunningGateway;
  let dir: string;
  const tokens: Record<'read' | 'private', string> = { read: '', private: '' };
  /** What the upstream received, by JSON-RPC id. */
  const received = new Map<unknown, Received>();

  before(async () => {
    issuer = await startTestIssuer();
    upstream = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let id: unknown = null;
        let method: unknown;
        try {
          ({ id, method } = JSON.parse(body) as { id?: unknown; method?: unknown });
        } catch {
          // Recorded all the same.
        }
        received.set(id, { headers: req.headers, body });
        const text = JSON.stringify({ jsonrpc: '2.0', id, result: { resultType: 'complete', ...(method === 'tools/list' ? { tools: [] } : {}) } });
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) }).end(text);
      });
    });
    const upstreamUrl = `${await listenOnLoopback(upstream)}/mcp`;
    dir = mkdtempSync(join(tmpdir(), 'request-rules-'));
    const policyFile = join(dir, 'policy.json');
    writeFileSync(policyFile, JSON.stringify(RULE_POLICY));
    const config = loadGatewayConfig({ MCP_AUTH_UPSTREAM: upstreamUrl, MCP_AUTH_ISSUER: issuer.issuer, MCP_AUTH_POLICY: policyFile, PORT: '0' });
    gateway = await startGateway(config, { log: () => {}, warn: () => {} });
    for (const [who, scope] of [['read', READ_SCOPE], ['private', PRIVATE_SCOPE]] as const) {
      tokens[who] = await issuer.sign({ aud: gateway.resource, sub: 'alice', scope });
    }
  });
  after(async () => {
    await gateway?.shutdown();
    if (upstream) closeServer(upstream);
    await issuer?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  for (const c of RULE_CASES) {
    test(c.name, async () => {
      const id = c.message.id;
      const res = await postMcp(gateway.resource, c.message, tokens[c.token ?? 'read'], c.headers);
      if (c.expect === 'forward') {
        assert.equal(res.status, 200, res.text);
        assert.equal(res.json.id, id);
        const got = received.get(id);
        assert.ok(got, 'the upstream received the request');
        // The body the upstream parses is the message as sent: no URI resolved, no name trimmed or normalized.
        assert.deepEqual(JSON.parse(got.body), c.message);
        // And the mirrored headers still describe that body.
        for (const name of ['mcp-protocol-version', 'mcp-method', 'mcp-name']) assert.equal(got.headers[name], c.headers[name], name);
        assert.equal(got.headers.authorization, undefined, 'the token never goes upstream');
        return;
      }
      assert.equal(res.status, c.expect.status, res.text);
      assert.equal(res.json.id, refusalId(c.message));
      assert.equal(res.json.error.code, c.expect.code, res.text);
      if (c.expect.message) assert.match(res.json.error.message, c.expect.message);
      assert.equal(received.has(id), false, 'a refused request never reaches the upstream');
    });
  }

  test('the raw bytes of an NFD tool name reach the upstream unchanged', async () => {
    const name = 'cafe\u0301';
    const res = await postMcp(
      gateway.resource,
      { jsonrpc: '2.0', id: 901, method: 'tools/call', params: { name, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } },
      tokens.private,
      { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': `=?base64?${Buffer.from(name).toString('base64')}?=` },
    );
    assert.equal(res.status, 200, res.text);
    const body = Buffer.from(received.get(901)?.body ?? '', 'utf8');
    assert.ok(body.includes(Buffer.from([0x63, 0x61, 0x66, 0x65, 0xcc, 0x81])), 'e followed by U+0301, not U+00E9');
    assert.ok(!body.includes(Buffer.from([0xc3, 0xa9])), 'never composed to U+00E9');
  });
});
