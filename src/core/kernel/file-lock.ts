/**
 * A lock between processes on one machine for a file's read-then-write steps: a lock file (beside it, e.g.
 * `<file>.lock`), created exclusively, holding its owner's process id. A process that died holding it, or a lock older than any
 * holder takes, is taken over; one still held past the wait is an error naming the lock file.
 */
import { open, readFile, stat, unlink } from 'node:fs/promises';

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

/**
 * Runs `work` while holding the lock file `lockFile` (see the module), and removes it however `work` ends.
 *
 * @throws FileLockTimeoutError when another live process holds it past `waitMs`; the file system's error when the
 *   lock cannot be created (a missing directory, no permission).
 * @example
 * await withFileLock('/var/lib/mcp-oauth-guard/pins.json.lock', async () => write(next(await read())));
 */
export async function withFileLock<T>(lockFile: string, work: () => Promise<T>, options: FileLockOptions = {}): Promise<T> {
  const deadline = Date.now() + (options.waitMs ?? 5_000);
  const staleMs = options.staleMs ?? 30_000;
  for (;;) {
    if (await tryCreate(lockFile)) break;
    if (await isAbandoned(lockFile, staleMs)) {
      await unlink(lockFile).catch(() => undefined);
      continue;
    }
    if (Date.now() >= deadline) throw new FileLockTimeoutError(lockFile);
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS + Math.random() * RETRY_MS));
  }
  try {
    return await work();
  } finally {
    await unlink(lockFile).catch(() => undefined);
  }
}

/** Creates the lock file, false when it exists already. */
async function tryCreate(lockFile: string): Promise<boolean> {
  try {
    const handle = await open(lockFile, 'wx', 0o644);
    try {
      await handle.writeFile(`${process.pid}\n`);
    } finally {
      await handle.close();
    }
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

/** Whether the lock's holder is gone (no such process) or has held it past `staleMs`; a lock just removed is not. */
async function isAbandoned(lockFile: string, staleMs: number): Promise<boolean> {
  try {
    const [info, text] = await Promise.all([stat(lockFile), readFile(lockFile, 'utf8')]);
    if (Date.now() - info.mtimeMs > staleMs) return true;
    const pid = Number.parseInt(text, 10);
    // An empty file is a holder between creating and writing it.
    return Number.isSafeInteger(pid) && pid > 0 && !processExists(pid);
  } catch {
    return false;
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
