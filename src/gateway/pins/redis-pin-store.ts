/**
 * Pins in the shared store (`MCP_AUTH_PIN_FILE=redis`, with `MCP_AUTH_REDIS_URL`): every replica of a fleet, and
 * the operator's `pins` commands, read and write the same pins. One hash holds them (`<prefix>pins`, a field per
 * server and tool), and a counter (`<prefix>pins:version`) that each write increments, which replicas poll.
 */
import { ConfigurationError } from '../../core/kernel/errors.js';
import { openRedisConnection } from '../../redis/redis-connection.js';
import { shortRedisReason } from '../../redis/redis-health.js';
import { MAX_KEPT_DEFINITION_BYTES, MAX_PIN_DOCUMENT_BYTES, MAX_PINNED_SERVERS, MAX_PINNED_TOOLS_PER_SERVER, readPin, type PinSet } from './pin-document.js';
import { PIN_FILE_SETTING, type PinStore } from './pin-store.js';

/** Where the shared store is and what its keys start with. */
export interface RedisPinStoreOptions {
  /** The Redis URL (`MCP_AUTH_REDIS_URL`), checked; never logged. */
  readonly url: string;
  /** Prefix of the keys, as the rate limits' (`MCP_AUTH_REDIS_KEY_PREFIX`, default `mcp-guard:<resource>:`). */
  readonly keyPrefix: string;
  /** Told when the connection fails, with a short reason (`Redis: connection refused`; never the URL nor the client's text). */
  readonly onLost?: (reason: string) => void;
}

/** Most pins the shared store may hold, all servers together. */
const MAX_STORED_PINS = 100_000;
/** Largest pin entry read, in bytes: a kept definition and its digests. */
const MAX_ENTRY_BYTES = MAX_KEPT_DEFINITION_BYTES + 4_096;
/** Entries asked for in the first HSCAN step (a hint to Redis, which may answer more or fewer): some 3.6 MB at their largest. */
const FIRST_SCAN_COUNT = 100;
/** Most entries asked for in one step, however small they are. */
const MAX_SCAN_COUNT = 1_000;
/** Bytes a later step aims at: its count follows the size of the entries read so far, so that a step of large entries stays far below the pin file's bound and the command timeout. */
const SCAN_STEP_BYTES = 1_048_576;

/**
 * Opens the shared pin store. Resolves once connected, or after the connection timeout (the first `load` then
 * fails with a clear error).
 *
 * @throws ConfigurationError naming `MCP_AUTH_REDIS_URL` when ioredis is not installed.
 * @example
 * const store = await openRedisPinStore({ url, keyPrefix: 'mcp-guard:https://mcp.example.com/mcp:' });
 */
export async function openRedisPinStore(options: RedisPinStoreOptions): Promise<PinStore> {
  const connection = await openRedisConnection({ url: options.url, urlSetting: 'MCP_AUTH_REDIS_URL', onLost: (reason) => options.onLost?.(`Redis: ${shortRedisReason(reason)}`), onReady: () => undefined });
  const { client } = connection;
  const hash = `${options.keyPrefix}pins`;
  const counter = `${options.keyPrefix}pins:version`;
  return {
    name: 'redis',
    async load() {
      let entries: Map<string, string>;
      try {
        const count = await client.hlen(hash);
        if (count > MAX_STORED_PINS) throw new ConfigurationError(PIN_FILE_SETTING, `is redis, and it holds ${count} pins, more than ${MAX_STORED_PINS}`);
        entries = await scanBounded(client, hash);
      } catch (error) {
        if (error instanceof ConfigurationError) throw error;
        throw new ConfigurationError(PIN_FILE_SETTING, `is redis, and the pins could not be read from it (${redisFailure(error).message})`);
      }
      return pinSetOf(entries);
    },
    async write(changes) {
      const batch = client.multi();
      for (const { server, tool, pin } of changes) {
        const field = JSON.stringify([server, tool]);
        if (pin === undefined) batch.hdel(hash, field);
        else batch.hset(hash, field, JSON.stringify(pin));
      }
      batch.incr(counter);
      const results = await batch.exec().catch((error: unknown) => {
        throw redisFailure(error);
      });
      const failed = results?.find(([error]) => error !== null);
      if (failed) throw redisFailure(failed[0]);
    },
    async version() {
      try {
        return (await client.get(counter)) ?? 'none';
      } catch (error) {
        throw redisFailure(error);
      }
    },
    close: () => connection.close(),
  };
}

