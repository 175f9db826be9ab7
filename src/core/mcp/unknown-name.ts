import { JsonRpcErrorCode } from '../wire/jsonrpc.js';

/**
 * The refusal of a tool or prompt the endpoint does not expose: no server of that name, a tool its server's `tools`
 * selection leaves out, or a tool whose definition differs from its pin (`MCP_AUTH_PINS=enforce`). One answer for
 * all: JSON-RPC -32602 (invalid params, as MCP answers an unknown tool), never a 403 that would invite a scope
 * step-up, and nothing that tells a hidden tool from one that does not exist.
 *
 * @example
 * unknownNameRefusal('tool', 'notes__add'); // { code: -32602, message: 'Unknown tool: notes__add' }
 */
export function unknownNameRefusal(kind: 'tool' | 'prompt', name: string): { readonly code: number; readonly message: string } {
  return { code: JsonRpcErrorCode.InvalidParams, message: `Unknown ${kind}: ${name.slice(0, 200)}` };
}
