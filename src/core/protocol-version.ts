import { JsonRpcErrorCode, type JsonRpcMessage } from './jsonrpc.js';

/**
 * The first stateless revision (MCP 2026-07-28): headers mirror body fields, results carry `resultType`,
 * cache hints (`cacheScope`, `ttlMs`) exist, and some JSON-RPC errors get their own HTTP status.
 */
export const STATELESS_PROTOCOL_VERSION = '2026-07-28';

/** `_meta` key carrying the protocol version in 2026-07-28 request bodies (`basic/index`). */
export const PROTOCOL_VERSION_META_KEY = 'io.modelcontextprotocol/protocolVersion';

const DATED_REVISION = /^\d{4}-\d{2}-\d{2}$/;

/**
 * Whether `version` is the stateless revision or later. Revisions are dates (`YYYY-MM-DD`) and compare as
 * strings; any other non-empty value (a draft name) counts as later, since the stricter rules are the safe
 * reading. `undefined` (no version known) is the 2025 behaviour.
 *
 * @example
 * isStatelessRevision('2026-07-28'); // true
 * isStatelessRevision('2025-11-25'); // false
 */
export function isStatelessRevision(version: string | undefined): boolean {
  if (version === undefined || version === '') return false;
  return !DATED_REVISION.test(version) || version >= STATELESS_PROTOCOL_VERSION;
}

/** The protocol version a message declares in `params._meta` (2026-07-28), if any. */
export function bodyProtocolVersion(message: JsonRpcMessage | undefined): string | undefined {
  const params = (message as { params?: unknown } | undefined)?.params;
  if (typeof params !== 'object' || params === null) return undefined;
  const meta = (params as Record<string, unknown>)._meta;
  if (typeof meta !== 'object' || meta === null) return undefined;
  const v = (meta as Record<string, unknown>)[PROTOCOL_VERSION_META_KEY];
  return typeof v === 'string' ? v : undefined;
}

/**
 * The HTTP status of a JSON-RPC response sent as `application/json`. 2026-07-28 (Streamable HTTP) gives
 * some errors their own status: an unimplemented method is 404 with -32601; a header mismatch, a missing
 * client capability and an unsupported protocol version are 400. Earlier revisions answer every JSON-RPC
 * response with 200.
 */
export function httpStatusForResponse(response: JsonRpcMessage, protocolVersion: string | undefined): number {
  if (!('error' in response) || !isStatelessRevision(protocolVersion)) return 200;
  switch (response.error.code) {
    case JsonRpcErrorCode.MethodNotFound:
      return 404;
    case JsonRpcErrorCode.HeaderMismatch:
    case JsonRpcErrorCode.MissingRequiredClientCapability:
    case JsonRpcErrorCode.UnsupportedProtocolVersion:
      return 400;
    default:
      return 200;
  }
}
