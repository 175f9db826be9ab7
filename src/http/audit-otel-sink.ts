import type { AuditFieldsSink } from '../core/audit/audit-buffer.js';

/** Instrumentation scope of the audit log records. */
export const AUDIT_LOGGER_NAME = 'mcp-oauth-guard';
/** `eventName` of each audit log record. */
export const AUDIT_EVENT_NAME = 'mcp_guard.audit';

/**
 * Audit records as OpenTelemetry log records, through the logger provider the application registers
 * (`logs.setGlobalLoggerProvider`, or an SDK's `NodeSDK`), before or after the guard is built; with none, they go
 * nowhere. Each record is one log record: `eventName` `mcp_guard.audit`, severity INFO, `timestamp` the request's
 * arrival, the record's fields as attributes (`arguments` as its JSON), and the JSON line as the body. The API is
 * loaded only when this destination is chosen.
 *
 * @example
 * const sink = createAuditOtelSink('0.1.0');
 */
export function createAuditOtelSink(version: string | undefined): AuditFieldsSink {
  const logger = import('@opentelemetry/api-logs').then(({ logs, SeverityNumber }) => ({ logger: logs.getLogger(AUDIT_LOGGER_NAME, version), info: SeverityNumber.INFO }));
  return {
    // The audit trail hands each record's fields with its line: nothing is parsed again here.
    async writeRecords(lines, records) {
      const { logger: otel, info } = await logger;
      for (let i = 0; i < lines.length; i++) {
        const attributes = records[i]!;
        otel.emit({ eventName: AUDIT_EVENT_NAME, timestamp: new Date(attributes['time'] as string), severityNumber: info, severityText: 'INFO', body: lines[i]!, attributes });
      }
    },
  };
}