/**
 * A Redis failure as the pins' messages say it: `Redis: ` and a short reason (as the token store words them), never
 * the client's own sentence, which may name an address or its options.
 */
function redisFailure(error: unknown): Error {
  return new Error(`Redis: ${shortRedisReason(error instanceof Error ? error.message : String(error))}`, { cause: error });
}

/**
 * Reads the hash step by step (HSCAN), stopping with a clear error once what was read passes the pin file's own
 * bound: a store filled past it never costs the gateway more memory than a pin file may.
 */
async function scanBounded(client: Awaited<ReturnType<typeof openRedisConnection>>['client'], hash: string): Promise<Map<string, string>> {
  const entries = new Map<string, string>();
  let bytes = 0;
  let cursor = '0';
  let count = FIRST_SCAN_COUNT;
  do {
    const [next, flat] = await client.hscan(hash, cursor, 'COUNT', count);
    cursor = next;
    for (let i = 0; i + 1 < flat.length; i += 2) {
      bytes += Buffer.byteLength(flat[i]!) + Buffer.byteLength(flat[i + 1]!);
      if (bytes > MAX_PIN_DOCUMENT_BYTES) throw new ConfigurationError(PIN_FILE_SETTING, `is redis, and its pins hold more than ${MAX_PIN_DOCUMENT_BYTES} bytes, as a pin file may at most: run mcp-oauth-guard pins update`);
      // HSCAN may return an entry twice while the hash changes: the last value read is kept.
      entries.set(flat[i]!, flat[i + 1]!);
    }
    if (entries.size > 0) count = Math.min(MAX_SCAN_COUNT, Math.max(1, Math.floor(SCAN_STEP_BYTES / (bytes / entries.size))));
  } while (cursor !== '0');
  return entries;
}

/** The pins of the hash's entries; an entry that is no pin is refused, as a corrupt file is. */
function pinSetOf(entries: ReadonlyMap<string, string>): PinSet {
  const pins: PinSet = new Map();
  for (const [field, value] of entries) {
    let key: unknown;
    let stored: unknown;
    try {
      key = JSON.parse(field);
      stored = value.length <= MAX_ENTRY_BYTES ? JSON.parse(value) : undefined;
    } catch {
      key = undefined;
    }
    if (!Array.isArray(key) || key.length !== 2 || typeof key[0] !== 'string' || typeof key[1] !== 'string' || stored === undefined) {
      throw new ConfigurationError(PIN_FILE_SETTING, 'is redis, and an entry of its pins is not a pin: run mcp-oauth-guard pins update');
    }
    const [server, tool] = key as [string, string];
    let tools = pins.get(server);
    if (tools === undefined) {
      if (pins.size >= MAX_PINNED_SERVERS) throw new ConfigurationError(PIN_FILE_SETTING, `is redis, and it pins more than ${MAX_PINNED_SERVERS} servers`);
      pins.set(server, (tools = new Map()));
    }
    if (tools.size >= MAX_PINNED_TOOLS_PER_SERVER) throw new ConfigurationError(PIN_FILE_SETTING, `is redis, and it pins more than ${MAX_PINNED_TOOLS_PER_SERVER} tools of ${server}`);
    tools.set(tool, readPin(stored, `${PIN_FILE_SETTING} (redis): ${server}.${tool}`));
  }
  return pins;
}
