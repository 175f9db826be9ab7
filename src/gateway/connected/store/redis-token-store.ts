/**
 * The token store of a fleet (`MCP_AUTH_TOKEN_STORE=redis`): every replica reads and writes one Redis, so a
 * connection made through one replica serves on all, and compare-and-set, take and locks are atomic across them.
 * Bounded as the other stores are, by every replica together: in bytes per value, and in entries of each kind
 * (durable, ephemeral), counted in Redis by an index per kind that every write, delete and take keeps in the same
 * script, so that a write is still one round trip. Uses the optional ioredis package, connected as the rate limits
 * connect (`openRedisConnection`).
 */
import { randomBytes } from 'node:crypto';
import type { Redis as RedisClient } from 'ioredis';
import { checkInteger } from '../../../core/kernel/settings.js';
import { emitWarning, writeWarningToStderr, type LineSink } from '../../../core/kernel/log-line.js';
import { openRedisConnection, type RedisConnection } from '../../../redis/redis-connection.js';
import { RedisHealth, shortRedisReason } from '../../../redis/redis-health.js';
import { checkRedisUrl } from '../../../redis/redis-url.js';
import { TokenStoreFullError, TokenStoreShareExceededError, type TokenStore } from './token-store.js';
import { DEFAULT_TOKEN_STORE_MAX_ENTRIES, DEFAULT_TOKEN_STORE_MAX_EPHEMERAL_ENTRIES, DEFAULT_TOKEN_STORE_MAX_VALUE_BYTES, defaultEphemeralShare, ephemeralPressure, isEphemeralKey } from './token-store-limits.js';
import { TokenStoreUnavailableError } from './token-store-unavailable-error.js';

/** Options of {@link createRedisTokenStore}. */
export interface RedisTokenStoreOptions {
  /** `redis://[[user]:password@]host[:port][/db]`, or `rediss://` for TLS. Never logged. */
  url: string;
  /**
   * Prefix of every Redis key the store writes: values under `<prefix>value:<key>`, locks under
   * `<prefix>lock:<name>`, the count of entries of each kind under `<prefix>index:durable` and
   * `<prefix>index:ephemeral`. Default `mcp-guard:token-store:`.
   */
  keyPrefix?: string;
  /**
   * Most durable entries kept (connections, registered clients, upstreams' profiles), by every replica together.
   * Default 100 000.
   */
  maxEntries?: number;
  /** Most ephemeral entries kept (tickets, pending sign-ins and flows; see `isEphemeralKey`), apart. Default 20 000. */
  maxEphemeralEntries?: number;
  /**
   * Most live ephemeral entries one owner (user) holds while at least half of `maxEphemeralEntries` are held, by
   * every replica together; its set of entries is kept under `<prefix>owner:<owner>`. Default 1 % of
   * `maxEphemeralEntries` (200).
   */
  maxEphemeralEntriesPerOwner?: number;
  /** Most bytes of one value. Default 16 384 (16 KiB). Bound the whole with Redis's own `maxmemory` too. */
  maxValueBytes?: number;
  /** Longest wait for one Redis command, in milliseconds. Default 500. */
  commandTimeoutMs?: number;
  /** Longest wait to connect, in milliseconds. Default 2 000. */
  connectTimeoutMs?: number;
  /**
   * Receives a warning when Redis is lost, with a short reason (`connection refused`, `timed out`: never the
   * client library's text), and when it is back. Never the URL's password. Default: a JSON warning line on stderr.
   */
  onWarning?: (message: string, reason?: string) => void;
  /** The setting that named the URL, for start-up errors. Default `MCP_AUTH_REDIS_URL`. */
  urlSetting?: string;
}

/** The warning when the token store's Redis is lost (the reason is a field of its own). */
export const TOKEN_STORE_LOST = 'the token store (Redis) is unavailable: connected accounts cannot be read or saved until it is back';
/** The warning when it is back. */
export const TOKEN_STORE_BACK = 'the token store (Redis) is back: connected accounts are available again';
/** The warning at start-up when Redis may evict keys (the reason field names its `maxmemory-policy`). */
export const TOKEN_STORE_MAY_EVICT =
  "the token store's Redis may evict keys under memory pressure (maxmemory-policy is not noeviction): a connection, a registration or a lock could vanish; set maxmemory-policy noeviction";

