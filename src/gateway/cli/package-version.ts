import { readFileSync } from 'node:fs';

/**
 * The version of the installed mcp-oauth-guard, from its package.json (two folders up from this module, in `src/`
 * and in `dist/` alike), for `mcp-oauth-guard --version` and, with several servers, the endpoint's `serverInfo`.
 * Read when asked; `unknown` when it cannot be read.
 *
 * @example
 * packageVersion(); // '0.1.0'
 */
export function packageVersion(): string {
  try {
    const manifest = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
    return typeof manifest.version === 'string' ? manifest.version : 'unknown';
  } catch {
    // A copy of the code without its package.json (bundled, say) still runs: its version is just not known.
    return 'unknown';
  }
}
