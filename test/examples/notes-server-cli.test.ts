// The notes example's command line: configuration problems exit with status 2 and one helpful message,
// before anything listens.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Runs the example with the given MCP_AUTH_* variables (every other one removed); at most 15 s. */
function runNotesServer(vars: Record<string, string>): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('MCP_AUTH_') && k !== 'NODE_TEST_CONTEXT') env[k] = v;
  // Port 0: should a regression let it start, it cannot collide with anything.
  Object.assign(env, { HOST: '127.0.0.1', PORT: '0' }, vars);
  const child = spawn(process.execPath, ['--import', 'tsx', 'examples/notes-server.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  // A safety bound only: a child still running then is killed, and its exit code (null) fails the test.
  const guard = setTimeout(() => child.kill('SIGKILL'), 15_000);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(guard);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

describe('examples/notes-server.ts from the command line', () => {
  test('without MCP_AUTH_ISSUER: exit 2, naming the variable and pointing at npm run demo', async () => {
    const result = await runNotesServer({});
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /MCP_AUTH_ISSUER/);
    assert.match(result.stderr, /npm run demo/);
    assert.equal(result.stdout, '');
  });

  test('a blank MCP_AUTH_ISSUER counts as unset', async () => {
    const result = await runNotesServer({ MCP_AUTH_ISSUER: '   ' });
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /MCP_AUTH_ISSUER is not set/);
  });

  test('with a plain-http issuer off loopback: exit 2, naming the variable and asking for https', async () => {
    const result = await runNotesServer({ MCP_AUTH_ISSUER: 'http://example.com' });
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /^configuration error: MCP_AUTH_ISSUER: /m);
    assert.match(result.stderr, /https/);
    assert.match(result.stderr, /example\.com/);
    // One line of its own (runtime warnings, if any, are Node's).
    assert.equal(result.stderr.split('\n').filter((l) => l && !l.startsWith('(node:') && !l.startsWith('(Use `node')).length, 1, result.stderr);
    assert.equal(result.stdout, '');
  });
});
