import { RequestRejectedError } from './errors.js';
import { JsonRpcErrorCode, type JsonRpcMessage } from './jsonrpc.js';

/** Methods that name one tool, prompt or resource, and the params field naming it. */
const TARGET_FIELD: ReadonlyMap<string, 'name' | 'uri'> = new Map([
  ['tools/call', 'name'],
  ['prompts/get', 'name'],
  ['resources/read', 'uri'],
  ['resources/subscribe', 'uri'],
  ['resources/unsubscribe', 'uri'],
]);

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
 * Fails closed on a request whose target cannot be authorized exactly: `tools/call` and `prompts/get`
 * need a non-empty string `params.name`; `resources/read`, `resources/subscribe` and
 * `resources/unsubscribe` need `params.uri` to be an absolute URI without leading, trailing or embedded
 * whitespace. Otherwise a handler that coerces `["delete_note"]` to `"delete_note"`, or a URL parser that
 * trims `" notes://x"`, would act on a target the policy never saw. Answers 400 with -32602.
 */
export function checkRequestTarget(message: JsonRpcMessage): void {
  const method = (message as { method?: unknown }).method;
  if (typeof method !== 'string' || !('id' in message)) return;
  const field = TARGET_FIELD.get(method);
  if (field === undefined) return;
  const params = (message as { params?: Record<string, unknown> }).params;
  const value = params?.[field];
  if (typeof value !== 'string' || value.length === 0) {
    throw invalidParams(`${method} needs a non-empty string params.${field}`);
  }
  if (field === 'uri' && (STRAY_WHITESPACE.test(value) || !URL.canParse(value))) {
    throw invalidParams(`${method} needs params.uri to be an absolute URI`);
  }
}
