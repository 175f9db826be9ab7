import { checkInteger, MAX_TIMER_MS } from '../../../core/kernel/settings.js';
import { DEFAULT_UPSTREAM_IDLE_TIMEOUT_MS, MAX_UPSTREAM_IDLE_TIMEOUT_MS } from '../upstream.js';

/** One integer setting of the stdio upstream: its environment variable, its range and its default. */
export interface StdioIntegerSetting {
  readonly env: string;
  readonly min: number;
  readonly max: number;
  readonly fallback: number;
  /** Set where zero keeps nothing (`min` is then 0): the setting takes `off` for zero too, by the one rule of `off`. */
  readonly zeroIsOff?: true;
}

/**
 * The stdio upstream's integer settings by option of `createStdioUpstream`: one table, read by the option checks
 * and by the gateway's environment loader, so a range or a default is written once and both refuse the same
 * values. `idleTimeoutMs` is the one setting it shares with the HTTP upstream.
 */
export const STDIO_INTEGER_SETTINGS = {
  maxProcesses: { env: 'MCP_AUTH_MAX_UPSTREAM_PROCESSES', min: 1, max: 100_000, fallback: 32 },
  maxProcessesPerCaller: { env: 'MCP_AUTH_MAX_UPSTREAM_PROCESSES_PER_CALLER', min: 1, max: 100_000, fallback: 4 },
  processIdleTimeoutMs: { env: 'MCP_AUTH_UPSTREAM_PROCESS_IDLE_TIMEOUT_MS', min: 1, max: MAX_TIMER_MS, fallback: 600_000 },
  idleTimeoutMs: { env: 'MCP_AUTH_UPSTREAM_IDLE_TIMEOUT_MS', min: 1, max: MAX_UPSTREAM_IDLE_TIMEOUT_MS, fallback: DEFAULT_UPSTREAM_IDLE_TIMEOUT_MS },
  stopTimeoutMs: { env: 'MCP_AUTH_UPSTREAM_STOP_TIMEOUT_MS', min: 1, max: 600_000, fallback: 5_000 },
  maxLineBytes: { env: 'MCP_AUTH_UPSTREAM_MAX_LINE_BYTES', min: 1024, max: 1_073_741_824, fallback: 4 * 1_048_576 },
  maxStdinBytes: { env: 'MCP_AUTH_UPSTREAM_MAX_STDIN_BYTES', min: 1024, max: 1_073_741_824, fallback: 4 * 1_048_576 },
  replayBufferBytes: { env: 'MCP_AUTH_UPSTREAM_REPLAY_BYTES', min: 0, max: 1_073_741_824, fallback: 1_048_576, zeroIsOff: true },
  replayWindowMs: { env: 'MCP_AUTH_UPSTREAM_REPLAY_WINDOW_MS', min: 1, max: MAX_TIMER_MS, fallback: 60_000 },
} as const satisfies Record<string, StdioIntegerSetting>;

/** An option of `createStdioUpstream` that is one of {@link STDIO_INTEGER_SETTINGS}. */
export type StdioIntegerOption = keyof typeof STDIO_INTEGER_SETTINGS;

/**
 * The value of integer option `option`: its default when undefined, else checked against the table's range.
 *
 * @throws ConfigurationError naming the option when it is out of range.
 * @example
 * stdioInteger({ maxProcesses: 8 }, 'maxProcesses'); // 8
 */
export function stdioInteger(options: Partial<Record<StdioIntegerOption, unknown>>, option: StdioIntegerOption): number {
  const { min, max, fallback } = STDIO_INTEGER_SETTINGS[option];
  return checkInteger(options[option], option, fallback, { min, max });
}
