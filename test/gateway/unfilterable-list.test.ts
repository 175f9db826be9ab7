// An upstream whose list answer the gateway cannot filter, through the whole gateway with tokens signed by a real
// key: the client gets 502 (the upstream's fault, not the gateway's) with a JSON-RPC error saying the upstream's
// answer was invalid, and nothing of that answer; an answer it can filter still passes.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadGatewayConfig } from '../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { postMcp } from '../helpers/http-client.js';
import { readJsonBody } from '../helpers/read-json-body.js';
import { closeServer, listenOnLoopback } from '../helpers/loopback-server.js';

const POLICY = { scopesSupported: ['basic', 'admin'], tools: { secret_admin: ['admin'], '*': [] } };
const V = { 'mcp-protocol-version': '2025-11-25' };

describe('a list answer the gateway cannot filter', () => {
  let issuer: TestIssuer;
  let upstream: Server;
  let gateway: RunningGateway;
  let dir: string;
  let token: string;
  /** How the upstream answers a tools/list; anything else gets an empty result. */
  let answerList: (res: ServerResponse, id: unknown) => void = () => {};

  before(async () => {
    issuer = await startTestIssuer();
    upstream = createServer((req, res) => {
      void readJsonBody(req).then((message) => {
        if (message?.method === 'tools/list') return answerList(res, message.id);
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message?.id ?? null, result: {} }));
      });
    });
    const upstreamUrl = `${await listenOnLoopback(upstream)}/mcp`;
    dir = mkdtempSync(join(tmpdir(), 'unfilterable-list-'));
    const policyFile = join(dir, 'policy.json');
    writeFileSync(policyFile, JSON.stringify(POLICY));
    const config = loadGatewayConfig({ MCP_AUTH_UPSTREAM: upstreamUrl, MCP_AUTH_ISSUER: issuer.issuer, MCP_AUTH_POLICY: policyFile, PORT: '0' });
    gateway = await startGateway(config, { log: () => {}, warn: () => {} });
    token = await issuer.sign({ aud: gateway.resource, sub: 'alice', scope: 'basic' });
  });
  after(async () => {
    await gateway?.shutdown();
    if (upstream) closeServer(upstream);
    await issuer?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const list = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/list' });
  const invalid = "Bad gateway: the server's answer was invalid (not JSON, compressed or too large), so its list could not be filtered";

  test('not JSON: 502 with -32603 naming the invalid answer, the request id, nothing of the body', async () => {
    answerList = (res) => res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"tools": [{"name": "secret_admin"} <truncated upstream text>');
    const answer = await postMcp(gateway.resource, list(11), token, V);
    assert.equal(answer.status, 502);
    assert.deepEqual(answer.json, { jsonrpc: '2.0', id: 11, error: { code: -32603, message: invalid } });
    assert.ok(!answer.text.includes('secret_admin') && !answer.text.includes('truncated upstream text'), answer.text);
  });

  test('compressed: 502 too, with no Content-Encoding left', async () => {
    answerList = (res) => res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' }).end(Buffer.from([0x1f, 0x8b, 8, 0]));
    const answer = await postMcp(gateway.resource, list(12), token, V);
    assert.equal(answer.status, 502);
    assert.equal(answer.headers['content-encoding'], undefined);
    assert.deepEqual(answer.json, { jsonrpc: '2.0', id: 12, error: { code: -32603, message: invalid } });
  });

  test('an answer it can filter still passes, filtered, with 200', async () => {
    answerList = (res, id) =>
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, result: { tools: [{ name: 'echo', inputSchema: { type: 'object' } }, { name: 'secret_admin', inputSchema: { type: 'object' } }] } }));
    const answer = await postMcp(gateway.resource, list(13), token, V);
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.json.result.tools.map((t: { name: string }) => t.name), ['echo']);
  });
});