/**
 * The {@link RedisTokenStoreOptions.onWarning} that writes each warning as one JSON log line to `sink`:
 * `{"event":"warning","message":…,"store":"token_store","state":"unavailable"|"available","reason":…}`.
 *
 * @example
 * await createRedisTokenStore({ url, onWarning: tokenStoreWarnings((line) => process.stderr.write(`${line}\n`)) });
 */
export function tokenStoreWarnings(sink: LineSink): (message: string, reason?: string) => void {
  return (message, reason) => {
    // The eviction warning is about a setting, not about whether the store answers.
    const state = message === TOKEN_STORE_MAY_EVICT ? {} : { state: message === TOKEN_STORE_BACK ? 'available' : 'unavailable' };
    emitWarning(sink, message, { store: 'token_store', ...state, ...(reason !== undefined ? { reason } : {}) });
  };
}

/** Default {@link RedisTokenStoreOptions.keyPrefix}. */
export const DEFAULT_REDIS_TOKEN_STORE_PREFIX = 'mcp-guard:token-store:';
/** Keys asked of Redis per SCAN round of {@link TokenStore.keys}. */
const SCAN_COUNT = 1000;
/** Longest pause between two attempts to take a held lock, in milliseconds. */
const MAX_LOCK_BACKOFF_MS = 100;
/** Most members of a kind's index one write at the bound looks at for values gone behind the store's back. */
const GONE_SWEEP_MEMBERS = 100;

/**
 * Reads and deletes in one step (GETDEL is Redis 6.2+; this runs on any Redis with scripting), with the value's
 * member of the index (KEYS as {@link WRITE_SCRIPT}'s).
 */
const TAKE_SCRIPT = `
local value = redis.call('GET', KEYS[1])
redis.call('ZREM', KEYS[2], KEYS[1])
if value then redis.call('DEL', KEYS[1]) end
return value
`;

/**
 * Every write, with the count of its kind's entries kept in one step. KEYS: the value, its kind's index (a sorted
 * set of the values' keys, each scored by its expiry in ms since the epoch, or +inf), and for an ephemeral entry
 * written for a user, that user's share (a sorted set of the user's value keys, scored by expiry). ARGV: what is
 * expected ('' nothing: a plain set; '0' absence; '1' the value ARGV[2]), the expected value, the next value, its
 * TTL in ms or '', this replica's clock in ms, the most entries of the kind, the user's share, the entries of the
 * kind from which shares hold, a fraction in [0, 1) and a count of members (the window of the index looked at, below).
 * A new key finding its kind at the bound drops the index's expired members first, then members whose value is gone,
 * then is refused. A new key of a user holding its share (members expired, taken or deleted dropped first) while the kind
 * holds at least that many is refused too. Returns 1 when written, 0 when the expected value was not there, -1 when
 * the kind is full, {-2, ms until the user's oldest entry expires} when the user holds its share.
 *
 * A member whose value is gone without its ZREM (an operator's plain DEL, an older replica's delete, Redis evicting
 * under an `allkeys-*` policy) would count for ever. One rule, `drop_gone`, drops such members: over the whole of a
 * user's share (a share's worth of members), and over a window of the kind's index (ARGV[10] members from the rank
 * ARGV[9] picks) before a write is refused for the kind's bound, so that a drift of any size is worked off by the
 * writes that meet it and a write stays bounded work.
 */
