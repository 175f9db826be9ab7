import type { OutgoingHttpHeader, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { encodeHeaderValue } from '../../core/wire/header-value-encoding.js';
import { requestIdOf, type JsonRpcId, type JsonRpcMessage } from '../../core/wire/jsonrpc.js';
import type { GuardedRequest, HttpHandlerContext } from '../../http/http-handler.js';
import { EVENT_STREAM_MEDIA_TYPE, mediaType } from '../../http/media-type.js';
import { requestSpan } from '../../http/request-span.js';
import { UPSTREAM_NAME_ATTRIBUTE } from '../upstream/upstream-span.js';
import { EventIdVector, EventRelabeller } from './relabelled-events.js';
import type { SetMember } from './set-member.js';

/** Where a routed request goes: the server, the message with the server's own names, and its session there. */
export interface MemberTarget {
  readonly member: SetMember;
  /** The message as the server must see it (its own tool or prompt name). */
  readonly message: JsonRpcMessage;
  /** The server's own name of the tool or prompt, for `Mcp-Name`; absent when the message names none. */
  readonly localName?: string;
  /** The server's session id, when the client's session opened one there. */
  readonly sessionId: string | undefined;
  /** The revision the server's session speaks (else the client's). */
  readonly protocolVersion: string | undefined;
  /** The client's session id with the endpoint, which every answer carries instead of the server's. */
  readonly clientSessionId: string | undefined;
  /** The capabilities the client declared in its session's `initialize`, for the server's handler (see `HttpHandlerContext`). */
  readonly clientCapabilities?: unknown;
}

/**
 * Hands a routed request to its server's own handler, which writes the answer (JSON or a stream) to the client:
 * the body carries the server's own names, `Mcp-Name` is rewritten to match (the pipeline has checked it
 * against the exposed name), `Mcp-Session-Id` names the server's session, and the answer carries the client's
 * session id, never the server's.
 */
export function forwardToMember(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext, target: MemberTarget): void | Promise<void> {
  prepareClientResponse(res, target.clientSessionId, target.member.name, requestIdOf(target.message));
  return handToMember(req, res, context, target);
}

/**
 * Prepares `res` for an answer a server writes: {@link showClientSession}, and an event stream relabelled
 * ({@link relabelEventStreams}), keeping only the POST's own response ({@link ownResponseOnly}). One patch of the
 * head, set up per request: the cheap path of a routed call.
 *
 * @param requestId - The id of the request the POST carries; null when it carries a notification or a response.
 */
export function prepareClientResponse(res: ServerResponse, clientSessionId: string | undefined, server: string, requestId: JsonRpcId | null): void {
  const writeHead = res.writeHead;
  const setHeader = res.setHeader;
  const hadOwnWriteHead = Object.hasOwn(res, 'writeHead');
  const hadOwnSetHeader = Object.hasOwn(res, 'setHeader');
  // writeHead first, setHeader last, and undone in the reverse order: V8 then returns the object to its first shape.
  // Deleting a property that is not the newest turns the object into a slow dictionary for the rest of its way.
  res.writeHead = function (this: ServerResponse, status: number, reasonOrHeaders?: unknown, maybeHeaders?: unknown) {
    // The head is written once: from now on the response is the plain one again (a patched object is slower).
    if (hadOwnSetHeader) this.setHeader = setHeader;
    else delete (this as unknown as Record<string, unknown>).setHeader;
    if (hadOwnWriteHead) this.writeHead = writeHead;
    else delete (this as unknown as Record<string, unknown>).writeHead;
    const headers = (typeof reasonOrHeaders === 'string' ? maybeHeaders : reasonOrHeaders) as OutgoingHttpHeaders | undefined;
    let contentType: unknown;
    if (headers !== undefined && headers !== null && typeof headers === 'object' && !Array.isArray(headers)) {
      for (const name in headers) {
        const lower = name.toLowerCase();
        if (lower === 'mcp-session-id') delete headers[name];
        else if (lower === 'content-type') contentType = headers[name];
      }
      if (clientSessionId !== undefined) headers['mcp-session-id'] = clientSessionId as OutgoingHttpHeader;
    } else contentType = this.getHeader('content-type');
    // Only an event stream is relabelled: a JSON answer is written as it is, at no further cost.
    if (mediaType(Array.isArray(contentType) ? contentType[0] : contentType) === EVENT_STREAM_MEDIA_TYPE) relabelWrites(this, new EventRelabeller(server, new EventIdVector(), ownResponseOnly(requestId)));
    const write = writeHead as (this: ServerResponse, ...args: unknown[]) => ServerResponse;
    return maybeHeaders === undefined ? write.call(this, status, reasonOrHeaders) : write.call(this, status, reasonOrHeaders, maybeHeaders);
  } as ServerResponse['writeHead'];
  res.setHeader = function (this: ServerResponse, name: string, value: number | string | readonly string[]) {
    if (name.toLowerCase() !== 'mcp-session-id') return setHeader.call(this, name, value);
    if (clientSessionId !== undefined) setHeader.call(this, name, clientSessionId);
    return this;
  } as ServerResponse['setHeader'];
}

/**
 * What a POST's event stream from a server may pass on to the client: the response to the POST's own request, and
 * requests and notifications (MCP Streamable HTTP: a POST's stream carries its request's response, and messages
 * related to it). A response to any other id is dropped: in a set, that id may name a request the client sent
 * another server (or a list the set merged), which this server must not answer, nor slip a list past that
 * server's names and pins.
 */
export function ownResponseOnly(requestId: JsonRpcId | null): (message: Record<string, unknown>) => boolean {
  return (message) => typeof message.method === 'string' || !('result' in message || 'error' in message) || (requestId !== null && message.id === requestId);
}

/**
 * The request, rewritten for its server, handed to the server's handler; `res` is already prepared for the client.
 * The request's SERVER span, when traced, names the server (`mcp_guard.upstream.name`), whatever its transport.
 */
export function handToMember(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext, target: MemberTarget): void | Promise<void> {
  requestSpan()?.setAttribute(UPSTREAM_NAME_ATTRIBUTE, target.member.name);
  req.body = target.message;
  const headers = req.headers;
  if (target.sessionId !== undefined) headers['mcp-session-id'] = target.sessionId;
  else delete headers['mcp-session-id'];
  if (target.localName !== undefined && headers['mcp-name'] !== undefined) headers['mcp-name'] = encodeHeaderValue(target.localName);
  if (target.protocolVersion !== undefined && headers['mcp-protocol-version'] !== undefined) headers['mcp-protocol-version'] = target.protocolVersion;
  const protocolVersion = target.protocolVersion ?? context.protocolVersion;
  const memberContext = protocolVersion === context.protocolVersion && target.clientCapabilities === undefined ? context : memberContextOf(context, protocolVersion, target.clientCapabilities);
  return target.member.upstream.handle(req, res, memberContext);
}

function memberContextOf(context: HttpHandlerContext, protocolVersion: string | undefined, clientCapabilities: unknown): HttpHandlerContext {
  return {
    auth: context.auth,
    signal: context.signal,
    filterResponse: context.filterResponse,
    ...(protocolVersion !== undefined ? { protocolVersion } : {}),
    ...(clientCapabilities !== undefined ? { clientCapabilities } : {}),
  };
}

/** Passes every chunk written to `res` from now on through `relabeller`. */
function relabelWrites(res: ServerResponse, relabeller: EventRelabeller): void {
  const write = res.write;
  const end = res.end;
  res.write = function (this: ServerResponse, chunk: unknown, ...rest: unknown[]): boolean {
    if (typeof chunk !== 'string' && !(chunk instanceof Uint8Array)) return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
    const callback = rest.find((part): part is () => void => typeof part === 'function');
    const out = relabeller.push(typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    if (out === undefined) {
      // An event too long to relabel: the stream ends (the client may resume it).
      this.destroy();
      return false;
    }
    if (out === '') {
      if (callback) queueMicrotask(callback);
      return true;
    }
    return (write as (...args: unknown[]) => boolean).call(this, out, ...(callback ? [callback] : []));
  } as ServerResponse['write'];
  res.end = function (this: ServerResponse, chunk?: unknown, ...rest: unknown[]) {
    if (typeof chunk === 'string' || chunk instanceof Uint8Array) {
      const out = relabeller.push(typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)) ?? '';
      const callback = rest.find((part): part is () => void => typeof part === 'function');
      return (end as (...args: unknown[]) => ServerResponse).call(this, out, ...(callback ? [callback] : []));
    }
    return (end as (...args: unknown[]) => ServerResponse).call(this, chunk, ...rest);
  } as ServerResponse['end'];
}

/** Watches one attempt's answer for a lost session; see {@link watchForLostSession}. */
export interface LostSessionWatch {
  /** Whether the server answered 404 before anything was written: then nothing was. */
  readonly lost: boolean;
  /** Puts `res` back as it was before the watch. */
  restore(): void;
}

/**
 * Holds back an answer that says the server no longer knows the session (404, as MCP asks), so that the set can
 * open a new session with that server and send the request again: a server that restarted then costs the client
 * nothing. Anything else passes as it is (a server answering 400 for a lost session is recovered by the next
 * list, which can read the answer's text).
 */
export function watchForLostSession(res: ServerResponse): LostSessionWatch {
  const { writeHead, write, end } = res;
  const watch = { lost: false, restore: () => Object.assign(res, { writeHead, write, end }) };
  res.writeHead = function (this: ServerResponse, status: number, ...rest: unknown[]) {
    if (!this.headersSent && status === 404) {
      watch.lost = true;
      return this;
    }
    return (writeHead as (...args: unknown[]) => ServerResponse).call(this, status, ...rest);
  } as ServerResponse['writeHead'];
  res.write = function (this: ServerResponse, chunk: unknown, ...rest: unknown[]): boolean {
    if (!watch.lost) return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
    const callback = rest.find((part): part is () => void => typeof part === 'function');
    if (callback) queueMicrotask(callback);
    return true;
  } as ServerResponse['write'];
  res.end = function (this: ServerResponse, ...args: unknown[]) {
    if (!watch.lost) return (end as (...args: unknown[]) => ServerResponse).call(this, ...args);
    const callback = args.find((part): part is () => void => typeof part === 'function');
    if (callback) queueMicrotask(callback);
    return this;
  } as ServerResponse['end'];
  return watch;
}
