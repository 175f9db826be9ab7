import { RequestRejectedError } from '../kernel/errors.js';
import { asRecord } from '../wire/as-record.js';
import { JsonRpcErrorCode, type JsonRpcMessage } from '../wire/jsonrpc.js';
import { isUriTemplate, resolveResourceTemplate, resolveResourceUri } from '../wire/uri-template.js';

/** Methods that name one tool, prompt or resource, and the params field naming it. */
const TARGET_FIELD: ReadonlyMap<string, 'name' | 'uri'> = new Map<string, 'name' | 'uri'>([
  ['tools/call', 'name'],
  ['prompts/get', 'name'],
  ['resources/read', 'uri'],
  ['resources/subscribe', 'uri'],
  ['resources/unsubscribe', 'uri'],
]);

/**
 * The params field naming the one tool, prompt or resource `method` acts on: `name` for `tools/call` and
 * `prompts/get`, `uri` for `resources/read`, `resources/subscribe` and `resources/unsubscribe`; `undefined` for
 * any other method. The policy decides on that field, and `Mcp-Name` must mirror it.
 */
export function requestTargetField(method: string): 'name' | 'uri' | undefined {
  return TARGET_FIELD.get(method);
}

// Characters URL parsing silently drops or trims: a URI carrying them is a second spelling of another one.
const STRAY_WHITESPACE = /^[\s\u0000-\u001f]|[\s\u0000-\u001f]$|[\t\n\r]/;

function invalidParams(message: string): RequestRejectedError {
  return new RequestRejectedError(`Invalid params: ${message}`, {
    status: 400,
    reason: 'request_invalid',
    jsonRpcCode: JsonRpcErrorCode.InvalidParams,
  });
}

/**
 * Fails closed on a request whose target cannot be authorized exactly as it will be served: every name and
 * URI the policy reads must be one the upstream can only read one way, the way the policy read it.
 *
 * - `tools/call` and `prompts/get` need a non-empty string `params.name`, as must a `completion/complete`
 *   `ref/prompt`'s `name`. Names are compared and forwarded byte for byte: no trimming, case folding or Unicode
 *   normalization anywhere, so `"Add"`, `" add"` and an NFD spelling are other names than `"add"` (and get the
 *   `*` rule, if any).
 * - `resources/read`, `resources/subscribe` and `resources/unsubscribe` `params.uri`, and each
 *   `subscriptions/listen` `params.notifications.resourceSubscriptions` entry, must be an absolute URI without
 *   stray whitespace, **spelled in its resolved form** ({@link resolveResourceUri}): the form the policy
 *   decides on. `DOCS://private/plan`, `docs://private/x/../plan`, `https://host:443/a`, `https://HOST/a`
 *   and `docs://private/%70lan` are refused, not resolved and forwarded: an upstream that compares URIs as
 *   strings would otherwise serve another resource than the one authorized. The error names the resolved form.
 * - A `completion/complete` `ref/resource`'s `uri` (a URI or a URI template) must have its literal parts in
 *   resolved form ({@link resolveResourceTemplate}).
 *
 * Otherwise a handler that coerces `["delete_note"]` to `"delete_note"`, or a server that resolves
 * `DOCS://x` to `docs://x`, would act on a target the policy never saw. Answers 400 with -32602.
 */
export function checkRequestTarget(message: JsonRpcMessage): void {
  const method = (message as { method?: unknown }).method;
  if (typeof method !== 'string' || !('id' in message)) return;
  const params = asRecord((message as { params?: unknown }).params);
  const field = TARGET_FIELD.get(method);
  if (field !== undefined) {
    const value = params?.[field];
    if (typeof value !== 'string' || value.length === 0) {
      throw invalidParams(`${method} needs a non-empty string params.${field}`);
    }
    if (field === 'uri') checkResolvedUri(value, `${method} needs params.uri`);
    return;
  }
  if (method === 'completion/complete') checkCompletionReference(asRecord(params?.ref));
  else if (method === 'subscriptions/listen') checkSubscriptions(asRecord(params?.notifications)?.resourceSubscriptions);
}

function checkResolvedUri(uri: string, needs: string): void {
  const resolved = STRAY_WHITESPACE.test(uri) ? undefined : resolveResourceUri(uri);
  if (resolved === undefined) throw invalidParams(`${needs} to be an absolute URI`);
  if (resolved !== uri) throw invalidParams(`${needs} in its resolved form, ${quoted(resolved)}`);
}

function checkCompletionReference(ref: Record<string, unknown> | undefined): void {
  if (ref?.type === 'ref/prompt') {
    if (typeof ref.name !== 'string' || ref.name.length === 0) throw invalidParams('completion/complete needs a non-empty string params.ref.name');
    return;
  }
  if (ref?.type !== 'ref/resource') return;
  const uri = ref.uri;
  if (typeof uri !== 'string' || uri.length === 0) throw invalidParams('completion/complete needs a non-empty string params.ref.uri');
  if (!isUriTemplate(uri)) {
    checkResolvedUri(uri, 'completion/complete needs params.ref.uri');
    return;
  }
  const resolved = STRAY_WHITESPACE.test(uri) ? undefined : resolveResourceTemplate(uri);
  if (resolved === undefined) throw invalidParams('completion/complete needs params.ref.uri to be an absolute URI template');
  if (resolved !== uri) throw invalidParams(`completion/complete needs params.ref.uri in its resolved form, ${quoted(resolved)}`);
}

function checkSubscriptions(uris: unknown): void {
  if (uris === undefined) return;
  const needs = 'subscriptions/listen needs params.notifications.resourceSubscriptions';
  if (!Array.isArray(uris)) throw invalidParams(`${needs} to be an array of URIs`);
  for (const uri of uris as unknown[]) {
    if (typeof uri !== 'string' || uri.length === 0) throw invalidParams(`${needs} to be an array of URIs`);
    checkResolvedUri(uri, `${needs} entries`);
  }
}

/**
 * The resolved form for an error message: it derives from client text, so it is bounded, and JSON-quoted so that
 * any character left is visible. A resolved URI holds no control characters or raw non-ASCII.
 */
function quoted(resolved: string): string {
  return JSON.stringify(resolved.length > 200 ? `${resolved.slice(0, 197)}...` : resolved);
}
