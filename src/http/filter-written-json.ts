/**
 * The JSON path of the written-answer filter (`filter-written-response.ts`): the head and body of an
 * `application/json` answer held back until `end`, then filtered (or the memo's filtered form reused).
 */
import type { JsonRpcId, JsonRpcMessage } from '../core/wire/jsonrpc.js';
import { filterJsonText, UNFILTERABLE, type AnswerRewrites } from '../core/policy/response-filter.js';
import { LIST_ANSWER_MEMO_MAX_BYTES, memoPrefixText, remember, type ListAnswerMemo } from './list-answer-memo.js';
import type { HeadersArg } from './written-head.js';

/** A memo and the key of this caller's answers in it; see `FilterListResponseOptions.memo`. */
export interface ListAnswerMemoEntry {
  key: string;
  store: ListAnswerMemo;
  /** A part of `key` that may change while the answer is awaited, read again when it arrives; see `FilterListResponseOptions.memo`. */
  part?: { key(): string };
  /** What `part.key()` returned when `key` was made. */
  partKey?: string;
}

/** Whether `memo` still stands: its key's changing part (if any) is what it was when the key was made. */
function standing(memo: ListAnswerMemoEntry): boolean {
  return memo.part === undefined || memo.part.key() === memo.partKey;
}

/** What a held answer becomes: the bytes to write (one buffer, or parts written in one corked write), and whether they were rewritten. */
export interface FilteredJsonAnswer {
  out: Buffer | readonly Buffer[];
  changed: boolean;
}

/** The head and body of one JSON answer, held back until `end` so that it can be filtered whole. */
export class HeldJsonAnswer {
  /** The body as written, in order. */
  private chunks: Buffer[] = [];
  /** Bytes in {@link chunks}. */
  bytes = 0;
  /** The callback given to `end`, called once the filtered answer is written. */
  endCallback: (() => void) | undefined;

  constructor(
    public status: number,
    public statusMessage: string | undefined,
    public headers: HeadersArg,
  ) {}

  /** A second head before the body was sent (an error path): the newest one wins, and the body so far is dropped. */
  replaceHead(status: number, statusMessage: string | undefined, headers: HeadersArg): void {
    this.status = status;
    this.statusMessage = statusMessage;
    this.headers = headers;
    this.chunks = [];
    this.bytes = 0;
  }

  push(buf: Buffer): void {
    this.chunks.push(buf);
    this.bytes += buf.length;
  }

  /** Forgets the body held so far (the answer is being replaced). */
  drop(): void {
    this.chunks = [];
  }

  /**
   * The answer to write and whether it was rewritten, reusing or filling `memo`; {@link UNFILTERABLE} when it must
   * be filtered but is not JSON. The held body is let go either way.
   *
   * @param always Parse whatever the text (the answer to a list or read request); else only when
   *   `rewrites.mayNeedFiltering`.
   * @param rewrites Which answers the filter's lists mode rewrites (see `answerRewrites`).
   */
  filter(
    filter: (response: JsonRpcMessage) => JsonRpcMessage,
    always: boolean,
    requestId: JsonRpcId | null,
    memo: ListAnswerMemoEntry | undefined,
    rewrites: AnswerRewrites,
  ): FilteredJsonAnswer | typeof UNFILTERABLE {
    // An answer arriving after the key's changing part moved is neither served from the memo nor kept in it.
    if (memo !== undefined && !standing(memo)) memo = undefined;
    const prefixText = memo === undefined ? undefined : memoPrefixText(requestId);
    const prefix = prefixText === undefined ? undefined : Buffer.from(prefixText);
    const seen = memo?.store.get(memo.key);
    // Only a rewritten answer is reused: one the filter left alone is forwarded as written anyway. Kept as
    // bytes, so a hit costs two copies and no parse, filter, serialisation or UTF-8 encoding.
    if (prefix !== undefined && seen?.filteredRest !== undefined && this.equals(prefix, seen.rest)) {
      this.chunks = [];
      // Written as two buffers in one corked write: no copy of a large answer, no allocation to collect.
      return { out: [prefix, seen.filteredRest], changed: true };
    }
    const body = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.bytes);
    this.chunks = [];
    // An empty body reveals nothing; the answer to a call that could hold no list is never decoded or parsed.
    if (body.length === 0 || (!always && !rewrites.mayNeedFiltering(body))) return { out: body, changed: false };
    // Nothing rewritten: forwarded as written. Not JSON: nothing is forwarded (fail closed).
    const filteredText = filterJsonText(body.toString('utf8'), filter, always, rewrites);
    if (filteredText === UNFILTERABLE) return UNFILTERABLE;
    // Encoded once: the same bytes are written and, on a miss, kept (`body` is a fresh copy nothing changes).
    const filtered = filteredText === undefined ? undefined : Buffer.from(filteredText);
    const canonical = prefix !== undefined && body.length > prefix.length && body.compare(prefix, 0, prefix.length, 0, prefix.length) === 0;
    // Read again after filtering: kept only under the key it was filtered with (the filter itself may move it).
    if (memo !== undefined && canonical && body.length <= LIST_ANSWER_MEMO_MAX_BYTES && (filteredText === undefined || filteredText.startsWith(prefixText!)) && standing(memo)) {
      remember(memo.store, memo.key, body.subarray(prefix.length), filtered?.subarray(prefix.length));
    }
    return filtered === undefined ? { out: body, changed: false } : { out: filtered, changed: true };
  }

  /** Whether the held chunks are `prefix` followed by `rest`, compared in place. */
  private equals(prefix: Buffer, rest: Buffer): boolean {
    if (this.bytes !== prefix.length + rest.length) return false;
    let at = 0;
    for (const chunk of this.chunks) {
      let i = 0;
      if (at < prefix.length) {
        const n = Math.min(prefix.length - at, chunk.length);
        if (chunk.compare(prefix, at, at + n, 0, n) !== 0) return false;
        i = n;
        at += n;
      }
      if (i < chunk.length) {
        const offset = at - prefix.length;
        if (chunk.compare(rest, offset, offset + chunk.length - i, i) !== 0) return false;
        at += chunk.length - i;
      }
    }
    return true;
  }
}
