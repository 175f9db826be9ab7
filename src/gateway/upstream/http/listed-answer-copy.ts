/**
 * A copy of an upstream's answer to a connected user's list request, read once the answer is complete and told to
 * the upstream's kept lists ({@link KeptLists}), so that users who have not connected can be shown its definitions.
 * The answer itself goes on to the client unchanged and unhindered: the copy only holds its chunks.
 */
import type { JsonRpcMessage } from '../../../core/wire/jsonrpc.js';
import type { KeptLists } from '../../upstream-auth/kept-lists.js';
import { findResponse } from '../answer-response.js';

/**
 * Most bytes of an answer copied, in bytes (4 MiB): a list answer past this is not read (what it held is not kept,
 * and the kept list stays as it was), so a huge answer costs no more memory than this.
 */
export const MAX_LISTED_ANSWER_COPY_BYTES = 4 * 1024 * 1024;

/** The copy of one answer; see {@link listedAnswerCopy}. */
export interface ListedAnswerCopy {
  /** A chunk of the answer's body, as relayed. */
  push(chunk: Buffer): void;
  /** The answer ended complete: its response is read and told to the kept lists (in the background). */
  end(): void;
}

/**
 * A copy of the answer to `message` when it is worth one: a first page (no cursor) of a list `kept` wants now (see
 * `KeptLists.wants`), answered 200; else undefined, and nothing is copied.
 *
 * @example
 * const copy = listedAnswerCopy(credentials.keptLists, message, status, headers['content-type']);
 * copy?.push(chunk); // for each chunk relayed
 * copy?.end(); // once the answer is complete
 */
export function listedAnswerCopy(kept: KeptLists | undefined, message: JsonRpcMessage | undefined, status: number, contentType: unknown): ListedAnswerCopy | undefined {
  if (kept === undefined || status !== 200 || message === undefined || !('method' in message) || !('id' in message) || (message.params as { cursor?: unknown } | undefined)?.cursor !== undefined) return undefined;
  if (!kept.wants(message.method)) return undefined;
  const { method, id } = message;
  const chunks: Buffer[] = [];
  let bytes = 0;
  return {
    push(chunk) {
      bytes += chunk.length;
      if (bytes <= MAX_LISTED_ANSWER_COPY_BYTES) chunks.push(chunk);
      else chunks.length = 0;
    },
    end() {
      if (bytes > MAX_LISTED_ANSWER_COPY_BYTES) return;
      const response = findResponse(typeof contentType === 'string' ? contentType : undefined, Buffer.concat(chunks, bytes).toString('utf8'), id);
      if (response !== undefined && 'result' in response) void kept.learnt(method, response.result);
    },
  };
}
