/**
 * Problems found by a setting's parser are named by its variable (`MCP_AUTH_UPSTREAM_TOKEN_FILE`); when the value was
 * written in a configuration file they are renamed to where it was written (`servers.notes.auth.tokenFile`), so
 * that one parser serves both and the message points at the line to fix.
 */
import { ConfigurationError } from '../../core/kernel/errors.js';

/** How a problem is renamed: its setting, and the names in its text. */
export interface ProblemLabels {
  /** The name to report a setting's problem under; the setting itself when it has no other. */
  setting(name: string): string;
  /** The problem's text with setting names replaced; default unchanged. */
  detail?(text: string): string;
}

/**
 * Runs `read`; a `ConfigurationError` it throws is thrown again with every problem renamed by `labels`. Other errors
 * propagate unchanged.
 */
export function withProblemLabels<T>(labels: ProblemLabels, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (!(error instanceof ConfigurationError)) throw error;
    throw ConfigurationError.of(error.problems.map((problem) => ({ setting: labels.setting(problem.setting), detail: labels.detail ? labels.detail(problem.detail) : problem.detail })));
  }
}

/** Replaces each whole variable name (`MCP_AUTH_…`) in `text` that `names` maps. */
export function renameSettingsIn(text: string, names: (name: string) => string | undefined): string {
  return text.replace(/\bMCP_AUTH_[A-Z0-9_]+\b/g, (name) => names(name) ?? name);
}
