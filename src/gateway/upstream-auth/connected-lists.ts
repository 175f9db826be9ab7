/**
 * What a server set's merged lists need of connected accounts (`src/gateway/connected/`), handed to the set by the
 * gateway only when some server is in connected mode: the set knows only this interface, and a configuration file
 * without such a server never loads the connected-accounts code for its lists.
 */
import type { AuthInfo } from '../../core/kernel/auth-info.js';

/** Connected accounts, as merged lists see them. */
export interface ConnectedLists {
  /** The names of the servers in connected mode. */
  readonly servers: ReadonlySet<string>;
  /**
   * The `_meta` key of the note (why, and the link) in the connect flow's answer to a list; the merged list keeps
   * each server's note under the same key, by server name.
   */
  readonly noteKey: string;
  /**
   * `MCP_AUTH_CONNECT_LISTS=hide`: a server the caller has not connected shows nothing in their lists, neither the
   * note nor tools known from another user's list (pages kept for reuse, or the definitions the connect flow keeps).
   */
  readonly hide: boolean;
  /** Whether the caller has a connection to `server` (stored, usable or not). Resolves false when the store cannot tell. */
  isConnected(server: string, auth: AuthInfo): Promise<boolean>;
}
