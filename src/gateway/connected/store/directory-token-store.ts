/**
 * The embedded token store (`MCP_AUTH_TOKEN_STORE=<directory>`): one file per entry in a private directory. It
 * needs no server and no native module (SQLite would need one on Node 20), keeps connections across restarts,
 * and a crash leaves each entry either as it was or as written (see `entry-file.ts`).
 *
 * It serves ONE gateway process: its locks (`withLock`, one refresh at a time) hold within the process only. Its
 * writes, compare-and-set and take hold an entry's lock file as well, so that the commands (`connections revoke`)
 * may run beside that gateway. A fleet of replicas shares Redis instead (`MCP_AUTH_TOKEN_STORE=redis`).
 */
import { constants } from 'node:fs';
import { access, lstat, mkdir, opendir, stat, unlink } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { ConfigurationError } from '../../../core/kernel/errors.js';
import { checkInteger } from '../../../core/kernel/settings.js';
import { entryFileName, entryKeyOf, readEntryExpiry, readEntryFile, removeEntryFile, TEMP_FILE_PREFIX, writeEntryFile, type EntryFile } from './entry-file.js';
import { withFileLock } from '../../../core/kernel/file-lock.js';
import { createKeyedMutex } from './keyed-mutex.js';
import { TokenStoreFullError, type TokenStore } from './token-store.js';
import { OwnerShares } from './owner-shares.js';
import { DEFAULT_TOKEN_STORE_MAX_ENTRIES, DEFAULT_TOKEN_STORE_MAX_EPHEMERAL_ENTRIES, DEFAULT_TOKEN_STORE_MAX_VALUE_BYTES, defaultEphemeralShare, ephemeralPressure, isEphemeralKey } from './token-store-limits.js';
import { TokenStoreUnavailableError } from './token-store-unavailable-error.js';

/** Options of {@link createDirectoryTokenStore}. */
export interface DirectoryTokenStoreOptions {
  /** The directory; created with mode 0700 when missing. */
  directory: string;
  /** Most durable entries kept (connections, registered clients, upstreams' profiles). Default 100 000. */
  maxEntries?: number;
  /** Most ephemeral entries kept (tickets, pending sign-ins and flows; see `isEphemeralKey`), apart. Default 20 000. */
  maxEphemeralEntries?: number;
  /** Most bytes of one value. Default 16 384 (16 KiB). */
  maxValueBytes?: number;
  /**
   * Most live ephemeral entries one owner (user) holds while the store is at least half full. Default 1 % of
   * `maxEphemeralEntries`. Followed by this process: entries written before a restart count against no one.
   */
  maxEphemeralEntriesPerOwner?: number;
  /** How often expired entries are removed, in milliseconds (they are absent to readers at once). Default 300 000. */
  sweepIntervalMs?: number;
  /** The setting that named the directory, for start-up errors: the gateway's is `MCP_AUTH_TOKEN_STORE`. Default `options.directory`. */
  setting?: string;
}

/** Default {@link DirectoryTokenStoreOptions.sweepIntervalMs}: 5 minutes. */
const DEFAULT_SWEEP_INTERVAL_MS = 300_000;
/** Names of entries' lock files start with this, then the entry's name: a dot, so that no reader takes one for an entry. */
const LOCK_FILE_PREFIX = '.lock-';
/** A temporary or lock file older than this, in milliseconds, was left by a crash: the sweep removes it. */
const STALE_TEMP_FILE_MS = 60_000;
/** Least time between two sweeps that a full store starts, in milliseconds: a full store is not swept per write. */
const FULL_SWEEP_INTERVAL_MS = 10_000;

/**
 * Opens (creating when missing) the directory store. Refuses at start-up a path that is not a directory, a
 * directory anyone may write to (anyone on the machine could then replace or delete connections), or one this
 * process cannot write to.
 *
 * @example
 * const store = await createDirectoryTokenStore({ directory: '/var/lib/mcp-oauth-guard/tokens', setting: 'MCP_AUTH_TOKEN_STORE' });
 *
 * @throws ConfigurationError naming `setting` (the gateway's `MCP_AUTH_TOKEN_STORE`) for such a directory, or an
 *   option out of range.
 */
