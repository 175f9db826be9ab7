import type { GatewayConfig } from './gateway-config.js';

/** The audit trail's and the tool pins' part of the start-up line. */
export interface OperationsSummary {
  /** Where audit records go (`MCP_AUTH_AUDIT`): off, stdout, otel, or a file. */
  readonly audit: 'off' | 'stdout' | 'otel' | 'file' | 'sink';
  /** The audit file, absolute, when `audit` is `file`. */
  readonly auditFile?: string;
  /** What changed tool definitions do (`MCP_AUTH_PINS`). */
  readonly pins: 'off' | 'warn' | 'enforce';
  /** Where the pins live when they are on (`MCP_AUTH_PIN_FILE`): the file, absolute, or `redis` (the shared store). */
  readonly pinFile?: string;
}

/**
 * Whether the audit trail and the tool pins are on, and where each writes, for the `listening` line: an operator
 * reads there that records are kept and tool definitions watched. Paths only (neither setting holds a secret).
 *
 * @example
 * describeOperations(config); // { audit: 'file', auditFile: '/var/log/mcp/audit.jsonl', pins: 'enforce', pinFile: 'redis' }
 */
export function describeOperations(config: Pick<GatewayConfig, 'guard' | 'pins'>): OperationsSummary {
  const to = config.guard.audit ? config.guard.audit.to : undefined;
  const audit: Pick<OperationsSummary, 'audit' | 'auditFile'> =
    to === undefined ? { audit: 'off' } : to === 'stdout' ? { audit: 'stdout' } : to === 'otel' ? { audit: 'otel' } : typeof to === 'string' ? { audit: 'file', auditFile: to } : { audit: 'sink' };
  const mode = config.pins?.mode ?? 'off';
  // Pins off ignore their file (start-up warns of it): the line says only that they are off.
  const pinFile = mode === 'off' ? undefined : config.pins?.redis ? 'redis' : config.pins?.file;
  return { ...audit, pins: mode, ...(pinFile !== undefined ? { pinFile } : {}) };
}
