/**
 * What an upstream in connected mode last listed for a user who had connected it (its tool definitions, and its
 * prompts and resource templates), kept where its connections are kept (the token store), so that a user who has
 * not connected yet finds those tools in their lists, on every replica and after a restart, and is led to connect
 * by calling one. The exchange and the connect flow know only this interface;
 * `src/gateway/connected/kept-upstream-lists.ts` keeps the lists.
 */

/** The kept lists of one upstream in connected mode. */
export interface KeptLists {
  /**
   * Whether the upstream's answer to a connected user's first page of `method` (`tools/list`, …) is to be read now
   * and told to {@link learnt}: for a list this keeps, at most once every `KEPT_VALUE_RECHECK_MS` (30 s), so that a
   * list is not parsed a second time on every request. A call that answers true counts as that read.
   */
  wants(method: string): boolean;
  /**
   * The items kept of the list `method` (definitions only, in the upstream's order), or undefined when none is kept
   * yet, or `method` is not kept. Never rejects.
   */
  read(method: string): Promise<readonly object[] | undefined>;
  /**
   * The upstream answered a connected user's `method` (first page, no cursor) with `result`: its definitions are
   * kept when they differ from those kept (not on every list). Never rejects.
   */
  learnt(method: string, result: unknown): Promise<void>;
}
