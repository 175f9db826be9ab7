/**
 * A lock between processes for a file's read-then-write steps: a lock file (beside it, e.g. `<file>.lock`), created
 * exclusively, naming its holder (process id, host name, boot id) and a random nonce of its own. A lock older than any
 * holder takes is taken over; so is one whose holder died, but only when the lock names this host and this boot:
 * a process id means nothing in another container or PID namespace sharing the volume, nor after a reboot. One still
 * held past the wait is an error naming the lock file.
 */
import { randomBytes } from 'node:crypto';
import { open, readFile, stat, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';

/** Options of {@link withFileLock}. */
export interface FileLockOptions {
  /** Longest wait for another holder, in milliseconds. Default 5 000. */
  readonly waitMs?: number;
  /** Age past which a lock is deemed abandoned (its holder hung or crashed), in milliseconds. Default 30 000. */
  readonly staleMs?: number;
}

/** The lock of a file is held by another process for longer than the wait. */
export class FileLockTimeoutError extends Error {
  constructor(readonly lockFile: string) {
    super(`${lockFile} is held by another process; remove it if no process that writes the file is running`);
    this.name = 'FileLockTimeoutError';
  }
}

/** Pause between two attempts, in milliseconds: a writer holds the lock for a read and a rename. */
const RETRY_MS = 15;

/** Where Linux gives the id of the current boot, the same in every container of the machine. */
const BOOT_ID_FILE = '/proc/sys/kernel/random/boot_id';

let bootId: Promise<string> | undefined;

/** This machine's boot id, or `''` where it cannot be read (another OS): read once. */
function currentBootId(): Promise<string> {
  bootId ??= readFile(BOOT_ID_FILE, 'utf8').then((text) => text.trim(), () => '');
  return bootId;
}

/**
 * The text of a lock file: the holder's process id, host name and boot id, and a nonce that tells this lock from any
 * other created at the same path (an inode number can be reused at once).
 *
 * @example
 * await lockFileText(); // '{"pid":4242,"host":"gw-1","boot":"0b5c…","nonce":"…"}\n'
 */
export async function lockFileText(): Promise<string> {
  return `${JSON.stringify({ pid: process.pid, host: hostname(), boot: await currentBootId(), nonce: randomBytes(12).toString('base64url') })}\n`;
}

/**
 * Runs `work` while holding the lock file `lockFile` (see the module), and removes it however `work` ends, unless
 * another process took it over meanwhile (this holder passed the stale age).
 *
 * @throws FileLockTimeoutError when another live process holds it past `waitMs`; the file system's error when the
 *   lock cannot be created (a missing directory, no permission).
 * @example
 * await withFileLock('/var/lib/mcp-oauth-guard/pins.json.lock', async () => write(next(await read())));
 */
export async function withFileLock<T>(lockFile: string, work: () => Promise<T>, options: FileLockOptions = {}): Promise<T> {
  const deadline = Date.now() + (options.waitMs ?? 5_000);
  const staleMs = options.staleMs ?? 30_000;
  let own: string | undefined;
  for (;;) {
    own = await tryCreate(lockFile);
    if (own !== undefined) break;
    if ((await abandonedLock(lockFile, staleMs)) !== undefined && (await takeOver(lockFile, staleMs))) continue;
    if (Date.now() >= deadline) throw new FileLockTimeoutError(lockFile);
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS + Math.random() * RETRY_MS));
  }
  try {
    return await work();
  } finally {
    await unlinkIfStill(lockFile, own);
  }
}

/** Creates the lock file; its text, or undefined when it exists already. */
async function tryCreate(lockFile: string): Promise<string | undefined> {
  const text = await lockFileText();
  try {
    const handle = await open(lockFile, 'wx', 0o644);
    try {
      await handle.writeFile(text);
    } finally {
      await handle.close();
    }
    return text;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
    throw error;
  }
}

/** Age past which a takeover guard is deemed abandoned, in milliseconds: a takeover takes a read and an unlink. */
const GUARD_STALE_MS = 5_000;

/**
 * Removes an abandoned lock under a takeover guard (`<lock>.takeover`, created exclusively), judging it again there:
 * two waiters that both judged the same lock abandoned take turns, and the second finds the first's fresh lock
 * instead, which it leaves alone. False when another waiter holds the guard (a guard left by a crash is removed once
 * older than {@link GUARD_STALE_MS}).
 */
async function takeOver(lockFile: string, staleMs: number): Promise<boolean> {
  const guard = `${lockFile}.takeover`;
  const own = await tryCreate(guard);
  if (own === undefined) {
    const left = await abandonedLock(guard, GUARD_STALE_MS, false);
    if (left !== undefined) await unlinkIfStill(guard, left);
    return false;
  }
  try {
    const abandoned = await abandonedLock(lockFile, staleMs);
    if (abandoned !== undefined) await unlinkIfStill(lockFile, abandoned);
    return true;
  } finally {
    await unlinkIfStill(guard, own);
  }
}

/**
 * Removes the lock file only while it still holds `text` (the lock judged, or one's own): when two waiters judged the
 * same lock abandoned, the second finds the first's fresh lock there instead and leaves it alone.
 */
async function unlinkIfStill(lockFile: string, text: string): Promise<void> {
  const now = await readFile(lockFile, 'utf8').catch(() => undefined);
  if (now === text) await unlink(lockFile).catch(() => undefined);
}

/**
 * The text of the lock when abandoned: held past `staleMs`, or (`byHolder`, default true) naming a process of this
 * host and boot that no longer exists; undefined when held, unreadable, or just removed. An empty file is a holder between creating and writing it.
 */
async function abandonedLock(lockFile: string, staleMs: number, byHolder = true): Promise<string | undefined> {
  try {
    const [info, text] = await Promise.all([stat(lockFile), readFile(lockFile, 'utf8')]);
    if (Date.now() - info.mtimeMs > staleMs) return text;
    if (!byHolder) return undefined;
    const holder = parseHolder(text);
    if (holder === undefined || holder.host !== hostname() || holder.boot !== (await currentBootId())) return undefined;
    return processExists(holder.pid) ? undefined : text;
  } catch {
    return undefined;
  }
}

/** The holder a lock file names, or undefined for any other text (an older format names no host: age alone decides). */
function parseHolder(text: string): { pid: number; host: string; boot: string } | undefined {
  try {
    const parsed = JSON.parse(text) as { pid?: unknown; host?: unknown; boot?: unknown };
    const { pid, host, boot } = parsed;
    if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid <= 0 || typeof host !== 'string' || typeof boot !== 'string') return undefined;
    return { pid, host, boot };
  } catch {
    return undefined;
  }
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