export async function createDirectoryTokenStore(options: DirectoryTokenStoreOptions): Promise<TokenStore> {
  const setting = options.setting ?? 'options.directory';
  const maxEntries = checkInteger(options.maxEntries, 'maxEntries', DEFAULT_TOKEN_STORE_MAX_ENTRIES);
  const maxEphemeralEntries = checkInteger(options.maxEphemeralEntries, 'maxEphemeralEntries', DEFAULT_TOKEN_STORE_MAX_EPHEMERAL_ENTRIES);
  const maxValueBytes = checkInteger(options.maxValueBytes, 'maxValueBytes', DEFAULT_TOKEN_STORE_MAX_VALUE_BYTES, { max: 1024 * 1024 });
  const sweepIntervalMs = checkInteger(options.sweepIntervalMs, 'sweepIntervalMs', DEFAULT_SWEEP_INTERVAL_MS, { min: 1000, max: 2 ** 31 - 1 });
  const directory = await prepareDirectory(options.directory, setting);
  const counts = { durable: 0, ephemeral: 0 };
  for await (const found of await opendir(directory)) {
    const key = entryKeyOf(found.name);
    if (key !== undefined) counts[isEphemeralKey(key) ? 'ephemeral' : 'durable'] += 1;
  }
  const share = checkInteger(options.maxEphemeralEntriesPerOwner, 'maxEphemeralEntriesPerOwner', defaultEphemeralShare(maxEphemeralEntries));
  const store = new DirectoryTokenStore(directory, { durable: maxEntries, ephemeral: maxEphemeralEntries }, maxValueBytes, counts, new OwnerShares(share, maxEphemeralEntries));
  store.startSweeping(sweepIntervalMs);
  return store;
}

/** Checks (creating when missing) the store's directory; its absolute path. */
async function prepareDirectory(directory: string, setting: string): Promise<string> {
  if (typeof directory !== 'string' || directory.trim() === '') throw new ConfigurationError(setting, 'must name a directory (or be redis)');
  const path = resolve(directory);
  const refuse = (why: string): never => {
    throw new ConfigurationError(setting, `the token store directory ${path} ${why}`);
  };
  try {
    await makeDirectory(path);
  } catch (error) {
    refuse(`cannot be created (${(error as NodeJS.ErrnoException).code ?? 'error'}): name a directory this process may create, or create it with mode 700`);
  }
  const info = await stat(path).catch(() => refuse('cannot be read'));
  if (!info.isDirectory()) refuse('is not a directory');
  if ((info.mode & 0o002) !== 0) refuse('is writable by every user of this machine, who could replace or delete connections: make it private (chmod 700) or name another');
  const probe = join(path, `${TEMP_FILE_PREFIX}probe-${process.pid}`);
  try {
    await access(path, constants.R_OK | constants.W_OK | constants.X_OK);
    await writeEntryFile(path, probe.slice(path.length + 1), { value: '', expiresAt: 1 });
    await unlink(probe);
  } catch (error) {
    refuse(`is not writable by this process (${(error as NodeJS.ErrnoException).code ?? 'error'}): give the gateway's user ownership of it`);
  }
  return path;
}

/**
 * Creates `path` and any missing parent, each with mode 0700, one at a time. Not `mkdir({ recursive: true })`: on
 * Node 20 it never returns for a path the file system refuses with ENOENT under an existing parent (such as one in
 * /proc), which would hang the gateway's start-up instead of refusing the setting.
 */
async function makeDirectory(path: string): Promise<void> {
  const missing: string[] = [];
  for (let at = path; ; at = dirname(at)) {
    const found = await stat(at).then(
      () => true,
      (error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
        return false;
      },
    );
    if (found) break;
    missing.unshift(at);
    if (dirname(at) === at) break;
  }
  for (const directory of missing) {
    await mkdir(directory, { mode: 0o700 }).catch((error: NodeJS.ErrnoException) => {
      // Made meanwhile by another process: fine.
      if (error.code !== 'EEXIST') throw error;
    });
  }
}

/** The store; its methods are the {@link TokenStore}'s, its fields its state. */
class DirectoryTokenStore implements TokenStore {
  /** One read-modify-write at a time per entry file. */
  private readonly files = createKeyedMutex();
  /** The locks of {@link TokenStore.withLock}. */
  private readonly locks = createKeyedMutex();
  private timer: NodeJS.Timeout | undefined;
  /** Writes under way (each holding its lock file): a close waits for them, so nothing is written after it. */
  private readonly writing = new Set<Promise<unknown>>();
  private closed = false;
  private lastFullSweep = 0;
  /** Writes and removals so far: a sweep recounts the entries only when none happened while it ran. */
  private changes = 0;

  constructor(
    private readonly directory: string,
    /** Most entries of each kind: ephemeral ones are bounded apart, so that they never take a connection's room. */
    private readonly maxEntries: Readonly<Record<EntryKind, number>>,
    private readonly maxValueBytes: number,
    /** Entry files in the directory of each kind, expired ones included until removed. */
    private readonly entries: Record<EntryKind, number>,
    /** The users' shares of the ephemeral entries. */
    private readonly shares: OwnerShares,
  ) {}

