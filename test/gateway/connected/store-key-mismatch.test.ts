// A gateway started with a token store secret other than the one its stored connections were sealed with: without a
// word, every user would be asked to connect again. The gateway warns at start-up, naming MCP_AUTH_TOKEN_STORE_SECRET
// and how keys rotate; `check` reports it; both only sample a few records, within a bounded time. Real parts: the
// gateway's issuer and the notes example behind its own authorization server, the token store in a directory.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { runChecks } from '../../../src/gateway/cli/check/run-checks.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import type { ConnectionRecord } from '../../../src/gateway/connected/oauth/connection-record.js';
import { writeConnection } from '../../../src/gateway/connected/oauth/sealed-connections.js';
import { openConnectionStore } from '../../../src/gateway/connected/open-connections.js';
import { createMemoryTokenStore } from '../../../src/gateway/connected/store/memory-token-store.js';
import { createRecordSealer } from '../../../src/gateway/connected/store/record-sealer.js';
import { probeStoredConnections, STORED_CONNECTIONS_DO_NOT_OPEN } from '../../../src/gateway/connected/store/stored-connections-probe.js';
import type { TokenStore } from '../../../src/gateway/connected/store/token-store.js';
import { startGateway } from '../../../src/gateway/server/start-gateway.js';
import { parseSessionSecret } from '../../../src/core/session/session-seal.js';
import { singleUpstreamSettings, startConnectedAccountsParts, STORE_KEY, type ConnectedAccountsParts } from '../../helpers/connected-accounts.js';

/** The key the stored connections were sealed with, before the gateway's was changed. */
const OLD_KEY = randomBytes(32).toString('base64url');
const RECORD: ConnectionRecord = { accessToken: 'old-access', refreshToken: 'old-refresh', tokenType: 'Bearer', asIssuer: 'https://as.example', clientId: 'gw', createdAt: 1, updatedAt: 1 };

let parts: ConnectedAccountsParts;

before(async () => {
  parts = await startConnectedAccountsParts();
  const config = loadGatewayConfig({ ...singleUpstreamSettings(parts), MCP_AUTH_TOKEN_STORE_SECRET: OLD_KEY });
  const opened = await openConnectionStore(config.connectedAccounts!, config.guard.resource, undefined);
  try {
    for (const subject of ['alice', 'bob']) await writeConnection(opened.store, opened.sealer, { issuer: parts.gatewayAs.issuer, subject }, '', RECORD);
  } finally {
    await opened.store.close();
  }
});
after(async () => {
  await parts?.close();
});

/** The warning lines of a gateway started with `secret` and shut down at once. */
async function startUpWarnings(secret: string): Promise<Record<string, unknown>[]> {
  const warnings: string[] = [];
  const gateway = await startGateway(loadGatewayConfig({ ...singleUpstreamSettings(parts), MCP_AUTH_TOKEN_STORE_SECRET: secret }), { log: () => undefined, warn: (line) => warnings.push(line) });
  await gateway.shutdown();
  return warnings.map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** The token store's line of `check` with `secret`. */
async function storeCheck(secret: string) {
  const results = await runChecks(loadGatewayConfig({ ...singleUpstreamSettings(parts), MCP_AUTH_TOKEN_STORE_SECRET: secret }));
  return results.find((result) => result.check === 'connected accounts' && result.subject?.startsWith('token store'))!;
}

describe('a token store secret other than the stored connections\'', { timeout: 60_000 }, () => {
  it('the gateway warns at start-up, naming the setting and how keys rotate; not with the old key listed second', async () => {
    const warned = (await startUpWarnings(STORE_KEY)).filter((line) => line.message === STORED_CONNECTIONS_DO_NOT_OPEN);
    assert.equal(warned.length, 1, JSON.stringify(warned));
    assert.equal(warned[0]!.setting, 'MCP_AUTH_TOKEN_STORE_SECRET');
    assert.equal(warned[0]!.sampled, 2);
    assert.match(String(warned[0]!.fix), /the first key seals, every key listed opens/);
    assert.ok(!JSON.stringify(warned).includes(OLD_KEY) && !JSON.stringify(warned).includes(STORE_KEY), 'no key in the line');
    const rotated = await startUpWarnings(`${STORE_KEY},${OLD_KEY}`);
    assert.deepEqual(rotated.filter((line) => line.message === STORED_CONNECTIONS_DO_NOT_OPEN), [], 'the old key opens them');
  });

  it('check fails the token store with the other key, and passes with the key the connections were sealed with', async () => {
    const wrong = await storeCheck(STORE_KEY);
    assert.equal(wrong.status, 'fail', JSON.stringify(wrong));
    assert.equal(wrong.message, STORED_CONNECTIONS_DO_NOT_OPEN);
    assert.match(wrong.fix ?? '', /MCP_AUTH_TOKEN_STORE_SECRET.*first key seals/);
    const right = await storeCheck(OLD_KEY);
    assert.equal(right.status, 'ok', JSON.stringify(right));
    assert.match(right.message, /its connections open with this key$/);
  });

  it('reads only a few records, and gives up on a store that does not answer in time', async () => {
    const store = createMemoryTokenStore();
    const other = createRecordSealer(parseSessionSecret(OLD_KEY, 'MCP_AUTH_TOKEN_STORE_SECRET'));
    for (let i = 0; i < 50; i++) await store.set(`conn:user${i}:`, await other.seal(`conn:user${i}:`, RECORD));
    let reads = 0;
    const counted: TokenStore = { ...store, get: (key) => (reads++, store.get(key)) };
    const sealer = createRecordSealer(parseSessionSecret(STORE_KEY, 'MCP_AUTH_TOKEN_STORE_SECRET'));
    assert.deepEqual(await probeStoredConnections(counted, sealer), { sampled: 5, opened: 0 });
    assert.equal(reads, 5);

    const silent: TokenStore = { ...store, keys: () => new Promise(() => undefined) };
    const started = Date.now();
    assert.equal(await probeStoredConnections(silent, sealer, { timeoutMs: 200 }), undefined);
    assert.ok(Date.now() - started < 2_000, 'bounded in time');
    await store.close();
  });
});
