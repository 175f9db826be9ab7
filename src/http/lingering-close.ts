import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { addressGroup } from '../core/kernel/address-group.js';
import { defaultCallerShare, sharePressure } from '../core/limits/caller-share.js';

/**
 * Longest a connection is kept reading after an early answer, in milliseconds, counted from the answer. Long
 * enough for a client on a 10 Mbit/s link to finish sending a body of a few megabytes; nginx's `lingering_time`
 * (30 s) is the same idea with a more generous bound.
 */
export const LINGER_MAX_MS = 5_000;
/** Longest pause between two pieces of the rest of a body before the connection is closed (nginx: `lingering_timeout`, 5 s). */
export const LINGER_IDLE_MS = 2_000;
/** Most bytes read and discarded after an early answer, per connection. */
export const LINGER_MAX_BYTES = 8 * 1024 * 1024;
/**
 * Most connections lingering at once in the process. Past it, an early answer closes its connection at once, as
 * if there were no lingering close. The slots are shared between client addresses ({@link LINGER_MAX_PER_ADDRESS}).
 */
export const LINGER_MAX_CONNECTIONS = 256;
/**
 * Most connections one client address (an IPv4 address, or an IPv6 /64: see `addressGroup`) keeps lingering once
 * half of {@link LINGER_MAX_CONNECTIONS} are in use: 1 % of them, as every bounded store shares itself
 * (`caller-share.ts`). Below half nobody is limited; so one address sending many large bodies takes at most half
 * the slots, and the other half is left to addresses within their share.
 */
export const LINGER_MAX_PER_ADDRESS = defaultCallerShare(LINGER_MAX_CONNECTIONS);
const LINGER_SHARE_PRESSURE = sharePressure(LINGER_MAX_CONNECTIONS);

let lingering = 0;
/** Connections lingering per address group; at most {@link LINGER_MAX_CONNECTIONS} entries, each at least 1. */
const lingeringByAddress = new Map<string, number>();

/** Whether the request announced a body and not all of it has arrived yet. */
export function bodyStillArriving(req: IncomingMessage): boolean {
  if (req.complete || req.readableEnded) return false;
  const length = req.headers['content-length'];
  return length !== undefined ? length !== '0' : req.headers['transfer-encoding'] !== undefined;
}

/**
 * Keeps reading and discarding what `source` still sends, then calls `close`: once the client has sent all it
 * meant to (`end` from `source`), or when a bound above is reached. `source` is the request (its body) or, when
 * Node's parser has given up on the connection, the socket; `socket` is the connection, whose peer address is
 * counted. Returns false, having called nothing, when {@link LINGER_MAX_CONNECTIONS} are already lingering, or half
 * of them are and this address holds its share ({@link LINGER_MAX_PER_ADDRESS}): the caller then closes at once.
 */
function linger(source: NodeJS.ReadableStream & { destroyed?: boolean }, socket: Socket | Duplex, close: (complete: boolean) => void): boolean {
  // A socket already without a peer address counts as one group of its own.
  const address = addressGroup((socket as Partial<Socket>).remoteAddress) ?? '';
  const ofAddress = lingeringByAddress.get(address) ?? 0;
  if (lingering >= LINGER_MAX_CONNECTIONS || (lingering >= LINGER_SHARE_PRESSURE && ofAddress >= LINGER_MAX_PER_ADDRESS)) return false;
  lingering += 1;
  lingeringByAddress.set(address, ofAddress + 1);
  let discarded = 0;
  let done = false;
  const finish = (complete: boolean): void => {
    if (done) return;
    done = true;
    lingering -= 1;
    const left = (lingeringByAddress.get(address) ?? 1) - 1;
    if (left <= 0) lingeringByAddress.delete(address);
    else lingeringByAddress.set(address, left);
    clearTimeout(total);
    clearTimeout(idle);
    source.off('data', onData);
    source.off('end', onEnd);
    source.off('close', onClose);
    close(complete);
  };
  const onData = (chunk: Buffer): void => {
    discarded += chunk.length;
    if (discarded > LINGER_MAX_BYTES) finish(false);
    else idle.refresh();
  };
  const onEnd = (): void => finish(true);
  const onClose = (): void => finish(false);
  const total = setTimeout(() => finish(false), LINGER_MAX_MS);
  const idle = setTimeout(() => finish(false), LINGER_IDLE_MS);
  // Timers of a lingering connection never keep the process alive by themselves.
  total.unref();
  idle.unref();
  source.on('data', onData);
  source.once('end', onEnd);
  source.once('close', onClose);
  source.resume();
  return true;
}

/**
 * Ends an answer given while the request body is still arriving (a 413, a 408, a refusal before the body is read)
 * without losing it: the answer, with `Connection: close`, is written at once, and the response is ended, which
 * makes `node:http` close the connection, only once the rest of the body is read and discarded, within the
 * `LINGER_*` bounds. Closing a socket with unread bytes makes the kernel send a reset, and a client still sending
 * (Node's `fetch` and `node:http` do so until the body is written) then fails with `EPIPE` or `ECONNRESET`
 * without reading the answer. This is the lingering close of RFC 9112 §9.6 ("Tear-down") and of nginx.
 *
 * Past a bound the connection is destroyed: the client may then see a reset, as it would have without lingering.
 *
 * @param write writes the whole answer (status, headers, body) without ending the response.
 */
export function answerThenLinger(req: IncomingMessage, res: ServerResponse, write: () => void): void {
  res.setHeader('Connection', 'close');
  write();
  const started = linger(req, req.socket, (complete) => {
    if (complete) res.end();
    else res.destroy();
  });
  if (!started) {
    // What still arrives is discarded until node:http closes the socket.
    req.resume();
    res.end();
  }
}

/**
 * The same for an answer written straight to a socket (what Node's parser refused, see `answerClientErrors`):
 * `answer` is written and the sending side closed, then what the client still sends is discarded until it
 * closes its side or a bound is reached, and the socket is destroyed.
 */
export function endSocketThenLinger(socket: Duplex, answer: string): void {
  socket.end(answer);
  const started = linger(socket, socket, () => socket.destroy());
  if (!started) socket.once('finish', () => socket.destroy());
}

/** Connections lingering now, for tests. */
export function lingeringConnections(): number {
  return lingering;
}
