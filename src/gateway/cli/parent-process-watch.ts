/**
 * Ends the gateway when npm, which started it, has gone. `npx mcp-oauth-guard` (like `npm exec` and `npm start`)
 * runs the command through a shell: npm → `sh -c` → node. npm passes SIGTERM and SIGINT on to that shell only, and a
 * shell that does not replace itself with its one command (dash, `/bin/sh` on Debian and Ubuntu) dies of the signal
 * without passing it on. The gateway would be left running, adopted by another process, holding its port and its
 * stdio upstream's processes. So, when npm started it, the gateway checks its parent every second and shuts down
 * gracefully once the parent is another process. Started otherwise (a process manager, a shell's `&` or `nohup`), it
 * may be meant to outlive its parent, and is not watched.
 */

/** How often the parent is checked, in milliseconds: the longest the gateway outlives it. */
export const PARENT_CHECK_INTERVAL_MS = 1_000;

/**
 * Whether a package manager's script runner started this process: npm sets `npm_lifecycle_event` for `npx`,
 * `npm exec` (`npx` then) and `npm run` (the script's name), and pnpm and Yarn do too.
 */
export function startedByPackageManager(env: NodeJS.ProcessEnv): boolean {
  return (env.npm_lifecycle_event ?? '') !== '';
}

/** A watch of the parent process; see {@link watchParentProcess}. */
export interface ParentProcessWatch {
  /** Stops watching. Idempotent. */
  stop(): void;
}

/**
 * The parent this process had when this module was loaded: the gateway command loads it as it starts, so that a
 * parent that goes while the gateway starts is noticed once it serves.
 */
const PARENT_PID_AT_START = process.ppid;

/**
 * Calls `onGone` once, with the pid of the parent that was, when this process's parent is no longer `parentPid` (it
 * exited and another process adopted this one). The timer never keeps the process alive.
 *
 * @param parentPid - The parent to watch. Default the one this process had as it started.
 * @param intervalMs - Time between checks, in milliseconds. Default {@link PARENT_CHECK_INTERVAL_MS}.
 */
export function watchParentProcess(onGone: (parentPid: number) => void, parentPid: number = PARENT_PID_AT_START, intervalMs: number = PARENT_CHECK_INTERVAL_MS): ParentProcessWatch {
  const timer = setInterval(() => {
    // process.ppid asks the system each time: an adopted process has a new parent (init or a subreaper).
    if (process.ppid === parentPid) return;
    clearInterval(timer);
    onGone(parentPid);
  }, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
