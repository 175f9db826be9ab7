/**
 * The one rule by which the pins refuse a call, and the answer it gets: a tool the pins hide (see
 * `ToolPins.refuses`) answers exactly as one that does not exist (HTTP 200, JSON-RPC -32602), whatever its rule
 * says, so that neither a condition's 403 nor a missing scope's tells a caller it is there; only the reports (audit
 * record, request log, decision hook) tell it apart, by a reason of its own named here. The guard asks it before
 * its policy decides (`hiddenTarget`), once the server's start-up comparison has ended (in `enforce` a call waits
 * for it before the guard decides: see await-startup-comparison.ts); the server set's router and the single upstream
 * ask it again, as the pins may have changed since.
 */
import { splitExposedName } from '../../core/mcp/exposed-names.js';
import { asRecord } from '../../core/wire/as-record.js';
import type { JsonRpcMessage } from '../../core/wire/jsonrpc.js';
import type { HiddenTarget } from '../../core/guard/guard-options.js';
import { unknownNameRefusal } from '../../core/mcp/unknown-name.js';
import { SINGLE_UPSTREAM_PIN_NAME } from './pin-document.js';
import type { ToolPins } from './tool-pins.js';

/** A call the pins refuse: the unknown tool's JSON-RPC error, and the audit reason of that denial. */
export interface PinRefusal {
  readonly code: number;
  readonly message: string;
  /**
   * The reason every report of the refusal gives (audit record, request log, decision hook), whichever step refused:
   * `tool_pin_mismatch` for a listed tool that differs from its pin or has none, a reason of its own so that an
   * operator finds the calls the pins refused, where the client is told only what an unknown tool's caller is;
   * `target_unknown` for a name no list showed and no pin names, which exists nowhere the gateway knows of (a
   * mistyped or probed name is no changed definition).
   */
  readonly audit: 'tool_pin_mismatch' | 'target_unknown';
}

/**
 * The refusal of a call to `tool` (the server's own name) of `server`, or undefined when the pins allow it.
 *
 * @param exposed - The name the caller used (`<server>__<tool>` with several servers), for the error. Default `tool`.
 * @example
 * const refusal = pinRefusal(pins, 'notes', 'add', 'notes__add'); // { code: -32602, message: 'Unknown tool: notes__add', … }
 */
export function pinRefusal(pins: ToolPins, server: string, tool: string, exposed: string = tool): PinRefusal | undefined {
  if (!pins.refuses(server, tool)) return undefined;
  return { ...unknownNameRefusal('tool', exposed), audit: pins.listed(server, tool) ? 'tool_pin_mismatch' : 'target_unknown' };
}

/**
 * The guard's `hiddenTarget` for the pins: for a `tools/call` {@link pinRefusal} refuses, the tool, with that
 * refusal's reason and, for a listed tool with several servers, its server (the single upstream's decisions name none).
 *
 * @param servers - The configuration file's server names, by which exposed names (`<server>__<tool>`) are split;
 *   absent for the single upstream (pinned as `upstream`, by the tool's own name). A name of no such server is left
 *   to the policy and the router, as without pins.
 * @example
 * createGuard({ ...options, hiddenTarget: pinsHiddenTarget(pins, ['notes', 'files']) });
 */
export function pinsHiddenTarget(pins: ToolPins, servers?: readonly string[]): (message: JsonRpcMessage) => HiddenTarget | 'tool' | undefined {
  const known = servers === undefined ? undefined : new Set(servers);
  return (message) => {
    if ((message as { method?: unknown }).method !== 'tools/call') return undefined;
    const name = asRecord((message as { params?: unknown }).params)?.name;
    if (typeof name !== 'string') return undefined;
    const split = known === undefined ? { server: SINGLE_UPSTREAM_PIN_NAME, name } : splitExposedName(name);
    if (split === undefined || (known !== undefined && !known.has(split.server))) return undefined;
    const refusal = pinRefusal(pins, split.server, split.name);
    if (refusal === undefined) return undefined;
    // A name that exists nowhere is reported as any unknown name is, without a server (see `DecisionEvent.server`).
    if (refusal.audit === 'target_unknown') return 'tool';
    return known === undefined ? { kind: 'tool', reason: refusal.audit } : { kind: 'tool', reason: refusal.audit, server: split.server };
  };
}
