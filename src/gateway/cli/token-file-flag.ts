/**
 * `--token-file <file|->`: a caller's access token for a command (`check`, `pins`), read as every secret file is,
 * bounded, or from standard input with `-`; never from a flag's value, which would show in process listings.
 */
import type { ConfigurationProblems } from '../../core/kernel/configuration-problems.js';

/**
 * `--token-file <file|->` (or `--token-file=…`), taken out of the arguments before the gateway's flags are read.
 * A missing value is recorded in `problems`.
 *
 * @example
 * const { tokenFile, rest } = takeTokenFile(['--token-file', 'token', '--upstream', url], problems); // tokenFile 'token'
 */
export function takeTokenFile(argv: readonly string[], problems: ConfigurationProblems): { tokenFile?: string; rest: string[] } {
  const rest: string[] = [];
  let tokenFile: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg.startsWith('--token-file=')) tokenFile = arg.slice('--token-file='.length);
    else if (arg === '--token-file') {
      const value = argv[i + 1];
      if (value === undefined || (value.startsWith('--') && value !== '-')) problems.add('--token-file', 'needs a value: --token-file <file>, or --token-file - to read the token from standard input');
      else tokenFile = value;
      if (value !== undefined && !value.startsWith('--')) i++;
    } else rest.push(arg);
  }
  if (tokenFile === '') problems.add('--token-file', 'needs a value: --token-file <file>, or --token-file - to read the token from standard input');
  return { ...(tokenFile ? { tokenFile } : {}), rest };
}
