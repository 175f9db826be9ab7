import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { usableRequestId } from '../core/audit/audit-record.js';

/** Where a request keeps its id once it has one, so that every reader gets the same. */
const REQUEST_ID = Symbol('request id');
type IdentifiedRequest = IncomingMessage & { [REQUEST_ID]?: string };

/**
 * The id of an HTTP request, the same each time it is asked: its `X-Request-Id` when it sent a usable one (see
 * `usableRequestId`), else a random UUID made on first use. The request log and the audit trail both take it from
 * here, so that a log line and its audit record can be joined on it.
 *
 * @example
 * httpRequestId(req); // "9f1c6e0a-…" (or the client's X-Request-Id)
 */
export function httpRequestId(req: IncomingMessage): string {
  const identified = req as IdentifiedRequest;
  let id = identified[REQUEST_ID];
  if (id === undefined) {
    const header = req.headers['x-request-id'];
    id = identified[REQUEST_ID] = usableRequestId(typeof header === 'string' ? header : undefined) ?? randomUUID();
  }
  return id;
}
