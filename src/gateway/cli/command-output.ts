import { packageVersion } from './package-version.js';

/** Where an operator's command (`check`, `connections`, `pins`) writes; tests pass their own to read it. */
export interface CommandOutput {
  stdout(text: string): void;
  stderr(text: string): void;
}

/** The process's own stdout and stderr: every command's default output. */
export const PROCESS_OUTPUT: CommandOutput = {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
};

/**
 * Answers `--help` (or `-h`) with `help()` and `--version` with the package's version, as every command does.
 *
 * @returns whether it answered (the command then exits 0).
 * @example
 * if (answerHelpOrVersion(argv, output, pinsHelp)) return 0;
 */
export function answerHelpOrVersion(argv: readonly string[], output: CommandOutput, help: () => string): boolean {
  if (argv.includes('--help') || argv.includes('-h')) output.stdout(help());
  else if (argv.includes('--version')) output.stdout(`${packageVersion()}\n`);
  else return false;
  return true;
}
