import type { ChildEndReason } from './stdio-child.js';

/** The text of the 502 answer (or last event) a request gets when its child stops serving, by the reason. */
export const CHILD_END_MESSAGES: Record<ChildEndReason, string> = {
  upstream_exited: 'Bad gateway: the upstream MCP server process exited',
  upstream_spawn_failed: 'Bad gateway: the upstream MCP server process could not be started',
  upstream_line_too_large: 'Bad gateway: the upstream MCP server wrote a message larger than the gateway accepts',
  upstream_stopped: 'Bad gateway: the upstream MCP server process was stopped',
};
