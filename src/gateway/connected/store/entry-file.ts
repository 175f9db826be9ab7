/**
 * One entry of the directory token store as a file: its name is the store key in base64url, its first line the
 * expiry (milliseconds since the epoch, `0` for none), the rest the sealed value. Written whole or not at all: a
 * temporary file in the same directory, flushed to the disk, then renamed over the entry, so that a crash leaves
 * the old file or the new one, never a torn one.
 */
import { open, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { TEMPORARY_FILE_PREFIX, writeFileAtomically } from '../../../core/kernel/write-file-atomically.js';

/** What an entry file holds. */
export interface EntryFile {
  readonly value: string;
  /** Milliseconds since the epoch; `Infinity` for an entry without a TTL. */
  readonly expiresAt: number;
}

/** Names of files being written start with this; no entry's name can (base64url has no dot). */
export const TEMP_FILE_PREFIX = TEMPORARY_FILE_PREFIX;
/**
 * Longest entry file name, in characters: file systems allow 255 bytes, and a key is kept readable from its name.
 * Keys of up to 180 bytes fit.
 */
export const MAX_ENTRY_NAME_LENGTH = 240;
/** The expiry line: up to 16 digits and its newline. */
const MAX_HEADER_BYTES = 17;

/** The file name of `key`, or undefined when the key is empty or too long to be one. */
export function entryFileName(key: string): string | undefined {
  if (typeof key !== 'string' || key === '') return undefined;
  const name = Buffer.from(key, 'utf8').toString('base64url');
  return name.length <= MAX_ENTRY_NAME_LENGTH ? name : undefined;
}

/** The key an entry file name stands for, or undefined for a file that is not an entry (a temporary file, any other). */
export function entryKeyOf(name: string): string | undefined {
  if (name.startsWith('.') || name.length > MAX_ENTRY_NAME_LENGTH || !/^[A-Za-z0-9_-]+$/.test(name)) return undefined;
  const key = Buffer.from(name, 'base64url').toString('utf8');
  // Only the one name each key has: not an entry otherwise.
  return entryFileName(key) === name ? key : undefined;
}

/**
 * Reads the entry at `path`: undefined when there is none, or when it is not a well-formed entry of at most
 * `maxValueBytes` (such a file is left alone, and is as good as absent).
 *
 * @throws the file system's error for anything but a missing file.
 */
export async function readEntryFile(path: string, maxValueBytes: number): Promise<EntryFile | undefined> {
  const file = await openIfPresent(path);
  if (file === undefined) return undefined;
  try {
    const { size } = await file.stat();
    if (size > maxValueBytes + MAX_HEADER_BYTES) return undefined;
    const buffer = Buffer.alloc(size);
    const { bytesRead } = await file.read(buffer, 0, size, 0);
    return parseEntry(buffer.subarray(0, bytesRead).toString('utf8'));
  } finally {
    await file.close();
  }
}

/**
 * The expiry of the entry at `path`, reading its first line only (the sweep reads every entry); undefined when
 * there is none or it is not well formed.
 *
 * @throws the file system's error for anything but a missing file.
 */
export async function readEntryExpiry(path: string): Promise<number | undefined> {
  const file = await openIfPresent(path);
  if (file === undefined) return undefined;
  try {
    const buffer = Buffer.alloc(MAX_HEADER_BYTES);
    const { bytesRead } = await file.read(buffer, 0, MAX_HEADER_BYTES, 0);
    const text = buffer.subarray(0, bytesRead).toString('latin1');
    return parseExpiry(text.slice(0, text.indexOf('\n')));
  } finally {
    await file.close();
  }
}

/**
 * Writes the entry `name` in `directory` atomically, mode 0600: a temporary file, fsync, rename, then an fsync of
 * the directory so that the rename itself survives a power loss.
 *
 * @throws the file system's error; the temporary file is removed then.
 */
export async function writeEntryFile(directory: string, name: string, entry: EntryFile): Promise<void> {
  const header = entry.expiresAt === Infinity ? '0' : String(Math.ceil(entry.expiresAt));
  await writeFileAtomically(join(directory, name), `${header}\n${entry.value}`, 0o600);
}

/** Removes the file at `path`; false when there was none. */
export async function removeEntryFile(path: string): Promise<boolean> {
  try {
    await unlink(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}

async function openIfPresent(path: string): Promise<FileHandle | undefined> {
  try {
    return await open(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

function parseEntry(text: string): EntryFile | undefined {
  const newline = text.indexOf('\n');
  if (newline < 0) return undefined;
  const expiresAt = parseExpiry(text.slice(0, newline));
  return expiresAt === undefined ? undefined : { value: text.slice(newline + 1), expiresAt };
}

function parseExpiry(line: string): number | undefined {
  if (!/^\d{1,16}$/.test(line)) return undefined;
  const value = Number(line);
  return value === 0 ? Infinity : value;
}