  startSweeping(intervalMs: number): void {
    this.timer = setInterval(() => void this.sweep().catch(() => undefined), intervalMs);
    this.timer.unref();
  }

  async get(key: string): Promise<string | undefined> {
    const name = entryFileName(key);
    if (name === undefined) return undefined;
    const entry = await this.read(name);
    if (entry === undefined) return undefined;
    if (entry.expiresAt > Date.now()) return entry.value;
    await this.files.run(name, () => this.removeIfExpired(name));
    return undefined;
  }

  async set(key: string, sealed: string, ttlMs?: number, owner?: string): Promise<void> {
    const name = this.checkWrite(key, sealed, ttlMs);
    await this.files.run(name, () => this.acrossProcesses(name, () => this.write(name, sealed, ttlMs, owner)));
  }

  async compareAndSet(key: string, expected: string | undefined, next: string, ttlMs?: number, owner?: string): Promise<boolean> {
    const name = this.checkWrite(key, next, ttlMs);
    return this.files.run(name, () =>
      this.acrossProcesses(name, async () => {
        if ((await this.live(name))?.value !== expected) return false;
        await this.write(name, next, ttlMs, owner);
        return true;
      }),
    );
  }

  async delete(key: string): Promise<boolean> {
    return (await this.take(key)) !== undefined;
  }

  async take(key: string): Promise<string | undefined> {
    const name = entryFileName(key);
    if (name === undefined) return undefined;
    return this.files.run(name, () =>
      this.acrossProcesses(name, async () => {
        const entry = await this.live(name);
        await this.remove(name);
        return entry?.value;
      }),
    );
  }

  async keys(prefix: string, limit: number): Promise<string[]> {
    const found: string[] = [];
    if (!(limit > 0)) return found;
    try {
      for await (const file of await opendir(this.directory)) {
        const key = entryKeyOf(file.name);
        if (key === undefined || !key.startsWith(prefix) || (await this.live(file.name)) === undefined) continue;
        found.push(key);
        if (found.length >= limit) break;
      }
    } catch (error) {
      throw failure(error);
    }
    return found;
  }

  withLock<T>(name: string, ttlMs: number, work: () => Promise<T>): Promise<T> {
    return this.locks.run(name, work, ttlMs);
  }

  /**
   * Runs an entry's write or read-then-write holding its lock file (`.lock-<name>`), so that another process on the
   * same directory (`connections revoke` beside the gateway) cannot slip between the read and the write: a refresh
   * compared against a connection the command deleted then fails instead of writing it back.
   */
  private async acrossProcesses<T>(name: string, work: () => Promise<T>): Promise<T> {
    if (this.closed) throw new TokenStoreUnavailableError('it is closed');
    const written = withFileLock(join(this.directory, `${LOCK_FILE_PREFIX}${name}`), work);
    this.writing.add(written);
    try {
      return await written;
    } catch (error) {
      throw failure(error);
    } finally {
      this.writing.delete(written);
    }
  }

