/**
 * Records waiting to be written: pushed by requests as their answers end, written by the sink in batches, off the
 * request path. Bounded in bytes: when the sink cannot keep up and the buffer is full, a new record is dropped and
 * counted, never waited for. An audit trail that applied back-pressure instead would turn a slow disk into slow
 * (or refused) MCP calls for every caller; a dropped record is counted in a metric and a warning, so that the loss
 * is seen and alerted on.
 */
import type { AuditSink } from './audit-options.js';
import { EncodedRecords } from './encoded-records.js';

/** Milliseconds records wait to be written together. */
export const AUDIT_BATCH_INTERVAL_MS = 100;
/** Bytes of waiting records past which they are written at once, without waiting for the interval. */
export const AUDIT_EAGER_BATCH_BYTES = 256 * 1024;

/** One record's fields, by name, as a sink that takes fields rather than lines receives them (objects as their JSON). */
export type AuditRecordFields = Readonly<Record<string, string | number | boolean>>;

/**
 * A record whose line is made only when its batch is taken ({@link AuditBuffer.pushDeferred}), rather than when it is
 * pushed: the lines of a batch are then made in one loop, off the request path, where the code and data they need
 * stay in the processor's caches (made one at a time between requests, they cost about twice as much).
 */
export interface DeferredAuditRecord {
  /** Bytes the record is counted at until its line is made: about that line's size in UTF-8, newline included. */
  readonly sizeEstimate: number;
  /** The record's line (without its newline); with `fields`, each field is also set there. Must not throw. */
  line(fields?: Record<string, string | number | boolean>): string;
}

/**
 * A sink that takes each batch's records as their fields, next to their lines, rather than as text to split and
 * parse again (an OpenTelemetry destination, whose log records carry the fields as attributes).
 */
export interface AuditFieldsSink extends Pick<AuditSink, 'close'> {
  /** Writes one batch: each record's line (without its newline) and its fields, in the same order. As {@link AuditSink.write} otherwise. */
  writeRecords(lines: readonly string[], fields: readonly AuditRecordFields[]): void | Promise<void>;
}

/**
 * A sink that also takes each batch as its bytes (a file): the buffer then encodes each record once, as it is pushed,
 * and counts its exact size, rather than joining the batch into one text for the sink to encode again. Internal: an
 * application's {@link AuditSink} receives text.
 */
export interface AuditBytesSink extends AuditSink {
  /** Writes one batch: its records' lines as UTF-8, each ending in a newline. As {@link AuditSink.write} otherwise. */
  writeBytes(bytes: Buffer): void | Promise<void>;
}

/**
 * Why records were dropped: the buffer was full (when pushed, or when a deferred record's line came out longer than
 * its estimate and did not fit), the sink refused their batch, they came after the close, or a deferred record's line
 * could not be made.
 */
export type AuditDropReason = 'buffer_full' | 'write_failed' | 'closed' | 'unwritable';

/** Options of {@link AuditBuffer}. */
export interface AuditBufferOptions {
  /** Most bytes of records held, the batch being written included. */
  maxBytes: number;
  /** Told of records dropped (a full buffer, a batch the sink refused, a push after the close), with how many. Must not throw. */
  onDropped?: (records: number, why: AuditDropReason) => void;
}

/**
 * The audit buffer: {@link AuditBuffer.push} costs an array push and a byte count; records are handed to the sink in
 * one batch every {@link AUDIT_BATCH_INTERVAL_MS} (sooner once {@link AUDIT_EAGER_BATCH_BYTES} wait), and the next
 * batch once the sink is done with it. One write per interval rather than one per turn of the event loop: at
 * thousands of requests a second, a write (a promise, a thread-pool job, a syscall) per few records cost more than
 * the records themselves. A record is thus held at most about that long; a clean shutdown ({@link AuditBuffer.close})
 * writes every one, those pushed while it runs included (answers still ending), and a process that exits without it
 * writes what it holds synchronously where the sink can.
 *
 * @example
 * const buffer = new AuditBuffer({ write: (lines) => appendFile(path, lines) }, { maxBytes: 8 << 20 });
 * buffer.push(JSON.stringify(record));
 * await buffer.close(); // every record pushed is written
 */
export class AuditBuffer {
  #pending: string[] = [];
  /** Records pushed with {@link AuditBuffer.pushDeferred} whose lines are not made yet, in their order after {@link AuditBuffer.#pending}. */
  #deferred: DeferredAuditRecord[] = [];
  /** The estimates the deferred records are counted at. */
  #deferredBytes = 0;
  /** The fields of the pending records, in their order, when the sink takes fields. */
  #pendingFields: AuditRecordFields[] | undefined;
  /** The pending records as bytes, when the sink takes bytes (then {@link AuditBuffer.#pending} stays empty). */
  readonly #encoded: EncodedRecords | undefined;
  /** Pending records, counted when they are held as bytes. */
  #encodedRecords = 0;
  /** Bytes of the pending records and of the batch being written. */
  #bytes = 0;
  /** Bytes of the pending records alone (not of the batch being written). */
  #pendingBytes = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #writing: Promise<void> | undefined;
  #scheduled = false;
  /** A close started: batches go out at once rather than at the interval. */
  #closing = false;
  /** The close wrote its last batch: what comes now is dropped. */
  #closed = false;
  #closeDone: Promise<void> | undefined;
  #dropped = 0;

