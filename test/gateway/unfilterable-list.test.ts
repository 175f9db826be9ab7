// An upstream whose list answer the gateway cannot filter, through the whole gateway with tokens signed by a real
// key: the client gets 502 (the upstream's fault, not the gateway's) with a JSON-RPC error saying the upstream's
// answer was invalid, and nothing of that answer; the request log and the metrics name the reason
// (upstream_unfilterable); an answer it can filter still passes, with no failure named.
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
import { quote, RawSession } from '../helpers/stdio-gateway.js';

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
  /** The request log's lines, one object each. */
  const logged: Record<string, unknown>[] = [];

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
    const config = loadGatewayConfig({ MCP_AUTH_UPSTREAM: upstreamUrl, MCP_AUTH_ISSUER: issuer.issuer, MCP_AUTH_POLICY: policyFile, PORT: '0', MCP_AUTH_METRICS_PORT: '0' });
    gateway = await startGateway(config, { log: (line) => logged.push(JSON.parse(line) as Record<string, unknown>), warn: () => {} });
    token = await issuer.sign({ aud: gateway.resource, sub: 'alice', scope: 'basic' });
  });
  after(async () => {
    await gateway?.shutdown();
    if (upstream) closeServer(upstream);
    await issuer?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const list = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/list' });

  /** The request log's line of the one tools/list answered with `status`, once written (when its answer has ended). */
  async function loggedRequest(status: number): Promise<Record<string, unknown>> {
    const deadline = Date.now() + 5_000;
    for (;;) {
      const line = logged.find((entry) => entry.method === 'tools/list' && entry.status === status);
      if (line) {
        logged.splice(logged.indexOf(line), 1);
        return line;
      }
      assert.ok(Date.now() < deadline, `no request log line with status ${status}: ${JSON.stringify(logged)}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** The count of upstream tools/list exchanges with `outcome` in the metrics. */
  async function exchanges(outcome: string): Promise<number> {
    const text = await (await fetch(gateway.metricsUrl!)).text();
    const line = text.split('\n').find((l) => l.startsWith('mcp_guard_upstream_request_duration_seconds_count{') && l.includes('method="tools/list"') && l.includes(`outcome="${outcome}"`));
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  const invalid = "Bad gateway: the server's answer was invalid (not JSON, compressed or too large), so its list could not be filtered";

  test('not JSON: 502 with -32603 naming the invalid answer, the request id, nothing of the body', async () => {
    answerList = (res) => res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"tools": [{"name": "secret_admin"} <truncated upstream text>');
    const answer = await postMcp(gateway.resource, list(11), token, V);
    assert.equal(answer.status, 502);
    assert.equal(answer.headers['www-authenticate'], undefined, 'the server is at fault: no challenge');
    assert.deepEqual(answer.json, { jsonrpc: '2.0', id: 11, error: { code: -32603, message: invalid } });
    assert.ok(!answer.text.includes('secret_admin') && !answer.text.includes('truncated upstream text'), answer.text);
    const line = await loggedRequest(502);
    assert.equal(line.upstreamError, 'upstream_unfilterable');
    assert.equal(line.decision, 'allow');
    assert.equal(await exchanges('upstream_unfilterable'), 1);
    assert.equal(await exchanges('complete'), 0);
  });

  test('compressed: 502 too, with no Content-Encoding left', async () => {
    answerList = (res) => res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' }).end(Buffer.from([0x1f, 0x8b, 8, 0]));
    const answer = await postMcp(gateway.resource, list(12), token, V);
    assert.equal(answer.status, 502);
    assert.equal(answer.headers['content-encoding'], undefined);
    assert.deepEqual(answer.json, { jsonrpc: '2.0', id: 12, error: { code: -32603, message: invalid } });
    assert.equal((await loggedRequest(502)).upstreamError, 'upstream_unfilterable');
    assert.equal(await exchanges('upstream_unfilterable'), 2);
  });

  test('an answer it can filter still passes, filtered, with 200', async () => {
    answerList = (res, id) =>
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, result: { tools: [{ name: 'echo', inputSchema: { type: 'object' } }, { name: 'secret_admin', inputSchema: { type: 'object' } }] } }));
    const answer = await postMcp(gateway.resource, list(13), token, V);
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.json.result.tools.map((t: { name: string }) => t.name), ['echo']);
    assert.equal((await loggedRequest(200)).upstreamError, undefined);
    assert.equal(await exchanges('complete'), 1);
    assert.equal(await exchanges('upstream_unfilterable'), 2);
  });
});

/** A stdio MCP server whose tools/list answer is one line of more than the 16 MiB the guard holds to filter. */
const HUGE_LIST_SERVER = `
import { createInterface } from 'node:readline';
const send = (message) => process.stdout.write(JSON.stringify(message) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const msg = JSON.parse(line);
  if (msg.method === 'initialize') send({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'huge', version: '1' } } });
  else if (msg.method === 'tools/list') send({ jsonrpc: '2.0', id: msg.id, result: { tools: [{ name: 'secret_admin', description: 'x'.repeat(17 * 1024 * 1024), inputSchema: { type: 'object' } }] } });
});
`;

describe('a stdio server\'s list answer the gateway cannot filter', () => {
  let issuer: TestIssuer;
  let gateway: RunningGateway;
  let dir: string;
  const logged: Record<string, unknown>[] = [];

  before(async () => {
    issuer = await startTestIssuer();
    dir = mkdtempSync(join(tmpdir(), 'unfilterable-stdio-'));
    const script = join(dir, 'huge-list.mjs');
    writeFileSync(script, HUGE_LIST_SERVER);
    const config = loadGatewayConfig({
      MCP_AUTH_UPSTREAM_COMMAND: `${quote(process.execPath)} ${quote(script)}`,
      MCP_AUTH_UPSTREAM_MAX_LINE_BYTES: String(64 * 1024 * 1024),
      MCP_AUTH_ISSUER: issuer.issuer,
      PORT: '0',
    });
    gateway = await startGateway(config, { log: (line) => logged.push(JSON.parse(line) as Record<string, unknown>), warn: () => {} });
  });
  after(async () => {
    await gateway?.shutdown();
    await issuer?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('502 with the invalid-answer error, and the request log names upstream_unfilterable', async () => {
    const session = new RawSession(gateway.resource, await issuer.sign({ aud: gateway.resource, sub: 'alice' }));
    assert.equal((await session.initialize()).status, 200);
    const answer = await session.post({ jsonrpc: '2.0', id: 7, method: 'tools/list' });
    assert.equal(answer.status, 502);
    assert.equal(answer.json.error.code, -32603);
    assert.ok(!answer.text.includes('secret_admin'));
    const deadline = Date.now() + 5_000;
    let line: Record<string, unknown> | undefined;
    while ((line = logged.find((entry) => entry.method === 'tools/list')) === undefined) {
      assert.ok(Date.now() < deadline, 'no request log line for tools/list');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.equal(line.status, 502);
    assert.equal(line.upstreamError, 'upstream_unfilterable');
  });
});
