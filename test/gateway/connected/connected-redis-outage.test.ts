// Connected accounts with the token store in Redis (MCP_AUTH_TOKEN_STORE=redis), and Redis stopped while the gateway
// runs: a call gets the gateway's "unavailable" answer (503, Retry-After, the unavailable JSON-RPC code), /readyz names
// the token store until Redis is back, and the log has one structured line per outage, never ioredis's own text.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { JsonRpcErrorCode } from '../../../src/core/wire/jsonrpc.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { singleUpstreamSettings, startConnectedAccountsParts, type ConnectedAccountsParts } from '../../helpers/connected-accounts.js';
import { postMcp } from '../../helpers/http-client.js';
import { REDIS_SERVER, removeTestRedis, startTestRedis, type TestRedis } from '../../helpers/redis-server.js';

const SKIP = REDIS_SERVER === undefined && !process.env.CI ? 'redis-server is not installed (Debian package redis-server; CI installs it)' : false;
const STATELESS = '2026-07-28';

let redis: TestRedis | undefined;
let parts: ConnectedAccountsParts | undefined;
let gateway: RunningGateway | undefined;
const lines: string[] = [];
const consoleLines: string[] = [];
const originalWarn = console.warn;

before(async () => {
  if (SKIP) return;
  console.warn = (...args: unknown[]) => void consoleLines.push(args.join(' '));
  redis = await startTestRedis();
  parts = await startConnectedAccountsParts();
  const settings = { ...singleUpstreamSettings(parts), MCP_AUTH_TOKEN_STORE: 'redis', MCP_AUTH_REDIS_URL: redis.url };
  gateway = await startGateway(loadGatewayConfig(settings), { log: (line) => lines.push(line), warn: (line) => lines.push(line), readinessCacheMs: 0 });
  parts.trustGateway(gateway.resource);
});

after(async () => {
  console.warn = originalWarn;
  await gateway?.shutdown();
  await parts?.close();
  if (redis) await removeTestRedis(redis);
});

async function call(): Promise<Awaited<ReturnType<typeof postMcp>>> {
  const token = await parts!.callerToken(gateway!.resource, 'alice');
  const meta = { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': {} };
  return postMcp(`${parts!.origin}/mcp`, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'notes_list', arguments: {}, _meta: meta } }, token, {
    'mcp-protocol-version': STATELESS,
    'mcp-method': 'tools/call',
    'mcp-name': 'notes_list',
  });
}

async function readyz(): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${parts!.origin}/readyz`, { signal: AbortSignal.timeout(10_000) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('connected accounts: the Redis token store unreachable', { skip: SKIP, timeout: 60_000 }, () => {
  it('is ready, and a call asks to connect, while Redis is up', async () => {
    const ready = await readyz();
    assert.equal(ready.status, 200, JSON.stringify(ready.body));
    assert.deepEqual(ready.body.tokenStore, { ok: true });
    const answer = await call();
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.json.result.isError, true, answer.text);
  });

  it('Redis stopped: 503 with Retry-After and the unavailable code; /readyz names the token store', async () => {
    await redis!.stop();
    const answer = await call();
    assert.equal(answer.status, 503, answer.text);
    assert.equal(answer.headers['retry-after'], '5');
    assert.equal(answer.json.error.code, JsonRpcErrorCode.Unavailable, answer.text);
    assert.match(answer.json.error.message, /token store/);
    const ready = await readyz();
    assert.equal(ready.status, 503, JSON.stringify(ready.body));
    assert.equal(ready.body.status, 'not_ready');
    const store = ready.body.tokenStore as { ok: boolean; reason: string };
    assert.equal(store.ok, false);
    assert.match(store.reason, /token store/);
    assert.doesNotMatch(store.reason, /ECONNREFUSED|Stream isn't writeable|enableOfflineQueue|Connection is closed/);
  });

  it('Redis back: ready again, and calls are served', async () => {
    await redis!.start();
    const deadline = Date.now() + 15_000;
    let ready = await readyz();
    while (ready.status !== 200 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      ready = await readyz();
    }
    assert.equal(ready.status, 200, JSON.stringify(ready.body));
    const answer = await call();
    assert.equal(answer.status, 200, answer.text);
  });

  it('the log has one structured line for the outage and one for the recovery, without ioredis text; nothing on the console', () => {
    const warnings = lines.filter((line) => line.includes('token store')).map((line) => JSON.parse(line) as Record<string, unknown>);
    const lost = warnings.filter((line) => line.store === 'token_store' && line.state === 'unavailable');
    const back = warnings.filter((line) => line.store === 'token_store' && line.state === 'available');
    assert.equal(lost.length, 1, lines.join('\n'));
    assert.equal(back.length, 1, lines.join('\n'));
    assert.equal(typeof lost[0]!.reason, 'string');
    assert.doesNotMatch(JSON.stringify(warnings), /ECONNREFUSED|Stream isn't writeable|enableOfflineQueue|Connection is closed/);
    assert.deepEqual(consoleLines, []);
  });
});
