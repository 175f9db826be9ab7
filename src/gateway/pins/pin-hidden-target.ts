/**
 * The tools the pins hide, as the guard asks before its policy decides (`hiddenTarget`): a hidden tool answers
 * exactly as one that does not exist (HTTP 200, JSON-RPC -32602), whatever its rule says, so that neither a
 * condition's 403 nor a missing scope's tells a caller it is there.
 */
import { splitExposedName } from '../../core/mcp/exposed-names.js';
import { asRecord } from '../../core/wire/as-record.js';
import type { JsonRpcMessage } from '../../core/wire/jsonrpc.js';
import { SINGLE_UPSTREAM_PIN_NAME } from './pin-document.js';
import type { ToolPins } from './tool-pins.js';

/**
 * The guard's `hiddenTarget` for the pins: `tool` for a `tools/call` the pins refuse (see `ToolPins.refuses`).
 *
 * @param servers - The configuration file's server names, by which exposed names (`<server>__<tool>`) are split;
 *   absent for the single upstream (pinned as `upstream`, by the tool's own name). A name of no such server is left
 *   to the policy and the router, as without pins.
 * @example
 * createGuard({ ...options, hiddenTarget: pinsHiddenTarget(pins, ['notes', 'files']) });
 */
export function pinsHiddenTarget(pins: ToolPins, servers?: readonly string[]): (message: JsonRpcMessage) => 'tool' | undefined {
  const known = servers === undefined ? undefined : new Set(servers);
  return (message) => {
    if (pins.mode !== 'enforce' || (message as { method?: unknown }).method !== 'tools/call') return undefined;
    const name = asRecord((message as { params?: unknown }).params)?.name;
    if (typeof name !== 'string') return undefined;
    if (known === undefined) return pins.refuses(SINGLE_UPSTREAM_PIN_NAME, name) ? 'tool' : undefined;
    const split = splitExposedName(name);
    return split !== undefined && known.has(split.server) && pins.refuses(split.server, split.name) ? 'tool' : undefined;
  };
}
