import type { Redis as RedisClient } from 'ioredis';
import { ConfigurationError } from '../core/kernel/errors.js';
import { waitBounded } from '../core/kernel/bounded-wait.js';

/** Default time each Redis command may take (`commandTimeoutMs` of a connection): 500 ms. */
export const DEFAULT_REDIS_COMMAND_TIMEOUT_MS = 500;
/** Default time to connect to Redis (`connectTimeoutMs` of a connection): 2 000 ms. */
export const DEFAULT_REDIS_CONNECT_TIMEOUT_MS = 2_000;
/** Longest pause between two reconnection attempts, in milliseconds: a Redis back from an outage is used soon. */
const MAX_RECONNECT_DELAY_MS = 2_000;

/** Options of {@link openRedisConnection}. */
export interface RedisConnectionOptions {
  /** A URL already checked with `checkRedisUrl`. Never logged. */
  url: string;
  /** The setting that named the URL, for the error when ioredis is not installed. */
  urlSetting: string;
  /** Longest wait for one command, in milliseconds; past it the command fails. Default 500. */
  commandTimeoutMs?: number;
  /** Longest wait to connect (and at start-up, for the first connection), in milliseconds. Default 2 000. */
  connectTimeoutMs?: number;
  /** Told when the connection fails or cannot be made, with the reason Redis or the socket gave (no password). */
  onLost: (reason: string) => void;
  /** Told when the connection is (again) ready. */
  onReady: () => void;
}

/** One connection to Redis, as every Redis-backed part of the gateway opens it. */
export interface RedisConnection {
  /** The ioredis client: every command bounded by the command timeout, none queued while disconnected. */
  readonly client: RedisClient;
  /** The command timeout in force, in milliseconds. */
  readonly commandTimeoutMs: number;
  /** QUIT, or a disconnect if Redis does not answer within the command timeout. */
  close(): Promise<void>;
}

/**
 * Loads the optional ioredis package and connects with the settings every Redis user of the gateway shares, so
 * that no request waits on a dead Redis: every command has a timeout, the offline queue is off (a command while
 * disconnected fails at once) and reconnections back off to at most 2 s. Resolves once connected, or after
 * `connectTimeoutMs` having told `onLost` why (the client goes on reconnecting in the background).
 *
 * @example
 * const connection = await openRedisConnection({ url, urlSetting: 'MCP_AUTH_REDIS_URL', onLost: warn, onReady: () => {} });
 * await connection.client.get('key');
 *
 * @throws ConfigurationError naming `urlSetting` when ioredis is not installed.
 */
export async function openRedisConnection(options: RedisConnectionOptions): Promise<RedisConnection> {
  const commandTimeout = options.commandTimeoutMs ?? DEFAULT_REDIS_COMMAND_TIMEOUT_MS;
  const connectTimeout = options.connectTimeoutMs ?? DEFAULT_REDIS_CONNECT_TIMEOUT_MS;
  const { Redis } = await import('ioredis').catch((error: unknown) => {
    throw new ConfigurationError(options.urlSetting, `needs the optional package ioredis: run npm install ioredis (${(error as Error).message})`);
  });
  const client: RedisClient = new Redis(options.url, {
    commandTimeout,
    connectTimeout,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: (attempt) => Math.min(50 * 2 ** attempt, MAX_RECONNECT_DELAY_MS),
    lazyConnect: true,
    // How long a disconnect waits for the socket to close before destroying it. ioredis arms that timer (2 s by
    // default) even for a socket that has already failed and will never emit 'close', which kept a process that
    // had closed its connection alive for 2 s after a failed connection.
    disconnectTimeout: Math.min(commandTimeout, DEFAULT_REDIS_COMMAND_TIMEOUT_MS),
  });
  client.on('error', (error: Error) => options.onLost(error.message));
  client.on('ready', () => options.onReady());
  await connectWithin(client, connectTimeout).catch((error: Error) => options.onLost(error.message));
  return {
    client,
    commandTimeoutMs: commandTimeout,
    async close() {
      const timer = setTimeout(() => client.disconnect(), commandTimeout);
      try {
        if (client.status === 'ready') await client.quit();
        else client.disconnect();
      } catch {
        client.disconnect();
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** Connects, or rejects after `timeoutMs`; reconnection goes on in the background either way. */
async function connectWithin(redis: RedisClient, timeoutMs: number): Promise<void> {
  const end = await waitBounded(redis.connect(), { timeoutMs });
  if (end.ended !== 'settled') throw new Error(`no connection within ${timeoutMs} ms`);
}
