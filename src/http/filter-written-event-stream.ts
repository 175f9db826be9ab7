/**
 * The event-stream path of the written-answer filter (`filter-written-response.ts`): every `message` event of a
 * `text/event-stream` answer is offered to the response filter, through the project's one event-stream parser.
 */
import { createEventStreamRewriter, type EventStreamRewriter } from '../core/wire/event-stream.js';
import type { JsonRpcId, JsonRpcMessage } from '../core/wire/jsonrpc.js';
import { filterJsonText, UNFILTERABLE, unfilterableAnswer, type AnswerRewrites } from '../core/policy/response-filter.js';

/**
 * The rewriter of one answer's event stream: the data of each `message` event goes through `filter` (parsed
 * whatever it holds when `always`, else only when `rewrites` says it could need rewriting). Data that must be
 * filtered but is not JSON becomes the `-32603` answer to `requestId`, unless it could hold no list at all
 * (`data: hello` in a list answer's stream hides none, and no client parses it as JSON).
 *
 * @param rewrites Which answers the filter's lists mode rewrites (see `answerRewrites`).
 * @param maxEventBytes Most bytes held for the event being assembled (see `EventStreamRewriterOptions`).
 */
export function createAnswerEventRewriter(
  filter: (response: JsonRpcMessage) => JsonRpcMessage,
  always: boolean,
  requestId: JsonRpcId | null,
  maxEventBytes: number,
  rewrites: AnswerRewrites,
): EventStreamRewriter {
  const rewriteData = (data: string): string | undefined => {
    const out = filterJsonText(data, filter, always, rewrites);
    if (out !== UNFILTERABLE) return out;
    return rewrites.mayNeedFiltering(data) ? JSON.stringify(unfilterableAnswer(requestId)) : undefined;
  };
  return createEventStreamRewriter(rewriteData, { maxEventBytes });
}
