import { ConfigurationError } from '../kernel/errors.js';

/**
 * What a caller's lists (`tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`) show, option
 * `lists` (`MCP_AUTH_LISTS`, gateway `--lists`):
 *
 * - `filtered` (default): only the items the caller's token could use. A client never sees a tool it would be
 *   refused.
 * - `all`: every item the server lists, whatever the token's scopes; a call is still authorized (403
 *   `insufficient_scope` naming the scopes it needs, RFC 6750 §3.1, the MCP step-up). For clients that refuse to
 *   call what they have not seen listed (the Inspector CLI, and others that validate against the list): with
 *   `filtered` they never send the call whose 403 would start the step-up. The price: a caller learns the names
 *   (and descriptions) of what it cannot use; never access to it.
 *
 * Filtering is discovery hygiene, not the access boundary (MCP 2026-07-28 `server/tools`): calls are authorized
 * the same in both modes.
 *
 * @example
 * ```ts
 * const lists: ListsMode = 'all'; // for a client that validates calls against the list
 * app.use(mcpOAuthGuard({ ...loadOptionsFromEnv(), handler, lists }));
 * ```
 */
export type ListsMode = 'filtered' | 'all';

/**
 * The values of {@link ListsMode}, in the order messages name them.
 *
 * @example
 * ```ts
 * const lists = process.env.LISTS ?? 'filtered';
 * if (!(LISTS_MODES as readonly string[]).includes(lists)) throw new Error(`LISTS: use ${LISTS_MODES.join(' or ')}`);
 * ```
 */
export const LISTS_MODES: readonly ListsMode[] = ['filtered', 'all'];

/**
 * Checks the `lists` setting: `filtered` when unset.
 *
 * @throws ConfigurationError naming `setting` for any other value.
 */
export function resolveListsMode(value: unknown, setting: string): ListsMode {
  if (value === undefined) return 'filtered';
  if (typeof value === 'string' && (LISTS_MODES as readonly string[]).includes(value)) return value as ListsMode;
  throw new ConfigurationError(
    setting,
    `must be one of ${LISTS_MODES.join(', ')} (got ${JSON.stringify(String(value))}): "filtered" lists what the token may use, "all" lists everything and enforces on call`,
  );
}