const WRITE_SCRIPT = `
local function drop_gone(set, first, last)
  for _, member in ipairs(redis.call('ZRANGE', set, first, last)) do
    if redis.call('EXISTS', member) == 0 then redis.call('ZREM', set, member) end
  end
  return redis.call('ZCARD', set)
end
local current = redis.call('GET', KEYS[1])
if ARGV[1] == '1' then
  if current ~= ARGV[2] then return 0 end
elseif ARGV[1] == '0' and current then return 0 end
local now = tonumber(ARGV[5])
if not current and KEYS[3] then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[7]) then
    if drop_gone(KEYS[3], 0, -1) >= tonumber(ARGV[7]) then
      redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
      if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[8]) then
        local oldest = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
        return {-2, math.max(1, math.ceil(tonumber(oldest[2]) - now))}
      end
    end
  end
end
if not current and not redis.call('ZSCORE', KEYS[2], KEYS[1]) and redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[6]) then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[5])
  local held = redis.call('ZCARD', KEYS[2])
  if held >= tonumber(ARGV[6]) then
    local first = math.floor(tonumber(ARGV[9]) * math.max(0, held - tonumber(ARGV[10]) + 1))
    if drop_gone(KEYS[2], first, first + tonumber(ARGV[10]) - 1) >= tonumber(ARGV[6]) then return -1 end
  end
end
if ARGV[4] == '' then
  redis.call('SET', KEYS[1], ARGV[3])
  redis.call('ZADD', KEYS[2], 'inf', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4])
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), KEYS[1])
  if KEYS[3] then
    redis.call('ZADD', KEYS[3], now + tonumber(ARGV[4]), KEYS[1])
    if redis.call('PTTL', KEYS[3]) < tonumber(ARGV[4]) then redis.call('PEXPIRE', KEYS[3], ARGV[4]) end
  end
end
return 1
`;

/** Deletes a value and its member of the index (KEYS as {@link WRITE_SCRIPT}'s); returns how many values went. */
const DELETE_SCRIPT = `
redis.call('ZREM', KEYS[2], KEYS[1])
return redis.call('DEL', KEYS[1])
`;

/** Deletes the lock only while it still holds this holder's token: never a lock another holder took after expiry. */
const RELEASE_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

/**
 * Connects to Redis and returns the store. Every command is bounded by the command timeout, and none waits for
 * a connection: while Redis cannot be reached, every method rejects with {@link TokenStoreUnavailableError} at
 * once or within the timeout (answer it with 503), and one warning (with a short reason) says so until Redis is back. Resolves once
 * connected, or after `connectTimeoutMs` with that warning.
 *
 * @example
 * const store = await createRedisTokenStore({ url: process.env.MCP_AUTH_REDIS_URL!, keyPrefix: 'mcp-guard:tokens:' });
 *
 * @throws ConfigurationError naming `urlSetting` when the URL is not a Redis URL or ioredis is not installed.
 */
export async function createRedisTokenStore(options: RedisTokenStoreOptions): Promise<TokenStore> {
  const urlSetting = options.urlSetting ?? 'MCP_AUTH_REDIS_URL';
  const url = checkRedisUrl(options.url, urlSetting);
  const maxValueBytes = checkInteger(options.maxValueBytes, 'maxValueBytes', DEFAULT_TOKEN_STORE_MAX_VALUE_BYTES, { max: 1024 * 1024 });
  const ephemeral = checkInteger(options.maxEphemeralEntries, 'maxEphemeralEntries', DEFAULT_TOKEN_STORE_MAX_EPHEMERAL_ENTRIES);
  const bounds: EntryBounds = {
    durable: checkInteger(options.maxEntries, 'maxEntries', DEFAULT_TOKEN_STORE_MAX_ENTRIES),
    ephemeral,
    share: checkInteger(options.maxEphemeralEntriesPerOwner, 'maxEphemeralEntriesPerOwner', defaultEphemeralShare(ephemeral)),
  };
  const warn = options.onWarning ?? tokenStoreWarnings(writeWarningToStderr);
  const health = new RedisHealth({ lost: () => TOKEN_STORE_LOST, back: TOKEN_STORE_BACK }, (message, why) => warn(message, why === undefined ? undefined : shortRedisReason(why)));
  const connection = await openRedisConnection({
    url,
    urlSetting,
    commandTimeoutMs: options.commandTimeoutMs,
    connectTimeoutMs: options.connectTimeoutMs,
    onLost: (why) => health.lost(why),
    onReady: () => health.back(),
  });
  await warnWhenRedisMayEvict(connection.client, warn);
  return new RedisTokenStore(connection, options.keyPrefix ?? DEFAULT_REDIS_TOKEN_STORE_PREFIX, { maxValueBytes, entries: bounds }, health);
}

