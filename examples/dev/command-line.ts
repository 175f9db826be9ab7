/** The command-line reading `npm run auth-server` and `npm run token` share. */

/** What {@link readFlags} found: each flag's values in order, and every problem, each naming its flag. */
export interface ReadFlags {
  readonly values: ReadonlyMap<string, readonly string[]>;
  readonly problems: string[];
}

/**
 * Reads `--flag value` and `--flag=value` pairs (a flag may repeat), or `'help'` for `--help` / `-h`. An unknown
 * flag or a flag without its value is a problem, collected rather than thrown, so that all are reported at once.
 * A flag in `switches` takes no value: present, it reads as `'true'`; given one (`--dpop=yes`, `--dpop require`),
 * that is a problem too, named as such.
 */
export function readFlags(argv: readonly string[], known: readonly string[], switches: readonly string[] = []): ReadFlags | 'help' {
  const values = new Map<string, string[]>();
  const problems: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--help' || arg === '-h') return 'help';
    const eq = arg.indexOf('=');
    const flag = eq === -1 ? arg : arg.slice(0, eq);
    if (switches.includes(flag)) {
      if (eq !== -1) problems.push(`${flag} takes no value (give it alone to turn it on), got "${arg.slice(eq + 1)}"`);
      else values.set(flag, ['true']);
      const next = argv[i + 1];
      if (eq === -1 && next !== undefined && !next.startsWith('-')) {
        problems.push(`${flag} takes no value, got "${next}"`);
        i++;
      }
      continue;
    }
    let value: string | undefined = eq === -1 ? argv[i + 1] : arg.slice(eq + 1);
    if (eq === -1 && value !== undefined && !value.startsWith('--')) i++;
    else if (eq === -1) value = undefined;
    if (!known.includes(flag)) problems.push(`${flag} is not a known flag`);
    else if (value === undefined || value === '') problems.push(`${flag} needs a value`);
    else values.set(flag, [...(values.get(flag) ?? []), value]);
  }
  return { values, problems };
}

/**
 * Runs a command's argument parser: prints `usage` and returns undefined for `'help'` (exit 0), prints the
 * parser's error and exits 2 when it throws (a usage error), and returns what it parsed otherwise.
 */
export function parseOrExit<T>(parse: () => T | 'help', usage: string): T | undefined {
  let parsed: T | 'help';
  try {
    parsed = parse();
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(2);
  }
  if (parsed === 'help') {
    console.log(usage);
    return undefined;
  }
  return parsed;
}
