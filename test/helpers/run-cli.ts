import { spawn } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root, where the CLI runs (relative paths in settings start there). */
export const REPOSITORY_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CLI = resolve(REPOSITORY_ROOT, 'src/gateway/cli.ts');

/** How a CLI run ended. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real `mcp-oauth-guard` CLI (through tsx, as the built bin would run) until it exits, with a clean
 * environment: `PATH` and `env` only, and `input` on standard input (none by default). Killed, and the test
 * failed, after `timeoutMs`.
 */
export function runGatewayCli(args: readonly string[], env: Record<string, string> = {}, timeoutMs = 30_000, input?: string): Promise<CliRun> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { cwd: REPOSITORY_ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    // Standard input, when given: written at once and closed.
    if (input !== undefined) child.stdin!.end(input);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the CLI did not exit within ${timeoutMs} ms; stdout: ${stdout} stderr: ${stderr}`));
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolveRun({ code, stdout, stderr });
    });
  });
}
