import {
  createRequestLog as createPipelineRequestLog,
  type RequestLog as PipelineRequestLog,
  type RequestLogEntry as PipelineRequestLogEntry,
  type RequestLogOptions as PipelineRequestLogOptions,
} from '../../http/request-log.js';
import type { UpstreamFailureReason } from '../upstream/upstream.js';
import { auditServerRouted, auditSessionRefused } from '../../http/audit-trail.js';

/**
 * The gateway's request log: the pipeline's (`http/request-log.ts`, which the middleware writes too), with the
 * upstream's failure codes in `upstreamError`.
 */

/** One line of the gateway's request log; see the pipeline's request log for each field. */
export type RequestLogEntry = PipelineRequestLogEntry<UpstreamFailureReason>;
/** Options of {@link createRequestLog}. */
export type RequestLogOptions = PipelineRequestLogOptions<UpstreamFailureReason>;
/** The pieces to wire into the gateway: a middleware first in the chain, and the hooks of the guard and the upstream. */
export type RequestLog = PipelineRequestLog<UpstreamFailureReason>;

/**
 * Builds the gateway's structured request log: one JSON line per request, written when the answer ends (to stdout
 * unless `write` says otherwise; `write: null` writes none and still hands each entry to `onEntry`). Its server,
 * session and answered-instead hooks also tell the audit trail (`MCP_AUTH_AUDIT`), so that a record names the server
 * and the refusal.
 */
export function createRequestLog(options: RequestLogOptions = {}): RequestLog {
  const log = createPipelineRequestLog(options);
  // What only the gateway knows reaches the audit record too (the guard's audit trail, when it is on).
  return {
    ...log,
    onSessionRefused(req, refusal) {
      log.onSessionRefused(req, refusal);
      auditSessionRefused(req, refusal.reason);
    },
    onServerRouted(req, server) {
      log.onServerRouted(req, server);
      auditServerRouted(req, server);
    },
    onAnsweredInstead(req, reason) {
      log.onAnsweredInstead(req, reason);
      // Answered in the upstream's place (the connect flow's link): a deny in the audit record as in the log.
      auditSessionRefused(req, reason);
    },
  };
}
