import { createHmac, hash, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import type { AuthInfo } from '../../core/kernel/auth-info.js';
import { callerOrIssuerKey } from '../../core/kernel/caller-key.js';

/** Where each server's list continues: its name and its own cursor. */
export type ServerCursors = ReadonlyArray<readonly [server: string, cursor: string]>;

/** Why a cursor was refused; the client gets the same 400 (-32602) whatever the reason. */
export type CursorRefusal = 'malformed' | 'forged' | 'other_method' | 'other_caller' | 'other_configuration' | 'expired' | 'too_long';

/** Longest cursor read, in characters: longer ones are refused unread. */
export const MAX_CURSOR_LENGTH = 4096;
/** How long a cursor opens after it was made, in milliseconds: an hour. */
export const CURSOR_MAX_AGE_MS = 3_600_000;
const VERSION = 'v1';
const MAC_BYTES = 16;
const INFO = 'mcp-oauth-guard list cursor';

/**
 * The opaque cursor of a merged list: which servers have more pages, and each one's own cursor, bound to the
 * list method, the caller, the servers configured and a time, and authenticated with HMAC-SHA256 (truncated to
 * 128 bits). Integrity is what matters: the servers' cursors are opaque already, and a client must never steer
 * one server's cursor to another server, or to another caller's list. With the sealed-session secret every
 * replica opens the cursors of every other; without one, the key is drawn per process.
 *
 * @example
 * const cursors = new ListCursors({ configuration: 'notes,files' });
 * const cursor = cursors.make('tools/list', auth, [['notes', 'page2']]);
 * cursors.open(cursor, 'tools/list', auth); // { servers: [['notes', 'page2']] }
 */
export class ListCursors {
  private readonly keys: readonly Buffer[];
  private readonly configuration: string;
  private readonly now: () => number;

  /**
   * @param options.secrets - Key material (the sealed sessions' keys): the first signs, every one verifies.
   *   Default: one random key for this process.
   * @param options.configuration - What identifies the servers configured (their names in order): a cursor made
   *   under another configuration is refused.
   */
  constructor(options: { secrets?: readonly Uint8Array[]; configuration: string; now?: () => number }) {
    const secrets = options.secrets && options.secrets.length > 0 ? options.secrets : [randomBytes(32)];
    this.keys = secrets.map((secret) => Buffer.from(hkdfSync('sha256', secret, new Uint8Array(0), INFO, 32)));
    this.configuration = hash('sha256', options.configuration, 'base64url').slice(0, 11);
    this.now = options.now ?? Date.now;
  }

  /** A cursor for the next page of `method` for the caller of `auth`. */
  make(method: string, auth: AuthInfo, servers: ServerCursors): string {
    const payload = Buffer.from(
      JSON.stringify({ m: method, o: ownerOf(auth), c: this.configuration, t: Math.floor(this.now() / 1000), s: servers }),
    ).toString('base64url');
    return `${VERSION}.${payload}.${mac(this.keys[0]!, payload).toString('base64url')}`;
  }

  /** What a cursor carries, or why it is refused. */
  open(cursor: unknown, method: string, auth: AuthInfo): { servers: ServerCursors } | { refused: CursorRefusal } {
    if (typeof cursor !== 'string') return { refused: 'malformed' };
    if (cursor.length > MAX_CURSOR_LENGTH) return { refused: 'too_long' };
    const [version, payload, tag, extra] = cursor.split('.');
    if (version !== VERSION || payload === undefined || tag === undefined || extra !== undefined) return { refused: 'malformed' };
    const given = Buffer.from(tag, 'base64url');
    if (given.length !== MAC_BYTES || !this.keys.some((key) => timingSafeEqual(mac(key, payload), given))) return { refused: 'forged' };
    let body: { m?: unknown; o?: unknown; c?: unknown; t?: unknown; s?: unknown };
    try {
      body = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as typeof body;
    } catch {
      return { refused: 'malformed' };
    }
    if (body.m !== method) return { refused: 'other_method' };
    if (body.o !== ownerOf(auth)) return { refused: 'other_caller' };
    if (body.c !== this.configuration) return { refused: 'other_configuration' };
    if (typeof body.t !== 'number' || this.now() - body.t * 1000 > CURSOR_MAX_AGE_MS) return { refused: 'expired' };
    if (!isServerCursors(body.s)) return { refused: 'malformed' };
    return { servers: body.s };
  }
}

function mac(key: Buffer, payload: string): Buffer {
  return createHmac('sha256', key).update(payload).digest().subarray(0, MAC_BYTES);
}

/** The caller a cursor belongs to: a digest, so the cursor does not carry the caller's identity in clear. */
function ownerOf(auth: AuthInfo): string {
  return hash('sha256', callerOrIssuerKey(auth), 'base64url').slice(0, 22);
}

function isServerCursors(value: unknown): value is ServerCursors {
  return Array.isArray(value) && value.every((entry) => Array.isArray(entry) && entry.length === 2 && typeof entry[0] === 'string' && typeof entry[1] === 'string');
}
