import type { IncomingMessage } from 'node:http';
import type { DpopRequest } from '../core/dpop/dpop-authenticator.js';
import { isStatelessRevision } from '../core/mcp/protocol-version.js';

/**
 * The Authorization header as sent. Node keeps only the first of duplicated Authorization headers in
 * `req.headers`, so the raw list is checked: two headers must be refused, not silently half-read.
 */
export function authorizationHeader(req: IncomingMessage): string | string[] | undefined {
  const raw = req.rawHeaders;
  let found: string[] | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 13 && name.toLowerCase() === 'authorization') (found ??= []).push(raw[i + 1]!);
  }
  if (found === undefined) return undefined;
  return found.length === 1 ? found[0] : found;
}

/**
 * What the guard needs of a request to check a DPoP proof, and the client address that bounds introspection calls.
 * A class, not a closure: one small object per request, and the `DPoP` header is read (through `headersDistinct`,
 * which keeps a repeated header as two values) only for a request that uses the DPoP scheme.
 */
export class DpopRequestOf implements DpopRequest {
  readonly #req: IncomingMessage;
  constructor(req: IncomingMessage) {
    this.#req = req;
  }
  get method(): string {
    return this.#req.method ?? 'GET';
  }
  dpopHeader(): string[] | undefined {
    return this.#req.headersDistinct['dpop'];
  }
  get clientAddress(): string | undefined {
    return this.#req.socket?.remoteAddress;
  }
}

/**
 * The `Mcp-Session-Id` a request names, if any. Node joins a repeated header into one comma-separated string
 * (an array only in theory), which is then no session id anyone issued: it is refused like an unknown one.
 */
export function sessionIdHeader(req: IncomingMessage): string | undefined {
  const header = req.headers['mcp-session-id'];
  return header === undefined ? undefined : typeof header === 'string' ? header : header.join(', ');
}

/**
 * The session a request names under its protocol revision: its `Mcp-Session-Id` under the 2025 revisions,
 * none under a stateless one (2026-07-28 has no protocol-level sessions, and a server SHOULD ignore the header:
 * basic/transports/streamable-http). Every upstream asks this, so a session id is honoured by the same rule.
 *
 * @example
 * requestSessionId(req, context.protocolVersion); // undefined for a 2026-07-28 request, whatever it sends
 */
export function requestSessionId(req: IncomingMessage, protocolVersion: string | undefined): string | undefined {
  return isStatelessRevision(protocolVersion) ? undefined : sessionIdHeader(req);
}

/**
 * The headers the 2026-07-28 mirroring check reads. Node joins a repeated custom header into one
 * comma-separated string, so `Mcp-Param-Region: eu` twice would look like the single value `eu, us`;
 * repeated `Mcp-*` headers are therefore found in the raw list and handed on as arrays, which the check
 * refuses (-32020).
 */
export function mirroredHeaders(req: IncomingMessage): IncomingMessage['headers'] {
  const raw = req.rawHeaders;
  let seen: Set<string> | undefined;
  let repeated: Set<string> | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length < 5 || (name.charCodeAt(0) | 0x20) !== 0x6d) continue; // not "m…"
    const lower = name.toLowerCase();
    if (!lower.startsWith('mcp-')) continue;
    if ((seen ??= new Set()).has(lower)) (repeated ??= new Set()).add(lower);
    else seen.add(lower);
  }
  if (repeated === undefined) return req.headers;
  const headers: IncomingMessage['headers'] = { ...req.headers };
  for (const name of repeated) {
    const values: string[] = [];
    for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() === name) values.push(raw[i + 1]!);
    headers[name] = values;
  }
  return headers;
}

/** The first value of a header Node may hand over as a list. */
export function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The path of the request target, without the query. An absolute-form target (`POST http://host/mcp`,
 * RFC 9112 §3.2.2) gives its path; a target that is no URL at all gives `undefined`.
 */
export function requestPath(req: IncomingMessage): string | undefined {
  const url = req.url ?? '/';
  let start = 0;
  if (url.charCodeAt(0) !== 0x2f /* "/" */) {
    // Only the path of an absolute-form target counts, even when its authority is no valid URL host.
    const scheme = url.indexOf('://');
    if (scheme <= 0) return undefined;
    start = url.indexOf('/', scheme + 3);
    if (start === -1) return '/';
  }
  const q = url.indexOf('?', start);
  return q === -1 ? (start === 0 ? url : url.slice(start)) : url.slice(start, q);
}
