import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Guard } from '../core/guard/create-guard.js';
import { jsonRpcError, JsonRpcErrorCode } from '../core/wire/jsonrpc.js';
import { JSON_MEDIA_TYPE } from './media-type.js';
import { setMetadataCors } from './cors.js';
import { writeJson } from './write-response.js';

/**
 * Serves the protected-resource metadata (RFC 9728 §3): `GET`/`HEAD` with the document, encoded once per
 * policy (its `scopes_supported` follows `guard.setPolicy`) and cacheable for `metadataMaxAgeSeconds`; `OPTIONS`
 * for browser preflights (open CORS, no credentials); anything else 405.
 */
export function createMetadataResponder(guard: Guard): (req: IncomingMessage, res: ServerResponse) => void {
  let json = guard.metadataJson;
  let body = Buffer.from(json);
  const cacheControl = `public, max-age=${guard.options.metadataMaxAgeSeconds}`;
  return function serveMetadata(req, res) {
    if (req.method === 'OPTIONS') {
      setMetadataCors(res, true);
      res.writeHead(204).end();
      return;
    }
    setMetadataCors(res, false);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      writeJson(res, 405, jsonRpcError(null, JsonRpcErrorCode.InvalidRequest, 'Method not allowed: the metadata is read with GET'), { Allow: 'GET, HEAD, OPTIONS' });
      return;
    }
    // The guard's serialized document is the same string until its policy changes.
    if (guard.metadataJson !== json) body = Buffer.from((json = guard.metadataJson));
    res.writeHead(200, { 'Content-Type': JSON_MEDIA_TYPE, 'Content-Length': body.length, 'Cache-Control': cacheControl });
    res.end(req.method === 'HEAD' ? undefined : body);
  };
}
