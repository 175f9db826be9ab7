/**
 * One named upstream of a gateway configuration file (`--config`, `MCP_AUTH_CONFIG`): what the file's
 * `servers.<name>` entry says, read and checked. The configuration reader builds these; the server set
 * (`createServerSet`), the policy set and `check` use them.
 */
import type { PolicyDefinition } from '../../core/policy/policy-definition.js';
import type { ToolSelectionDefinition } from '../../core/policy/tool-selection.js';
import type { UpstreamAuthConfig } from '../upstream-auth/upstream-auth-config.js';
import type { UpstreamProxyOptions } from '../upstream/http/upstream-proxy.js';
import type { StdioUpstreamOptions } from '../upstream/stdio/stdio-upstream.js';

export type { ToolSelectionDefinition } from '../../core/policy/tool-selection.js';

/** One upstream behind a gateway with several, as its configuration file's `servers.<name>` entry gives it. */
export interface ServerConfig {
  /** Its name: the key in `servers`, the prefix of its tools and prompts (`<name>__<tool>`). */
  readonly name: string;
  /** Streamable HTTP (`url`) or stdio (`command`). */
  readonly transport: 'http' | 'stdio';
  /** With `url`: the HTTP upstream's options (without hooks, which the gateway adds). */
  readonly proxy?: UpstreamProxyOptions;
  /** With `command`: the stdio upstream's options (without hooks, which the gateway adds). */
  readonly stdio?: StdioUpstreamOptions;
  /** How the gateway authenticates to this server (`auth`); absent for `none`. */
  readonly upstreamAuth?: UpstreamAuthConfig;
  /** This server's own policy (`policy`, or the file `policyFile` names), by its own tool, prompt and resource names. */
  readonly policy?: PolicyDefinition;
  /** Where `policy` came from, for messages: the file, or the JSON path `servers.<name>.policy`. */
  readonly policySource?: string;
  /** The `policyFile` path, re-read on a policy reload; absent for an inline policy. */
  readonly policyFile?: string;
  /** Which tools are exposed (`tools`); absent: all. */
  readonly tools?: ToolSelectionDefinition;
  /** Whether `/readyz` is ready only when this server is (`required`). Default false. */
  readonly required: boolean;
  /** Time allowed for this server's part of a merged list, in milliseconds (`listTimeoutMs`); absent: the gateway's. */
  readonly listTimeoutMs?: number;
  /**
   * `listReuseMs`: the operator's word that this server's lists are the same for every caller, so that a merged
   * list serves its pages again, to anyone, for this many milliseconds (at most 300 000, five minutes).
   * Absent: only pages the server itself marks public (2026-07-28) are served again. In connected mode, only pages
   * fetched with a connected user's token are kept, and they are served to users who have not connected it too.
   */
  readonly listReuseMs?: number;
}

/** Longest a server's list page is served again, whatever its server or the file says, in milliseconds: 5 minutes. */
export const MAX_PAGE_REUSE_MS = 300_000;
