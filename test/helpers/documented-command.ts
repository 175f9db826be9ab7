// Runs a command a page documents, as a reader would paste it into a shell: the fenced block after a
// `<!-- example: name -->` line, with `npx mcp-oauth-guard` run from the source (as npx runs the built bin) and
// each port the page names replaced by a free one.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from './child-process.js';
import { once } from 'node:events';
import { delimiter, join } from 'node:path';
import { killProcess, REPOSITORY_ROOT } from './run-cli.js';

/** The fenced block that follows `<!-- example: name -->` in a Markdown page. */
export function exampleBlock(markdown: string, name: string): string {
  const blocks = [...markdown.matchAll(/^<!-- example: ([\w.-]+) -->\n```\w*\n([\s\S]*?)^```$/gm)].filter(([, found]) => found === name);
  assert.equal(blocks.length, 1, `one block marked <!-- example: ${name} -->`);
  return blocks[0]![2]!;
}

/** `npx mcp-oauth-guard` as the clone's source, for a shell: the same CLI without building `dist/` first. */
export const GATEWAY_FROM_SOURCE = `'${process.execPath}' --import tsx '${join(REPOSITORY_ROOT, 'src', 'gateway', 'cli.ts')}'`;

/** A documented command made runnable here: the gateway from the source, and each page port a free one. */
export function runnable(command: string, ports: ReadonlyMap<number, number>): string {
  let result = command.replaceAll('npx mcp-oauth-guard', GATEWAY_FROM_SOURCE);
  for (const [page, free] of ports) result = result.replace(new RegExp(`\\b${page}\\b`, 'g'), String(free));
  return result;
}

/**
 * The environment of a reader's shell under `npx`: the clone's `node_modules/.bin` first on `PATH` (npx puts it
 * there), `home` as `HOME`, and none of this process's guard settings, ports or test-runner state.
 */
export function readerEnvironment(home: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, PATH: [join(REPOSITORY_ROOT, 'node_modules', '.bin'), process.env.PATH ?? ''].join(delimiter), ...extra };
  for (const name of Object.keys(env)) {
    if (name.startsWith('MCP_AUTH_') || name === 'HOST' || name === 'PORT' || name === 'NODE_TEST_CONTEXT' || name === 'NODE_OPTIONS') delete env[name];
  }
  return env;
}

/** A shell running a documented command that stays up, in a process group of its own. */
export class RunningShell {
  readonly child: ChildProcess;
  private stdoutText = '';
  private stderrText = '';

  constructor(command: string, env: NodeJS.ProcessEnv, cwd = REPOSITORY_ROOT) {
    this.child = spawn('sh', ['-c', command], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    this.child.stdout!.on('data', (chunk: Buffer) => (this.stdoutText += chunk.toString()));
    this.child.stderr!.on('data', (chunk: Buffer) => (this.stderrText += chunk.toString()));
  }

  get stdout(): string {
    return this.stdoutText;
  }

  get stderr(): string {
    return this.stderrText;
  }

  /**
   * The first line holding `pattern` (stdout's, else stderr's), once it is printed; fails with the output if the
   * shell exits first or takes too long.
   */
  async line(pattern: RegExp, timeoutMs = 60_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = [...this.stdoutText.split('\n'), ...this.stderrText.split('\n')].find((l) => pattern.test(l));
      if (found !== undefined) return found;
      const { exitCode, signalCode } = this.child;
      if (exitCode !== null || signalCode !== null) assert.fail(`the command exited (${exitCode ?? signalCode}) before printing ${pattern}:\n${this.stdoutText}${this.stderrText}`);
      if (Date.now() > deadline) assert.fail(`no ${pattern} within ${timeoutMs / 1000} s:\n${this.stdoutText}${this.stderrText}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** SIGTERM to the group (SIGKILL after 10 s); resolves with the exit code of the shell. */
  async stop(): Promise<number | null> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return this.child.exitCode;
    const exited = once(this.child, 'exit');
    killProcess(this.child, 'SIGTERM', true);
    const timer = setTimeout(() => killProcess(this.child, 'SIGKILL', true), 10_000);
    await exited;
    clearTimeout(timer);
    return this.child.exitCode;
  }
}
