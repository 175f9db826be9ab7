// Pins in the shared store (MCP_AUTH_PIN_FILE=redis) with a real redis-server: a fleet of two gateways shares the
// pins; after a rug pull both hide the tool in enforce, and one `pins accept` (the real CLI) shows it again on both
// without a restart. Skipped, with the reason, where redis-server is not installed.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startAuthorizationServer, type AuthorizationServer } from '../../../examples/dev/authorization-server.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { ConfigurationError } from '../../../src/core/kernel/errors.js';
import { freePort } from '../../helpers/free-port.js';
import { postMcp } from '../../helpers/http-client.js';
import { startPlainMcpServer, type PlainMcpServer } from '../../helpers/plain-mcp-server.js';
import { REDIS_SERVER, removeTestRedis, startTestRedis, type TestRedis } from '../../helpers/redis-server.js';
import { runGatewayCli } from '../../helpers/run-cli.js';
import { openRedisPinStore } from '../../../src/gateway/pins/redis-pin-store.js';
import type { ToolPin } from '../../../src/gateway/pins/pin-document.js';

const skip = REDIS_SERVER === undefined ? 'redis-server is not installed (Debian package redis-server; CI installs it)' : false;
const VERSION = '2025-11-25';
const REVIEWED = { name: 'echo', description: 'Echoes its text.', inputSchema: { type: 'object' } };
const PULLED = { ...REVIEWED, description: 'Echoes its text, and more.' };

describe('pinned tool definitions in the shared store', { skip, timeout: 90_000 }, () => {
  let as: AuthorizationServer;
  let redis: TestRedis;
  let upstream: PlainMcpServer;
  let tool: object = REVIEWED;
  const gateways: RunningGateway[] = [];
  let settings: Record<string, string>;

  before(async () => {
    as = await startAuthorizationServer({ extraScopes: ['mcp'] });
    redis = await startTestRedis();
    upstream = await startPlainMcpServer({ tools: () => [tool] });
    // One key prefix for the fleet and the command: the default one holds the resource, which differs per port here.
    settings = { MCP_AUTH_ISSUER: as.issuer, HOST: '127.0.0.1', MCP_AUTH_UPSTREAM: upstream.url, MCP_AUTH_PINS: 'enforce', MCP_AUTH_PIN_FILE: 'redis', MCP_AUTH_REDIS_URL: redis.url, MCP_AUTH_REDIS_KEY_PREFIX: 'pins-test:' };
    for (let i = 0; i < 2; i++) {
      const gateway = await startGateway(loadGatewayConfig({ ...settings, PORT: '0' }), { log: () => {}, warn: () => {} });
      gateways.push(gateway);
      as.addResource(gateway.resource, { scopes: ['mcp'] });
    }
  });
  after(async () => {
    for (const gateway of gateways) await gateway.shutdown();
    upstream?.close();
    await as?.close();
    if (redis) await removeTestRedis(redis);
  });

  const toolNames = async (gateway: RunningGateway): Promise<string[]> => {
    const token = await as.issueAccessToken({ resource: gateway.resource, scope: 'mcp', sub: 'alice' });
    const answer = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, token, { 'mcp-protocol-version': VERSION });
    assert.equal(answer.status, 200, answer.text);
    return (answer.json.result.tools as { name: string }[]).map((each) => each.name);
  };

  const waitFor = async (condition: () => Promise<boolean>, what: string): Promise<void> => {
    const deadline = Date.now() + 8_000;
    while (!(await condition())) {
      if (Date.now() > deadline) assert.fail(`not within 8 s: ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };

  it('one replica pins on first sight; after the rug pull both hide the tool; one accept restores it on both', async () => {
    assert.deepEqual(await toolNames(gateways[0]!), ['echo']);
    // The second replica reads the first one's pins from the store (polled), so its first sight is not its own.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    tool = PULLED;
    assert.deepEqual(await toolNames(gateways[1]!), []);
    assert.deepEqual(await toolNames(gateways[0]!), []);
    const accepted = await runGatewayCli(['pins', 'accept', 'upstream', 'echo'], settings);
    assert.equal(accepted.code, 0, accepted.stderr);
    assert.match(accepted.stdout, /accepted as sha256:[0-9a-f]{16} \(description changed\); pins written to redis/);
    for (const gateway of gateways) await waitFor(async () => (await toolNames(gateway)).includes('echo'), 'echo listed again');
  });

  it('a shared store that cannot be reached stops the start-up with an error naming MCP_AUTH_PIN_FILE and a short reason, never the client\'s own text', async () => {
    const closed = await freePort();
    const config = loadGatewayConfig({ ...settings, PORT: '0', MCP_AUTH_REDIS_URL: `redis://127.0.0.1:${closed}` });
    await assert.rejects(startGateway(config, { log: () => {}, warn: () => {} }), (e: unknown) => e instanceof ConfigurationError && /MCP_AUTH_PIN_FILE: is redis, and the pins could not be read from it \(Redis: [a-z -]+\)$/.test(e.message) && !e.message.includes('127.0.0.1'));
  });

  it('a store holding more bytes than a pin file may is read step by step and refused past the bound, naming the setting', async () => {
    const store = await openRedisPinStore({ url: redis.url, keyPrefix: 'pins-oversized:' });
    try {
      // 544 entries of 32 KiB (17 MiB): past the 16 MiB a pin file may hold, read in steps of about 1 MiB.
      const big = { digest: 'sha256:0', padding: 'a'.repeat(32 * 1_024) } as unknown as ToolPin;
      for (let batch = 0; batch < 17; batch++) await store.write(Array.from({ length: 32 }, (_, i) => ({ server: 's', tool: `t${batch * 32 + i}`, pin: big })));
      await assert.rejects(store.load(), (e: unknown) => e instanceof ConfigurationError && /MCP_AUTH_PIN_FILE: is redis, and its pins hold more than 16777216 bytes/.test(e.message));
    } finally {
      await store.close();
    }
  });
});
