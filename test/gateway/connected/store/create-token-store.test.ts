// createTokenStore opens the kind its configuration names: memory, a directory (checked and created at once), or
// Redis (its URL checked at start-up, naming the setting).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { ConfigurationError } from '../../../../src/core/kernel/errors.js';
import { createTokenStore } from '../../../../src/gateway/connected/store/create-token-store.js';
import { TokenStoreFullError } from '../../../../src/gateway/connected/store/token-store.js';

const root = mkdtempSync(join(tmpdir(), 'guard-token-store-kind-'));
after(() => rmSync(root, { recursive: true, force: true }));

describe('createTokenStore', () => {
  test('memory: a working store with its bounds', async () => {
    const store = await createTokenStore({ kind: 'memory', maxEntries: 1, maxEphemeralEntries: 1 });
    await store.set('conn:a', 'v');
    assert.equal(await store.get('conn:a'), 'v');
    await assert.rejects(store.set('conn:b', 'v'), TokenStoreFullError);
    await store.set('ticket:a', 'v', 60_000);
    await assert.rejects(store.set('login:a', 'v', 60_000), TokenStoreFullError, 'ephemeral entries have a bound of their own');
    await store.close();
  });

  test('directory: created private at once, and kept by the next store on it', async () => {
    const directory = join(root, 'tokens');
    const store = await createTokenStore({ kind: 'directory', directory });
    assert.equal(statSync(directory).mode & 0o777, 0o700);
    await store.set('conn:u:s', 'sealed');
    await store.close();
    const again = await createTokenStore({ kind: 'directory', directory });
    assert.equal(await again.get('conn:u:s'), 'sealed');
    await again.close();
  });

  test('redis: a URL that is not a Redis URL is refused naming MCP_AUTH_REDIS_URL', async () => {
    await assert.rejects(createTokenStore({ kind: 'redis', url: 'https://cache.example.com' }), (error: unknown) => error instanceof ConfigurationError && error.setting === 'MCP_AUTH_REDIS_URL');
  });
});
