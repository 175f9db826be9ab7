import { MCP_METHODS } from '../core/mcp/mcp-methods.js';

/**
 * Label values of the guard's metrics. Each label takes values from a set fixed at start-up, so that no client
 * can add a time series: no subject, no client id, no token, and tool names only when opted in and listed.
 */

/** Value every label takes for what its set does not list. */
export const OTHER_LABEL = 'other';

/** Most tool names that may appear as a `tool` label value; names past it count as `other`. */
export const MAX_TOOL_LABELS = 100;

/** Most distinct `reason` label values; reasons are stable codes, and this only guards against a custom one. */
const MAX_REASONS = 64;

/**
 * The `method` label: a JSON-RPC method MCP defines, `other` for any other method, `GET` or `DELETE` for a
 * request that carries no message (a stream, the end of a session), `none` for a POST without a readable one.
 */
export function methodLabel(method: string | undefined, httpMethod: string): string {
  if (method !== undefined) return MCP_METHODS.has(method) ? method : OTHER_LABEL;
  return httpMethod === 'GET' || httpMethod === 'DELETE' ? httpMethod : 'none';
}

/** The `reason` label: the decision's stable code, the first {@link MAX_REASONS} of them; later ones `other`. */
export function createReasonLabel(): (reason: string) => string {
  const seen = new Set<string>();
  return (reason) => {
    if (seen.has(reason)) return reason;
    if (seen.size >= MAX_REASONS) return OTHER_LABEL;
    seen.add(reason);
    return reason;
  };
}

/**
 * The `tool` label, for `tools/call` only: the tool's name when it is one of `tools` (the first
 * {@link MAX_TOOL_LABELS}), else `other`; the empty string (no tool) for other methods.
 */
export function createToolLabel(tools: readonly string[]): (method: string | undefined, name: string | undefined) => string {
  const listed = new Set(tools.slice(0, MAX_TOOL_LABELS));
  return (method, name) => {
    if (method !== 'tools/call') return '';
    return name !== undefined && listed.has(name) ? name : OTHER_LABEL;
  };
}
