import { RequestRejectedError } from '../kernel/errors.js';
import { decodeMirroredHeaderValue } from '../wire/header-value-encoding.js';
import { requestTargetField } from './check-request-target.js';
import { JsonRpcErrorCode, type JsonRpcMessage } from '../wire/jsonrpc.js';
import { bodyProtocolVersion, isStatelessRevision } from './protocol-version.js';

/** Requests that must carry `Mcp-Name` under 2026-07-28 (Streamable HTTP, "Standard Request Headers"). */
const NAME_REQUIRED: ReadonlySet<string> = new Set(['tools/call', 'prompts/get', 'resources/read']);
/** Requests whose `params.taskId` `Mcp-Name` mirrors (tasks extension, "Streamable HTTP: Routing Headers"). */
const TASK_ID_MIRRORED: ReadonlySet<string> = new Set(['tasks/get', 'tasks/update', 'tasks/cancel']);

/** The params field `Mcp-Name` mirrors for `method`: the target the policy decides on, or a task id; else none. */
function mirroredNameField(method: string): 'name' | 'uri' | 'taskId' | undefined {
  return requestTargetField(method) ?? (TASK_ID_MIRRORED.has(method) ? 'taskId' : undefined);
}

function mismatch(message: string): RequestRejectedError {
  return new RequestRejectedError(`Header mismatch: ${message}`, {
    status: 400,
    reason: 'header_mismatch',
    jsonRpcCode: JsonRpcErrorCode.HeaderMismatch,
  });
}

/** Header values the check needs; the adapter passes them as Node gives them (lowercase names). */
export type McpRequestHeaders = Readonly<Record<string, string | string[] | undefined>>;

function single(v: string | string[] | undefined, name: string): string | undefined {
  if (Array.isArray(v)) throw mismatch(`${name} header sent more than once`);
  return v;
}

/**
 * Checks that the HTTP headers agree with the body (the body is the truth), and returns the request's
 * protocol version (header, else body), if any.
 *
 * - `MCP-Protocol-Version` and `_meta["io.modelcontextprotocol/protocolVersion"]` must agree when both are present.
 *   A body that lacks the version is not a mismatch: the revision check of the request refuses it with -32602.
 * - For 2026-07-28 and later: requests and notifications need `MCP-Protocol-Version` and `Mcp-Method`
 *   equal to `method`; `tools/call`, `prompts/get` and `resources/read` need `Mcp-Name` equal to
 *   `params.name` / `params.uri` after decoding the base64 sentinel form.
 * - Older revisions did not define `Mcp-Method`/`Mcp-Name`; when present anyway they must still match,
 *   so no intermediary can be misled by them.
 * - Whatever the revision, a header is checked on every message that carries it: `Mcp-Name` must equal the
 *   target the policy decides on (`resources/subscribe` and `resources/unsubscribe` included, see
 *   `requestTargetField`) or, for `tasks/get`, `tasks/update` and `tasks/cancel`, `params.taskId` (the
 *   tasks extension's routing header); on any other method it matches nothing and is refused;
 *   a response (to a server request) has no method, name or arguments, so `Mcp-Method`, `Mcp-Name` or
 *   `Mcp-Param-*` on it is refused, as is `Mcp-Param-*` on anything but `tools/call`.
 *
 * Failure: 400 with JSON-RPC -32020 (HeaderMismatch). Run it before any session lookup.
 */
export function checkMcpRequestHeaders(headers: McpRequestHeaders, message: JsonRpcMessage): string | undefined {
  const method = (message as { method?: unknown }).method;
  checkParamHeaders(headers, method);
  const headerVersion = single(headers['mcp-protocol-version'], 'MCP-Protocol-Version');
  const bodyVersion = bodyProtocolVersion(message);
  if (headerVersion !== undefined && bodyVersion !== undefined && headerVersion !== bodyVersion) {
    throw mismatch(`MCP-Protocol-Version header value '${printable(headerVersion)}' does not match body value '${printable(bodyVersion)}'`);
  }
  const version = headerVersion ?? bodyVersion;
  const methodHeader = single(headers['mcp-method'], 'Mcp-Method');
  const nameHeader = single(headers['mcp-name'], 'Mcp-Name');
  if (typeof method !== 'string') {
    // A response to a server request: nothing in it is mirrored, so a mirrored header describes something else.
    if (methodHeader !== undefined) throw mismatch(`Mcp-Method header value '${printable(methodHeader)}' does not match a response, which has no method`);
    if (nameHeader !== undefined) throw mismatch(`Mcp-Name header value '${printable(nameHeader)}' does not match a response, which names nothing`);
    return version;
  }
  // Mirroring is required of requests; notifications are checked when they carry the headers.
  const isRequest = 'id' in message;
  const modern = isStatelessRevision(version);
  if (modern && headerVersion === undefined) throw mismatch('MCP-Protocol-Version header is required');
  // A body without the version is malformed, not mismatched: checkRequestRevision answers it with -32602.

  if (methodHeader === undefined) {
    if (modern && isRequest) throw mismatch('Mcp-Method header is required');
  } else if (methodHeader !== method) {
    throw mismatch(`Mcp-Method header value '${printable(methodHeader)}' does not match body value '${printable(method)}'`);
  }

  const field = mirroredNameField(method);
  if (nameHeader === undefined) {
    if (modern && isRequest && NAME_REQUIRED.has(method)) throw mismatch(`Mcp-Name header is required for ${method}`);
    return version;
  }
  const decoded = decodeMirroredHeaderValue(nameHeader);
  if (decoded === undefined) throw mismatch('Mcp-Name header value is malformed');
  if (field === undefined) throw mismatch(`Mcp-Name header value '${printable(decoded)}' does not match the body: ${printable(method)} names no tool, prompt, resource or task`);
  const params = (message as { params?: Record<string, unknown> }).params;
  const bodyName = params?.[field];
  if (decoded !== bodyName) {
    throw mismatch(`Mcp-Name header value '${printable(decoded)}' does not match body value '${printable(bodyName)}'`);
  }
  return version;
}

/** Short, printable rendering of a value for an error message. */
function printable(v: unknown): string {
  const s = typeof v === 'string' ? v : JSON.stringify(v) ?? String(v);
  const clean = s.replace(/[^\x20-\x7e]/g, '?');
  return clean.length > 80 ? `${clean.slice(0, 77)}...` : clean;
}

const PARAM_PREFIX = 'mcp-param-';

/**
 * `Mcp-Param-{Name}` headers mirror tool arguments the tool's schema marks with `x-mcp-header`
 * (2026-07-28). Which argument each one mirrors is known to the server that owns the tool schema, so
 * matching values against the body is left to it; what any server must refuse is checked here: a
 * value with invalid characters or a malformed base64 sentinel, or the same header sent twice. Only a
 * `tools/call` has arguments: on any other message (`method` another string, or none for a response)
 * such a header mirrors nothing and is refused.
 */
function checkParamHeaders(headers: McpRequestHeaders, method: unknown): void {
  for (const name in headers) {
    if (name.length <= PARAM_PREFIX.length || !name.startsWith(PARAM_PREFIX)) continue;
    const value = headers[name];
    if (value === undefined) continue;
    const label = `Mcp-Param-${printable(name.slice(PARAM_PREFIX.length))}`;
    const raw = single(value, label);
    if (raw !== undefined && decodeMirroredHeaderValue(raw) === undefined) throw mismatch(`${label} header value is malformed`);
    if (method !== 'tools/call') {
      const message = typeof method === 'string' ? printable(method) : 'a response';
      throw mismatch(`${label} header does not match the body: ${message} has no tool arguments`);
    }
  }
}