  /** Stops sweeping, refuses later writes, and resolves once the writes under way have ended (none is cut short). */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await Promise.allSettled([...this.writing]);
    this.shares.clear();
  }

  /** The entry file's name; refuses a key that cannot be one, a value over the bound, a bad TTL. */
  private checkWrite(key: string, value: string, ttlMs: number | undefined): string {
    const name = entryFileName(key);
    if (name === undefined) throw new RangeError('a token store key must be 1 to 180 bytes');
    if (typeof value !== 'string') throw new TypeError('a token store value must be a string');
    if (ttlMs !== undefined && !(ttlMs > 0 && Number.isFinite(ttlMs))) throw new RangeError('ttlMs must be a positive number of milliseconds');
    if (Buffer.byteLength(value, 'utf8') > this.maxValueBytes) throw new TokenStoreFullError(`${this.maxValueBytes} bytes per value`);
    return name;
  }

  private async read(name: string): Promise<EntryFile | undefined> {
    try {
      return await readEntryFile(join(this.directory, name), this.maxValueBytes);
    } catch (error) {
      throw failure(error);
    }
  }

  /** The entry unless absent or expired: call holding the entry's mutex. */
  private async live(name: string): Promise<EntryFile | undefined> {
    const entry = await this.read(name);
    return entry !== undefined && entry.expiresAt > Date.now() ? entry : undefined;
  }

  /**
   * Writes the entry, holding its mutex; a new file counts against the bound first, and a new ephemeral entry of
   * `owner` against its share.
   */
  private async write(name: string, value: string, ttlMs: number | undefined, owner: string | undefined): Promise<void> {
    const path = join(this.directory, name);
    const existed = await lstat(path).then(
      () => true,
      (error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? false : Promise.reject(failure(error))),
    );
    const kind = kindOf(name);
    const owned = owner !== undefined && ttlMs !== undefined && kind === 'ephemeral' ? owner : undefined;
    if (owned !== undefined && (await this.live(name)) === undefined) this.shares.check(owned, this.entries.ephemeral >= ephemeralPressure(this.maxEntries.ephemeral), Date.now());
    if (!existed) await this.reserve(kind);
    try {
      const expiresAt = ttlMs === undefined ? Infinity : Date.now() + ttlMs;
      await writeEntryFile(this.directory, name, { value, expiresAt });
      if (owned !== undefined) this.shares.add(owned, entryKeyOf(name)!, expiresAt, Date.now());
      this.changes += 1;
    } catch (error) {
      if (!existed) this.entries[kind] -= 1;
      throw failure(error);
    }
  }

  /** Counts one more entry of `kind`, sweeping expired ones first (at most every 10 s) when at its bound. */
  private async reserve(kind: EntryKind): Promise<void> {
    const max = this.maxEntries[kind];
    if (this.entries[kind] >= max && Date.now() - this.lastFullSweep >= FULL_SWEEP_INTERVAL_MS) {
      this.lastFullSweep = Date.now();
      await this.sweep();
    }
    if (this.entries[kind] >= max) throw new TokenStoreFullError(`${max} ${kind} entries`);
    this.entries[kind] += 1;
  }

  /** Removes the entry file, holding its mutex; true when there was one. */
  private async remove(name: string): Promise<boolean> {
    try {
      if (!(await removeEntryFile(join(this.directory, name)))) return false;
      this.shares.remove(entryKeyOf(name)!);
      this.entries[kindOf(name)] -= 1;
      this.changes += 1;
      return true;
    } catch (error) {
      throw failure(error);
    }
  }

  /** Removes the entry if it is (still) expired, holding its mutex; true when removed. */
  private async removeIfExpired(name: string): Promise<boolean> {
    const expiresAt = await readEntryExpiry(join(this.directory, name)).catch((error: unknown) => Promise.reject(failure(error)));
    return expiresAt !== undefined && expiresAt <= Date.now() && (await this.remove(name));
  }

  /** Removes expired entries and temporary files a crash left, then recounts the entries. */
  private async sweep(): Promise<void> {
    const changesBefore = this.changes;
    const counted = { durable: 0, ephemeral: 0 };
    const removed = { durable: 0, ephemeral: 0 };
    for await (const file of await opendir(this.directory)) {
      const path = join(this.directory, file.name);
      if (file.name.startsWith(TEMP_FILE_PREFIX) || file.name.startsWith(LOCK_FILE_PREFIX)) {
        const info = await lstat(path).catch(() => undefined);
        if (info !== undefined && Date.now() - info.mtimeMs > STALE_TEMP_FILE_MS) await unlink(path).catch(() => undefined);
        continue;
      }
      const key = entryKeyOf(file.name);
      if (key === undefined) continue;
      const kind: EntryKind = isEphemeralKey(key) ? 'ephemeral' : 'durable';
      counted[kind] += 1;
      const expiresAt = await readEntryExpiry(path).catch(() => undefined);
      if (expiresAt === undefined || expiresAt > Date.now()) continue;
      if (await this.files.run(file.name, () => this.removeIfExpired(file.name)).catch(() => false)) removed[kind] += 1;
    }
    // The count drifts only if files are removed behind the store's back; recount when no write or removal but
    // the sweep's own happened meanwhile (those the count already follows).
    if (this.changes === changesBefore + removed.durable + removed.ephemeral) {
      this.entries.durable = counted.durable - removed.durable;
      this.entries.ephemeral = counted.ephemeral - removed.ephemeral;
    }
  }
}

/** Durable entries (connections, registered clients, upstreams' profiles) and ephemeral ones are counted against bounds of their own. */
type EntryKind = 'durable' | 'ephemeral';

/** The kind of the entry file `name` (a name the store made, so always an entry's). */
function kindOf(name: string): EntryKind {
  const key = entryKeyOf(name);
  return key === undefined || isEphemeralKey(key) ? 'ephemeral' : 'durable';
}

/** A file system error as the store's caller sees it: full (no space) or unavailable, naming no file. */
function failure(error: unknown): Error {
  if (error instanceof TokenStoreFullError || error instanceof TokenStoreUnavailableError || error instanceof RangeError) return error;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOSPC' || code === 'EDQUOT') return new TokenStoreFullError('no space left on the disk');
  return new TokenStoreUnavailableError(`its directory could not be read or written: ${code ?? 'error'}`);
}
