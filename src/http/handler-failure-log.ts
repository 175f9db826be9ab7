/**
 * The warning a handler that threw leaves in the log. The client gets a bare JSON-RPC `-32603` (nothing of the
 * error reaches it), so this line is the only place an operator learns what failed: the error's name and message
 * (with its causes), and the JSON-RPC method. A handler failing on every request writes one line per error name and
 * method a minute while its message stays the same, so that a broken handler cannot flood the log.
 */
import { explainFailure } from '../core/kernel/explain-failure.js';
import { emitWarning, type LineSink } from '../core/kernel/log-line.js';
import { WarningLimiter } from '../core/kernel/warning-limiter.js';
import type { JsonRpcMessage } from '../core/wire/jsonrpc.js';

/** The fixed `message` of the warning (log alerts match it). */
export const HANDLER_THREW_MESSAGE = 'the MCP handler threw; the client got a JSON-RPC Internal error (-32603)';

/** How long, in milliseconds, one error name and method's warning is not repeated while its message stays the same. */
export const HANDLER_FAILURE_WARNING_INTERVAL_MS = 60_000;

/** Longest `detail` written, in characters. */
const MAX_DETAIL_LENGTH = 500;

/** Told of each error a handler threw (or rejected with), and of the message it was serving (none for a GET or DELETE). */
export type HandlerFailureHook = (error: unknown, message: JsonRpcMessage | undefined) => void;

/**
 * A {@link HandlerFailureHook} writing a rate-limited warning to `warn`.
 *
 * @example
 * const failed = handlerFailureWarnings(warningSink(guard.options));
 * failed(new TypeError("Cannot read properties of undefined (reading 'rows')"), { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'search' } });
 * // {"time":"…","event":"warning","message":"the MCP handler threw; …","method":"tools/call","error":"TypeError","detail":"Cannot read properties of undefined (reading 'rows')"}
 */
export function handlerFailureWarnings(warn: LineSink, now: () => number = Date.now): HandlerFailureHook {
  const limiter = new WarningLimiter(HANDLER_FAILURE_WARNING_INTERVAL_MS, undefined, now);
  return (error, message) => {
    const method = message !== undefined && 'method' in message ? message.method : undefined;
    const name = error instanceof Error ? error.name : typeof error;
    // Credentials out first, then cut: a cut could leave part of a token no longer recognisable as one.
    const whole = withoutCredentials(explainFailure(error, 8 * MAX_DETAIL_LENGTH));
    const detail = whole.length > MAX_DETAIL_LENGTH ? `${whole.slice(0, MAX_DETAIL_LENGTH)}...` : whole;
    if (!limiter.due(`${name}\n${method ?? ''}`, detail)) return;
    emitWarning(warn, HANDLER_THREW_MESSAGE, { ...(method === undefined ? {} : { method }), error: name, detail });
  };
}

/**
 * What may be a credential in an application's error text: a `Bearer`/`DPoP` value, or a JWT (three base64url parts,
 * the first a JSON header). A handler holds the caller's token (`auth.token`) and may put it in its own error.
 */
const CREDENTIAL = /\b(Bearer|DPoP)\s+[\w.~+/=-]+|\beyJ[\w-]*\.[\w-]+\.[\w-]*/gi;

/** `text` with every likely credential replaced by `[redacted]`. */
function withoutCredentials(text: string): string {
  return text.replace(CREDENTIAL, (match: string, scheme: string | undefined) => (scheme === undefined ? '[redacted]' : `${scheme} [redacted]`));
}
