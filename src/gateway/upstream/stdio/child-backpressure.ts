import type { ServerResponse } from 'node:http';
import type { JsonRpcMessage } from '../../../core/wire/jsonrpc.js';
import { writeEvent } from '../../../http/write-response.js';
import type { StdioChild } from './stdio-child.js';

/** Answers whose client is slow to read, each holding its child's output until it drains. */
const draining = new WeakSet<ServerResponse>();

/**
 * Writes one event, and while the client is slow to read, holds the child's stdout: a slow client slows the
 * process that serves it instead of filling the gateway's memory (each child serves one caller).
 */
export function writeHoldingChild(res: ServerResponse, child: StdioChild, message: JsonRpcMessage): void {
  holdChildWhileDraining(res, child, writeEvent(res, message));
}

/** After a write to `res` that returned `writable`: holds the child's stdout until `res` drains, if it must. */
export function holdChildWhileDraining(res: ServerResponse, child: StdioChild, writable: boolean): void {
  if (writable || draining.has(res)) return;
  draining.add(res);
  const release = child.hold();
  const done = (): void => {
    draining.delete(res);
    res.off('drain', done);
    res.off('close', done);
    release();
  };
  res.once('drain', done);
  res.once('close', done);
}
