import { closeSync, fchmodSync, openSync, writeSync } from 'node:fs';
import { open, rename, rm, type FileHandle } from 'node:fs/promises';
import type { AuditBytesSink } from '../core/audit/audit-buffer.js';
import type { AuditSink } from '../core/audit/audit-options.js';

/** An audit sink that can also write synchronously, for the records still held when the process exits. */
export interface SyncAuditSink extends AuditSink {
  /** Writes `lines` (their text, or their UTF-8 bytes) before returning; never throws. */
  writeSync(lines: string | Uint8Array): void;
}

/** Options of {@link createAuditFileSink}. */
export interface AuditFileSinkOptions {
  /** Absolute path of the file written; rotated copies are `path.1` (the newest) to `path.{files - 1}`. */
  path: string;
  /** Size in bytes past which the file is rotated before the next batch. */
  maxFileBytes: number;
  /** Files kept, the one written included (1: no copy is kept; rotation starts the file afresh). */
  files: number;
}

/**
 * The audit file: batches appended (mode 0600, as records name users, set on a file that was there before too),
 * rotated by size. A batch that would take the
 * file past `maxFileBytes` first moves `path` to `path.1` (and `path.1` to `path.2`, …; the oldest beyond `files` is
 * deleted), so a file holds whole records only. The file is opened on the first batch and kept open; a rotation by
 * another program (logrotate's `create`) is not followed: rotate with these settings instead.
 *
 * @example
 * const sink = createAuditFileSink({ path: '/var/log/mcp/audit.jsonl', maxFileBytes: 100 << 20, files: 5 });
 */
export function createAuditFileSink(options: AuditFileSinkOptions): SyncAuditSink & AuditBytesSink {
  let handle: FileHandle | undefined;
  let size = 0;

  const openFile = async (): Promise<FileHandle> => {
    const opened = await open(options.path, 'a', 0o600);
    try {
      // The mode of `open` applies only to a file it creates: a file that was there before keeps its own, which may
      // let other users read who called what.
      await opened.chmod(0o600);
      size = (await opened.stat()).size;
    } catch (error) {
      await opened.close();
      throw error;
    }
    return opened;
  };
  const rotate = async (): Promise<void> => {
    await handle?.close();
    handle = undefined;
    const { path, files } = options;
    await rm(`${path}.${files - 1}`, { force: true });
    for (let n = files - 2; n >= 1; n--) await rename(`${path}.${n}`, `${path}.${n + 1}`).catch(ignoreMissing);
    if (files > 1) await rename(path, `${path}.1`).catch(ignoreMissing);
    else await rm(path, { force: true });
  };

  const writeBytes = async (whole: Buffer): Promise<void> => {
    handle ??= await openFile();
    // Most batches fit what is left of the file: written as they are.
    if (size + whole.length <= options.maxFileBytes) {
      await handle.appendFile(whole);
      size += whole.length;
      return;
    }
    // A batch may be larger than what is left of the file (under load, many records wait for one write): it is
    // cut at record ends so that every file stays within the bound (a single record larger than it goes alone).
    for (const chunk of chunksWithin(whole, () => (size > 0 ? options.maxFileBytes - size : options.maxFileBytes))) {
      if (size > 0 && size + chunk.length > options.maxFileBytes) {
        await rotate();
        handle = await openFile();
      }
      await handle.appendFile(chunk);
      size += chunk.length;
    }
  };

  return {
    write: (lines) => writeBytes(Buffer.from(lines)),
    writeBytes,
    writeSync(lines) {
      try {
        // The open handle's descriptor when there is one: a second descriptor would not see its size.
        const fd = handle?.fd ?? openSync(options.path, 'a', 0o600);
        if (handle === undefined) fchmodSync(fd, 0o600);
        // The held records are bytes (from the audit buffer) or text (for any other writer).
        if (typeof lines === 'string') writeSync(fd, lines);
        else writeSync(fd, lines);
        if (handle === undefined) closeSync(fd);
      } catch {
        // At exit there is nobody left to tell.
      }
    },
    async close() {
      await handle?.close();
      handle = undefined;
    },
  };
}

/**
 * `lines` (records as UTF-8, each ending in a newline) as consecutive chunks of whole records, each at most `room()`
 * bytes (asked again before each chunk, as the file fills and rotates), or a single record when one alone is larger.
 * A newline byte ends a record: UTF-8 has it in no other character, and a record's JSON has none inside it.
 */
function* chunksWithin(lines: Buffer, room: () => number): Generator<Buffer> {
  let start = 0;
  while (start < lines.length) {
    const limit = room();
    let end = start;
    while (end < lines.length) {
      const next = lines.indexOf(NEWLINE, end);
      const stop = next === -1 ? lines.length : next + 1;
      if (end > start && stop - start > limit) break;
      end = stop;
      if (end - start > limit) break;
    }
    yield lines.subarray(start, end);
    start = end;
  }
}

const NEWLINE = 0x0a;

function ignoreMissing(error: NodeJS.ErrnoException): void {
  if (error.code !== 'ENOENT') throw error;
}

