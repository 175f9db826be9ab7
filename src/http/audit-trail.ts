import type { IncomingMessage, ServerResponse } from 'node:http';
import { MAYBE_AN_ERROR, NO_MESSAGE, scanAnswerBytes } from '../core/audit/answer-scan.js';
import { AuditBuffer, type AuditDropReason, type AuditFieldsSink, type DeferredAuditRecord } from '../core/audit/audit-buffer.js';
import type { AuditSink, ResolvedAuditOptions } from '../core/audit/audit-options.js';
import { jsonString } from '../core/audit/json-string.js';
import { jsonRpcErrorCodeIn, recordedArguments, targetField, type AuditRecord, type RecordedArguments } from '../core/audit/audit-record.js';
import type { AuthInfo } from '../core/kernel/auth-info.js';
import type { DecisionEvent } from '../core/kernel/decision.js';
import { emitWarning, type LineSink } from '../core/kernel/log-line.js';
import { WarningLimiter } from '../core/kernel/warning-limiter.js';
import type { JsonRpcMessage } from '../core/wire/jsonrpc.js';
import { createAuditFileSink, type SyncAuditSink } from './audit-file-sink.js';
import { createAuditOtelSink } from './audit-otel-sink.js';
import { createAuditStdoutSink } from './audit-stdout-sink.js';
import { httpRequestId } from './request-id.js';
import { isoTimeNow } from './request-log.js';

/** Options of {@link AuditTrail}. */
export interface AuditTrailOptions {
  /** The guard's audit options, validated. */
  settings: ResolvedAuditOptions;
  /** Told of dropped records (the guard's `onAuditDropped`). */
  onDropped?: ((records: number) => void) | undefined;
  /** Where the warning about dropped records goes, at most once a minute. */
  warn: LineSink;
}

/** Least time between two warnings about dropped records, in milliseconds. */
const DROP_WARNING_INTERVAL_MS = 60_000;
/** The warning about dropped records, by why they were dropped. */
const DROP_WARNINGS: Record<AuditDropReason, string> = {
  buffer_full: 'audit records dropped: the audit destination is not keeping up and its buffer is full',
  write_failed: 'audit records dropped: the audit destination refused a write',
  closed: 'audit records dropped: their answers ended after the audit trail was closed',
  unwritable: 'audit records dropped: a record could not be written as JSON',
};
/** Longest answer chunk read for a JSON-RPC error code, in bytes: a longer one is a result, not an error. */
const SNIFFED_CHUNK_BYTES = 65_536;

/**
 * The audit trail of one request pipeline: {@link AuditTrail.arrived} when a request for the endpoint arrives,
 * {@link AuditTrail.decided} when the guard decides, and one record when the answer ends (its status, its JSON-RPC
 * error code, the duration), pushed to a buffer that the destination drains off the request path (see
 * `AuditBuffer`). A request nobody decided on (a preflight that passed) leaves no record.
 *
 * The pending record rides on the request and the response (one symbol each), so that the gateway's hooks, which
 * see the request, add what only they know (the server, a session refusal) without a map per request.
 */
export class AuditTrail {
  readonly #settings: ResolvedAuditOptions;
  readonly #buffer: AuditBuffer;
  readonly #sink: AuditSink | AuditFieldsSink;
  readonly #warn: LineSink;
  readonly #onDropped: ((records: number) => void) | undefined;
  /** The warning about dropped records: at most once a minute, whatever the reason (the shared limiter). */
  readonly #dropWarnings = new WarningLimiter(DROP_WARNING_INTERVAL_MS, 1);
  #unreported = 0;

  constructor(options: AuditTrailOptions) {
    this.#settings = options.settings;
    this.#warn = options.warn;
    this.#onDropped = options.onDropped;
    this.#sink = sinkFor(options.settings);
    this.#buffer = new AuditBuffer(this.#sink, { maxBytes: options.settings.bufferBytes, onDropped: (records, why) => this.#dropped(records, why) });
    OPEN_TRAILS.add(this);
    if (OPEN_TRAILS.size === 1) process.once('exit', writeHeldRecordsAtExit);
  }

  /** Records dropped so far. */
  get dropped(): number {
    return this.#buffer.dropped;
  }

