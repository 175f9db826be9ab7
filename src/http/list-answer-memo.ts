/**
 * The memo of filtered JSON list answers: list answers rarely change, and parsing and re-serialising a large one
 * is most of a gateway's work, so an answer byte for byte the last one seen under the same key reuses its
 * filtered form. Used by the written-answer filter (`filter-written-response.ts`).
 */
import type { JsonRpcId } from '../core/wire/jsonrpc.js';

/** Filtered JSON list answers by filter key: the upstream's bytes after the prefix, and the filtered rest. */
export type ListAnswerMemo = Map<string, { rest: Buffer; filteredRest: Buffer | undefined }>;

/** Keys a {@link ListAnswerMemo} keeps (oldest forgotten first): a few methods times a few scope sets. */
const LIST_ANSWER_MEMO_KEYS = 32;
/** Largest answer a {@link ListAnswerMemo} keeps, in bytes. */
export const LIST_ANSWER_MEMO_MAX_BYTES = 1_048_576;
/** Most bytes a {@link ListAnswerMemo} holds in all (answers and their filtered forms); oldest forgotten first. */
const LIST_ANSWER_MEMO_TOTAL_BYTES = 8 * 1_048_576;

/**
 * The canonical start of an answer to `id`, `{"jsonrpc":"2.0","id":<id>,"result":`: the memo keeps what follows
 * it, so an answer with another id meets the same entry.
 */
export function memoPrefixText(id: JsonRpcId | null): string {
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":`;
}

/** Stores one answer in a memo, keeping it within {@link LIST_ANSWER_MEMO_KEYS} and {@link LIST_ANSWER_MEMO_TOTAL_BYTES}. */
export function remember(store: ListAnswerMemo, key: string, rest: Buffer, filteredRest: Buffer | undefined): void {
  store.delete(key);
  store.set(key, { rest, filteredRest });
  let total = 0;
  for (const entry of store.values()) total += entry.rest.length + (entry.filteredRest?.length ?? 0);
  for (const [oldest, entry] of store) {
    if (store.size <= LIST_ANSWER_MEMO_KEYS && total <= LIST_ANSWER_MEMO_TOTAL_BYTES) break;
    total -= entry.rest.length + (entry.filteredRest?.length ?? 0);
    store.delete(oldest);
  }
}