/** Most entries of each kind: ephemeral ones are bounded apart, so that they never take a connection's room. */
interface EntryBounds {
  readonly durable: number;
  readonly ephemeral: number;
  /** Live ephemeral entries of one owner while at least half the ephemeral bound is held. */
  readonly share: number;
}

/** The store; its methods are the {@link TokenStore}'s. */
class RedisTokenStore implements TokenStore {
  private readonly client: RedisClient;
  readonly commandTimeoutMs: number;

  constructor(
    private readonly connection: RedisConnection,
    private readonly prefix: string,
    private readonly bounds: { readonly maxValueBytes: number; readonly entries: EntryBounds },
    private readonly health: RedisHealth,
  ) {
    this.client = connection.client;
    this.commandTimeoutMs = connection.commandTimeoutMs;
  }

  get(key: string): Promise<string | undefined> {
    return this.run(async () => (await this.client.get(this.valueKey(key))) ?? undefined);
  }

  async set(key: string, sealed: string, ttlMs?: number, owner?: string): Promise<void> {
    await this.write(key, '', undefined, sealed, ttlMs, owner);
  }

  async compareAndSet(key: string, expected: string | undefined, next: string, ttlMs?: number, owner?: string): Promise<boolean> {
    return (await this.write(key, expected === undefined ? '0' : '1', expected, next, ttlMs, owner)) === 1;
  }

  async delete(key: string): Promise<boolean> {
    return Number(await this.run(() => this.client.eval(DELETE_SCRIPT, 2, this.valueKey(key), this.indexKey(key)))) > 0;
  }

  async take(key: string): Promise<string | undefined> {
    const value = await this.run(() => this.client.eval(TAKE_SCRIPT, 2, this.valueKey(key), this.indexKey(key)));
    return typeof value === 'string' ? value : undefined;
  }

