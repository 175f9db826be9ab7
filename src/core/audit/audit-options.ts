/**
 * The audit trail's options: where records go, whether tool arguments are kept (and what of them is redacted), how
 * a file is rotated and how much memory records waiting to be written may take. Validated at start-up, every bad
 * one named at once, under the name it was configured by (`options.audit.files` or `MCP_AUTH_AUDIT_FILES`).
 */
import { accessSync, constants, statSync } from 'node:fs';
import { dirname, isAbsolute } from 'node:path';
import { checkInteger } from '../kernel/settings.js';
import { collectConfigurationProblems, type ConfigurationProblems } from '../kernel/configuration-problems.js';
import { ConfigurationError } from '../kernel/errors.js';
import { parseJsonPointer, type JsonPointer } from './json-pointer.js';

/**
 * Where audit records are written, one JSON line each: a function given each batch (lines, each ending in a
 * newline), e.g. to ship them elsewhere; it may return a promise, and the next batch waits for it.
 */
export interface AuditSink {
  /** Writes one batch of records: JSON lines, each ending in `\n`. Rejecting (or throwing) drops the batch, counted. */
  write(lines: string): void | Promise<void>;
  /** Called once when the trail closes, after the last batch. */
  close?(): void | Promise<void>;
}

/**
 * Where audit records go: `stdout`; `otel`, as OpenTelemetry log records through the logger provider the application
 * registered (`@opentelemetry/api-logs`; none registered, they go nowhere); an absolute file path, rotated by size;
 * or an {@link AuditSink}.
 */
export type AuditDestination = 'stdout' | 'otel' | (string & {}) | AuditSink;

/**
 * The audit trail (`MCP_AUTH_AUDIT` and the `MCP_AUTH_AUDIT_*` settings): one JSON record per request that reaches a
 * decision, written when its answer ends. See docs/audit.md.
 *
 * @example
 * { to: '/var/log/mcp/audit.jsonl', arguments: true, redact: ['/password', '/card/number'] }
 */
export interface AuditOptions {
  /** Where records go (see {@link AuditDestination}). Required. */
  to: AuditDestination;
  /**
   * Whether a `tools/call` record carries the call's arguments (`MCP_AUTH_AUDIT_ARGUMENTS`), after redaction and cut
   * to {@link AuditOptions.maxArgumentBytes}. Default false: arguments are never recorded.
   */
  arguments?: boolean;
  /**
   * JSON Pointers (RFC 6901) into the arguments whose values are replaced by `"[redacted]"` (`MCP_AUTH_AUDIT_REDACT`),
   * e.g. `['/password', '/card/number']`. Default none.
   */
  redact?: readonly string[];
  /** Largest arguments kept in a record, in bytes of JSON; longer ones are cut and marked. Default 4 096. */
  maxArgumentBytes?: number;
  /** With a file: its size, in bytes, past which it is rotated (`MCP_AUTH_AUDIT_MAX_BYTES`). Default 104 857 600 (100 MiB). */
  maxFileBytes?: number;
  /**
   * With a file: how many files are kept, the one being written included (`MCP_AUTH_AUDIT_FILES`): `audit.jsonl`,
   * `audit.jsonl.1` (the newest rotated), … Default 5.
   */
  files?: number;
  /**
   * Most memory records waiting to be written may take, in bytes; past it new records are dropped and counted
   * (`onAuditDropped`, the metric `mcp_guard_audit_dropped_total`) rather than slow requests down. Default 8 388 608 (8 MiB).
   */
  bufferBytes?: number;
}

/** Default {@link AuditOptions.maxArgumentBytes}. */
export const DEFAULT_AUDIT_ARGUMENT_BYTES = 4_096;
/** Default {@link AuditOptions.maxFileBytes}: 100 MiB. */
export const DEFAULT_AUDIT_MAX_FILE_BYTES = 100 * 1_048_576;
/** Default {@link AuditOptions.files}. */
export const DEFAULT_AUDIT_FILES = 5;
/** Default {@link AuditOptions.bufferBytes}: 8 MiB. */
export const DEFAULT_AUDIT_BUFFER_BYTES = 8 * 1_048_576;

/** The destination, resolved: what kind, and the file or sink. */
export type ResolvedAuditDestination = { kind: 'stdout' } | { kind: 'otel' } | { kind: 'file'; path: string } | { kind: 'sink'; sink: AuditSink };

/** {@link AuditOptions} validated, with defaults applied and pointers parsed. */
export interface ResolvedAuditOptions {
  /** Where records go. */
  readonly destination: ResolvedAuditDestination;
  /** Whether a `tools/call` record carries its arguments. */
  readonly arguments: boolean;
  /** The pointers redacted in those arguments, parsed. */
  readonly redact: readonly JsonPointer[];
  /** Largest arguments kept, in bytes of JSON. */
  readonly maxArgumentBytes: number;
  /** With a file: its size past which it is rotated, in bytes. */
  readonly maxFileBytes: number;
  /** With a file: the files kept, the one written included. */
  readonly files: number;
  /** Most bytes of records held before new ones are dropped. */
  readonly bufferBytes: number;
}

/** How each audit option is named in errors: `options.audit.files`, or the variable it was read from. */
export type AuditSettingNames = Readonly<Record<keyof AuditOptions, string>>;

