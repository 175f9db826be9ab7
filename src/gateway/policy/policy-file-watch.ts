import { watch, readFileSync, type FSWatcher } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { ConfigurationError } from '../../core/kernel/errors.js';

/** Options of {@link watchPolicyFile}. */
export interface PolicyFileWatchOptions {
  /** The policy file, relative to the working directory or absolute. */
  file: string;
  /** Called once a burst of changes is over and the file's bytes differ from what was last seen. */
  onChange(): void;
  /** Called when watching stops by itself (e.g. the directory was removed); the watch is then closed. */
  onError?(error: Error): void;
  /** Quiet time after the last change event before the file is read, in milliseconds. Default 200. */
  debounceMs?: number;
  /** The setting that turned watching on, for the start-up error. Default `MCP_AUTH_POLICY_WATCH`. */
  settingName?: string;
}

/** A running watch; `close()` stops it (idempotent). */
export interface PolicyFileWatch {
  close(): void;
}

/** Default {@link PolicyFileWatchOptions.debounceMs}. */
export const DEFAULT_POLICY_WATCH_DEBOUNCE_MS = 200;

/**
 * Watches a policy file for changes. The file's directory is watched, not the file: editors save by writing a new
 * file and renaming it over the old one, and Kubernetes swaps a symbolic link, either of which ends a watch on the
 * file itself. Every event in the directory (re)starts a quiet period of `debounceMs`; then the file is read, and
 * `onChange` is called only if its bytes (or its absence) differ from what was seen last, so a burst of writes is one
 * change and other files in the directory cause none.
 *
 * The watch never keeps the process alive (an unreferenced watcher and timer), and `close()` ends it.
 *
 * @throws ConfigurationError naming `settingName` when the directory cannot be watched (missing, no permission,
 *   or the system's limit of watches reached).
 */
export function watchPolicyFile(options: PolicyFileWatchOptions): PolicyFileWatch {
  const path = resolve(options.file);
  const debounceMs = options.debounceMs ?? DEFAULT_POLICY_WATCH_DEBOUNCE_MS;
  let seen = readBytes(path);
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const settle = (): void => {
    timer = undefined;
    if (closed) return;
    const now = readBytes(path);
    if (sameBytes(now, seen)) return;
    seen = now;
    options.onChange();
  };
  let watcher: FSWatcher;
  try {
    watcher = watch(dirname(path), { persistent: false }, () => {
      if (closed) return;
      if (timer !== undefined) clearTimeout(timer);
      timer = setTimeout(settle, debounceMs);
      timer.unref();
    });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new ConfigurationError(
      options.settingName ?? 'MCP_AUTH_POLICY_WATCH',
      `the directory of ${basename(path)} (${dirname(path)}) cannot be watched (${code}); turn watching off and reload with SIGHUP instead`,
    );
  }
  const close = (): void => {
    if (closed) return;
    closed = true;
    if (timer !== undefined) clearTimeout(timer);
    watcher.close();
  };
  watcher.on('error', (error: Error) => {
    close();
    options.onError?.(error);
  });
  return { close };
}

/** The file's bytes, or its error code when it cannot be read (missing while an editor replaces it). */
function readBytes(path: string): Buffer | string {
  try {
    return readFileSync(path);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? 'unreadable';
  }
}

function sameBytes(a: Buffer | string, b: Buffer | string): boolean {
  if (typeof a === 'string' || typeof b === 'string') return a === b;
  return a.equals(b);
}
