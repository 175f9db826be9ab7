// Two gateways behind one resource URL (replicas), sharing MCP_AUTH_RATE_LIMIT and the policy's per-tool limits
// through a real redis-server; Redis stopped: the fallback gateway serves with a warning, the closed one answers
// 503. And the settings: the URL is environment only, never repeated in an error, MCP_AUTH_REDIS_FAIL checked.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ConfigurationError } from '../../src/core/kernel/errors.js';
import { loadGatewayConfig, parseGatewayArgs } from '../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { postMcp } from '../helpers/http-client.js';
import { REDIS_SERVER, removeTestRedis, startTestRedis, type TestRedis } from '../helpers/redis-server.js';

const RESOURCE = 'https://mcp.example.com/mcp';
const V = { 'mcp-protocol-version': '2025-11-25' };
const call = (id: number, name: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } });

describe('gateway rate-limit settings', () => {
  const base = { MCP_AUTH_UPSTREAM: 'http://127.0.0.1:1/mcp', MCP_AUTH_ISSUER: 'https://as.example', MCP_AUTH_RESOURCE: RESOURCE };
  test('the Redis URL is environment only, checked without being repeated; the failure mode is checked', () => {
    assert.throws(() => parseGatewayArgs(['--redis-url', 'redis://x'], {}), (e: unknown) => e instanceof ConfigurationError && /set MCP_AUTH_REDIS_URL in the environment/.test(e.message));
    assert.throws(
      () => loadGatewayConfig({ ...base, MCP_AUTH_REDIS_URL: 'https://:hunter2@cache' }),
      (e: unknown) => e instanceof ConfigurationError && e.setting === 'MCP_AUTH_REDIS_URL' && !e.message.includes('hunter2'),
    );
    assert.throws(() => loadGatewayConfig({ ...base, MCP_AUTH_REDIS_FAIL: 'closed' }), (e: unknown) => e instanceof ConfigurationError && e.setting === 'MCP_AUTH_REDIS_FAIL');
    assert.throws(() => loadGatewayConfig({ ...base, MCP_AUTH_REDIS_URL: 'redis://cache', MCP_AUTH_REDIS_FAIL: 'open' }), (e: unknown) => e instanceof ConfigurationError && e.setting === 'MCP_AUTH_REDIS_FAIL');
    assert.deepEqual(loadGatewayConfig({ ...base, MCP_AUTH_REDIS_URL: 'redis://cache:6379' }).redis, { url: 'redis://cache:6379', failure: 'fallback' });
    assert.equal(loadGatewayConfig(base).redis, undefined);
    const settings = (parseGatewayArgs(['--rate-limit', '10/s', '--redis-fail', 'closed'], { MCP_AUTH_REDIS_URL: 'redis://cache' }) as { settings: Record<string, string> }).settings;
    const config = loadGatewayConfig({ ...base, ...settings });
    assert.equal(config.guard.rateLimit, '10/s');
    assert.equal(config.redis?.failure, 'closed');
  });
});

