import type { AuditSink } from '../core/audit/audit-options.js';
import type { AuditRecord } from '../core/audit/audit-record.js';

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
export function createAuditOtelSink(version: string | undefined): AuditSink {
  const logger = import('@opentelemetry/api-logs').then(({ logs, SeverityNumber }) => ({ logger: logs.getLogger(AUDIT_LOGGER_NAME, version), info: SeverityNumber.INFO }));
  return {
    async write(lines) {
      const { logger: otel, info } = await logger;
      for (const line of lines.split('\n')) {
        if (line === '') continue;
        const record = JSON.parse(line) as AuditRecord;
        const attributes: Record<string, string | number | boolean> = {};
        for (const [key, value] of Object.entries(record)) {
          attributes[key] = typeof value === 'object' ? JSON.stringify(value) : (value as string | number | boolean);
        }
        otel.emit({ eventName: AUDIT_EVENT_NAME, timestamp: new Date(record.time), severityNumber: info, severityText: 'INFO', body: line, attributes });
      }
    },
  };
}
