/**
 * Where pins are kept: a pin file (`MCP_AUTH_PIN_FILE=<path>`, for one gateway process and its commands) or the
 * shared store (`MCP_AUTH_PIN_FILE=redis`, for a fleet). The gateway reads them at start-up, re-reads them when
 * their version changes (an operator's `pins accept` from another process), and writes the pins it makes.
 */
import { open, stat } from 'node:fs/promises';
import { ConfigurationError } from '../../core/kernel/errors.js';
import { withFileLock } from '../../core/kernel/file-lock.js';
import { writeFileAtomically } from '../../core/kernel/write-file-atomically.js';
import { parsePinDocument, serializePinDocument, MAX_PIN_DOCUMENT_BYTES, type PinSet, type ToolPin } from './pin-document.js';

/** One change to the stored pins: a tool pinned (again), or its pin removed (`pin` undefined). */
export interface PinChange {
  readonly server: string;
  readonly tool: string;
  readonly pin: ToolPin | undefined;
}

/** A place pins are kept. */
export interface PinStore {
  /** How logs and errors name it: the file's path, or `redis`. */
  readonly name: string;
  /**
   * Every pin. A file that does not exist holds none.
   *
   * @throws ConfigurationError naming `MCP_AUTH_PIN_FILE` for a store that cannot be read or holds no pin document.
   */
  load(): Promise<PinSet>;
  /** Applies `changes` to what is stored now (read again first, so another writer's pins are kept). */
  write(changes: readonly PinChange[]): Promise<void>;
  /** A text that changes whenever the stored pins do; cheap to ask for often. */
  version(): Promise<string>;
  close(): Promise<void>;
}

/** The setting that names the store, in errors. */
export const PIN_FILE_SETTING = 'MCP_AUTH_PIN_FILE';

/**
 * A pin file: one JSON document (see `pin-document.ts`), replaced whole on each write by a temporary file renamed
 * over it, so a reader never sees half a document. Writes of one process are serialized, and every process's writes
 * hold the file's lock (`<file>.lock`); a write reads the file again first, so pins another process wrote are kept.
 *
 * @example
 * const store = createFilePinStore('/var/lib/mcp-oauth-guard/pins.json');
 * const pins = await store.load();
 */
export function createFilePinStore(file: string): PinStore {
  let writing: Promise<void> = Promise.resolve();
  const load = async (): Promise<PinSet> => {
    const text = await readBounded(file);
    return text === undefined ? new Map() : parsePinDocument(text, `${PIN_FILE_SETTING} (${file})`);
  };
  return {
    name: file,
    load,
    write(changes) {
      // The lock keeps another process's read-then-write (a `pins accept` beside the gateway) from being lost.
      const done = writing.then(() =>
        withFileLock(`${file}.lock`, async () => {
          const pins = await load();
          applyChanges(pins, changes);
          await writeAtomically(file, serializePinDocument(pins));
        }),
      );
      writing = done.catch(() => undefined);
      return done;
    },
    async version() {
      try {
        const info = await stat(file);
        return `${info.ino}:${info.size}:${info.mtimeMs}`;
      } catch {
        return 'none';
      }
    },
    close: () => writing,
  };
}

/** Applies `changes` to `pins` in place. */
export function applyChanges(pins: PinSet, changes: readonly PinChange[]): void {
  for (const { server, tool, pin } of changes) {
    let tools = pins.get(server);
    if (pin === undefined) {
      tools?.delete(tool);
      continue;
    }
    if (tools === undefined) pins.set(server, (tools = new Map()));
    tools.set(tool, pin);
  }
}

/** The file's text, or undefined when it does not exist. @throws ConfigurationError when it cannot be read or is too large. */
async function readBounded(file: string): Promise<string | undefined> {
  let handle;
  try {
    handle = await open(file, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ConfigurationError(PIN_FILE_SETTING, `cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}): ${file}`);
  }
  try {
    const { size } = await handle.stat();
    if (size > MAX_PIN_DOCUMENT_BYTES) throw new ConfigurationError(PIN_FILE_SETTING, `is ${size} bytes, more than a pin file may hold (${MAX_PIN_DOCUMENT_BYTES}): ${file}`);
    const buffer = Buffer.alloc(size);
    const { bytesRead } = await handle.read(buffer, 0, size, 0);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}

/** Replaces the pin file with `text`, whole or not at all. */
async function writeAtomically(file: string, text: string): Promise<void> {
  if (Buffer.byteLength(text) > MAX_PIN_DOCUMENT_BYTES) throw new Error(`the pins would take more than ${MAX_PIN_DOCUMENT_BYTES} bytes`);
  // Readable by the operator's other accounts (the pins are no secret); the commands may run as another user.
  await writeFileAtomically(file, text, 0o644);
}
