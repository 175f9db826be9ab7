import { JsonRpcErrorCode } from '../wire/jsonrpc.js';
import { ConfigurationError, RequestRejectedError } from '../kernel/errors.js';
import { parseAbsoluteUrl } from '../kernel/settings.js';

/**
 * Decides whether a request's `Origin` is allowed (MCP Streamable HTTP: servers MUST validate
 * `Origin`; present and invalid gets 403, DNS-rebinding protection). Requests without `Origin`
 * (non-browser clients) pass: the token is what authenticates them.
 *
 * @param allowedOrigins - Origins allowed besides the resource's own; `*` allows any.
 * @param resourceOrigin - The origin of the canonical resource; always allowed.
 * @returns a checker that throws `RequestRejectedError` (403, reason `origin_forbidden`).
 */
export function createOriginCheck(
  allowedOrigins: readonly string[],
  resourceOrigin: string,
  setting = 'allowedOrigins',
): (origin: string | undefined) => void {
  if (allowedOrigins.includes('*')) return () => {};
  const allowed = new Set<string>([resourceOrigin]);
  for (const o of allowedOrigins) {
    const normalized = parseAbsoluteUrl(o, setting, `"${o}" is not an origin; use scheme://host[:port], e.g. https://app.example.com, or * to allow any`).origin;
    if (normalized === 'null') throw new ConfigurationError(setting, `"${o}" has no origin; use scheme://host[:port]`);
    allowed.add(normalized);
  }
  return (origin) => {
    if (origin === undefined || allowed.has(origin)) return;
    let normalized: string | undefined;
    try {
      normalized = new URL(origin).origin;
    } catch {
      normalized = undefined;
    }
    if (normalized !== undefined && normalized !== 'null' && allowed.has(normalized)) return;
    throw new RequestRejectedError('Origin not allowed', {
      status: 403,
      reason: 'origin_forbidden',
      jsonRpcCode: JsonRpcErrorCode.InvalidRequest,
    });
  };
}