  /** Starts the pending record of a request for the endpoint. */
  arrived(req: IncomingMessage, res: ServerResponse): void {
    const pending = new PendingAudit(this, req);
    (req as AuditedRequest)[AUDITED] = pending;
    (res as AuditedResponse)[ANSWER] = new AuditedAnswer(pending, res);
    res.write = auditedWrite as ServerResponse['write'];
    res.end = auditedEnd as ServerResponse['end'];
    res.on('close', onAuditedClose);
  }

  /** The guard decided (`event`, from `Guard.report`) about `req`, for the caller `auth` and the message, if any. */
  decided(req: IncomingMessage, event: DecisionEvent, auth: AuthInfo | undefined, message: JsonRpcMessage | undefined): void {
    const pending = (req as AuditedRequest)[AUDITED];
    if (pending === undefined) return;
    pending.event = event;
    if (auth?.extra.iss !== undefined) pending.issuer = auth.extra.iss;
    if (this.#settings.arguments && event.method === 'tools/call') pending.args = (message as { params?: { arguments?: unknown } } | undefined)?.params?.arguments;
  }

  /**
   * Writes every record held, and those of answers ending while it runs, then closes the destination (a file).
   * Records of answers ending after it are dropped, counted and warned of.
   */
  async close(): Promise<void> {
    await this.#buffer.close();
    OPEN_TRAILS.delete(this);
    if (OPEN_TRAILS.size === 0) process.off('exit', writeHeldRecordsAtExit);
  }

  /** The process is exiting without a close: what is still held is written now, if the destination can. */
  writeHeldSync(): void {
    const lines = this.#buffer.takePending();
    if (lines.length > 0) (this.#sink as Partial<SyncAuditSink>).writeSync?.(lines);
  }

  /**
   * The answer ended: the record is completed (what only the response knows now) and pushed; its line is made with
   * its batch's (see `DeferredAuditRecord`).
   */
  finish(pending: PendingAudit, res: ServerResponse): void {
    if (pending.event === undefined) return;
    pending.complete(res, this.#settings);
    this.#buffer.pushDeferred(pending);
  }

  #dropped(records: number, why: AuditDropReason): void {
    this.#onDropped?.(records);
    this.#unreported += records;
    if (!this.#dropWarnings.due('dropped')) return;
    emitWarning(this.#warn, DROP_WARNINGS[why], { dropped: this.#unreported });
    this.#unreported = 0;
  }
}

/**
 * The record as one JSON line, its fields in the order of {@link AuditRecord}: the text `JSON.stringify` makes of the
 * record with its fields in that order, written field by field, with no record object made for it. With `fields`, each
 * field is also set there as written (an object as its JSON), for a sink that takes fields rather than lines.
 */
function recordLine(pending: CompletedAudit, fields?: Record<string, string | number | boolean>): string {
  const event = pending.event;
  const record = new RecordWriter(fields);
  // The time (ISO 8601), the request id (visible ASCII without quotes or backslashes: see usableRequestId), the HTTP
  // method (a token, as Node's parser accepts only those) and the decision need no escaping. The reason does: an
  // application's own verifier may refuse with a reason of its own.
  record.raw('time', `"${pending.time}"`, pending.time);
  record.raw('requestId', `"${pending.requestId}"`, pending.requestId);
  if (pending.issuer !== undefined) record.text('issuer', pending.issuer);
  if (event.subject !== undefined) record.text('subject', event.subject);
  if (event.clientId !== undefined) record.text('clientId', event.clientId);
  // The server the request was handed to, else the one its decision named (a request refused before routing).
  const server = pending.server ?? event.server;
  if (server !== undefined) record.text('server', server);
  record.raw('httpMethod', `"${event.httpMethod}"`, event.httpMethod);
  if (event.method !== undefined) record.text('method', event.method);
  const field = targetField(event.method);
  if (field !== undefined && event.name !== undefined) record.text(field, event.name);
  const decision = pending.refusal === undefined ? event.decision : 'deny';
  record.raw('decision', `"${decision}"`, decision);
  record.text('reason', pending.refusal ?? event.reason);
  if (event.rule !== undefined) record.text('rule', event.rule);
  if (event.condition !== undefined) record.text('condition', event.condition);
  record.raw('status', `${pending.status}`, pending.status);
  if (pending.errorCode !== undefined) record.raw('errorCode', `${pending.errorCode}`, pending.errorCode);
  record.raw('durationMs', `${pending.durationMs}`, pending.durationMs);
  if (pending.aborted) record.raw('aborted', 'true', true);
  const recorded = pending.recorded;
  // An object (or null) is an attribute as its JSON, as in the line; a string, number or boolean as itself.
  if (recorded !== undefined) record.raw(recorded.field, recorded.json, typeof recorded.value === 'object' || recorded.value === undefined ? recorded.json : (recorded.value as string | number | boolean));
  return `${record.line}}`;
}

/** Writes a record's JSON line field by field, and its fields when asked for. */
class RecordWriter {
  line = '{';
  constructor(readonly fields: Record<string, string | number | boolean> | undefined) {}

  /** A field whose JSON is `json`, made already or needing no escaping; `value` is what `fields` gets. */
  raw(name: string, json: string, value: string | number | boolean): void {
    this.line += this.line.length === 1 ? `"${name}":${json}` : `,"${name}":${json}`;
    if (this.fields !== undefined) this.fields[name] = value;
  }

  /** A string field, escaped as JSON. */
  text(name: string, value: string): void {
    this.raw(name, jsonString(value), value);
  }
}

/** The destination of each kind. */
function sinkFor(settings: ResolvedAuditOptions): AuditSink | AuditFieldsSink {
  const destination = settings.destination;
  switch (destination.kind) {
    case 'stdout':
      return createAuditStdoutSink();
    case 'otel':
      return createAuditOtelSink(undefined);
    case 'file':
      return createAuditFileSink({ path: destination.path, maxFileBytes: settings.maxFileBytes, files: settings.files });
    case 'sink':
      return destination.sink;
  }
}

/** Where a request keeps its pending record, and its response what the trail reads of the answer. */
const AUDITED = Symbol('audit record');
const ANSWER = Symbol('audited answer');
type AuditedRequest = IncomingMessage & { [AUDITED]?: PendingAudit };
type AuditedResponse = ServerResponse & { [ANSWER]?: AuditedAnswer };

/**
 * Bytes a record's line takes besides its texts (field names, punctuation, the time, numbers), about: with a byte per
 * character of its texts, what a record is counted at until its line is made (about the memory it holds meanwhile).
 */
const RECORD_FIXED_BYTES = 256;

/** A record completed when its answer ended, its line still to make. */
type CompletedAudit = PendingAudit & { readonly event: DecisionEvent };

/** One request's record in the making: completed when its answer ends, its line made with its batch's. */
class PendingAudit implements DeferredAuditRecord {
  readonly started = performance.now();
  readonly time = isoTimeNow();
  readonly requestId: string;
  event: DecisionEvent | undefined = undefined;
  issuer: string | undefined = undefined;
  server: string | undefined = undefined;
  refusal: string | undefined = undefined;
  args: unknown = undefined;
  errorCode: number | undefined = undefined;
  /** The answer ended: the record is complete, and what the gateway's hooks say from now on changes nothing. */
  done = false;
  /** Set by {@link PendingAudit.complete}, when the answer ends. */
  status = 0;
  durationMs = 0;
  aborted = false;
  recorded: RecordedArguments | undefined = undefined;
  sizeEstimate = 0;

  constructor(
    readonly trail: AuditTrail,
    req: IncomingMessage,
  ) {
    // The request log's line of this request carries the same id.
    this.requestId = httpRequestId(req);
  }

  /**
   * Takes from the ended response what the record needs (its status, whether it was complete, the time it took) and
   * the arguments as recorded, so that nothing of the response is held until the line is made.
   */
  complete(res: ServerResponse, settings: ResolvedAuditOptions): void {
    this.durationMs = Math.round((performance.now() - this.started) * 10) / 10;
    this.status = res.statusCode;
    this.aborted = !res.writableFinished;
    if (this.args !== undefined) {
      this.recorded = recordedArguments(this.args, settings.redact, settings.maxArgumentBytes);
      this.args = undefined;
    }
    const event = this.event!;
    this.sizeEstimate =
      RECORD_FIXED_BYTES +
      this.requestId.length +
      textBytes(this.issuer) +
      textBytes(event.subject) +
      textBytes(event.clientId) +
      textBytes(this.server ?? event.server) +
      textBytes(event.method) +
      textBytes(event.name) +
      textBytes(this.refusal ?? event.reason) +
      textBytes(event.rule) +
      textBytes(event.condition) +
      (this.recorded?.json.length ?? 0);
  }

  line(fields?: Record<string, string | number | boolean>): string {
    return recordLine(this as CompletedAudit, fields);
  }
}

/**
 * What the trail reads of one answer: the response's own `write` and `end`, which the audited ones call, and the
 * chunks still to read for a JSON-RPC error code. It rides on the response alone, so that a record waiting for its
 * batch holds nothing of the response (nor of any wrapper of its methods an application added before the guard).
 */
class AuditedAnswer {
  readonly write: ServerResponse['write'];
  readonly end: ServerResponse['end'];
  /** Chunks still to read for a JSON-RPC error code: an event stream may open with a chunk carrying no message. */
  sniffing = 4;

  constructor(
    readonly record: PendingAudit,
    res: ServerResponse,
  ) {
    this.write = res.write;
    this.end = res.end;
  }

  /** Reads an answer chunk for a JSON-RPC error code, until one names a message. */
  sniff(chunk: unknown): void {
    // Nothing written after the answer ended changes its record.
    if (this.sniffing === 0 || this.record.done) return;
    if (typeof chunk === 'string') {
      this.sniffing--;
      if (chunk.length > SNIFFED_CHUNK_BYTES || !chunk.includes('"jsonrpc"')) return;
      this.sniffing = 0;
      this.record.errorCode = jsonRpcErrorCodeIn(chunk);
    } else if (chunk instanceof Uint8Array) {
      this.sniffing--;
      const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      if (bytes.length > SNIFFED_CHUNK_BYTES) return;
      const scan = scanAnswerBytes(bytes);
      if (scan === NO_MESSAGE) return;
      this.sniffing = 0;
      if (scan === MAYBE_AN_ERROR) this.record.errorCode = jsonRpcErrorCodeIn(bytes.toString());
    }
  }
}

/** About the bytes of a text in a record's line: its length (most are ASCII; a longer line is measured when made). */
function textBytes(text: string | undefined): number {
  return text === undefined ? 0 : text.length;
}

// One function each for every response (no closure per request): the record rides on the response.
function auditedWrite(this: AuditedResponse, chunk: unknown): boolean {
  const answer = this[ANSWER]!;
  answer.sniff(chunk);
  return (answer.write as (...args: unknown[]) => boolean).apply(this, arguments as unknown as unknown[]);
}

function auditedEnd(this: AuditedResponse, chunk: unknown): ServerResponse {
  const answer = this[ANSWER]!;
  if (typeof chunk !== 'function') answer.sniff(chunk);
  return (answer.end as (...args: unknown[]) => ServerResponse).apply(this, arguments as unknown as unknown[]);
}

function onAuditedClose(this: AuditedResponse): void {
  const pending = this[ANSWER]?.record;
  if (pending === undefined || pending.done) return;
  pending.done = true;
  try {
    pending.trail.finish(pending, this);
  } catch {
    // Auditing must never break serving.
  }
}

/**
 * Records that the request was handed to `server` (a gateway with several servers): its audit record names it.
 * Nothing when the request is not audited.
 */
export function auditServerRouted(req: IncomingMessage, server: string): void {
  const pending = (req as AuditedRequest)[AUDITED];
  if (pending !== undefined && !pending.done) pending.server = server;
}

/**
 * Records that the gateway refused the request the guard allowed, for the session it named (`reason`, its stable
 * code): its audit record says `deny` with that reason. Nothing when the request is not audited.
 */
export function auditSessionRefused(req: IncomingMessage, reason: string): void {
  const pending = (req as AuditedRequest)[AUDITED];
  if (pending !== undefined && !pending.done) pending.refusal = reason;
}

/**
 * Records that the gateway decided `req` again after the guard allowed it (a resource request whose server was
 * learnt only then, now under that server's own rules) and refused it: its audit record carries this decision (`deny`,
 * its reason, the rule and condition) instead of the first. Nothing when the request is not audited.
 */
export function auditDecidedAgain(req: IncomingMessage, event: DecisionEvent): void {
  const pending = (req as AuditedRequest)[AUDITED];
  if (pending !== undefined && !pending.done && pending.event !== undefined) pending.event = event;
}

/** Trails not closed yet: at process exit, each writes what it still holds, when its destination can do so at once. */
const OPEN_TRAILS = new Set<AuditTrail>();

function writeHeldRecordsAtExit(): void {
  for (const trail of OPEN_TRAILS) trail.writeHeldSync();
}
