import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join, resolve as resolvePath } from 'node:path';
import { ConfigurationError } from '../../core/kernel/errors.js';

/**
 * Characters a shell would act on when unquoted. No shell runs the upstream command, so `a | b`, `> log` or
 * `$HOME` would reach the program as literal arguments, which is never what was meant: they are refused
 * unless quoted.
 */
const SHELL_OPERATORS = new Set(['|', '&', ';', '<', '>', '(', ')', '`', '$']);

/**
 * Splits a command line into the program and its arguments with POSIX shell quoting, without running a
 * shell (so nothing is expanded, redirected or globbed):
 *
 * - blanks (space, tab, newline) separate words;
 * - `'…'` keeps everything literally;
 * - `"…"` keeps everything literally except `\"`, `\\`, `\$` and `` \` ``, which stand for the second character;
 * - outside quotes, `\x` stands for `x`; quotes and backslashes join into the surrounding word
 *   (`--name="a b"` is one word, `--name=a b`);
 * - `''` and `""` make an empty argument.
 *
 * @example
 * splitCommandLine(`python3 "my server.py" --greeting 'hello, world'`, 'MCP_AUTH_UPSTREAM_COMMAND');
 * // ['python3', 'my server.py', '--greeting', 'hello, world']
 * @param setting - Named in the error, e.g. `MCP_AUTH_UPSTREAM_COMMAND`.
 * @throws ConfigurationError for an empty command, an unterminated quote, a trailing backslash, or an
 *   unquoted shell operator (`| & ; < > ( ) $` and backquote).
 */
export function splitCommandLine(text: string, setting: string): string[] {
  const words: string[] = [];
  let word = '';
  // A word exists once anything, even an empty quoted string, was seen since the last blank.
  let inWord = false;
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
      i++;
      continue;
    }
    inWord = true;
    if (c === "'") {
      const end = text.indexOf("'", i + 1);
      if (end === -1) throw new ConfigurationError(setting, `has an unterminated single quote at character ${i + 1}`);
      word += text.slice(i + 1, end);
      i = end + 1;
      continue;
    }
    if (c === '"') {
      i++;
      for (;;) {
        if (i >= text.length) throw new ConfigurationError(setting, 'has an unterminated double quote');
        const d = text[i]!;
        if (d === '"') break;
        if (d === '\\' && i + 1 < text.length && '"\\$`'.includes(text[i + 1]!)) {
          word += text[i + 1];
          i += 2;
          continue;
        }
        word += d;
        i++;
      }
      i++;
      continue;
    }
    if (c === '\\') {
      if (i + 1 >= text.length) throw new ConfigurationError(setting, 'ends with a backslash that escapes nothing');
      word += text[i + 1];
      i += 2;
      continue;
    }
    if (SHELL_OPERATORS.has(c)) {
      throw new ConfigurationError(
        setting,
        `has an unquoted "${c}" at character ${i + 1}: no shell runs the command, so pipes, redirections and variables do not work; quote it if it is meant literally, or wrap the command in a script`,
      );
    }
    word += c;
    i++;
  }
  if (inWord) words.push(word);
  if (words.length === 0 || words[0] === '') {
    throw new ConfigurationError(setting, 'is empty: set it to the program and its arguments, e.g. "python3 server.py"');
  }
  return words;
}

/**
 * Whether `program` can be run: a path (it has a `/`) names an executable file, relative to `cwd`; a bare name
 * is looked up on `path` (the child's `PATH`), as `spawn` will. Checked at start-up, so a typo is a
 * configuration error rather than a 502 on every `initialize`.
 *
 * @param setting - Named in the error, e.g. `MCP_AUTH_UPSTREAM_COMMAND`.
 * @throws ConfigurationError when it cannot be found or is not executable.
 */
export function checkProgram(program: string, setting: string, context: { cwd: string; path: string | undefined }): void {
  if (program.includes('/')) {
    const file = resolvePath(context.cwd, program);
    if (!isExecutableFile(file)) throw new ConfigurationError(setting, `names "${program}", which is not an executable file (relative paths start from MCP_AUTH_UPSTREAM_CWD)`);
    return;
  }
  for (const dir of (context.path ?? '').split(delimiter)) {
    if (dir !== '' && isExecutableFile(join(dir, program))) return;
  }
  throw new ConfigurationError(setting, `runs "${program}", which is not on the PATH the upstream process gets; install it, or give its full path`);
}

function isExecutableFile(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}