  constructor(
    private readonly sink: AuditSink | AuditFieldsSink,
    private readonly options: AuditBufferOptions,
  ) {
    if (takesFields(sink)) this.#pendingFields = [];
    else if (typeof (sink as Partial<AuditBytesSink>).writeBytes === 'function') this.#encoded = new EncodedRecords();
  }

  /** Whether the sink takes each record's fields ({@link AuditFieldsSink}): then {@link AuditBuffer.push} needs them. */
  get takesFields(): boolean {
    return this.#pendingFields !== undefined;
  }

  /** Records dropped so far. */
  get dropped(): number {
    return this.#dropped;
  }

  /** Bytes held now. */
  get bytes(): number {
    return this.#bytes;
  }

  /**
   * Adds one record (a JSON line, without its newline, and its fields when the sink takes them); false when it was
   * dropped (buffer full, or the close already done). A record pushed while {@link AuditBuffer.close} runs is still
   * written by it.
   */
  push(line: string, fields?: AuditRecordFields): boolean {
    if (this.#closed) {
      this.#drop(1, 'closed');
      return false;
    }
    // Records deferred before this one come before it.
    if (this.#deferred.length > 0) this.#makeDeferredLines();
    if (this.#encoded !== undefined) return this.#pushEncoded(this.#encoded, line);
    // Each character is at most 3 bytes in UTF-8: only a long line is measured exactly.
    const size = line.length < 256 ? line.length * 3 + 1 : Buffer.byteLength(line) + 1;
    if (this.#bytes + size > this.options.maxBytes) {
      this.#drop(1, 'buffer_full');
      return false;
    }
    this.#pending.push(line);
    this.#pendingFields?.push(fields ?? {});
    this.#bytes += size;
    this.#pendingBytes += size;
    if (this.#writing === undefined) this.#schedule();
    return true;
  }

  /**
   * Adds one record whose line is made when its batch is taken ({@link DeferredAuditRecord}), counted at its estimate
   * until then; false when it was dropped, as {@link AuditBuffer.push}. Records keep their order whichever way they came.
   */
  pushDeferred(record: DeferredAuditRecord): boolean {
    if (this.#closed) {
      this.#drop(1, 'closed');
      return false;
    }
    const size = record.sizeEstimate;
    if (this.#bytes + size > this.options.maxBytes) {
      this.#drop(1, 'buffer_full');
      return false;
    }
    this.#deferred.push(record);
    this.#deferredBytes += size;
    this.#bytes += size;
    this.#pendingBytes += size;
    if (this.#writing === undefined) this.#schedule();
    return true;
  }

  /**
   * Makes the deferred records' lines and holds them as pushed ones (encoded, when the sink takes bytes), now counted
   * at their real size, within the bound: an estimate is about a line's size, not its most (a name of control
   * characters takes six bytes each once escaped), so a line that no longer fits is dropped as a full buffer's. A
   * record whose line cannot be made is dropped as `unwritable`.
   */
  #makeDeferredLines(): void {
    const deferred = this.#deferred;
    if (deferred.length === 0) return;
    this.#deferred = [];
    // What the lines may take: the bound, less what is held besides the deferred records' estimates.
    let room = this.options.maxBytes - (this.#bytes - this.#deferredBytes);
    const held = room;
    let full = 0;
    let unwritable = 0;
    for (const record of deferred) {
      const fields = this.#pendingFields !== undefined ? {} : undefined;
      let line: string;
      try {
        line = record.line(fields);
      } catch {
        unwritable++;
        continue;
      }
      let size: number;
      if (this.#encoded !== undefined) {
        size = this.#encoded.append(line, room);
        if (size !== -1) this.#encodedRecords++;
      } else {
        size = line.length < 256 ? line.length * 3 + 1 : Buffer.byteLength(line) + 1;
        if (size > room) size = -1;
        else {
          this.#pending.push(line);
          if (fields !== undefined) this.#pendingFields!.push(fields);
        }
      }
      if (size === -1) full++;
      else room -= size;
    }
    const change = held - room - this.#deferredBytes;
    this.#deferredBytes = 0;
    this.#bytes += change;
    this.#pendingBytes += change;
    if (full > 0) this.#drop(full, 'buffer_full');
    if (unwritable > 0) this.#drop(unwritable, 'unwritable');
  }

  /** {@link AuditBuffer.push} for a sink that takes bytes: the record is encoded now, and counted at its exact size. */
  #pushEncoded(encoded: EncodedRecords, line: string): boolean {
    const size = encoded.append(line, this.options.maxBytes - this.#bytes);
    if (size === -1) {
      this.#drop(1, 'buffer_full');
      return false;
    }
    this.#encodedRecords++;
    this.#bytes += size;
    this.#pendingBytes += size;
    if (this.#writing === undefined) this.#schedule();
    return true;
  }

  /** Whether records wait to be handed to the sink. */
  get #holding(): boolean {
    return this.#pending.length > 0 || this.#encodedRecords > 0 || this.#deferred.length > 0;
  }

  /** Resolves once every record pushed so far is written (or dropped by a failed write). */
  async flush(): Promise<void> {
    while (this.#writing !== undefined || this.#holding) {
      if (this.#writing === undefined) this.#drain();
      await this.#writing;
    }
  }

  /**
   * Writes the records held and those pushed until it is done, then stops taking records and closes the sink.
   * Idempotent: a second call waits for the same close.
   */
  close(): Promise<void> {
    this.#closeDone ??= this.#close();
    return this.#closeDone;
  }

  async #close(): Promise<void> {
    this.#closing = true;
    await this.flush();
    // No await between the last flush and this: nothing can be pushed in between and be left unwritten.
    this.#closed = true;
    await this.sink.close?.();
  }

  /**
   * Takes every record held and not yet handed to the sink, as one batch of lines (for a last synchronous write at
   * process exit, when no promise will ever settle again): their text, or their bytes when the sink takes bytes. The
   * buffer is left empty.
   */
  takePending(): string | Buffer {
    this.#makeDeferredLines();
    this.#pendingBytes = 0;
    if (this.#encoded !== undefined) {
      this.#encodedRecords = 0;
      return this.#encoded.take();
    }
    const lines = this.#pending;
    this.#pending = [];
    if (this.#pendingFields !== undefined) this.#pendingFields = [];
    return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
  }

  readonly #drain = (): void => {
    this.#scheduled = false;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#writing !== undefined || !this.#holding) return;
    this.#makeDeferredLines();
    if (!this.#holding) return;
    const lines = this.#pending;
    // What `push` counted for them: not measured again, record by record.
    const batchBytes = this.#pendingBytes;
    const fields = this.#pendingFields;
    const records = this.#encoded !== undefined ? this.#encodedRecords : lines.length;
    this.#pending = [];
    if (fields !== undefined) this.#pendingFields = [];
    this.#pendingBytes = 0;
    this.#encodedRecords = 0;
    let written: void | Promise<void>;
    try {
      if (this.#encoded !== undefined) written = (this.sink as AuditBytesSink).writeBytes(this.#encoded.take());
      else written = fields !== undefined ? (this.sink as AuditFieldsSink).writeRecords(lines, fields) : this.#writeText(lines);
    } catch {
      this.#bytes -= batchBytes;
      this.#drop(records, 'write_failed');
      return;
    }
    if (!(written instanceof Promise)) {
      this.#bytes -= batchBytes;
      if (this.#holding) this.#schedule();
      return;
    }
    this.#writing = written.then(
      () => this.#written(batchBytes),
      () => {
        this.#written(batchBytes);
        this.#drop(records, 'write_failed');
      },
    );
  };

  /** One batch as text: its lines, each ending in a newline. */
  #writeText(lines: string[]): void | Promise<void> {
    // The closing newline joined in, rather than appended to a joined string: one flat string, made once. The empty
    // line it takes is taken off again, so that the batch counts its records alone.
    lines.push('');
    const text = lines.join('\n');
    lines.pop();
    return (this.sink as AuditSink).write(text);
  }

  #written(batchBytes: number): void {
    this.#bytes -= batchBytes;
    this.#writing = undefined;
    if (this.#holding) this.#schedule();
  }

  /** The next batch: at the end of the interval, or on the next turn once enough waits (or the buffer closes). */
  #schedule(): void {
    const eager = this.#closing || this.#pendingBytes >= AUDIT_EAGER_BATCH_BYTES;
    if (this.#scheduled && !(eager && this.#timer !== undefined)) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#scheduled = true;
    if (eager) setImmediate(this.#drain);
    // Unreferenced: held records never keep a process alive; its exit writes them (see the class).
    else (this.#timer = setTimeout(this.#drain, AUDIT_BATCH_INTERVAL_MS)).unref?.();
  }

  #drop(records: number, why: AuditDropReason): void {
    this.#dropped += records;
    try {
      this.options.onDropped?.(records, why);
    } catch {
      // Counting a loss must not cause another.
    }
  }
}

function takesFields(sink: AuditSink | AuditFieldsSink): sink is AuditFieldsSink {
  return typeof (sink as Partial<AuditFieldsSink>).writeRecords === 'function';
}
