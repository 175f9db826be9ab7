import { spawn, type ChildProcess } from 'node:child_process';
import { CHILD_PROCESS_GROUPS, StdioChildProcess } from './stdio-child-process.js';
import type { StdioChild, StdioChildOptions } from './stdio-child-contract.js';

export type { ChildEndReason, ChildLogEvent, PendingRequest, RequestSink, StdioChild, StdioChildOptions } from './stdio-child-contract.js';

/**
 * Starts one stdio MCP server. It gets its own process group (so stopping it stops what it started, such as
 * the server `npx` runs) and exactly the environment given. Its stdout is read as newline-delimited
 * JSON-RPC: responses go to the sink of the request they answer (matched by the child-unique id), progress
 * notifications to the request whose token they carry, everything else to `onMessage`. stdout lines that are
 * not JSON, and all of stderr, go to `log` only, never to a client. The process is a {@link StdioChildProcess},
 * its JSON-RPC a `ChildLineProtocol`.
 */
export function startStdioChild(options: StdioChildOptions): StdioChild {
  let proc: ChildProcess;
  try {
    proc = spawn(options.command, [...options.args], {
      cwd: options.cwd,
      env: options.env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: CHILD_PROCESS_GROUPS,
      windowsHide: true,
    });
  } catch (error) {
    return notStartedChild(options, error);
  }
  return new StdioChildProcess(proc, options);
}

/**
 * A child whose spawn threw (e.g. an argument with a NUL byte): reported like an asynchronous spawn failure, on
 * a later microtask, and every call fails.
 */
function notStartedChild(options: StdioChildOptions, error: unknown): StdioChild {
  let resolveEnded!: () => void;
  const ended = new Promise<void>((resolve) => (resolveEnded = resolve));
  queueMicrotask(() => {
    options.log({ event: 'upstream_exit', session: options.label, reason: 'upstream_spawn_failed', code: (error as NodeJS.ErrnoException).code ?? 'ERR_SPAWN' });
    options.onEnd('upstream_spawn_failed');
    resolveEnded();
  });
  return {
    pid: undefined,
    alive: false,
    pending: 0,
    inputFull: false,
    request: () => undefined,
    notify: () => false,
    answer: () => false,
    hold: () => () => {},
    stop: () => ended,
    ended,
  };
}
