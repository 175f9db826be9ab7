import { readFileSync } from 'node:fs';

/**
 * The version of the installed mcp-oauth-guard, from its package.json (two folders up from this module, in `src/`
 * and in `dist/` alike), for `mcp-oauth-guard --version`. Read when asked, never at start-up.
 *
 * @example
 * packageVersion(); // '0.1.0'
 */
export function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  return typeof manifest.version === 'string' ? manifest.version : 'unknown';
}