  async keys(prefix: string, limit: number): Promise<string[]> {
    const found = new Set<string>();
    if (!(limit > 0)) return [];
    const start = this.valueKey('');
    const pattern = `${escapeGlob(this.valueKey(prefix))}*`;
    let cursor = '0';
    do {
      const [next, batch] = await this.run(() => this.client.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT));
      // SCAN may return a key twice; the set keeps it once.
      for (const redisKey of batch) {
        found.add(redisKey.slice(start.length));
        if (found.size >= limit) return [...found];
      }
      cursor = next;
    } while (cursor !== '0');
    return [...found];
  }

  /**
   * SET NX PX with a random token; a held lock is retried with a backoff of 5 ms doubling to 100 ms, for up to
   * `ttlMs` (by then the holder's lock has expired); released by a script that deletes it only if still ours.
   * `work` running past `ttlMs` may overlap the next holder: callers keep their work shorter and write with
   * compare-and-set.
   *
   * @throws TokenStoreUnavailableError when Redis fails, or the lock is still held by others after `ttlMs`.
   */
  async withLock<T>(name: string, ttlMs: number, work: () => Promise<T>): Promise<T> {
    if (!(ttlMs >= 1 && Number.isFinite(ttlMs))) throw new RangeError('ttlMs must be a positive number of milliseconds');
    const lockKey = `${this.prefix}lock:${name}`;
    const token = randomBytes(16).toString('base64url');
    const px = Math.ceil(ttlMs);
    // A little past the holder's expiry, for the round trip and the clocks of Redis and this process.
    const deadline = Date.now() + px + this.connection.commandTimeoutMs;
    for (let backoff = 5; ; backoff = Math.min(2 * backoff, MAX_LOCK_BACKOFF_MS)) {
      if ((await this.run(() => this.client.set(lockKey, token, 'PX', px, 'NX'))) === 'OK') break;
      const left = deadline - Date.now();
      if (left <= 0) throw new TokenStoreUnavailableError(`a lock stayed held by others for ${px} ms`);
      await new Promise((resolve) => setTimeout(resolve, Math.min(left, backoff * (0.5 + Math.random()))));
    }
    try {
      return await work();
    } finally {
      // A release that fails leaves the lock to expire after ttlMs.
      await this.run(() => this.client.eval(RELEASE_SCRIPT, 1, lockKey, token)).catch(() => undefined);
    }
  }

  async reachable(): Promise<void> {
    await this.run(() => this.client.ping());
  }

  close(): Promise<void> {
    return this.connection.close();
  }

  private valueKey(key: string): string {
    return `${this.prefix}value:${key}`;
  }

  /** The index that counts `key`'s kind: one per kind, shared by every replica on the prefix. */
  private indexKey(key: string): string {
    return `${this.prefix}index:${isEphemeralKey(key) ? 'ephemeral' : 'durable'}`;
  }

  /**
   * Runs {@link WRITE_SCRIPT}: one round trip, whatever is expected. Resolves 1 (written) or 0 (not the expected
   * value).
   *
   * @throws TokenStoreFullError when `key` is new and its kind holds its most entries; TokenStoreShareExceededError
   *   when it is a new ephemeral entry of `owner`, who holds its share.
   */
  private async write(key: string, expect: '' | '0' | '1', expected: string | undefined, value: string, ttlMs: number | undefined, owner: string | undefined): Promise<number> {
    const ttl = this.checkWrite(key, value, ttlMs);
    const kind = isEphemeralKey(key) ? 'ephemeral' : 'durable';
    const { entries } = this.bounds;
    const most = entries[kind];
    const args = [expect, expected ?? '', value, ttl, String(Date.now()), String(most), String(entries.share), String(ephemeralPressure(entries.ephemeral)), String(Math.random()), String(GONE_SWEEP_MEMBERS)];
    const keys = [this.valueKey(key), this.indexKey(key), ...(owner !== undefined && kind === 'ephemeral' && ttl !== '' ? [`${this.prefix}owner:${owner}`] : [])];
    const done = await this.run(() => this.client.eval(WRITE_SCRIPT, keys.length, ...keys, ...args));
    if (Array.isArray(done)) throw new TokenStoreShareExceededError(entries.share, Number(done[1]));
    if (Number(done) === -1) throw new TokenStoreFullError(`${most} ${kind} entries`);
    return Number(done);
  }

  /** The TTL argument ('' for none); refuses an empty key, a value over the bound, a bad TTL. */
  private checkWrite(key: string, value: string, ttlMs: number | undefined): string {
    if (typeof key !== 'string' || key === '') throw new RangeError('a token store key must not be empty');
    if (typeof value !== 'string') throw new TypeError('a token store value must be a string');
    if (ttlMs !== undefined && !(ttlMs > 0 && Number.isFinite(ttlMs))) throw new RangeError('ttlMs must be a positive number of milliseconds');
    if (Buffer.byteLength(value, 'utf8') > this.bounds.maxValueBytes) throw new TokenStoreFullError(`${this.bounds.maxValueBytes} bytes per value`);
    return ttlMs === undefined ? '' : String(Math.ceil(ttlMs));
  }

  /** Runs one command: its failure (Redis down, too slow) becomes {@link TokenStoreUnavailableError}. */
  private async run<T>(command: () => Promise<T>): Promise<T> {
    try {
      const result = await command();
      this.health.back();
      return result;
    } catch (error) {
      const why = error instanceof Error ? error.message : 'no answer';
      this.health.lost(why);
      // A short reason: the client library's own sentence names its options, and reaches logs and `check`.
      throw new TokenStoreUnavailableError(`Redis: ${shortRedisReason(why)}`);
    }
  }
}

/**
 * One warning ({@link TOKEN_STORE_MAY_EVICT}, with the policy as its reason) when Redis's `maxmemory-policy` is not
 * `noeviction`. Says nothing when Redis does not answer or refuses CONFIG (managed Redis often does): the policy is
 * then unknown, and the documentation asks for `noeviction` anyway.
 */
async function warnWhenRedisMayEvict(client: RedisClient, warn: (message: string, reason?: string) => void): Promise<void> {
  if (client.status !== 'ready') return;
  const answer = await client.config('GET', 'maxmemory-policy').catch(() => undefined);
  const policy = Array.isArray(answer) ? answer[1] : undefined;
  if (typeof policy === 'string' && policy !== '' && policy !== 'noeviction') warn(TOKEN_STORE_MAY_EVICT, policy);
}

/** `text` as a SCAN MATCH pattern that matches it literally: Redis globs treat * ? [ ] and \ specially. */
function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, (character) => `\\${character}`);
}
