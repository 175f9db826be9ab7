import { RATE_LIMITED_JSONRPC_CODE } from '../../../core/kernel/errors.js';
import type { ChildEndReason } from './stdio-child.js';

/** JSON-RPC code of the 429 answer when a bound on processes is reached: the guard's one 429 code. */
export const UPSTREAM_BUSY_JSONRPC_CODE = RATE_LIMITED_JSONRPC_CODE;

/** The text of the 502 answer (or last event) a request gets when its child stops serving, by the reason. */
export const CHILD_END_MESSAGES: Record<ChildEndReason, string> = {
  upstream_exited: 'Bad gateway: the upstream MCP server process exited',
  upstream_spawn_failed: 'Bad gateway: the upstream MCP server process could not be started',
  upstream_line_too_large: 'Bad gateway: the upstream MCP server wrote a message larger than the gateway accepts',
  upstream_stopped: 'Bad gateway: the upstream MCP server process was stopped',
};
