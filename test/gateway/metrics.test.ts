// The gateway's Prometheus metrics, scraped from their own listener over HTTP after real requests with real tokens.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { spawn } from '../helpers/child-process.js';
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { ConfigurationError } from '../../src/core/kernel/errors.js';
import { GATEWAY_SETTINGS, loadGatewayConfig, parseGatewayArgs } from '../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { postMcp, send } from '../helpers/http-client.js';

const SESSION_ID = 'upstream-session-1';

/** A JSON-answering upstream: `initialize` issues a session; every other request gets an empty result. */
function startUpstream(): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.once('end', () => {
      if (req.method === 'DELETE') {
        res.writeHead(200, { 'Content-Length': '0' }).end();
        return;
      }
      const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: number; method: string };
      if (message.id === undefined) {
        res.writeHead(202, { 'Content-Length': '0' }).end();
        return;
      }
      const result = message.method === 'initialize' ? { protocolVersion: '2025-11-25', capabilities: {}, serverInfo: { name: 'up', version: '1' } } : { content: [] };
      const body = JSON.stringify({ jsonrpc: '2.0', id: message.id, result });
      res.writeHead(200, { 'Content-Type': 'application/json', ...(message.method === 'initialize' ? { 'Mcp-Session-Id': SESSION_ID } : {}) }).end(body);
    });
  });
  server.listen(0, '127.0.0.1');
  return once(server, 'listening').then(() => ({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp` }));
}

/** Samples of one metric family from the Prometheus text format: labels (as an object) and value. */
function samples(text: string, name: string): { labels: Record<string, string>; value: number }[] {
  const out: { labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]!] = pair[2]!;
    out.push({ labels, value: Number(match[3]) });
  }
  return out;
}

function value(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  return samples(text, name).find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v) && Object.keys(s.labels).length === Object.keys(labels).length)?.value;
}

describe('gateway metrics', () => {
  let as: AuthorizationServer;
  let upstream: { server: Server; url: string };
  let gateway: RunningGateway;
  let token: string;
  let dir: string;
  const lines: string[] = [];
  /** Resolves once the request log has written `count` lines, which is after their metrics were recorded. */
  const logged = async (count: number): Promise<void> => {
    while (lines.length < count) await new Promise((resolve) => setImmediate(resolve));
  };

  before(async () => {
    as = await startAuthorizationServer({ extraScopes: ['mcp:basic'] });
    upstream = await startUpstream();
    dir = mkdtempSync(join(tmpdir(), 'mcp-guard-metrics-'));
    const policy = join(dir, 'policy.json');
    writeFileSync(policy, JSON.stringify({ tools: { notes_add: [], notes_list: [] } }));
    const config = loadGatewayConfig({
      MCP_AUTH_UPSTREAM: upstream.url,
      MCP_AUTH_ISSUER: as.issuer,
      MCP_AUTH_POLICY: policy,
      PORT: '0',
      MCP_AUTH_METRICS_PORT: '0',
      MCP_AUTH_METRICS_TOOL_LABELS: 'on',
    });
    gateway = await startGateway(config, { log: (line) => lines.push(line), warn: () => {} });
    as.addResource(gateway.resource, { scopes: ['mcp:basic'] });
    token = await as.issueAccessToken({ resource: gateway.resource, scope: 'mcp:basic', sub: 'user-42' });
  });

  after(async () => {
    await gateway?.shutdown();
    upstream?.server.closeAllConnections();
    upstream?.server.close();
    await as?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('serves metrics on a loopback listener of its own, not on the MCP port', async () => {
    assert.match(gateway.metricsUrl ?? '', /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    assert.notEqual(new URL(gateway.metricsUrl!).port, new URL(gateway.url).port);
    const onMcpPort = await send(`${gateway.url}/metrics`, { method: 'GET' });
    assert.equal(onMcpPort.status, 404);
    const scrape = await send(gateway.metricsUrl!, { method: 'GET' });
    assert.equal(scrape.status, 200);
    assert.match(String(scrape.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    assert.equal((await send(gateway.metricsUrl!.replace('/metrics', '/other'), { method: 'GET' })).status, 404);
    const post = await send(gateway.metricsUrl!, { method: 'POST', body: '' });
    assert.equal(post.status, 405);
    assert.equal(post.headers.allow, 'GET, HEAD');
  });

  it('counts requests, durations, verifications, JWKS fetches, upstream exchanges and sessions, with bounded labels', async () => {
    const endpoint = `${gateway.url}/mcp`;
    const headers = { 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': SESSION_ID };
    const start = lines.length;
    const init = await postMcp(endpoint, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }, token);
    assert.equal(init.status, 200);
    assert.equal((await postMcp(endpoint, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'notes_add', arguments: {} } }, token, headers)).status, 200);
    // A flood of tool names nobody configured: they all count as one label value.
    const flood = 40;
    for (let i = 0; i < flood; i++) {
      const answer = await postMcp(endpoint, { jsonrpc: '2.0', id: 10 + i, method: 'tools/call', params: { name: `random_${i}_${Math.random().toString(36).slice(2)}` } }, token, headers);
      assert.equal(answer.status, 200);
    }
    // A method MCP does not define, no token, and a session the gateway never issued.
    assert.equal((await postMcp(endpoint, { jsonrpc: '2.0', id: 90, method: 'x/made-up-method' }, token, headers)).status, 200);
    assert.equal((await postMcp(endpoint, { jsonrpc: '2.0', id: 91, method: 'tools/list' })).status, 401);
    assert.equal((await postMcp(endpoint, { jsonrpc: '2.0', id: 92, method: 'tools/list' }, token, { ...headers, 'mcp-session-id': 'never-issued' })).status, 404);
    await logged(start + 2 + flood + 3);

    const text = (await send(gateway.metricsUrl!, { method: 'GET' })).text;
    const requests = 'mcp_guard_requests_total';
    assert.equal(value(text, requests, { method: 'initialize', decision: 'allow', reason: 'allowed', tool: '' }), 1);
    assert.equal(value(text, requests, { method: 'tools/call', decision: 'allow', reason: 'allowed', tool: 'notes_add' }), 1);
    assert.equal(value(text, requests, { method: 'tools/call', decision: 'allow', reason: 'allowed', tool: 'other' }), flood);
    assert.equal(value(text, requests, { method: 'other', decision: 'allow', reason: 'allowed', tool: '' }), 1);
    assert.equal(value(text, requests, { method: 'tools/list', decision: 'deny', reason: 'token_missing', tool: '' }), 1);
    // Allowed by the guard, refused by the gateway: counted once, as the refusal.
    assert.equal(value(text, requests, { method: 'tools/list', decision: 'deny', reason: 'session_unknown', tool: '' }), 1);
    const tools = new Set(samples(text, requests).map((s) => s.labels.tool));
    assert.deepEqual([...tools].sort(), ['', 'notes_add', 'other']);

    assert.equal(value(text, 'mcp_guard_request_duration_seconds_count', { method: 'tools/call', decision: 'allow' }), flood + 1);
    assert.ok((value(text, 'mcp_guard_request_duration_seconds_sum', { method: 'tools/call', decision: 'allow' }) ?? 0) > 0);
    assert.equal(value(text, 'mcp_guard_request_duration_seconds_bucket', { method: 'tools/call', decision: 'allow', le: '+Inf' }), flood + 1);
    assert.equal(value(text, 'mcp_guard_upstream_request_duration_seconds_count', { method: 'tools/call', outcome: 'complete' }), flood + 1);
    assert.equal(value(text, 'mcp_guard_upstream_request_duration_seconds_count', { method: 'initialize', outcome: 'complete' }), 1);

    assert.equal(value(text, 'mcp_guard_token_verifications_total', { result: 'verified' }), 2); // a JWT is cached on its second use
    assert.equal(value(text, 'mcp_guard_token_verifications_total', { result: 'cache_hit' }), flood + 2);
    assert.equal(value(text, 'mcp_guard_token_verifications_total', { result: 'refused' }), 0);
    assert.equal(value(text, 'mcp_guard_jwks_fetches_total', { result: 'success' }), 1);
    assert.equal(value(text, 'mcp_guard_jwks_fetches_total', { result: 'failure' }), 0);
    assert.equal(value(text, 'mcp_guard_sessions'), 1);
    assert.equal(value(text, 'mcp_guard_rate_limited_total'), 0);
    assert.ok(value(text, 'process_cpu_seconds_total') !== undefined, 'process metrics');

    // Identifiers never become labels.
    assert.ok(!text.includes('user-42'), 'no subject');
    assert.ok(!text.includes(token), 'no token');
    assert.ok(!text.includes('random_'), 'no unlisted tool name');
    assert.ok(!text.includes('made-up'), 'no unknown method name');
  });

  it('serves no metrics when no port is set', async () => {
    const plain = await startGateway(loadGatewayConfig({ MCP_AUTH_UPSTREAM: upstream.url, MCP_AUTH_ISSUER: as.issuer, PORT: '0' }), { log: () => {}, warn: () => {} });
    try {
      assert.equal(plain.metricsUrl, undefined);
      assert.equal((await send(`${plain.url}/metrics`, { method: 'GET' })).status, 404);
    } finally {
      await plain.shutdown();
    }
  });
});

describe('metrics settings', () => {
  const base = { MCP_AUTH_UPSTREAM: 'http://127.0.0.1:3001/mcp', MCP_AUTH_ISSUER: 'https://as.example.com', PORT: '8080' };
  const refuses = (settings: Record<string, string>, setting: string): void => {
    assert.throws(
      () => loadGatewayConfig({ ...base, ...settings }),
      (e: unknown) => e instanceof ConfigurationError && e.setting === setting,
      setting,
    );
  };

  it('are off by default, loopback by default when on, and read from flags', () => {
    assert.equal(loadGatewayConfig(base).metrics, undefined);
    assert.deepEqual(loadGatewayConfig({ ...base, MCP_AUTH_METRICS_PORT: '9464' }).metrics, { host: '127.0.0.1', port: 9464, toolLabels: false });
    const args = parseGatewayArgs(['--metrics-port', '9464', '--metrics-host', '0.0.0.0', '--metrics-tool-labels'], base);
    assert.ok(!args.help);
    assert.deepEqual(loadGatewayConfig(args.settings).metrics, { host: '0.0.0.0', port: 9464, toolLabels: true });
    for (const env of ['MCP_AUTH_METRICS_PORT', 'MCP_AUTH_METRICS_HOST', 'MCP_AUTH_METRICS_TOOL_LABELS']) {
      assert.ok(GATEWAY_SETTINGS.some((s) => s.env === env && s.flag !== undefined), `${env} is listed by --help`);
    }
  });

  it('refuse a bad port, the gateway\'s own port, and settings that would do nothing', () => {
    refuses({ MCP_AUTH_METRICS_PORT: 'ninety' }, 'MCP_AUTH_METRICS_PORT');
    refuses({ MCP_AUTH_METRICS_PORT: '70000' }, 'MCP_AUTH_METRICS_PORT');
    refuses({ MCP_AUTH_METRICS_PORT: '8080' }, 'MCP_AUTH_METRICS_PORT');
    refuses({ MCP_AUTH_METRICS_HOST: '0.0.0.0' }, 'MCP_AUTH_METRICS_HOST');
    refuses({ MCP_AUTH_METRICS_TOOL_LABELS: 'on' }, 'MCP_AUTH_METRICS_TOOL_LABELS');
    refuses({ MCP_AUTH_METRICS_PORT: '9464', MCP_AUTH_METRICS_TOOL_LABELS: 'maybe' }, 'MCP_AUTH_METRICS_TOOL_LABELS');
  });
});

describe('a metrics port in use', () => {
  const listenOn = (port: number): Promise<import('node:net').Server> =>
    new Promise((resolve, reject) => {
      const server = createNetServer();
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve(server));
    });
  const portOf = (server: import('node:net').Server): number => (server.address() as AddressInfo).port;

  it('keeps the gateway from starting and leaves nothing listening; the CLI names the metrics setting', { timeout: 30_000 }, async () => {
    const taken = await listenOn(0);
    const probe = await listenOn(0);
    const gatewayPort = portOf(probe);
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const settings = { MCP_AUTH_UPSTREAM: 'http://127.0.0.1:9/mcp', MCP_AUTH_ISSUER: 'http://127.0.0.1:9', HOST: '127.0.0.1', PORT: String(gatewayPort), MCP_AUTH_METRICS_PORT: String(portOf(taken)) };
    try {
      await assert.rejects(startGateway(loadGatewayConfig(settings), { log: () => {}, warn: () => {} }), (e: unknown) => (e as NodeJS.ErrnoException).code === 'EADDRINUSE');
      const again = await listenOn(gatewayPort);
      await new Promise<void>((resolve) => again.close(() => resolve()));

      const cli = fileURLToPath(new URL('../../src/gateway/cli.ts', import.meta.url));
      const child = spawn(process.execPath, ['--import', 'tsx', cli], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...settings } });
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      assert.equal(code, 1, stderr);
      assert.equal(stderr, `mcp-oauth-guard: cannot start: port ${portOf(taken)} is in use; set MCP_AUTH_METRICS_PORT or --metrics-port to a free port\n`);
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()));
    }
  });
});