describe('two gateways sharing rate limits through Redis', { skip: REDIS_SERVER === undefined ? 'redis-server is not installed (Debian package redis-server; CI installs it)' : false, timeout: 60_000 }, () => {
  let issuer: TestIssuer;
  let redis: TestRedis;
  let upstream: Server;
  let upstreamUrl: string;
  let dir: string;
  const gateways: RunningGateway[] = [];
  const warnings: string[][] = [];

  const start = async (failure: 'fallback' | 'closed', settings: Record<string, string> = {}): Promise<RunningGateway> => {
    const own: string[] = [];
    warnings.push(own);
    const config = loadGatewayConfig({
      MCP_AUTH_UPSTREAM: upstreamUrl,
      MCP_AUTH_ISSUER: issuer.issuer,
      MCP_AUTH_RESOURCE: RESOURCE,
      ...settings,
      MCP_AUTH_POLICY: join(dir, 'policy.json'),
      MCP_AUTH_RATE_LIMIT: '4/min',
      MCP_AUTH_REDIS_URL: redis.url,
      MCP_AUTH_REDIS_FAIL: failure,
      PORT: '0',
    });
    const gateway = await startGateway(config, { log: () => {}, warn: (line) => own.push(line) });
    gateways.push(gateway);
    return gateway;
  };

  before(async () => {
    issuer = await startTestIssuer();
    redis = await startTestRedis();
    dir = mkdtempSync(join(tmpdir(), 'guard-shared-limits-'));
    writeFileSync(join(dir, 'policy.json'), JSON.stringify({ rateLimits: { tools: { notes_add: '1/min' } } }));
    upstream = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.once('end', () => {
        const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: number };
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { content: [] } }));
      });
    });
    upstream.listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp`;
  });
  after(async () => {
    await Promise.all(gateways.map((g) => g.shutdown()));
    upstream?.closeAllConnections();
    upstream?.close();
    await removeTestRedis(redis);
    await issuer?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('gateways for different resources on one Redis count apart; MCP_AUTH_REDIS_KEY_PREFIX shares on purpose', async () => {
    const OTHER = 'https://other.example.com/mcp';
    const notes = await start('fallback');
    const other = await start('fallback', { MCP_AUTH_RESOURCE: OTHER });
    const carol = await issuer.sign({ aud: [RESOURCE, OTHER], sub: 'carol', client_id: 'app' });
    assert.equal((await postMcp(`${notes.url}/mcp`, call(1, 'notes_add'), carol, V)).status, 200);
    const elsewhere = await postMcp(`${other.url}/mcp`, call(2, 'notes_add'), carol, V);
    assert.equal(elsewhere.status, 200, `another server's count is its own: ${elsewhere.text}`);
    const [one, two] = [await start('fallback', { MCP_AUTH_REDIS_KEY_PREFIX: 'team-a:' }), await start('fallback', { MCP_AUTH_RESOURCE: OTHER, MCP_AUTH_REDIS_KEY_PREFIX: 'team-a:' })];
    assert.equal((await postMcp(`${one.url}/mcp`, call(3, 'notes_add'), carol, V)).status, 200);
    assert.equal((await postMcp(`${two.url}/mcp`, call(4, 'notes_add'), carol, V)).status, 429, 'one prefix, one count');
    assert.throws(() => loadGatewayConfig({ MCP_AUTH_UPSTREAM: upstreamUrl, MCP_AUTH_ISSUER: issuer.issuer, MCP_AUTH_REDIS_KEY_PREFIX: 'x' }), (e: unknown) => e instanceof ConfigurationError && e.setting === 'MCP_AUTH_REDIS_KEY_PREFIX');
  });

  test('one count across replicas; Redis stopped: fallback serves with one warning, closed answers 503', async () => {
    const [a, b, closed] = [await start('fallback'), await start('fallback'), await start('closed')];
    const endpoint = (g: RunningGateway) => `${g.url}/mcp`;
    const alice = await issuer.sign({ aud: RESOURCE, sub: 'alice', client_id: 'app' });
    assert.equal((await postMcp(endpoint(a), call(1, 'notes_add'), alice, V)).status, 200);
    const tool = await postMcp(endpoint(b), call(2, 'notes_add'), alice, V);
    assert.equal(tool.status, 429, tool.text);
    assert.equal(tool.json.id, 2);
    assert.ok(Number(tool.headers['retry-after']) >= 1);
    assert.equal((await postMcp(endpoint(closed), call(3, 'notes_list'), alice, V)).status, 200);
    assert.equal((await postMcp(endpoint(a), call(4, 'notes_list'), alice, V)).status, 200);
    const over = await postMcp(endpoint(b), call(5, 'notes_list'), alice, V);
    assert.equal(over.status, 429, 'the fifth request of alice, whichever replica got them');
    assert.deepEqual(warnings.flat(), []);

    await redis.stop();
    const bob = await issuer.sign({ aud: RESOURCE, sub: 'bob', client_id: 'app' });
    assert.equal((await postMcp(endpoint(a), call(6, 'notes_list'), bob, V)).status, 200);
    assert.equal((await postMcp(endpoint(a), call(7, 'notes_list'), bob, V)).status, 200);
    const ofA = warnings[gateways.indexOf(a)]!;
    const down = ofA.filter((line) => line.includes('is unavailable'));
    assert.equal(down.length, 1, ofA.join('\n'));
    assert.match(down[0]!, /"event":"warning".*Redis at redis:\/\/127\.0\.0\.1:\d+ is unavailable/);
    const refused = await postMcp(endpoint(closed), call(8, 'notes_list'), bob, V);
    assert.equal(refused.status, 503);
    assert.equal(refused.json.id, 8);
  });
});
