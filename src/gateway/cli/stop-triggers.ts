import { formatLogLine } from '../../core/kernel/log-line.js';
import { startedByPackageManager, watchParentProcess, type ParentProcessWatch } from './parent-process-watch.js';

/** What the gateway command needs of the running gateway to stop it. */
export interface StoppableGateway {
  /** The graceful shutdown; resolves once the gateway is closed. */
  shutdown(): Promise<void>;
}

/** Why the gateway command stops, as its `shutdown` log line says. */
export type StopCause = { signal: NodeJS.Signals } | { reason: 'parent_exited'; parentPid: number };

/**
 * Stops the gateway command gracefully on SIGTERM or SIGINT and, when npm (or another package manager) started it,
 * once npm has gone (see parent-process-watch.ts for why a signal to `npx` may not reach the gateway). The first
 * writes one `shutdown` line (`{"event":"shutdown","signal":"SIGTERM"}`, or `"reason":"parent_exited"` with the
 * parent's pid) and starts the shutdown; the process exits 0 once it is done. A second signal exits at once with 1:
 * the operator does not want to wait. A parent that goes while the gateway already shuts down changes nothing (a
 * Ctrl-C reaches npm, its shell and the gateway together).
 *
 * @param writeLine - Where the `shutdown` line goes. Default stdout.
 */
export function stopOnSignalsAndParentExit(gateway: StoppableGateway, env: NodeJS.ProcessEnv, writeLine: (line: string) => void = (line) => process.stdout.write(line)): void {
  let stopping = false;
  let signals = 0;
  let parentWatch: ParentProcessWatch | undefined;
  const stop = (cause: StopCause): void => {
    if (stopping) return;
    stopping = true;
    parentWatch?.stop();
    writeLine(`${formatLogLine('shutdown', { ...cause })}\n`);
    void gateway.shutdown().then(() => process.exit(0));
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    signals += 1;
    if (signals > 1) process.exit(1);
    stop({ signal });
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  if (startedByPackageManager(env)) parentWatch = watchParentProcess((parentPid) => stop({ reason: 'parent_exited', parentPid }));
}
