import { jsonRpcError, requestIdOf, type JsonRpcErrorObject, type JsonRpcMessage, type JsonRpcResponse } from '../../core/wire/jsonrpc.js';

/**
 * The answer to a client's request whose server refused to open a session for this caller with a URL elicitation
 * required error (-32042: the user must connect their account there first). The error itself, with the request's id,
 * when it carries the URL elicitations (the client declared URL-mode elicitation); otherwise its text, which gives
 * the link: as a tool error result for `tools/call` (the model reads it and can tell the user), else as the error.
 *
 * @example
 * memberRefusalAnswer(call, { code: -32042, message: 'Your account … Open https://gw/connect/… then retry.' });
 * // { jsonrpc: '2.0', id: 3, result: { content: [{ type: 'text', text: 'Your account …' }], isError: true } }
 */
export function memberRefusalAnswer(request: JsonRpcMessage | undefined, refusal: JsonRpcErrorObject): JsonRpcResponse {
  const id = requestIdOf(request);
  const elicitations = (refusal.data as { elicitations?: unknown } | undefined)?.elicitations;
  if (id !== null && request && 'method' in request && request.method === 'tools/call' && !Array.isArray(elicitations)) {
    return { jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: refusal.message }], isError: true } };
  }
  return jsonRpcError(id, refusal.code, refusal.message, refusal.data);
}