/** The names of options given in code. */
export const AUDIT_OPTION_NAMES: AuditSettingNames = {
  to: 'options.audit.to',
  arguments: 'options.audit.arguments',
  redact: 'options.audit.redact',
  maxArgumentBytes: 'options.audit.maxArgumentBytes',
  maxFileBytes: 'options.audit.maxFileBytes',
  files: 'options.audit.files',
  bufferBytes: 'options.audit.bufferBytes',
};

/**
 * Validates the audit options: undefined or false (off) gives undefined.
 *
 * @throws ConfigurationError naming every bad option.
 */
export function resolveAuditOptions(options: AuditOptions | false | undefined, names: AuditSettingNames = AUDIT_OPTION_NAMES): ResolvedAuditOptions | undefined {
  if (options === undefined || options === false) return undefined;
  if (typeof options !== 'object' || options === null) throw new ConfigurationError(names.to, 'options.audit must be an object such as { to: "stdout" }, or false');
  return collectConfigurationProblems((problems) => {
    const destination = problems.check(() => resolveDestination(options.to, names.to));
    if (options.arguments !== undefined && typeof options.arguments !== 'boolean') problems.add(names.arguments, 'must be true or false');
    const redact = problems.check(() => resolvePointers(options.redact, names.redact));
    const fileOnly = (key: 'maxFileBytes' | 'files'): void => {
      if (options[key] !== undefined && destination !== undefined && destination.kind !== 'file') problems.add(names[key], `rotates an audit file: it does nothing with ${names.to} ${destination.kind === 'sink' ? 'a sink' : destination.kind}`);
    };
    fileOnly('maxFileBytes');
    fileOnly('files');
    if (redact !== undefined && redact.length > 0 && options.arguments !== true) problems.add(names.redact, `redacts recorded arguments: set ${names.arguments} too, or leave it out`);
    const numbers = readNumbers(options, names, problems);
    problems.throwIfAny();
    return { destination: destination!, arguments: options.arguments === true, redact: redact ?? [], ...numbers };
  });
}

function readNumbers(options: AuditOptions, names: AuditSettingNames, problems: ConfigurationProblems): Pick<ResolvedAuditOptions, 'maxArgumentBytes' | 'maxFileBytes' | 'files' | 'bufferBytes'> {
  const maxArgumentBytes = problems.check(() => checkInteger(options.maxArgumentBytes, names.maxArgumentBytes, DEFAULT_AUDIT_ARGUMENT_BYTES, { min: 64, max: 1_048_576 }));
  const maxFileBytes = problems.check(() => checkInteger(options.maxFileBytes, names.maxFileBytes, DEFAULT_AUDIT_MAX_FILE_BYTES, { min: 4_096 }));
  const files = problems.check(() => checkInteger(options.files, names.files, DEFAULT_AUDIT_FILES, { min: 1, max: 1_000 }));
  const bufferBytes = problems.check(() => checkInteger(options.bufferBytes, names.bufferBytes, DEFAULT_AUDIT_BUFFER_BYTES, { min: 65_536, max: 1_073_741_824 }));
  return { maxArgumentBytes: maxArgumentBytes!, maxFileBytes: maxFileBytes!, files: files!, bufferBytes: bufferBytes! };
}

function resolveDestination(to: unknown, setting: string): ResolvedAuditDestination {
  if (typeof to === 'object' && to !== null && typeof (to as AuditSink).write === 'function') return { kind: 'sink', sink: to as AuditSink };
  if (typeof to !== 'string' || to.trim() === '') throw new ConfigurationError(setting, 'is required: stdout, otel, an absolute file path, or a sink with a write(lines) method');
  if (to === 'stdout' || to === 'otel') return { kind: to };
  if (!isAbsolute(to)) throw new ConfigurationError(setting, `"${to}" is neither off, stdout, otel nor an absolute file path`);
  checkWritableFile(to, setting);
  return { kind: 'file', path: to };
}

/** Refuses at start-up a file that could not be written, rather than losing every record later. */
function checkWritableFile(path: string, setting: string): void {
  const folder = dirname(path);
  try {
    if (!statSync(folder).isDirectory()) throw new ConfigurationError(setting, `${folder} is not a folder`);
    accessSync(folder, constants.W_OK);
  } catch (error) {
    if (error instanceof ConfigurationError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new ConfigurationError(setting, `the folder ${folder} does not exist; create it, or give a file in a folder that does`);
    throw new ConfigurationError(setting, `the folder ${folder} cannot be written (${code ?? 'error'})`);
  }
  try {
    if (statSync(path).isDirectory()) throw new ConfigurationError(setting, `${path} is a folder; give a file path`);
  } catch (error) {
    if (error instanceof ConfigurationError) throw error;
    // No such file yet: it is made on the first record.
  }
}

function resolvePointers(redact: unknown, setting: string): JsonPointer[] {
  if (redact === undefined) return [];
  if (!Array.isArray(redact) || redact.some((p) => typeof p !== 'string')) throw new ConfigurationError(setting, 'must be a list of JSON Pointers (RFC 6901), e.g. ["/password"]');
  return collectConfigurationProblems((problems) => {
    const pointers = (redact as string[]).map((text) => problems.check(() => parseJsonPointer(text, setting)));
    problems.throwIfAny();
    return pointers as JsonPointer[];
  });
}
