import { writeSync } from 'node:fs';
import type { SyncAuditSink } from './audit-file-sink.js';

/**
 * Audit records to stdout, a batch per write; the next batch waits until stdout took this one (a pipe that is not
 * read fills the buffer, and records are then dropped and counted rather than held without bound).
 *
 * @example
 * const sink = createAuditStdoutSink();
 */
export function createAuditStdoutSink(): SyncAuditSink {
  return {
    write: (lines) =>
      new Promise<void>((resolve, reject) => {
        process.stdout.write(lines, (error) => (error ? reject(error) : resolve()));
      }),
    writeSync(lines) {
      try {
        if (typeof lines === 'string') writeSync(1, lines);
        else writeSync(1, lines);
      } catch {
        // At exit there is nobody left to tell.
      }
    },
  };
}
