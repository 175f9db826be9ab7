import { RequestRejectedError } from '../kernel/errors.js';
import { asRecord } from '../wire/as-record.js';
import { JsonRpcErrorCode, type JsonRpcMessage } from '../wire/jsonrpc.js';
import { CLIENT_CAPABILITIES_META_KEY, isRemovedMethod, isStatelessRevision, PROTOCOL_VERSION_META_KEY } from './protocol-version.js';

function invalidParams(message: string): RequestRejectedError {
  return new RequestRejectedError(`Invalid params: ${message}`, {
    status: 400,
    reason: 'request_invalid',
    jsonRpcCode: JsonRpcErrorCode.InvalidParams,
  });
}

// The revision is client text (a header value): name it only when it is a dated revision.
function revisionName(version: string): string {
  return /^\d{4}-\d{2}-\d{2}$/.test(version) ? `MCP ${version}` : 'this MCP revision';
}

/**
 * Checks that a request is one its protocol revision has, and carries what that revision requires of every
 * request. Run it after {@link checkMcpRequestHeaders} (which gives the revision and refuses a header that
 * disagrees with a body value that is present) and before any check of the request's target or scopes, which
 * only apply to methods the revision has.
 *
 * For 2026-07-28 and later, requests only (notifications and responses carry no required fields):
 * - A method the revision removed (`resources/subscribe`, `ping`, `initialize`, … see
 *   {@link isRemovedMethod}): 404 with -32601, as for any method the server does not implement (Streamable
 *   HTTP, "Protocol Version Header"). It comes first, as JSON-RPC finds the method before it reads its params.
 * - `params._meta` must be an object with `io.modelcontextprotocol/protocolVersion` (a non-empty string) and
 *   `io.modelcontextprotocol/clientCapabilities` (an object): "A request missing any required field is
 *   malformed; the server MUST reject it with JSON-RPC error code -32602 (Invalid params). On HTTP, the
 *   response status MUST be 400" (`basic/index`, `_meta`; SEP-2575). Optional fields (`clientInfo`,
 *   `logLevel`) are the server's to judge.
 *
 * Earlier revisions pass unchanged.
 *
 * @param protocolVersion The request's revision, as {@link checkMcpRequestHeaders} returns it.
 */
export function checkRequestRevision(message: JsonRpcMessage, protocolVersion: string | undefined): void {
  if (protocolVersion === undefined || !isStatelessRevision(protocolVersion) || !('id' in message)) return;
  const method = (message as { method?: unknown }).method;
  if (typeof method !== 'string') return;
  const revision = revisionName(protocolVersion);
  if (isRemovedMethod(method, protocolVersion)) {
    // `method` is one of the removed names, never other client text.
    throw new RequestRejectedError(`Method not found: ${method} does not exist in ${revision}`, {
      status: 404,
      reason: 'method_not_found',
      jsonRpcCode: JsonRpcErrorCode.MethodNotFound,
    });
  }
  const params = (message as { params?: unknown }).params;
  const meta = asRecord(asRecord(params)?._meta);
  if (meta === undefined) throw invalidParams(`${revision} requires params._meta, an object`);
  const version = meta[PROTOCOL_VERSION_META_KEY];
  if (typeof version !== 'string' || version === '') {
    throw invalidParams(`${revision} requires params._meta["${PROTOCOL_VERSION_META_KEY}"], a string`);
  }
  if (asRecord(meta[CLIENT_CAPABILITIES_META_KEY]) === undefined) {
    throw invalidParams(`${revision} requires params._meta["${CLIENT_CAPABILITIES_META_KEY}"], an object`);
  }
}
