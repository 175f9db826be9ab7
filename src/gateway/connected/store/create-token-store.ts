/**
 * Chooses the token store named by the configuration (`MCP_AUTH_TOKEN_STORE`): a directory on this machine,
 * Redis for a fleet, or memory (tests, or connections that need not survive a restart).
 */
import { createDirectoryTokenStore, type DirectoryTokenStoreOptions } from './directory-token-store.js';
import { createMemoryTokenStore, type MemoryTokenStoreOptions } from './memory-token-store.js';
import { createRedisTokenStore, type RedisTokenStoreOptions } from './redis-token-store.js';
import type { TokenStore } from './token-store.js';

/** Which store, and its options. */
export type TokenStoreConfig =
  | ({ kind: 'directory' } & DirectoryTokenStoreOptions)
  | ({ kind: 'redis' } & RedisTokenStoreOptions)
  | ({ kind: 'memory' } & MemoryTokenStoreOptions);

/**
 * Opens the store `config` names. A directory is checked (and created) at once; Redis is connected to, waiting
 * at most its connect timeout.
 *
 * @example
 * const store = await createTokenStore({ kind: 'directory', directory: '/var/lib/mcp-oauth-guard/tokens' });
 * const shared = await createTokenStore({ kind: 'redis', url: 'redis://cache:6379', keyPrefix: 'mcp-guard:tokens:' });
 *
 * @throws ConfigurationError naming the setting at fault (an unusable directory, a bad Redis URL, ioredis missing).
 */
export async function createTokenStore(config: TokenStoreConfig): Promise<TokenStore> {
  switch (config.kind) {
    case 'directory': {
      const { kind: _, ...options } = config;
      return createDirectoryTokenStore(options);
    }
    case 'redis': {
      const { kind: _, ...options } = config;
      return createRedisTokenStore(options);
    }
    case 'memory': {
      const { kind: _, ...options } = config;
      return createMemoryTokenStore(options);
    }
  }
}
